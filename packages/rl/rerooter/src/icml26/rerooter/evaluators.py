"""What guides a search: a policy pi(a | n) and a cost-to-go estimate h(n), evaluated in batches.

An evaluator is any callable ``evaluator(env, states) -> (log_pi, h)`` with ``log_pi`` of shape
(B, A) (log-probabilities over the A actions, rows summing to 1 in probability) and ``h`` of shape
(B,). The searches call it once per batch of newly generated nodes, as the authors' C++ code does
("batched policy inference during search").
"""

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import torch

from icml26.rerooter.environment import Environment


class Evaluator(Protocol):
    def __call__(self, env: Environment, states: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
        """(log_pi (B, A), h (B,)) for the B states."""
        ...


class UniformPolicy:
    """pi uniform over the A actions; h = 0 (or the environment's hand-written heuristic).

    ``UniformPolicy(heuristic=True)`` is the demo's search-only guide: no learning, a uniform policy
    and the domain's hand-written heuristic for PHS* and the heuristic rerooter.
    """

    def __init__(self, heuristic: bool = False) -> None:
        self.heuristic = heuristic

    def __call__(self, env: Environment, states: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
        b, a = len(states), env.num_actions
        log_pi = np.full((b, a), -np.log(a))
        if self.heuristic:
            h = np.fromiter((env.heuristic(s) for s in states), dtype=np.float64, count=b)
        else:
            h = np.zeros(b)
        return log_pi, h


class NetEvaluator:
    """Wraps a two-headed network ``net(obs) -> (logits (B, A), h (B,))`` as an evaluator.

    The observations go to ``device``, by default the device of the network's parameters at each
    call (so a network moved after wrapping is followed); the outputs come back as host arrays,
    since the searches are host-side Python.
    """

    def __init__(self, net: torch.nn.Module, device: str | torch.device | None = None) -> None:
        if not isinstance(net, torch.nn.Module):
            raise TypeError(f"net must be a torch.nn.Module (a TwoHeadedConvNet), got "
                            f"{type(net).__name__}")  # fmt: skip
        self.net = net
        self.device = None if device is None else torch.device(device)

    def _device(self) -> torch.device:
        if self.device is not None:
            return self.device
        param = next(self.net.parameters(), None)
        return param.device if param is not None else torch.device("cpu")

    @torch.inference_mode()
    def __call__(self, env: Environment, states: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
        obs = torch.from_numpy(np.stack([env.observe(s) for s in states])).to(self._device())
        was_training = self.net.training
        self.net.eval()
        logits, h = self.net(obs)
        self.net.train(was_training)
        log_pi = torch.log_softmax(logits.double(), dim=-1)
        return log_pi.cpu().numpy(), h.double().cpu().numpy()


def check_output(log_pi: np.ndarray, h: np.ndarray, batch: int, num_actions: int) -> None:
    """Raise ValueError unless an evaluator's output has the right shapes and finite values."""
    if log_pi.shape != (batch, num_actions) or h.shape != (batch,):
        raise ValueError(
            f"evaluator returned log_pi {log_pi.shape} and h {h.shape}; expected "
            f"({batch}, {num_actions}) and ({batch},)"
        )
    for name, x in (("log_pi", log_pi), ("h", h)):
        real = np.issubdtype(x.dtype, np.floating) or np.issubdtype(x.dtype, np.integer)
        if x.dtype == bool or not real:
            raise TypeError(f"evaluator returned {name} of dtype {x.dtype}; expected real numbers")
    if not np.isfinite(h).all():
        raise ValueError("evaluator returned h with NaN or infinite values")
    if np.isnan(log_pi).any():  # -inf is a legal log-probability (an action never taken)
        raise ValueError("evaluator returned log_pi with NaN values")
    # log pi must be a distribution over the actions: an unnormalised row (all zeros, logits)
    # would make every cost, and the √LTS bound, wrong without a sign
    mass = np.exp(log_pi).sum(1)
    if not np.allclose(mass, 1.0, atol=1e-4):
        worst = int(np.abs(mass - 1.0).argmax())
        raise ValueError(
            f"evaluator returned log_pi whose probabilities sum to {mass[worst]:.4g} (row "
            f"{worst}), not 1: return log-probabilities (e.g. log_softmax of the logits)"
        )
