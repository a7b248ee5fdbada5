"""One training loop for FAHNES and the flat baseline: AdamW on the model's ``loss`` over random
batches of its examples, early stopping on a validation loss (best weights kept), safetensors
checkpoints with resume, and ``torchrun`` (DDP over examples: each rank draws its own batches,
gradients are averaged)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from safetensors.torch import load_file
from tqdm.auto import tqdm

from icml26.testing.checks import integer

__all__ = ["FitConfig", "fit"]


@dataclass(frozen=True)
class FitConfig:
    """Optimisation budget (identical for the method and its baseline)."""

    steps: int = 1500
    """Gradient steps."""
    batch: int = 16
    """Examples per step (per rank)."""
    lr: float = 2e-3
    """AdamW learning rate (cosine decay to 10%)."""
    seed: int = 0
    eval_every: int = 100
    """Steps between validation losses (0: no early stopping, last weights kept)."""
    save_every: int = 0
    """Steps between checkpoints (0: none)."""

    def __post_init__(self) -> None:
        for name, minimum in (("steps", 1), ("batch", 1), ("eval_every", 0), ("save_every", 0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
                raise ValueError(f"FitConfig.{name} must be an int >= {minimum}, got {v!r}")
        if not self.lr > 0:
            raise ValueError(f"FitConfig.lr must be > 0, got {self.lr!r}")


def _val_loss(model, examples, seed: int) -> float:
    """Mean loss over the validation examples at fixed noise draws (comparable across steps)."""
    gen = torch.Generator().manual_seed(seed)
    model.eval()
    with torch.no_grad():
        losses = [
            float(model.loss(examples[i : i + 32], gen)["loss"])
            for i in range(0, len(examples), 32)
        ]
    model.train()
    return float(np.mean(losses))


def fit(
    model,
    examples: list[dict],
    cfg: FitConfig,
    val: list[dict] | None = None,
    checkpoint: Path | None = None,
    resume: bool = False,
    progress: bool = True,
    desc: str = "train",
) -> dict:
    """Train ``model`` in place; returns {"steps", "best_step", "best_val", "last_loss"}."""
    integer("steps", cfg.steps, low=1)
    integer("batch", cfg.batch, low=1)
    if not examples:
        raise ValueError("examples must hold at least one training example, got none")
    rank = dist.get_rank() if dist.is_initialized() else 0
    net = model
    if dist.is_initialized() and dist.get_world_size() > 1:
        # some heads see no target in a batch (no sibling group to split, say)
        net = torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: 0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * min(s, cfg.steps) / cfg.steps))
    )
    start, best, best_step, best_state = 0, float("inf"), 0, None
    if resume and checkpoint is not None and (checkpoint / "state.json").is_file():
        state = json.loads((checkpoint / "state.json").read_text())
        model.load_state_dict(load_file(checkpoint / "model.safetensors"))
        opt.load_state_dict(_load_optimizer(checkpoint))
        sched.load_state_dict(state["scheduler"])
        start, best, best_step = state["step"], state["best_val"], state["best_step"]
        if (checkpoint / "best.safetensors").is_file():
            best_state = load_file(checkpoint / "best.safetensors")
    rng = np.random.default_rng([cfg.seed, rank, start])
    gen = torch.Generator().manual_seed(cfg.seed * 1000 + rank + start)
    last = float("nan")
    bar = tqdm(range(start, cfg.steps), desc=desc, disable=not progress or rank != 0, leave=False)
    for step in bar:
        idx = rng.integers(len(examples), size=cfg.batch)
        out = net([examples[i] for i in idx], gen)  # forward = the model's loss
        opt.zero_grad(set_to_none=True)
        out["loss"].backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        last = float(out["loss"].detach())
        bar.set_postfix(loss=f"{last:.3f}")
        done = step + 1
        if val and cfg.eval_every and (done % cfg.eval_every == 0 or done == cfg.steps):
            v = _val_loss(model, val, cfg.seed + 7)
            if v < best:
                best, best_step = v, done
                best_state = {k: t.detach().clone() for k, t in model.state_dict().items()}
        if checkpoint is not None and rank == 0 and cfg.save_every and done % cfg.save_every == 0:
            _save(checkpoint, model, opt, sched, done, best, best_step, best_state)
    if best_state is not None:
        model.load_state_dict(best_state)
    return {
        "steps": cfg.steps,
        "best_step": best_step or cfg.steps,
        "best_val": best if best_state is not None else None,
        "last_loss": last,
    }


def _save(path: Path, model, opt, sched, step, best, best_step, best_state) -> None:
    """Write the checkpoint into a temporary folder and swap it into place."""
    from icml26.fahnes.model import save_folder

    sd = opt.state_dict()
    files: dict[str, object] = {
        "model.safetensors": model.state_dict(),
        "optimizer.safetensors": {
            f"{i}.{k}": v.reshape(-1) if v.dim() == 0 else v
            for i, st in sd["state"].items()
            for k, v in st.items()
        },
        "optimizer.json": json.dumps({"param_groups": sd["param_groups"]}),
        "state.json": json.dumps(
            {
                "step": step,
                "best_val": best,
                "best_step": best_step,
                "scheduler": sched.state_dict(),
            }
        ),
    }
    if best_state is not None:
        files["best.safetensors"] = best_state
    save_folder(path, files)


def _load_optimizer(path: Path) -> dict:
    groups = json.loads((path / "optimizer.json").read_text())["param_groups"]
    for g in groups:
        g["betas"] = tuple(g["betas"])
    state: dict = {}
    for key, v in load_file(path / "optimizer.safetensors").items():
        i, name = key.split(".", 1)
        state.setdefault(int(i), {})[name] = v.reshape(()) if name == "step" else v
    return {"state": state, "param_groups": groups}
