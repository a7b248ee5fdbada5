"""Trainers for the three models (tokenizer, VAR transformer with optional DPO, ESPCN).

One loop (:func:`fit`) serves all three: Adam on random patch batches, a tqdm bar, safetensors
checkpoints of the model and optimizer with the step and random state in JSON (written to a
temporary folder and renamed), exact resume, and data parallelism under torchrun (each rank
draws its own batches and the gradients are averaged with ``all_reduce``; the objectives call
model methods other than ``forward``, which DistributedDataParallel's hooks would not see; gloo
on CPU, NCCL on GPUs).

- ``tokenizer``: reconstruction + VQ (+ the HIT prefix and consistency terms, or plain RQ with
  ``hit=False``), dead codes restarted every ``restart_every`` steps.
- ``var``: cross-entropy of the HR image's tokens given the LR image (stage 1); with
  ``dpo_weight`` > 0, stage 2 adds lambda * DPO against the frozen stage-1 model, the chosen
  answer the HR tokens and the rejected one the tokens of the bicubic-upsampled LR image.
- ``espcn``: MSE of the super-resolved patch.
"""

from __future__ import annotations

import copy
import json
import math
import os
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from tqdm.auto import tqdm

from icml26.testing.checks import integer, number
from icml26.varsr.baselines import ESPCN
from icml26.varsr.data import bicubic_up, downsample
from icml26.varsr.tokenizer import MultiScaleRQ
from icml26.varsr.var import VARTransformer, dpo_loss


@dataclass(frozen=True)
class FitConfig:
    """One training run."""

    steps: int = 1000
    batch: int = 32
    lr: float = 1e-3
    seed: int = 0
    save_every: int = 0
    """Checkpoint every this many steps (0: at the end only, when a folder is given)."""

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        integer("steps", self.steps, low=0)
        integer("batch", self.batch, low=1)
        number("lr", self.lr, above=0)
        integer("save_every", self.save_every, low=0)


def _check_count(value, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}")


def _rank_world() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def fit(model: torch.nn.Module, data: torch.Tensor, loss_fn: Callable[[torch.Tensor], dict],
        cfg: FitConfig, checkpoint: str | os.PathLike | None = None, resume: bool = False,
        progress: bool = False, desc: str = "train",
        hook: Callable[[int, torch.Tensor], None] | None = None) -> list[dict]:  # fmt: skip
    """Train ``model`` on random batches of ``data`` (N, ...) with ``loss_fn(batch) -> {"loss":
    tensor, ...}``; ``hook(step, batch)`` runs after each step (dead-code restarts). Returns the
    per-step logs (floats)."""
    _check_fit(model, data, loss_fn, cfg, hook)
    rank, world = _rank_world()
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=cfg.lr)
    gen = torch.Generator().manual_seed(cfg.seed * 1_000 + rank)
    logs: list[dict] = []
    start = 0
    ckpt = Path(checkpoint) if checkpoint is not None else None
    if resume:
        if ckpt is None or not (ckpt / "state.json").is_file():
            raise ValueError(f"resume needs a checkpoint folder with state.json, got {ckpt}")
        start, logs = _load(ckpt, model, opt, gen, rank, world)
    bar = tqdm(range(start, cfg.steps), desc=desc, disable=not progress or rank, leave=False,
               initial=start, total=cfg.steps)  # fmt: skip
    for step in bar:
        idx = torch.randint(len(data), (cfg.batch,), generator=gen)
        batch = data[idx].to(next(model.parameters()).device)
        out = loss_fn(batch)
        _check_loss(out, step)
        opt.zero_grad(set_to_none=True)
        out["loss"].backward()
        if world > 1:  # the objectives call methods besides forward, so average by hand
            for p in model.parameters():
                if p.grad is not None:
                    dist.all_reduce(p.grad)
                    p.grad /= world
        opt.step()
        logs.append(
            {k: float(v.detach()) if torch.is_tensor(v) else float(v) for k, v in out.items()}
        )
        bar.set_postfix(loss=f"{logs[-1]['loss']:.4f}")
        if hook is not None:
            hook(step, batch)
        if ckpt is not None and cfg.save_every and (step + 1) % cfg.save_every == 0:
            _save(ckpt, model, opt, gen, step + 1, logs, rank, cfg)
    if ckpt is not None:
        _save(ckpt, model, opt, gen, cfg.steps, logs, rank, cfg)
    return logs


