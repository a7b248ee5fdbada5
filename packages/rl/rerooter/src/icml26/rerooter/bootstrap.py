"""Online training by bootstrap: search, learn from what was solved, search again.

Two loops:
- ``bootstrap_train``: the loop of Jabbari Arfaee et al. (2011) in a simple form: each iteration
  searches every still-unsolved training problem with the current network and an expansion
  budget, adds the solution paths found to the training set (older paths are kept, never
  refreshed), trains once, and doubles the budget when an iteration solved nothing new;
- ``bootstrap_train_authors``: the loop of the authors' ``train_bootstrap.h`` (tuero/libpolicyts):
  every problem in every iteration, learning after each chunk of 32 on that chunk's paths, the
  LTS_CM budget rule, policy mixing, a validation set and its stop rule
  (``AuthorsBootstrapConfig``).

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

from icml26.rerooter.baselines import lts, phs_star
from icml26.rerooter.environment import Environment, replay
from icml26.rerooter.evaluators import Evaluator, NetEvaluator
from icml26.rerooter.model import TwoHeadedConvNet, atomic_save_tensors
from icml26.rerooter.rerooters import ClusterRerooter, HeuristicRerooter, MixedRerooter
from icml26.rerooter.search import SearchResult, sqrt_lts
from icml26.testing.checks import number
from icml26.testing.files import atomic_write_text

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
    method: str,
    env: Environment,
    evaluator: Evaluator,
    budget: int,
    *,
    batch_size: int = 32,
    mix_epsilon: float = 0.0,
) -> SearchResult:
    """One search by name: ``lts``, ``phs_star``, ``sqrt_lts_h`` (heuristic rerooter),
    ``sqrt_lts_l`` (clustering rerooter) or ``sqrt_lts_lh`` (both). ``mix_epsilon`` mixes the
    policy with the uniform one, ``(1 - eps) pi + eps / |A|``."""
    kw = dict(batch_size=batch_size, mix_epsilon=mix_epsilon)
    if method == "lts":
        return lts(env, evaluator, budget, **kw)
    if method == "phs_star":
        return phs_star(env, evaluator, budget, **kw)
    rerooters = {
        "sqrt_lts_h": HeuristicRerooter,
        "sqrt_lts_l": ClusterRerooter,
        "sqrt_lts_lh": MixedRerooter,
    }
    if method not in rerooters:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return sqrt_lts(env, evaluator, rerooters[method](), budget, **kw)


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

    def __post_init__(self) -> None:
        self.validate()

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


def _check_training(problems, net, validation=None) -> None:
    if not problems or (validation is not None and not validation):
        lists = "problems" if validation is None else "problems and validation"
        raise ValueError(f"{lists} must be non-empty lists of environments")
    bad = [type(p).__name__ for p in [*problems, *(validation or [])]
           if not isinstance(p, Environment)]  # fmt: skip
    if bad:
        raise TypeError(f"problems must implement the Environment protocol, got {bad[:3]}")
    if not isinstance(net, TwoHeadedConvNet):
        raise TypeError(f"net must be a TwoHeadedConvNet, got {type(net).__name__}")


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
    _check_training(problems, net)
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


# -- the loop of the authors' train_bootstrap.h ----------------------------------------------------
@dataclass(frozen=True)
class AuthorsBootstrapConfig:
    """The bootstrap of the authors' C++ (``train_bootstrap.h`` in tuero/libpolicyts, defaults
    of its train programs): every training problem is searched in every iteration, reshuffled, in
    chunks of ``problems_per_batch``; after each chunk the network takes ``grad_steps`` shuffled
    passes (minibatches of ``learning_batch``) over that chunk's solution paths only; the budget
    follows the LTS_CM rule; the whole validation set is searched after each iteration and
    training stops one iteration after the union of validation problems ever solved reaches
    ``validation_ratio``."""

    method: Method = "sqrt_lts_lh"
    initial_budget: int = 4000
    """Expansion budget of the first iteration (the C++ default)."""
    max_budget: int = 2**31 - 1
    """The budget is capped here (it does not stop training)."""
    bootstrap_factor: float = 0.1
    """LTS_CM's f (see ``lts_cm_budget``)."""
    problems_per_batch: int = 32
    grad_steps: int = 10
    """Passes over a chunk's solution paths after the chunk is searched."""
    learning_batch: int = 256
    lr: float = 3e-4
    weight_decay: float = 1e-4
    """Adam with coupled L2 weight decay, as the C++."""
    heuristic_weight: float = 0.01
    mix_epsilon: float | None = None
    """Policy mixing with the uniform policy; default as the C++: 0.01 for √LTS, 0 for LTS/PHS*."""
    validation_ratio: float | None = None
    """Stop once this share of validation problems was solved; default 0.95 for √LTS (the
    C++'s rlts programs), 0.99 for LTS/PHS*."""
    max_iterations: int = 100
    max_expansions: int | None = None
    """Stop after the chunk at which the training searches' cumulative expansions reach this
    (validation searches do not count); ``None``: no cap (the C++ stops on time)."""
    inference_batch: int = 32
    seed: int = 0

    def resolved_epsilon(self) -> float:
        if self.mix_epsilon is not None:
            return self.mix_epsilon
        return 0.01 if self.method.startswith("sqrt_lts") else 0.0

    def resolved_ratio(self) -> float:
        if self.validation_ratio is not None:
            return self.validation_ratio
        return 0.95 if self.method.startswith("sqrt_lts") else 0.99

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.initial_budget < 1 or self.max_budget < self.initial_budget:
            raise ValueError("need 1 <= initial_budget <= max_budget")
        for name in (
            "problems_per_batch",
            "grad_steps",
            "learning_batch",
            "max_iterations",
            "inference_batch",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0 <= self.resolved_epsilon() < 1:
            raise ValueError(f"mix_epsilon must lie in [0, 1), got {self.mix_epsilon}")
        if not 0 < self.resolved_ratio() <= 1:
            raise ValueError(f"validation_ratio must lie in (0, 1], got {self.validation_ratio}")
        number("lr", self.lr, above=0)
        number("bootstrap_factor", self.bootstrap_factor, above=0)
        number("heuristic_weight", self.heuristic_weight, low=0)
        if self.max_expansions is not None and self.max_expansions < 1:
            raise ValueError(f"max_expansions must be >= 1 or None, got {self.max_expansions}")


def lts_cm_budget(
    budget: int,
    num_train: int,
    solved_before: int,
    solved_after: int,
    solved_this_iteration: int,
    expansions_of_solved: int,
    factor: float = 0.1,
) -> int:
    """The LTS_CM budget rule of the authors' bootstrap, after one iteration.

    ``flag1``: the set of problems ever solved grew by more than ``factor * num_train``;
    ``flag2``: this iteration solved (re-solves included) more than ``(1 + factor)`` times the
    problems solved before it. Unless both hold (and while problems remain unsolved), the budget
    becomes ``2 budget + expansions_of_solved // (num_train - solved_after)``; it never falls.
    """
    counts = {"budget": budget, "num_train": num_train, "solved_before": solved_before,
              "solved_after": solved_after, "solved_this_iteration": solved_this_iteration,
              "expansions_of_solved": expansions_of_solved}  # fmt: skip
    bad = {k: v for k, v in counts.items() if not isinstance(v, int) or v < 0}
    if bad or budget < 1 or not solved_before <= solved_after <= num_train:
        raise ValueError(f"lts_cm_budget needs non-negative integer counts, budget >= 1 and "
                         f"solved_before <= solved_after <= num_train, got {counts}")  # fmt: skip
    flag1 = solved_after - solved_before > factor * num_train
    flag2 = solved_this_iteration > (1 + factor) * solved_before
    if (flag1 and flag2) or solved_before >= num_train:
        return budget
    remaining = num_train - solved_after
    return 2 * budget + (expansions_of_solved // remaining if remaining > 0 else 0)


def _search_all(problems, indices, cfg, evaluator, budget, rank, world, eps) -> list[tuple]:
    mine = indices[rank::world]
    out = []
    for i in mine:
        r = run_search(
            cfg.method,
            problems[i],
            evaluator,
            budget,
            batch_size=cfg.inference_batch,
            mix_epsilon=eps,
        )
        out.append((i, r.solved, r.actions, r.expansions))
    return [o for part in _gather(out, world) for o in part]


def _learn_chunk(net, wrapped, opt, data, cfg, seed: int, rank: int, world: int) -> float:
    """``grad_steps`` shuffled passes over the chunk's solution states."""
    dev = next(net.parameters()).device
    obs, acts, remaining, weights = (t.to(dev) for t in data)
    n = len(acts)
    gen = torch.Generator().manual_seed(seed)
    net.train()
    losses = []
    for _ in range(cfg.grad_steps):
        perm = torch.randperm(n, generator=gen)
        for start in range(0, n, cfg.learning_batch):
            batch = perm[start : start + cfg.learning_batch]
            idx = batch[rank::world].to(dev)
            if len(idx) == 0:
                idx = batch[:1].to(dev)  # a short last minibatch: every rank still steps
            logits, h = wrapped(obs[idx])
            ce = nn.functional.cross_entropy(logits, acts[idx], reduction="none")
            w = weights[idx]
            loss = (w * ce).sum() / w.sum() + cfg.heuristic_weight * nn.functional.mse_loss(
                h, remaining[idx]
            )
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return float(np.mean(losses)) if losses else math.nan


def bootstrap_train_authors(
    problems: list[Environment],
    validation: list[Environment],
    net: TwoHeadedConvNet,
    cfg: AuthorsBootstrapConfig = AuthorsBootstrapConfig(),
    *,
    progress: bool = True,
) -> BootstrapHistory:
    """Train ``net`` with the authors' bootstrap loop (``AuthorsBootstrapConfig``); return the
    history (``rows`` also hold the validation results of every iteration).

    Differences from the C++, by design: the loss is the same as ``bootstrap_train``'s (the
    expansion-weighted CE normalised by the minibatch's weight, plus the heuristic head's MSE),
    iterations are capped by ``max_iterations`` rather than a time budget, and the union-based
    stop rule runs one extra iteration as theirs does.
    """
    cfg.validate()
    _check_training(problems, net, validation)
    rank, world = _dist_info()
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    wrapped = nn.parallel.DistributedDataParallel(net) if world > 1 else net
    evaluator = NetEvaluator(net)
    eps = cfg.resolved_epsilon()
    history = BootstrapHistory(budget=cfg.initial_budget)
    order_gen = np.random.default_rng(cfg.seed)
    validation_solved: set[int] = set()
    need = math.floor(len(validation) * cfg.resolved_ratio())
    last = False
    step = 0
    while history.iteration < cfg.max_iterations:
        budget = min(history.budget, cfg.max_budget)
        solved_before = history.num_solved
        order = order_gen.permutation(len(problems)).tolist()
        desc = f"{METHOD_LABELS[cfg.method]} it{history.iteration} budget {budget}"
        learner = (net, wrapped, opt, evaluator, eps)
        it, step = _authors_pass(
            problems, order, history, cfg, learner, budget, step, rank, world,
            tqdm_disable=not progress or rank != 0, desc=desc,
        )  # fmt: skip
        solved_now, expansions_solved, spent, losses, capped, searched = it
        if cfg.max_expansions is not None:
            capped = history.cumulative_expansions >= cfg.max_expansions
        val = _search_all(
            validation, list(range(len(validation))), cfg, evaluator, budget, rank, world, eps
        )
        validation_solved |= {i for i, solved, _, _ in val if solved}
        history.rows.append(
            {
                "iteration": history.iteration,
                "budget": budget,
                "searched": searched,
                "solved_this_iteration": solved_now,
                "solved_total": history.num_solved,
                "expansions": spent,
                "cumulative_expansions": history.cumulative_expansions,
                "validation_solved": sum(s for _, s, _, _ in val),
                "validation_solved_ever": len(validation_solved),
                "loss": float(np.mean(losses)) if losses else None,
                "stopped_at_expansion_cap": capped,
            }
        )
        history.iteration += 1
        if last or capped:
            break
        if len(validation_solved) >= need:
            last = True  # one more iteration at the same budget, then stop
            continue
        history.budget = lts_cm_budget(
            budget,
            len(problems),
            solved_before,
            history.num_solved,
            solved_now,
            expansions_solved,
            cfg.bootstrap_factor,
        )
        if world > 1:
            dist.barrier()
    return history


def _authors_pass(
    problems, order, history, cfg, learner, budget, step, rank, world, *, tqdm_disable, desc
):
    """One pass of the authors' loop over ``order`` in chunks of ``problems_per_batch``: search
    each chunk at ``budget``, then learn from the paths it solved (only this chunk's, as the
    C++). Returns (solved, expansions of the solved, expansions spent, losses, stopped at the
    expansion cap, problems searched) and the next chunk's step number."""
    net, wrapped, opt, evaluator, eps = learner
    solved_now, expansions_solved, spent = 0, 0, 0
    chunks = [
        order[i : i + cfg.problems_per_batch] for i in range(0, len(order), cfg.problems_per_batch)
    ]
    losses = []
    capped, searched = False, 0
    for chunk in tqdm(chunks, desc=desc, disable=tqdm_disable, leave=False):
        if cfg.max_expansions is not None and (history.cumulative_expansions >= cfg.max_expansions):
            capped = True
            break
        results = _search_all(problems, chunk, cfg, evaluator, budget, rank, world, eps)
        searched += len(results)
        fresh = {}
        for i, solved, actions, expansions in sorted(results):
            spent += expansions
            history.cumulative_expansions += expansions
            if solved:
                solved_now += 1
                expansions_solved += expansions
                history.solved[i] = {"actions": actions, "expansions": expansions}
                fresh[i] = history.solved[i]
            history.curve.append((history.cumulative_expansions, history.num_solved))
        if fresh:  # only this chunk's paths, as the C++ (no replay of older solutions)
            data = _training_set(problems, fresh)
            seed = cfg.seed * 100_003 + step
            losses.append(_learn_chunk(net, wrapped, opt, data, cfg, seed, rank, world))
        step += 1
    return (solved_now, expansions_solved, spent, losses, capped, searched), step
