"""Training, evaluation and prediction for every model of the harness (HiST and baselines).

The paper's recipe: MSE on log1p expression, AdamW, cosine learning-rate schedule, one slide per
step, coordinate-only augmentation (mirror, shear <= 30 deg, rotation <= 45 deg, spot dropout).
The head bias starts at the training mean and inputs are standardised with training statistics.

Runs unchanged under ``torchrun``: each rank takes its own slide per step and DDP averages the
gradients, which is the same update as one process accumulating ``world_size`` slides
(``slides_per_step``). All randomness of a step (slide choice, augmentation, dropout) is derived
from (seed, global slide index), so a resumed run continues exactly where it stopped.
"""

import json
import math
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from tqdm.auto import tqdm

from icml26.hist.data import Slide
from icml26.hist.io import atomic_save_safetensors, atomic_write_json
from icml26.hist.lattice import to_lattice
from icml26.hist.metrics import average, slide_metrics
from icml26.hist.model import SpotModel


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation and augmentation settings."""

    steps: int = 1000
    """Optimizer steps."""
    lr: float = 1e-4
    """Peak AdamW learning rate (cosine decay to 0)."""
    weight_decay: float = 0.01
    """AdamW weight decay."""
    slides_per_step: int = 1
    """Slides accumulated per optimizer step in each process."""
    augment: bool = True
    """Coordinate augmentation: mirror, shear, rotation, spot dropout."""
    max_rotation: float = 45.0
    """Largest rotation, degrees."""
    max_shear: float = 30.0
    """Largest shear angle, degrees."""
    spot_dropout: float = 0.1
    """Largest fraction of spots dropped in a step."""
    grad_clip: float = 1.0
    """Gradient-norm clip (0 = off)."""
    checkpoint_every: int = 0
    """Save a checkpoint every this many steps (0: only at the end)."""
    seed: int = 0
    """Seed of every random choice in training."""

    def __post_init__(self):
        if self.steps < 1 or self.slides_per_step < 1:
            raise ValueError("steps and slides_per_step must be >= 1")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if not 0 <= self.spot_dropout < 1:
            raise ValueError(f"spot_dropout must be in [0, 1), got {self.spot_dropout}")


@dataclass
class TrainResult:
    """Loss per optimizer step (mean over the slides of the step, this process)."""

    losses: list[float] = field(default_factory=list)
    steps: int = 0


def _world() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def augment_coords(coords: np.ndarray, rng: np.random.Generator, cfg: TrainConfig) -> np.ndarray:
    """Mirror, rotate and shear the lattice sites, then re-snap them to free sites."""
    pts = coords.astype(np.float64)
    if rng.random() < 0.5:
        pts[:, 1] = -pts[:, 1]
    th = np.deg2rad(rng.uniform(-cfg.max_rotation, cfg.max_rotation))
    sh = np.tan(np.deg2rad(rng.uniform(-cfg.max_shear, cfg.max_shear)))
    rot = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
    pts = pts @ (rot @ np.array([[1.0, sh], [0.0, 1.0]])).T
    # to_lattice works in (x, y); sites are (row, col)
    return to_lattice(pts[:, ::-1], step=1.0).coords


def slide_tensors(slide: Slide, device="cpu"):
    """(features (N, F) float32, coords (N, 2) int64, log1p targets (N, G) or None) on ``device``.

    Slides hold NumPy arrays (loading, synthesis and augmentation stay on the host); this is where
    they meet the model's device."""
    feats = torch.as_tensor(slide.features, device=device)
    coords = torch.as_tensor(slide.coords, device=device)
    target = (
        None if slide.counts is None else torch.log1p(torch.as_tensor(slide.counts, device=device))
    )
    return feats, coords, target


