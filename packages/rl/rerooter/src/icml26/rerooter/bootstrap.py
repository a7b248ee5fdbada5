"""Online training by bootstrap: search, learn from what was solved, search again.

The loop of Jabbari Arfaee et al. (2011) as used for LTS (Orseau & Lelis 2021) and by the authors'
``train_bootstrap.h``: each iteration searches every still-unsolved training problem with the
current network and an expansion budget, adds the solution paths found to the training set,
trains, and doubles the budget when an iteration solved nothing new.

Losses (per state on a solution path of problem k, found with N_k expansions):
- policy: the LTS loss of Orseau & Lelis (2021). Its gradient for one solved problem is
  ``N_k * grad(-log pi(path))``, so each step's cross-entropy is weighted by the expansions its
  search took (normalised by the minibatch's total weight);
- heuristic head: MSE to the remaining number of moves on the path.

Distributed: under ``torchrun`` each rank searches its shard of the problems, the results are
all-gathered (so every rank holds the same training set and history), and the training steps run
through DistributedDataParallel with each rank taking its slice of every minibatch.

Devices: the network trains and is evaluated where its parameters live; the searches and the
training set are host-side (NumPy), and minibatches are drawn on the CPU from the seed, so a seed
picks the same minibatches on every device.
"""

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import torch
import torch.distributed as dist
from safetensors.torch import load_file
from torch import nn
from tqdm.auto import tqdm

from icml26.rerooter.environment import Environment, replay
from icml26.rerooter.evaluators import Evaluator, NetEvaluator
from icml26.rerooter.model import TwoHeadedConvNet, atomic_save_tensors, atomic_write_text
from icml26.rerooter.rerooters import ClusterRerooter, HeuristicRerooter, MixedRerooter
from icml26.rerooter.search import SearchResult, lts, phs_star, sqrt_lts

Method = Literal["lts", "phs_star", "sqrt_lts_h", "sqrt_lts_l", "sqrt_lts_lh"]
METHODS: tuple[str, ...] = ("lts", "phs_star", "sqrt_lts_h", "sqrt_lts_l", "sqrt_lts_lh")
METHOD_LABELS = {
    "lts": "LTS",
    "phs_star": "PHS*",
    "sqrt_lts_h": "√LTS-H",
    "sqrt_lts_l": "√LTS-L",
    "sqrt_lts_lh": "√LTS-LH",
}


def run_search(
    method: str, env: Environment, evaluator: Evaluator, budget: int, *, batch_size: int = 32
) -> SearchResult:
    """One search by name: ``lts``, ``phs_star``, ``sqrt_lts_h`` (heuristic rerooter),
    ``sqrt_lts_l`` (clustering rerooter) or ``sqrt_lts_lh`` (both)."""
    if method == "lts":
        return lts(env, evaluator, budget, batch_size=batch_size)
    if method == "phs_star":
        return phs_star(env, evaluator, budget, batch_size=batch_size)
    rerooters = {
        "sqrt_lts_h": HeuristicRerooter,
        "sqrt_lts_l": ClusterRerooter,
        "sqrt_lts_lh": MixedRerooter,
    }
    if method not in rerooters:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return sqrt_lts(env, evaluator, rerooters[method](), budget, batch_size=batch_size)


