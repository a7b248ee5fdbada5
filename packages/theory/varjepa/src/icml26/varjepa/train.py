"""Pretraining loop for T-JEPA and Var-T-JEPA: same data, masks, optimiser and budget for both.

Runs unchanged under ``torchrun``: when a process group is initialised, the model is wrapped in
DistributedDataParallel, each rank draws its batches from its own shard of the rows and gradients
are averaged. Checkpoints are safetensors (model, optimiser, sampler state) plus JSON, written
atomically; ``resume=True`` continues from the folder's last checkpoint.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist
from safetensors.torch import load_file, save_file
from torch import nn
from tqdm.auto import tqdm

from icml26.testing.files import atomic_write
from icml26.varjepa.evaluate import check_model_rows
from icml26.varjepa.masks import sample_masks
from icml26.varjepa.model import TJEPA, VarTJEPA
from icml26.varjepa.tokenizer import EncodedRows


@dataclass(frozen=True)
class TrainConfig:
    """One pretraining run."""

    steps: int = 600
    """Optimiser steps (the budget; the same for every model compared)."""
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 1e-4
    ema: tuple[float, float] = (0.996, 1.0)
    """T-JEPA's target-encoder momentum, linearly from the first to the second value."""
    context_share: tuple[float, float] = (0.35, 0.7)
    target_share: tuple[float, float] = (0.15, 0.4)
    seed: int = 0
    log_every: int = 50
    """Steps between history entries (loss terms, and effective rank when monitored)."""
    checkpoint_every: int = 0
    """Steps between checkpoints in ``checkpoint_dir`` (0: only at the end)."""
    grad_clip: float = 1.0
    progress: bool = True

    def __post_init__(self):
        if self.steps < 1 or self.batch_size < 1:
            raise ValueError(
                f"steps and batch_size must be >= 1, got {self.steps}, {self.batch_size}"
            )
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if not 0 <= self.ema[0] <= self.ema[1] <= 1:
            raise ValueError(f"ema must be 0 <= start <= end <= 1, got {self.ema}")


def save_checkpoint(
    directory: Path, model: nn.Module, opt: torch.optim.Optimizer, step: int, gen: torch.Generator
):
    """Model via ``save_pretrained``; optimiser tensors and the batch sampler's state in
    ``training.safetensors``; step and hyperparameters in ``training.json``."""
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    state = opt.state_dict()
    tensors = {"generator": gen.get_state()}
    for i, per_param in state["state"].items():
        for key, value in per_param.items():
            tensors[f"{i}.{key}"] = torch.as_tensor(value).detach().clone().cpu()
    atomic_write(directory / "training.safetensors", lambda p: save_file(tensors, p))
    meta = {"step": step, "param_groups": state["param_groups"]}
    atomic_write(directory / "training.json", lambda p: Path(p).write_text(json.dumps(meta)))


def load_checkpoint(
    directory: Path, model: nn.Module, opt: torch.optim.Optimizer, gen: torch.Generator
) -> int:
    """Restore what ``save_checkpoint`` wrote; return the step to continue from."""
    from icml26.varjepa.model import load_pretrained

    saved = load_pretrained(directory)
    if type(saved) is not type(model):
        raise ValueError(f"{directory} holds a {saved.kind} checkpoint, not a {model.kind}")
    model.load_state_dict(saved.state_dict())
    meta = json.loads((directory / "training.json").read_text())
    tensors = load_file(directory / "training.safetensors")
    gen.set_state(tensors.pop("generator"))
    per_param: dict[int, dict] = {}
    for name, value in tensors.items():
        i, key = name.split(".", 1)
        per_param.setdefault(int(i), {})[key] = value
    opt.load_state_dict({"state": per_param, "param_groups": meta["param_groups"]})
    return int(meta["step"])


class _Forward(nn.Module):
    """``forward = model.loss`` so DistributedDataParallel sees the loss computation."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, rows, masks):
        return self.model.loss(rows, masks)


def pretrain(
    model: TJEPA | VarTJEPA,
    rows: EncodedRows,
    cfg: TrainConfig = TrainConfig(),
    *,
    checkpoint_dir: str | os.PathLike | None = None,
    resume: bool = False,
    monitor: Callable[[nn.Module], dict] | None = None,
) -> list[dict]:
    """Pretrain ``model`` on ``rows`` (unlabelled); returns the history (one dict per
    ``log_every`` steps, with ``monitor(model)``'s values when given)."""
    check_model_rows(model, rows)
    if len(rows) < 2:
        raise ValueError(f"pretraining needs at least 2 rows, got {len(rows)}")
    distributed = dist.is_available() and dist.is_initialized()
    rank, world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
    device = next(model.parameters()).device
    shard = torch.arange(rank, len(rows), world)
    rows = rows[shard].to(device)
    gen = torch.Generator().manual_seed(cfg.seed * 1000 + rank)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    start = 0
    ckpt = Path(checkpoint_dir) if checkpoint_dir is not None else None
    if resume and ckpt is not None and (ckpt / "training.json").is_file():
        start = load_checkpoint(ckpt, model, opt, gen)
    net = _Forward(model)
    if distributed:
        net = nn.parallel.DistributedDataParallel(net, broadcast_buffers=False)
    history = []
    bar = tqdm(
        range(start, cfg.steps),
        desc=f"pretrain {model.kind}",
        disable=not cfg.progress or rank != 0,
        leave=False,
    )
    model.train()
    for step in bar:
        idx = torch.randint(len(rows), (min(cfg.batch_size, len(rows)),), generator=gen)
        masks = sample_masks(
            len(idx), model.n_features, gen, cfg.context_share, cfg.target_share
        ).to(device)
        loss, terms = net(rows[idx.to(device)], masks)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"{model.kind}: loss is {loss.item()} at step {step}")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        opt.step()
        frac = step / max(cfg.steps - 1, 1)
        model.update_target(cfg.ema[0] + frac * (cfg.ema[1] - cfg.ema[0]))
        done = step + 1
        if done % cfg.log_every == 0 or done == cfg.steps:
            entry = {"step": done, **{k: float(v) for k, v in terms.items()}}
            if monitor is not None:
                model.eval()
                entry.update(monitor(model))
                model.train()
            history.append(entry)
            bar.set_postfix(loss=f"{entry['loss']:.3f}")
        if (
            ckpt is not None
            and rank == 0
            and (done == cfg.steps or (cfg.checkpoint_every and done % cfg.checkpoint_every == 0))
        ):
            save_checkpoint(ckpt, model, opt, done, gen)
    model.eval()
    return history
