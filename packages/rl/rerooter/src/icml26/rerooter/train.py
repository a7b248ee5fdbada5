"""``icml26-rerooter train`` (bootstrap on Boxoban, checkpoints, resume, torchrun) and ``evaluate``.

Under ``torchrun --nproc-per-node N -m icml26.rerooter train ...`` the process group is initialised
from the environment (gloo when the network runs on the CPU, NCCL on CUDA, one GPU per local rank)
and ``bootstrap_train`` shards the searches and averages gradients with DDP.
"""

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.distributed as dist

from icml26.rerooter.bootstrap import (
    METHOD_LABELS,
    BootstrapConfig,
    Method,
    bootstrap_train,
    run_search,
)
from icml26.rerooter.evaluators import NetEvaluator
from icml26.rerooter.model import ConvNetConfig, TwoHeadedConvNet
from icml26.rerooter.sokoban import bundled_levels, load_boxoban
from icml26.testing.command import DeviceOption
from icml26.testing.results import resolve_device


@dataclass(frozen=True)
class TrainConfig(DeviceOption):
    """Bootstrap-train a two-headed network on Boxoban levels; checkpoints go to ``out``."""

    out: Path
    """Checkpoint folder (model + optimizer safetensors, config.json, bootstrap_state.json)."""
    method: Method = "sqrt_lts_lh"
    """Search used during training."""
    levels_file: Path | None = None
    """Boxoban training file (default: the bundled unfiltered train/000)."""
    levels: int = 200
    """Number of levels (from the start of the file)."""
    initial_budget: int = 1000
    """First expansion budget."""
    max_budget: int = 32000
    """Budget cap."""
    iterations: int = 6
    """Bootstrap iterations."""
    train_steps: int = 200
    """Gradient steps per iteration."""
    blocks: int = 0
    """Residual blocks of a new network."""
    seed: int = 0
    """Initial weights and minibatch order."""
    resume: bool = False
    """Continue from the checkpoint in ``out``."""


@dataclass(frozen=True)
class EvaluateConfig(DeviceOption):
    """Search Boxoban levels with a trained network and report problems solved."""

    checkpoint: Path
    """Folder written by ``train`` (or TwoHeadedConvNet.save_pretrained)."""
    method: Method = "sqrt_lts_lh"
    """Search to run."""
    levels_file: Path | None = None
    """Boxoban file (default: the bundled unfiltered test/000)."""
    levels: int = 100
    """Number of levels from the start of the file."""
    budget: int = 4000
    """Expansion budget per level."""


def _maybe_init_distributed(device: str) -> tuple[bool, str]:
    """Join the torchrun process group if there is one; (started here, this rank's device)."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized():
        if device.startswith("cuda:"):
            raise ValueError(f"--device {device}: under torchrun each rank takes its own GPU")
        if device == "cuda":  # one GPU per local rank
            device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
        if device.startswith("cuda"):
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
        return True, device
    return False, device


def _take(path: Path | None, split: str, n: int):
    levels = load_boxoban(path) if path is not None else bundled_levels(split)
    if not 1 <= n <= len(levels):
        raise ValueError(f"levels must be in [1, {len(levels)}], got {n}")
    return levels[:n]


def run_train(cfg: TrainConfig) -> None:
    device = resolve_device(cfg.device)
    bcfg = BootstrapConfig(
        method=cfg.method,
        initial_budget=cfg.initial_budget,
        max_budget=cfg.max_budget,
        iterations=cfg.iterations,
        train_steps=cfg.train_steps,
        seed=cfg.seed,
    )
    bcfg.validate()
    problems = _take(cfg.levels_file, "train", cfg.levels)
    started, device = _maybe_init_distributed(device)
    try:
        if cfg.resume:
            net = TwoHeadedConvNet.from_pretrained(cfg.out)
        else:
            torch.manual_seed(cfg.seed)
            net = TwoHeadedConvNet(ConvNetConfig(blocks=cfg.blocks))
        net = net.to(device)
        hist = bootstrap_train(problems, net, bcfg, checkpoint_dir=cfg.out, resume=cfg.resume)
        if not dist.is_initialized() or dist.get_rank() == 0:
            for row in hist.rows:
                print(json.dumps(row))
            print(
                f"solved {hist.num_solved}/{len(problems)} with {hist.cumulative_expansions} "
                f"expansions on {device}; checkpoint in {cfg.out}"
            )
    finally:
        if started:
            dist.destroy_process_group()


def run_evaluate(cfg: EvaluateConfig) -> dict:
    device = resolve_device(cfg.device)
    if cfg.budget < 1:
        raise ValueError(f"budget must be >= 1, got {cfg.budget}")
    net = TwoHeadedConvNet.from_pretrained(cfg.checkpoint).to(device)
    levels = _take(cfg.levels_file, "test", cfg.levels)
    ev = NetEvaluator(net)
    solved = expansions = 0
    for env in levels:
        r = run_search(cfg.method, env, ev, cfg.budget)
        solved += r.solved
        expansions += r.expansions
    out = {
        "method": cfg.method,
        "solved": solved,
        "levels": len(levels),
        "expansions": expansions,
        **asdict(cfg),
        "device": str(next(net.parameters()).device),  # the one that ran, not the flag
    }
    print(
        f"{METHOD_LABELS[cfg.method]}: solved {solved}/{len(levels)} at budget {cfg.budget} "
        f"({expansions} expansions)"
    )
    return out