@dataclass(frozen=True)
class BootstrapConfig:
    """Bootstrap training of the two-headed network for one search method."""

    method: Method = "sqrt_lts_lh"
    """Search used to find the training solutions."""
    initial_budget: int = 1000
    """Expansion budget of the first iteration."""
    budget_growth: float = 2.0
    """Budget multiplier after an iteration that solved no new problem."""
    max_budget: int = 32000
    """The budget never grows past this."""
    iterations: int = 6
    """Bootstrap iterations (search + train)."""
    train_steps: int = 200
    """Gradient steps per iteration (minibatches drawn from every solved state so far)."""
    minibatch: int = 128
    """States per gradient step (all ranks together)."""
    lr: float = 1e-3
    """Adam learning rate."""
    heuristic_weight: float = 0.01
    """Weight of the heuristic head's MSE (moves^2) next to the policy loss."""
    inference_batch: int = 32
    """Nodes per batched network call inside the search."""
    seed: int = 0
    """Seeds minibatch order and (through the caller) the network's initial weights."""

    def validate(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.initial_budget < 1 or self.max_budget < self.initial_budget:
            raise ValueError(
                "need 1 <= initial_budget <= max_budget, got "
                f"{self.initial_budget}, {self.max_budget}"
            )
        if not self.budget_growth > 1.0:
            raise ValueError(f"budget_growth must be > 1, got {self.budget_growth}")
        for name in ("iterations", "train_steps", "minibatch", "inference_batch"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not self.lr > 0 or self.heuristic_weight < 0:
            raise ValueError(
                f"need lr > 0 and heuristic_weight >= 0, got {self.lr}, {self.heuristic_weight}"
            )


@dataclass
class BootstrapHistory:
    """What a bootstrap run did, in a JSON-friendly form (it is also the resume state)."""

    iteration: int = 0
    """Iterations completed."""
    budget: int = 0
    """Budget for the next iteration."""
    cumulative_expansions: int = 0
    """Expansions spent on training problems so far, failed searches included."""
    curve: list[tuple[int, int]] = field(default_factory=list)
    """(cumulative expansions, problems solved) after each search: online training efficiency."""
    rows: list[dict] = field(default_factory=list)
    """One summary per iteration."""
    solved: dict[int, dict] = field(default_factory=dict)
    """problem index -> {"actions": [...], "expansions": N} of its latest solution."""

    @property
    def num_solved(self) -> int:
        return len(self.solved)


def _dist_info() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _gather(obj, world: int) -> list:
    if world == 1:
        return [obj]
    out = [None] * world
    dist.all_gather_object(out, obj)
    return out


def _flatten_optimizer(opt: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], dict]:
    sd = opt.state_dict()
    tensors = {}
    for pid, st in sd["state"].items():
        for name, value in st.items():
            tensors[f"state.{pid}.{name}"] = torch.as_tensor(value).detach().cpu().contiguous()
    return tensors, {"param_groups": sd["param_groups"]}


def _unflatten_optimizer(tensors: dict[str, torch.Tensor], meta: dict) -> dict:
    state: dict[int, dict] = {}
    for key, value in tensors.items():
        _, pid, name = key.split(".", 2)
        state.setdefault(int(pid), {})[name] = value
    return {"state": state, "param_groups": meta["param_groups"]}


def save_checkpoint(
    directory: Path,
    net: TwoHeadedConvNet,
    opt: torch.optim.Optimizer,
    history: BootstrapHistory,
    cfg: BootstrapConfig,
) -> None:
    """Model + optimizer (safetensors) and the bootstrap state (JSON, written last)."""
    directory.mkdir(parents=True, exist_ok=True)
    net.save_pretrained(directory)
    tensors, meta = _flatten_optimizer(opt)
    atomic_save_tensors(tensors, directory / "optimizer.safetensors")
    state = {"config": asdict(cfg), "optimizer": meta, "history": asdict(history)}
    atomic_write_text(directory / "bootstrap_state.json", json.dumps(state))


def _load_checkpoint(
    directory: Path, net: TwoHeadedConvNet, opt: torch.optim.Optimizer
) -> BootstrapHistory:
    state_path = directory / "bootstrap_state.json"
    if not state_path.is_file():
        raise ValueError(f"resume: {str(directory)!r} has no bootstrap_state.json")
    state = json.loads(state_path.read_text())
    net.load_state_dict(load_file(directory / "model.safetensors"))
    opt_tensors = load_file(directory / "optimizer.safetensors")
    opt.load_state_dict(_unflatten_optimizer(opt_tensors, state["optimizer"]))
    h = state["history"]
    return BootstrapHistory(
        iteration=h["iteration"],
        budget=h["budget"],
        cumulative_expansions=h["cumulative_expansions"],
        curve=[tuple(p) for p in h["curve"]],
        rows=h["rows"],
        solved={int(k): v for k, v in h["solved"].items()},
    )


def _training_set(problems, solved: dict[int, dict]):
    obs, acts, remaining, weights = [], [], [], []
    for idx in sorted(solved):
        env, sol = problems[idx], solved[idx]
        states = replay(env, sol["actions"])
        d = len(sol["actions"])
        for j, a in enumerate(sol["actions"]):
            obs.append(env.observe(states[j]))
            acts.append(a)
            remaining.append(d - j)
            weights.append(sol["expansions"])
    return (
        torch.from_numpy(np.stack(obs)),
        torch.tensor(acts),
        torch.tensor(remaining, dtype=torch.float32),
        torch.tensor(weights, dtype=torch.float32),
    )


def _train(
    net, wrapped, opt, data, cfg: BootstrapConfig, iteration: int, rank: int, world: int
) -> float:
    dev = next(net.parameters()).device
    obs, acts, remaining, weights = (t.to(dev) for t in data)
    n = len(acts)
    gen = torch.Generator().manual_seed(cfg.seed * 100_003 + iteration)
    net.train()
    losses = []
    for _ in range(cfg.train_steps):
        # The same draw on every rank; each rank keeps its slice, DDP averages the gradients.
        batch = torch.randint(n, (max(cfg.minibatch, world),), generator=gen)
        idx = batch[rank::world].to(dev)
        logits, h = wrapped(obs[idx])
        ce = nn.functional.cross_entropy(logits, acts[idx], reduction="none")
        w = weights[idx]
        policy_loss = (w * ce).sum() / w.sum()  # the LTS loss: CE weighted by expansions
        heuristic_loss = nn.functional.mse_loss(h, remaining[idx])
        loss = policy_loss + cfg.heuristic_weight * heuristic_loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    # On the network's device: NCCL reduces CUDA tensors only.
    mean = torch.tensor(float(np.mean(losses)), dtype=torch.float64, device=dev)
    if world > 1:  # report the loss of the whole minibatch, the same on every rank
        dist.all_reduce(mean)
        mean /= world
    return mean.item()


def bootstrap_train(
    problems: list[Environment],
    net: TwoHeadedConvNet,
    cfg: BootstrapConfig = BootstrapConfig(),
    *,
    checkpoint_dir: str | os.PathLike | None = None,
    resume: bool = False,
    progress: bool = True,
) -> BootstrapHistory:
    """Train ``net`` online on ``problems`` with search method ``cfg.method``; return the history.

    With ``checkpoint_dir`` the model, optimizer and history are saved after every iteration
    (safetensors + JSON, atomically, by rank 0); ``resume=True`` continues from there.
    """
    cfg.validate()
    if not problems:
        raise ValueError("problems must be a non-empty list of environments")
    rank, world = _dist_info()
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    directory = Path(checkpoint_dir) if checkpoint_dir is not None else None
    if resume:
        if directory is None:
            raise ValueError("resume=True needs checkpoint_dir")
        history = _load_checkpoint(directory, net, opt)
    else:
        history = BootstrapHistory(budget=cfg.initial_budget)
    wrapped = nn.parallel.DistributedDataParallel(net) if world > 1 else net
    evaluator = NetEvaluator(net)

    while history.iteration < cfg.iterations and history.num_solved < len(problems):
        budget = history.budget
        todo = [i for i in range(len(problems)) if i not in history.solved]
        mine = todo[rank::world]
        outcomes = []
        bar = tqdm(
            mine,
            desc=f"{METHOD_LABELS[cfg.method]} it{history.iteration} budget {budget}",
            disable=not progress or rank != 0,
            leave=False,
        )
        for i in bar:
            r = run_search(
                cfg.method, problems[i], evaluator, budget, batch_size=cfg.inference_batch
            )
            outcomes.append((i, r.solved, r.actions, r.expansions))
        merged = sorted(o for part in _gather(outcomes, world) for o in part)
        new = 0
        spent = 0
        for i, solved, actions, expansions in merged:
            spent += expansions
            history.cumulative_expansions += expansions
            if solved:
                new += 1
                history.solved[i] = {"actions": actions, "expansions": expansions}
            history.curve.append((history.cumulative_expansions, history.num_solved))
        loss = math.nan
        if history.solved:
            data = _training_set(problems, history.solved)
            loss = _train(net, wrapped, opt, data, cfg, history.iteration, rank, world)
        history.rows.append(
            {
                "iteration": history.iteration,
                "budget": budget,
                "searched": len(merged),
                "new_solved": new,
                "solved_total": history.num_solved,
                "expansions": spent,
                "cumulative_expansions": history.cumulative_expansions,
                "loss": loss if math.isfinite(loss) else None,
            }
        )
        if new == 0:
            history.budget = min(int(budget * cfg.budget_growth), cfg.max_budget)
        history.iteration += 1
        if directory is not None and rank == 0:
            save_checkpoint(directory, net, opt, history, cfg)
        if world > 1:
            dist.barrier()
    return history
