"""Command line: ``icml26-lrpo demo [--quick]``, ``pretrain``, ``train``, ``evaluate``
(also ``python -m icml26.lrpo``). ``train`` runs unchanged under ``torchrun`` (each rank draws
its own questions; DDP averages the gradients; the router sees every rank's rewards)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from icml26.lrpo.bench import BenchConfig, run_bench
from icml26.lrpo.demo import run_demo
from icml26.lrpo.study import DemoConfig
from icml26.testing.command import DeviceOption, dispatch


@dataclass(frozen=True)
class PretrainCli(DeviceOption):
    """Pretrain the character GPT on the task (unequal data per language) and save it."""

    out: Path = Path("runs/lrpo/pretrained")
    steps: int = 600
    batch: int = 64
    lr: float = 3e-3
    seed: int = 0


@dataclass(frozen=True)
class TrainCli(DeviceOption):
    """GRPO with multilingual groups from a pretrained character GPT; saves policy + router."""

    init: Path = Path("runs/lrpo/pretrained")
    """Folder written by ``pretrain`` (the starting policy and KL reference)."""
    out: Path = Path("runs/lrpo/train")
    router: Literal["lrpo", "ucb", "exp3", "uniform", "english", "original"] = "lrpo"
    steps: int = 100
    questions_per_step: int = 8
    """Questions per step and rank."""
    G: int = 8
    orig_min: int = 2
    lr: float = 3e-5
    beta: float = 0.001
    seed: int = 0
    save_every: int = 10
    resume: bool = False
    """Continue from the checkpoint in --out."""


@dataclass(frozen=True)
class EvaluateCli(DeviceOption):
    """Held-out accuracy of a policy, each question answered greedily in its own language."""

    checkpoint: Path = Path("runs/lrpo/train/policy")
    """A policy folder (``train``'s ``<out>/policy`` or ``pretrain``'s ``<out>``)."""
    test_per_cell: int = 20


def run_pretrain(cfg: PretrainCli) -> Path:
    import torch

    from icml26.lrpo.data import split_items
    from icml26.lrpo.policy import CharGPT
    from icml26.lrpo.train import PretrainConfig, pretrain
    from icml26.testing.results import resolve_device

    pcfg = PretrainConfig(steps=cfg.steps, batch=cfg.batch, lr=cfg.lr, seed=cfg.seed)
    pcfg.check()
    torch.manual_seed(cfg.seed)
    policy = CharGPT().to(resolve_device(cfg.device))
    losses = pretrain(policy, split_items(), pcfg, progress=True)
    policy.save_pretrained(cfg.out, meta={"pretrain_steps": cfg.steps, "seed": cfg.seed})
    print(
        f"saved to {cfg.out}: {policy.num_parameters():,} parameters, final loss {losses[-1]:.3f}"
    )
    return cfg.out


def run_train(cfg: TrainCli) -> Path:
    import torch.distributed as dist

    from icml26.lrpo.data import split_items
    from icml26.lrpo.policy import CharGPT
    from icml26.lrpo.train import GRPOConfig, train_grpo
    from icml26.testing.results import resolve_device

    gcfg = GRPOConfig(router=cfg.router, steps=cfg.steps, questions_per_step=cfg.questions_per_step,
                      G=cfg.G, orig_min=cfg.orig_min, lr=cfg.lr, beta=cfg.beta, seed=cfg.seed,
                      save_every=cfg.save_every)  # fmt: skip
    gcfg.check()
    device = resolve_device(cfg.device)
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
        if device.startswith("cuda"):
            import torch

            device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
            torch.cuda.set_device(device)  # NCCL collectives use the current device
    policy = CharGPT.from_pretrained(cfg.init, device)
    result = train_grpo(policy, split_items(), gcfg, checkpoint_dir=cfg.out, resume=cfg.resume,
                        progress=True)  # fmt: skip
    if not dist.is_initialized() or dist.get_rank() == 0:
        last = result.history[-1] if result.history else {}
        print(
            f"saved to {cfg.out}: {len(result.history)} steps; last step reward "
            f"{last.get('reward', 0.0):.3f}; router state in {cfg.out / 'state.json'}"
        )
    return cfg.out


def run_evaluate(cfg: EvaluateCli) -> dict:
    from icml26.lrpo.data import heldout_questions, split_items
    from icml26.lrpo.policy import CharGPT
    from icml26.lrpo.train import evaluate
    from icml26.testing.results import resolve_device

    if cfg.test_per_cell < 1:
        raise ValueError(f"--test-per-cell must be >= 1, got {cfg.test_per_cell}")
    policy = CharGPT.from_pretrained(cfg.checkpoint, resolve_device(cfg.device))
    report = evaluate(policy, heldout_questions(split_items(), per_cell=cfg.test_per_cell))
    print(json.dumps(report, indent=2))
    return report


DESCRIPTION = "LRPO: language-routed policy optimisation with a bandit language router."
COMMANDS = {
    "demo": (DemoConfig, run_demo),
    "pretrain": (PretrainCli, run_pretrain),
    "train": (TrainCli, run_train),
    "evaluate": (EvaluateCli, run_evaluate),
    "bench": (BenchConfig, run_bench),
}


def main(argv: list[str] | None = None) -> int:
    return dispatch("icml26-lrpo", DESCRIPTION, COMMANDS, argv)