def _check_fit(model, data, loss_fn, cfg, hook) -> None:
    if not isinstance(model, torch.nn.Module) or not any(
        p.requires_grad for p in model.parameters()
    ):
        raise TypeError(f"model must be a torch module with trainable parameters, got "
                        f"{type(model).__name__}")  # fmt: skip
    if not isinstance(data, torch.Tensor) or data.dim() < 2 or not data.is_floating_point():
        got = tuple(data.shape) if isinstance(data, torch.Tensor) else type(data).__name__
        raise ValueError(f"data must be a float tensor (N, ...) of training samples, got {got}")
    if len(data) == 0:
        raise ValueError("data is empty")
    if not torch.isfinite(data).all():
        raise ValueError("data contains NaN or inf")
    if not callable(loss_fn) or (hook is not None and not callable(hook)):
        raise TypeError("loss_fn (and hook, when given) must be callable: see the *_objective "
                        "functions")  # fmt: skip
    if not isinstance(cfg, FitConfig):
        raise TypeError(f"cfg must be a FitConfig, got {type(cfg).__name__}")
    cfg.check()


def _check_loss(out, step: int) -> None:
    """The objective's output: a dict with a finite scalar ``"loss"`` (read once here; the
    per-step log reads it anyway)."""
    if not isinstance(out, dict) or "loss" not in out:
        got = sorted(out) if isinstance(out, dict) else type(out).__name__
        raise ValueError(f"loss_fn must return a dict with a 'loss' tensor, got {got}")
    loss = out["loss"]
    if not math.isfinite(float(loss.detach() if torch.is_tensor(loss) else loss)):
        raise ValueError(f"loss_fn returned a non-finite loss at step {step}: lower the lr or "
                         f"check the data")  # fmt: skip