def _check_slides(model: SpotModel, slides: list[Slide], need_counts: bool) -> None:
    if not slides:
        raise ValueError("no slides given")
    for s in slides:
        if s.features.shape[1] != model.config.in_features:
            raise ValueError(
                f"slide {s.name}: {s.features.shape[1]} features, the model takes "
                f"{model.config.in_features}"
            )
        if need_counts and (s.counts is None or s.counts.shape[1] != model.config.num_genes):
            raise ValueError(f"slide {s.name}: needs counts for {model.config.num_genes} genes")


def train(
    model: SpotModel,
    slides: list[Slide],
    cfg: TrainConfig = TrainConfig(),
    out_dir: str | os.PathLike | None = None,
    resume: bool = False,
    progress: bool = True,
) -> TrainResult:
    """Train ``model`` on ``slides`` (each with counts). Checkpoints go to ``out_dir``.

    With ``resume`` the latest checkpoint in ``out_dir`` is loaded (model, optimizer, step,
    losses) and training continues to ``cfg.steps``.
    """
    _check_slides(model, slides, need_counts=True)
    rank, world = _world()
    feats = np.concatenate([s.features for s in slides])
    targets = np.concatenate([np.log1p(s.counts) for s in slides])
    model.set_statistics(feats.mean(0), feats.std(0), targets.mean(0))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    result = TrainResult()
    if resume:
        if out_dir is None:
            raise ValueError("resume needs out_dir")
        result = load_checkpoint(out_dir, model, opt)
    net = model
    if world > 1:
        net = torch.nn.parallel.DistributedDataParallel(model)
    model.train()
    device = next(model.parameters()).device
    cache = [slide_tensors(s, device) for s in slides]
    per_step = cfg.slides_per_step * world
    bar = tqdm(
        range(result.steps, cfg.steps),
        desc=f"train {type(model).__name__}",
        disable=not progress or rank != 0,
        initial=result.steps,
        total=cfg.steps,
    )
    for step in bar:
        for g in opt.param_groups:  # cosine schedule
            g["lr"] = cfg.lr * 0.5 * (1 + math.cos(math.pi * step / cfg.steps))
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for a in range(cfg.slides_per_step):
            k = step * per_step + a * world + rank  # global slide index of this micro-step
            epoch, pos = divmod(k, len(slides))
            i = int(np.random.default_rng([cfg.seed, epoch]).permutation(len(slides))[pos])
            rng = np.random.default_rng([cfg.seed, k, 1])
            torch.manual_seed(int(rng.integers(2**62)))  # dropout of this micro-step
            x, c, y = cache[i]
            if cfg.augment:
                keep = rng.random(len(x)) >= rng.uniform(0, cfg.spot_dropout)
                keep[rng.integers(len(x))] = True  # never an empty slide
                keep_t = torch.as_tensor(keep, device=device)
                x, y = x[keep_t], y[keep_t]
                c = torch.as_tensor(augment_coords(slides[i].coords[keep], rng, cfg), device=device)
            loss = torch.nn.functional.mse_loss(net(x, c), y)
            (loss / cfg.slides_per_step).backward()
            total += loss.item() / cfg.slides_per_step
        if cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        result.losses.append(total)
        result.steps = step + 1
        bar.set_postfix(loss=f"{total:.4f}")
        last = step + 1 == cfg.steps
        every = cfg.checkpoint_every and (step + 1) % cfg.checkpoint_every == 0
        if out_dir is not None and rank == 0 and (last or every):
            save_checkpoint(out_dir, model, opt, result, cfg)
    model.eval()
    return result


# ----------------------------------------------------------------------------- checkpoints


