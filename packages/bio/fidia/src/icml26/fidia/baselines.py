"""The arms FIDIA's max@N objective is judged against, at the same budget (DESIGN "Evidence").

- **Mean-reward REINFORCE with a leave-one-out baseline (RLOO)**: the objective best-of-N
  training replaces; per-sample weight r_i - mean(r_{-i}) (Kool et al. 2019).
- **GRPO**: group-normalised advantages (r_i - mean(r)) / (std(r) + eps) (Shao et al. 2024), the
  objective most RL fine-tuning of generators uses today.
- **The tuned base sampler**: the pretrained policy with no training at all, its temperature
  chosen on the training reward with as many reward calls as an RL arm spends (the tuned
  constant every sampling method has to beat).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import torch


def _rewards(rewards, name: str = "rewards", min_n: int = 2) -> torch.Tensor:
    """``rewards`` as a float (n,) or (groups, n) tensor with at least ``min_n`` finite values per
    group, or a named error. Every estimator reads its rewards through here."""
    r = torch.as_tensor(rewards)
    if r.is_complex():  # a cast to real would drop the imaginary part with only a warning
        raise TypeError(f"{name} must be real numbers, got {r.dtype}")
    r = r if torch.is_floating_point(r) else r.double()  # integer / boolean outcomes are 0/1
    if r.ndim not in (1, 2):
        raise ValueError(f"{name} must be (n,) or (groups, n), got shape {tuple(r.shape)}")
    if r.shape[-1] == 0:
        raise ValueError(f"{name} is empty")
    if r.shape[-1] < min_n:
        raise ValueError(f"{name}: need at least {min_n} samples per group, got {r.shape[-1]}")
    if not torch.isfinite(r).all():
        raise ValueError(f"{name} holds NaN or inf")
    return r


def rloo_weights(rewards: torch.Tensor) -> torch.Tensor:
    """Mean-reward REINFORCE weights with the leave-one-out baseline: r_i - mean_{j != i} r_j,
    per group (last axis), in float64."""
    r = _rewards(rewards).double()
    n = r.shape[-1]
    return r - (r.sum(-1, keepdim=True) - r) / (n - 1)


def grpo_weights(rewards: torch.Tensor, eps: float = 1e-4) -> torch.Tensor:
    """GRPO advantages (r_i - mean(r)) / (std(r) + eps) per group, in float64 (Shao et al. 2024,
    outcome supervision; std is the unbiased sample deviation as in the reference trainers)."""
    if not eps > 0:
        raise ValueError(f"eps must be > 0, got {eps!r}")
    r = _rewards(rewards).double()
    return (r - r.mean(-1, keepdim=True)) / (r.std(-1, keepdim=True) + eps)


def tune_temperatures(
    sample: Callable[[float], torch.Tensor],
    score: Callable[[torch.Tensor], Mapping[str, float]],
    temperatures: Iterable[float],
    metrics: Iterable[str],
    tiebreak: str = "reward",
) -> tuple[dict[str, float], dict[float, Mapping[str, float]]]:
    """The base sampler's temperature per metric: ``sample(T)`` draws sequences at T, ``score``
    scores them on the *training* reward; the best T per metric wins, ties going to ``tiebreak``.

    Returns (metric -> chosen T, T -> scores)."""
    temperatures = tuple(temperatures)
    if not temperatures or any(not t > 0 for t in temperatures):
        raise ValueError(f"temperatures must be non-empty and > 0, got {temperatures}")
    table = {T: score(sample(T)) for T in temperatures}
    chosen = {
        m: max(temperatures, key=lambda T, m=m: (table[T][m], table[T][tiebreak])) for m in metrics
    }
    return chosen, table