def _save(ckpt: Path, model, opt, gen, step, logs, rank, cfg) -> None:
    from safetensors.torch import save_file

    rngs = [gen.get_state().tolist()]
    if dist.is_available() and dist.is_initialized():
        # every rank's batch stream, so a resumed run draws what each rank would have
        rngs = [None] * dist.get_world_size()
        dist.all_gather_object(rngs, gen.get_state().tolist())
        dist.barrier()
    if rank != 0:
        return
    tmp = ckpt.with_name(ckpt.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_file({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()},
              tmp / "model.safetensors")  # fmt: skip
    tensors = {}
    params = [p for p in model.parameters() if p.requires_grad]
    for i, p in enumerate(params):
        for k, v in opt.state.get(p, {}).items():
            tensors[f"{i}.{k}"] = torch.as_tensor(v).detach().cpu().float().reshape(-1).contiguous()
    save_file(tensors, tmp / "optimizer.safetensors")
    (tmp / "state.json").write_text(
        json.dumps({"step": step, "config": asdict(cfg), "logs": logs, "rng": rngs})
    )
    shutil.rmtree(ckpt, ignore_errors=True)
    os.replace(tmp, ckpt)


def _load(ckpt: Path, model, opt, gen, rank, world=1) -> tuple[int, list[dict]]:
    from safetensors.torch import load_file

    state = json.loads((ckpt / "state.json").read_text())
    model.load_state_dict(load_file(ckpt / "model.safetensors"))
    tensors = load_file(ckpt / "optimizer.safetensors")
    params = [p for p in model.parameters() if p.requires_grad]
    for i, p in enumerate(params):
        if f"{i}.exp_avg" in tensors:
            opt.state[p] = {"exp_avg": tensors[f"{i}.exp_avg"].view_as(p).to(p.device),
                            "exp_avg_sq": tensors[f"{i}.exp_avg_sq"].view_as(p).to(p.device),
                            "step": tensors[f"{i}.step"].reshape(())}  # fmt: skip
    rngs = state["rng"]
    if len(rngs) != world:  # each rank's batch stream continues on the same rank
        raise ValueError(f"{ckpt} was saved by {len(rngs)} rank(s); resume with as many, "
                         f"not {world}")  # fmt: skip
    gen.set_state(torch.tensor(rngs[rank], dtype=torch.uint8))
    return int(state["step"]), state["logs"]


# -- the three objectives ----------------------------------------------------------------------
def tokenizer_objective(tok, hit: bool = True, restart_every: int = 100,
                        steps: int | None = None):  # fmt: skip
    """(loss_fn, hook) for :func:`fit` on a :class:`MultiScaleRQ`. Dead codes restart every
    ``restart_every`` steps, never after the last of ``steps`` (no gradient step would follow);
    the restart's random draws are seeded by the step, so a resumed run repeats them."""
    if not isinstance(tok, MultiScaleRQ):
        raise TypeError(f"tok must be a MultiScaleRQ, got {type(tok).__name__}")
    _check_count(restart_every, "restart_every")
    if steps is not None:
        _check_count(steps, "steps")

    def loss_fn(batch):
        return tok(batch, hit=hit)

    def hook(step, batch):
        last = steps is not None and step + 1 >= steps
        if restart_every and (step + 1) % restart_every == 0 and not last:
            with torch.no_grad():
                tok.restart_dead_codes(tok.encoder(batch * 2 - 1),
                                       generator=torch.Generator().manual_seed(step))  # fmt: skip

    return loss_fn, hook


def var_objective(var, dpo_weight: float = 0.0, beta: float = 0.1):
    """loss_fn for :func:`fit` on a :class:`VARTransformer`: CE (+ ``dpo_weight`` x DPO against
    a frozen copy of ``var`` as it is when this is called)."""
    if not isinstance(var, VARTransformer):
        raise TypeError(f"var must be a VARTransformer, got {type(var).__name__}")
    if not (isinstance(dpo_weight, (int, float)) and 0 <= dpo_weight < math.inf):
        raise ValueError(f"dpo_weight must be a finite number >= 0, got {dpo_weight!r}")
    dpo_loss(*[torch.zeros(1)] * 4, beta)  # names a bad beta now, not at the first step
    tok = var.tok
    ref = copy.deepcopy(var).eval().requires_grad_(False) if dpo_weight > 0 else None
    g = var.given_scales

    def loss_fn(hr):
        lr = downsample(hr, 4)
        # the given scales are the LR image's own tokens, as in generation; the targets are
        # the HR image's tokens of what they leave
        given = tok.encode(lr)[:g] if g else None
        chosen = tok.encode(hr, given)
        out = {"ce": var.loss(chosen, lr)}
        if ref is not None:
            rejected = tok.encode(bicubic_up(lr, 4), given)
            with torch.no_grad():
                ref_w, ref_l = ref.logprob(chosen, lr), ref.logprob(rejected, lr)
            out["dpo"] = dpo_loss(var.logprob(chosen, lr), var.logprob(rejected, lr), ref_w,
                                  ref_l, beta)  # fmt: skip
        out["loss"] = out["ce"] + dpo_weight * out.get("dpo", 0.0)
        return out

    return loss_fn


def espcn_objective(model):
    """loss_fn for :func:`fit` on an :class:`ESPCN`: MSE of its upscaled downsampled patch."""
    if not isinstance(model, ESPCN):
        raise TypeError(f"model must be an ESPCN, got {type(model).__name__}")

    def loss_fn(hr):
        return {"loss": F.mse_loss(model(downsample(hr, model.scale)), hr)}

    return loss_fn
