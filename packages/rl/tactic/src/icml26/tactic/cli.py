"""Command line: ``icml26-tactic demo [--quick] [--env sumo]``, ``train``, ``evaluate``, ``bench``
(also ``python -m icml26.tactic``). ``train`` runs unchanged under ``torchrun``: every rank plays
its own environments and gradients are averaged across ranks."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from icml26.tactic.baselines import ARMS
from icml26.tactic.bench import BenchConfig, run_bench
from icml26.tactic.demo import run_demo
from icml26.tactic.study import DemoConfig
from icml26.testing.command import DeviceOption, dispatch


@dataclass(frozen=True)
class TrainCli(DeviceOption):
    """Train one arm on the shifting-dependency game; checkpoints (safetensors + JSON) go to
    ``--out`` every ``--save-every`` steps and at the end."""

    arm: str = "TACTIC"
    """One of: TACTIC, CASEC, DCG, QMIX, VDN and the ablations (see the README)."""
    out: Path = Path("runs/tactic/train")
    steps: int = 40_000
    num_envs: int = 8
    n_agents: int = 4
    n_types: int = 3
    sparse: bool = False
    """Pay the episode's total at its end only."""
    seed: int = 0
    save_every: int = 10_000
    resume: bool = False
    """Continue the run in --out from its checkpoint."""


@dataclass(frozen=True)
class EvaluateCli:
    """Greedy test episodes of a trained checkpoint on the shifting-dependency game."""

    checkpoint: Path = Path("runs/tactic/train")
    episodes: int = 256
    n_agents: int = 4
    n_types: int = 3
    sparse: bool = False
    seed: int = 2_000_000


def _game_factory(n_agents: int, n_types: int, sparse: bool):
    from icml26.tactic.env import GameConfig, ShiftingDependencyGame

    game = GameConfig(n_agents=n_agents, n_types=n_types, sparse=sparse)
    game.check()

    def make_env(num_envs, seed):
        return ShiftingDependencyGame(game, num_envs, seed)

    return make_env


def train_cli(cfg: TrainCli) -> None:
    import torch
    import torch.distributed as dist

    from icml26.tactic.baselines import arm_config
    from icml26.tactic.train import TrainConfig, train
    from icml26.testing.results import resolve_device

    if cfg.arm not in ARMS:
        raise ValueError(f"unknown --arm {cfg.arm!r}; choose from {list(ARMS)}")
    if not cfg.resume and (cfg.out / "state.json").exists():
        raise ValueError(f"{cfg.out} already holds a run: pass --resume or choose another --out")
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed and not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    device = resolve_device(cfg.device)
    if distributed and device.startswith("cuda"):
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
        torch.cuda.set_device(device)
    tcfg = TrainConfig(steps=cfg.steps, num_envs=cfg.num_envs, seed=cfg.seed,
                       save_every=cfg.save_every, n_classes=cfg.n_types, device=device)  # fmt: skip
    res = train(_game_factory(cfg.n_agents, cfg.n_types, cfg.sparse), arm_config(cfg.arm), tcfg,
                checkpoint=cfg.out, resume=cfg.resume, progress=True, desc=cfg.arm)  # fmt: skip
    if not distributed or dist.get_rank() == 0:
        final = {k: v for k, v in res.final.items() if isinstance(v, float)}
        print(json.dumps({"arm": cfg.arm, "steps": res.steps, **final, **res.abstraction},
                         indent=1))  # fmt: skip
        print(f"checkpoint: {cfg.out}")


def evaluate_cli(cfg: EvaluateCli) -> None:
    from icml26.tactic.train import evaluate_checkpoint

    if cfg.episodes < 1:
        raise ValueError("--episodes must be >= 1")
    m = evaluate_checkpoint(_game_factory(cfg.n_agents, cfg.n_types, cfg.sparse), cfg.checkpoint,
                            cfg.episodes, cfg.seed)  # fmt: skip
    print(json.dumps({k: v for k, v in m.items() if isinstance(v, float)}, indent=1))


DESCRIPTION = "TACTIC: trajectory-abstraction-conditioned sparse coordination graphs."
COMMANDS = {
    "demo": (DemoConfig, run_demo),
    "train": (TrainCli, train_cli),
    "evaluate": (EvaluateCli, evaluate_cli),
    "bench": (BenchConfig, run_bench),
}
ERRORS = (ValueError, TypeError, OSError, ImportError)
"""The exceptions that end as one line and exit 2 (a mistake the user can fix)."""


def main(argv: list[str] | None = None) -> int:
    return dispatch("icml26-tactic", DESCRIPTION, COMMANDS, argv, errors=ERRORS)