def save_checkpoint(out_dir, model: SpotModel, opt, result: TrainResult, cfg: TrainConfig):
    """Write ``out_dir/step-<n>/`` (model, optimizer, state), then point ``latest`` at it.

    Every file is written atomically and ``latest`` moves last, so a crash mid-save leaves the
    previous checkpoint intact. Older step folders beyond the last two are removed.
    """
    out_dir = Path(out_dir)
    folder = out_dir / f"step-{result.steps:07d}"
    model.save_pretrained(folder)
    sd = opt.state_dict()
    tensors = {
        f"state.{i}.{k}": torch.as_tensor(v) for i, st in sd["state"].items() for k, v in st.items()
    }
    atomic_save_safetensors(folder / "optimizer.safetensors", tensors)
    atomic_write_json(
        folder / "trainer_state.json",
        {
            "step": result.steps,
            "losses": result.losses,
            "train_config": asdict(cfg),
            "param_groups": sd["param_groups"],
        },
    )
    atomic_write_json(out_dir / "latest.json", {"folder": folder.name})
    for old in sorted(out_dir.glob("step-*"))[:-2]:
        shutil.rmtree(old, ignore_errors=True)
    return folder


def load_checkpoint(out_dir, model: SpotModel, opt=None) -> TrainResult:
    """Load the latest checkpoint of ``out_dir`` into ``model`` (and ``opt``)."""
    from safetensors.torch import load_file

    out_dir = Path(out_dir)
    pointer = out_dir / "latest.json"
    if not pointer.is_file():
        raise ValueError(f"no checkpoint in {out_dir} (latest.json missing)")
    folder = out_dir / json.loads(pointer.read_text())["folder"]
    loaded = SpotModel.from_pretrained(folder)
    if type(loaded) is not type(model) or asdict(loaded.config) != asdict(model.config):
        raise ValueError(
            f"checkpoint {folder} holds a different model ({type(loaded).__name__}, "
            f"{asdict(loaded.config)})"
        )
    model.load_state_dict(loaded.state_dict())
    state = json.loads((folder / "trainer_state.json").read_text())
    if opt is not None:
        flat = load_file(folder / "optimizer.safetensors")
        osd = {"state": {}, "param_groups": state["param_groups"]}
        for key, v in flat.items():
            _, i, name = key.split(".", 2)
            osd["state"].setdefault(int(i), {})[name] = v
        opt.load_state_dict(osd)
    return TrainResult(losses=list(state["losses"]), steps=int(state["step"]))


# ----------------------------------------------------------------------------- evaluation


@torch.no_grad()
def predict(model: SpotModel, slide: Slide) -> np.ndarray:
    """Linear-scale expression (N, G) = relu(expm1(log1p prediction))."""
    model.eval()
    device = next(model.parameters()).device
    x, c, _ = slide_tensors(slide, device)
    return torch.expm1(model(x, c)).clamp_min(0).cpu().numpy()


def evaluate(model: SpotModel, slides: list[Slide]) -> dict:
    """Per-slide and slide-averaged R2 / Pearson (pooled) and mean per-gene Pearson."""
    _check_slides(model, slides, need_counts=True)
    per = {s.name: slide_metrics(predict(model, s), s.counts) for s in slides}
    return {"mean": average(list(per.values())), "slides": per}


def predict_anndata(model: SpotModel, slide: Slide):
    """Predict a slide into an AnnData: ``X`` predicted counts (spots x genes), ``obs`` the
    spots with their lattice row/col, ``obsm["spatial"]`` the input positions, ``var`` the
    genes, ``layers["counts"]`` the measured counts when the slide has them."""
    import anndata as ad
    import pandas as pd

    _check_slides(model, [slide], need_counts=False)
    pred = predict(model, slide).astype(np.float32)
    genes = slide.genes or [f"gene{j}" for j in range(pred.shape[1])]
    obs = pd.DataFrame(
        {"lattice_row": slide.coords[:, 0], "lattice_col": slide.coords[:, 1]},
        index=pd.Index(slide.spot_names, name="spot"),
    )
    adata = ad.AnnData(X=pred, obs=obs, var=pd.DataFrame(index=pd.Index(genes, name="gene")))
    adata.obsm["spatial"] = slide.xy.astype(np.float64)
    if slide.counts is not None:
        adata.layers["counts"] = slide.counts.astype(np.float32)
    adata.uns["hist"] = {"model": type(model).__name__, "slide": slide.name}
    return adata
