"""On-policy RL of the ProteinMPNN policy: FIDIA (max@N), GRPO and mean-reward REINFORCE.

Every objective runs the same loop and budget; only the per-sample weights differ
(:func:`icml26.fidia.estimators.policy_weights`). Each step, for each backbone: draw n sequences
with their decoding orders (no gradient), score them with the reward, re-score them under their
orders with gradients, and descend

    loss = -(1/n) sum_i w~_i log pi(x_i)  +  beta * (1/n) sum_i KL_i,   w~ = w / std(w)      (5)

The weights of each group are rescaled to unit standard deviation (GRPO's own normalisation,
applied to every objective), so ``beta`` and the learning rate mean the same for each; the
rescaling is positive and per group, so FIDIA's direction within a group is unchanged. KL_i is the
per-position KL to the frozen reference summed over x_i's designed positions; its gradient is
the pathwise part only (how the visited contexts depend on theta is dropped, as in the per-token
KL penalties of GRPO / PPO implementations). One update per batch keeps it on-policy, so no
importance ratio or clipping is needed.

Under ``torchrun`` the backbones are split across ranks; each rank adds its backbones' share of
the mean loss over *all* backbones and ``all_reduce`` sums the gradients (gloo on CPU, NCCL on
GPU), so an uneven split weighs every backbone equally and every rank holds the same weights.
Checkpoints are safetensors: the trained layers, the Adam state and each rank's sampler state,
in one folder per step published by ``state.json``; resume is exact.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import torch
import torch.distributed as dist

from icml26.fidia.data import Backbone
from icml26.fidia.estimators import passn_weights, policy_weights
from icml26.fidia.policy import MPNNPolicy, atomic_save
from icml26.fidia.reward import CompositeReward
from icml26.testing.checks import integer, number


@dataclass(frozen=True)
class Task:
    """One design problem: a backbone, its fixed motif, its reward and (optionally) its own
    sampling temperature (default: the run's)."""

    backbone: Backbone
    reward: CompositeReward
    fixed: tuple[int, ...] = ()
    temperature: float | None = None

    def __post_init__(self):
        if not isinstance(self.backbone, Backbone):
            raise TypeError(f"Task.backbone must be a Backbone, got {type(self.backbone).__name__}")
        if not callable(self.reward):
            raise TypeError(f"Task.reward must be callable (a CompositeReward), not {self.reward}")
        L = len(self.backbone)
        bad = [i for i in self.fixed if not 0 <= int(i) < L]
        if bad:
            raise ValueError(f"Task.fixed positions {bad} lie outside [0, {L})")
        if self.temperature is not None and not self.temperature > 0:
            raise ValueError(f"Task.temperature must be > 0, got {self.temperature}")


@dataclass(frozen=True)
class TrainConfig:
    """One RL run."""

    objective: Literal["maxn", "passn", "grpo", "mean"] = "maxn"
    """maxn: FIDIA's best-of-N objective on the reward; passn: its binary-success variant (pass@N
    on the reward's ``success``); grpo: group-normalised mean reward; mean: RLOO."""
    N: int = 8
    """The N of best-of-N (used by maxn; the others ignore it)."""
    n: int = 32
    """Samples per backbone per step (the group size)."""
    steps: int = 20
    lr: float = 3e-4
    beta: float = 0.01
    """KL weight to the frozen reference."""
    temperature: float = 0.3
    """Sampling temperature; the policy is trained and used at it."""
    seed: int = 0
    progress: bool = False

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        if self.objective not in ("maxn", "passn", "grpo", "mean"):
            raise ValueError(f"objective must be maxn, passn, grpo or mean, got "
                             f"{self.objective!r}")  # fmt: skip
        integer("N", self.N, low=1)
        if integer("n", self.n, low=2) < self.N:  # each group of n draws yields N-subsets
            raise ValueError(f"n must be an integer >= max(N, 2) = {self.N}, got {self.n}")
        integer("steps", self.steps, low=0)
        number("lr", self.lr, above=0)
        number("beta", self.beta, low=0)
        number("temperature", self.temperature, above=0)


@dataclass
class TrainResult:
    history: list[dict] = field(default_factory=list)
    """Per step: mean reward, success fraction, KL, loss (averaged over this rank's backbones)."""


def _rank_world() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _run_identity(policy: MPNNPolicy, tasks: Sequence[Task], world: int) -> dict:
    """What a resumed run must share with the saved one besides the config."""
    return {"trainable_layers": policy.trainable_layers, "world_size": world,
            "backbones": [t.backbone.fingerprint() for t in tasks],
            "weights": [policy.meta.get("weights"), policy.meta.get("kind")]}  # fmt: skip


def _save_state(directory: Path, policy, opt, generator, step, history, cfg, run, rank, world):
    """Every file of a step goes to its own folder; ``state.json``, written last and atomically,
    names the folder. A crash while saving leaves the previous step's state intact."""
    folder = directory / f"step{step:06d}"
    folder.mkdir(parents=True, exist_ok=True)
    atomic_save({"state": generator.get_state()}, folder / f"rng.rank{rank}.safetensors")
    if rank == 0:
        tensors = {}
        for i, p in enumerate(policy.trainable_parameters()):
            st = opt.state.get(p, {})
            for k in ("exp_avg", "exp_avg_sq"):
                if k in st:
                    tensors[f"{i}.{k}"] = st[k]
            if "step" in st:
                tensors[f"{i}.step"] = torch.as_tensor(st["step"]).reshape(1).float()
        atomic_save(policy.trainable_state_dict(), folder / "policy.safetensors")
        if tensors:
            atomic_save(tensors, folder / "optimizer.safetensors")
    if world > 1:
        dist.barrier()  # every rank's sampler state is on disk before the step is published
    if rank == 0:
        tmp = directory / "state.json.tmp"
        tmp.write_text(json.dumps({"step": step, "folder": folder.name, "history": history,
                                   "config": asdict(cfg), "run": run}))  # fmt: skip
        tmp.replace(directory / "state.json")
        for old in directory.glob("step*"):
            if old.is_dir() and old.name != folder.name:
                shutil.rmtree(old, ignore_errors=True)


def _load_state(directory: Path, policy, opt, generator, cfg, run, rank):
    from safetensors.torch import load_file

    meta_path = directory / "state.json"
    if not meta_path.is_file():
        raise ValueError(f"cannot resume: no state.json in {directory}")
    meta = json.loads(meta_path.read_text())
    loose = ("steps", "progress")  # a resumed run may go further, with or without a bar
    if {k: v for k, v in meta["config"].items() if k not in loose} != {
        k: v for k, v in asdict(cfg).items() if k not in loose
    }:
        raise ValueError(f"cannot resume {directory}: it was trained with another config "
                         f"({meta['config']})")  # fmt: skip
    if meta["run"] != json.loads(json.dumps(run)):
        raise ValueError(f"cannot resume {directory}: it was trained with other backbones, "
                         f"trainable layers, weights or ranks ({meta['run']})")  # fmt: skip
    folder = directory / meta["folder"]
    state = load_file(folder / "policy.safetensors")
    expected = policy.trainable_state_dict()
    if {k: tuple(v.shape) for k, v in state.items()} != {
        k: tuple(v.shape) for k, v in expected.items()
    }:
        raise ValueError(f"cannot resume: {folder}/policy.safetensors holds other tensors")
    policy.mpnn.load_state_dict(state, strict=False)
    opt_path = folder / "optimizer.safetensors"
    if opt_path.is_file():
        saved = load_file(opt_path)
        for i, p in enumerate(policy.trainable_parameters()):
            if f"{i}.exp_avg" in saved:
                opt.state[p] = {"step": saved[f"{i}.step"][0].clone(),
                                "exp_avg": saved[f"{i}.exp_avg"].to(p.device),
                                "exp_avg_sq": saved[f"{i}.exp_avg_sq"].to(p.device)}  # fmt: skip
    rng = folder / f"rng.rank{rank}.safetensors"
    generator.set_state(load_file(rng)["state"])
    return int(meta["step"]), list(meta["history"])


def train(
    policy: MPNNPolicy,
    tasks: Sequence[Task],
    cfg: TrainConfig,
    *,
    checkpoint_dir: str | Path | None = None,
    resume: bool = False,
) -> TrainResult:
    """Fine-tune ``policy`` on ``tasks`` with the objective of ``cfg`` (see the module doc)."""
    if not isinstance(policy, MPNNPolicy):
        raise TypeError(f"policy must be an MPNNPolicy, got {type(policy).__name__}")
    cfg.check()
    if not tasks:
        raise ValueError("tasks is empty")
    if not all(isinstance(t, Task) for t in tasks):
        raise TypeError("tasks must be Task objects (a backbone, its motif and its reward)")
    rank, world = _rank_world()
    if len(tasks) < world:  # checked on every rank, so none waits in all_reduce for the others
        raise ValueError(f"{len(tasks)} backbones cannot be split over {world} ranks")
    mine = list(tasks)[rank::world]
    run = _run_identity(policy, tasks, world)
    params = policy.trainable_parameters()  # never empty: the output head always trains
    opt = torch.optim.Adam(params, lr=cfg.lr)
    generator = torch.Generator().manual_seed(cfg.seed * 1000 + rank)
    torch.manual_seed(cfg.seed)
    start, history = 0, []
    ckpt = Path(checkpoint_dir) if checkpoint_dir is not None else None
    if resume:
        if ckpt is None:
            raise ValueError("resume needs a checkpoint_dir")
        start, history = _load_state(ckpt, policy, opt, generator, cfg, run, rank)
    steps = range(start, cfg.steps)
    if cfg.progress and rank == 0:
        from tqdm.auto import tqdm

        steps = tqdm(steps, desc=f"{cfg.objective} seed {cfg.seed}", leave=False)
    for step in steps:
        opt.zero_grad(set_to_none=True)
        stats = {"reward": 0.0, "success": 0.0, "kl": 0.0, "loss": 0.0}
        for task in mine:
            T = task.temperature if task.temperature is not None else cfg.temperature
            samples = policy.sample(task.backbone, cfg.n, T, task.fixed, generator)
            out = task.reward(samples.seqs)
            if cfg.objective == "passn":  # pass@N: the max@N weights of 0/1 success
                w = passn_weights(out.success.double(), cfg.N) * (cfg.n / cfg.N)
            else:
                w = policy_weights(out.reward, cfg.objective, cfg.N)
            w = (w / (w.std() + 1e-8)).float().to(policy.device)  # unit scale for every arm
            scores = policy.score(task.backbone, samples.seqs, samples.orders, T, task.fixed)
            loss = -(w * scores.log_probs).mean() + cfg.beta * scores.kl.mean()  # eq. 5
            # the mean over *all* backbones: each rank adds its share, all_reduce sums them
            (loss / len(tasks)).backward()
            stats["reward"] += float(out.reward.mean()) / len(mine)
            stats["success"] += float(out.success.double().mean()) / len(mine)
            stats["kl"] += float(scores.kl.detach().mean()) / len(mine)
            stats["loss"] += float(loss.detach()) / len(mine)
        if world > 1:
            for p in params:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                dist.all_reduce(p.grad)
        opt.step()
        history.append({"step": step + 1, **{k: round(v, 6) for k, v in stats.items()}})
        if ckpt is not None:
            _save_state(ckpt, policy, opt, generator, step + 1, history, cfg, run, rank, world)
    return TrainResult(history)
