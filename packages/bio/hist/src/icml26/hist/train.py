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
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from tqdm.auto import tqdm

from icml26.hist.data import Slide
from icml26.hist.io import atomic_save_safetensors, atomic_write_json
from icml26.hist.lattice import to_lattice
from icml26.hist.metrics import average, gene_pearsons, slide_metrics
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
    target_sum: float | None = 1e4
    """Targets are log1p of counts normalised to this library size (scanpy's normalize_total,
    the convention of ST-from-histology benchmarks); None: log1p of raw counts."""
    eval_every: int = 0
    """With validation slides: score them every this many steps and keep the best weights
    (early stopping on mean per-gene Pearson); 0: every 10% of the steps."""
    seed: int = 0
    """Seed of every random choice in training."""

    def __post_init__(self):
        for name in ("steps", "slides_per_step"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if not 0 <= self.spot_dropout < 1:
            raise ValueError(f"spot_dropout must be in [0, 1), got {self.spot_dropout}")
        if self.target_sum is not None and not self.target_sum > 0:
            raise ValueError(f"target_sum must be > 0 or None, got {self.target_sum}")
        if self.eval_every < 0:
            raise ValueError(f"eval_every must be >= 0, got {self.eval_every}")


@dataclass
class TrainResult:
    """Loss per optimizer step (mean over the slides of the step, this process)."""

    losses: list[float] = field(default_factory=list)
    steps: int = 0
    validation: list[tuple[int, float]] = field(default_factory=list)
    """(step, mean per-gene Pearson on the validation slides) at each check."""
    best_step: int | None = None
    """The step whose weights the model holds after early stopping (None: the last)."""


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


def slide_tensors(slide: Slide, device="cpu", target_sum: float | None = None):
    """(features (N, F) float32, coords (N, 2) int64, log1p targets (N, G) or None) on ``device``
    (targets: :meth:`Slide.expression` with ``target_sum``).

    Slides hold NumPy arrays (loading, synthesis and augmentation stay on the host); this is where
    they meet the model's device."""
    feats = torch.as_tensor(slide.features, device=device)
    coords = torch.as_tensor(slide.coords, device=device)
    target = (
        None
        if slide.counts is None
        else torch.as_tensor(slide.expression(target_sum), device=device)
    )
    return feats, coords, target


def align_genes(model: SpotModel, slide: Slide) -> Slide:
    """``slide`` with its counts in the order of the model's genes, matched by name (a slide
    without counts, or a model or slide without gene names, is returned as it is)."""
    if slide.counts is None or not model.genes or not slide.genes or slide.genes == model.genes:
        return slide
    try:
        return slide.select_genes(model.genes)
    except ValueError as e:
        raise ValueError(f"{e}; the model predicts {len(model.genes)} named genes") from None


def _check_slides(model: SpotModel, slides: list[Slide], need_counts: bool) -> list[Slide]:
    if not slides:
        raise ValueError("no slides given")
    slides = [align_genes(model, s) for s in slides]
    for s in slides:
        if s.features.shape[1] != model.config.in_features:
            raise ValueError(
                f"slide {s.name}: {s.features.shape[1]} features, the model takes "
                f"{model.config.in_features}"
            )
        if need_counts and (s.counts is None or s.counts.shape[1] != model.config.num_genes):
            raise ValueError(f"slide {s.name}: needs counts for {model.config.num_genes} genes")
    return slides


def train(
    model: SpotModel,
    slides: list[Slide],
    cfg: TrainConfig = TrainConfig(),
    out_dir: str | os.PathLike | None = None,
    resume: bool = False,
    progress: bool = True,
    validation: list[Slide] | None = None,
) -> TrainResult:
    """Train ``model`` on ``slides`` (each with counts). Checkpoints go to ``out_dir``.

    With ``resume`` the latest checkpoint in ``out_dir`` is loaded (model, optimizer, step,
    losses) and training continues to ``cfg.steps``. With ``validation`` slides the model is
    scored on them every ``cfg.eval_every`` steps and ends holding the best-scoring weights
    (early stopping). Genes are matched by name to the first slide's; the model keeps their
    names and ``cfg.target_sum``.
    """
    if slides and slides[0].genes and not model.genes:
        model.genes = list(slides[0].genes)
    model.target_sum = cfg.target_sum
    slides = _check_slides(model, slides, need_counts=True)
    if validation:
        validation = _check_slides(model, validation, need_counts=True)
    rank, world = _world()
    feats = np.concatenate([s.features for s in slides])
    targets = np.concatenate([s.expression(cfg.target_sum) for s in slides])
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
    cache = [slide_tensors(s, device, cfg.target_sum) for s in slides]
    every = cfg.eval_every or max(1, cfg.steps // 10)
    best_score, best_state = -math.inf, None
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
        total = _accumulate(net, slides, cache, cfg, step, rank, world, device)
        if cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        result.losses.append(total)
        result.steps = step + 1
        bar.set_postfix(loss=f"{total:.4f}")
        last = step + 1 == cfg.steps
        if validation and ((step + 1) % every == 0 or last):
            score = _validation_score(model, validation)
            model.train()
            result.validation.append((step + 1, score))
            if score > best_score:
                best_score, result.best_step = score, step + 1
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        save = cfg.checkpoint_every and (step + 1) % cfg.checkpoint_every == 0
        if out_dir is not None and rank == 0 and (last or save):
            save_checkpoint(out_dir, model, opt, result, cfg)
    if best_state is not None:
        model.load_state_dict(best_state)
        if out_dir is not None and rank == 0:  # the saved model is the early-stopped one
            save_checkpoint(out_dir, model, opt, result, cfg)
    model.eval()
    return result


def _accumulate(net, slides, cache, cfg: TrainConfig, step: int, rank: int, world: int, device):
    """The gradients of one step's ``slides_per_step`` slides (each rank its own share, each
    slide's spots dropped and its coordinates augmented when ``cfg.augment``); the mean loss."""
    per_step = cfg.slides_per_step * world
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
    return total


def _validation_score(model: SpotModel, slides: list[Slide]) -> float:
    """Mean per-gene Pearson on log1p expression over ``slides`` (early stopping's score)."""
    return float(
        np.mean(
            [
                gene_pearsons(predict_log1p(model, s), s.expression(model.target_sum)).mean()
                for s in slides
            ]
        )
    )


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
def predict_log1p(model: SpotModel, slide: Slide) -> np.ndarray:
    """The model's output (N, G): log1p expression (normalised to ``model.target_sum``)."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch module (HiST, a baseline), got {type(model)}")
    if not isinstance(slide, Slide):
        raise TypeError(f"slide must be an icml26.hist.Slide, got {type(slide).__name__}")
    model.eval()
    device = next(model.parameters()).device
    x = torch.as_tensor(slide.features, device=device)
    c = torch.as_tensor(slide.coords, device=device)
    return model(x, c).float().cpu().numpy()


def predict(model: SpotModel, slide: Slide) -> np.ndarray:
    """Linear-scale expression (N, G) = relu(expm1(log1p prediction)): normalised counts per
    ``model.target_sum`` (raw counts when it is None)."""
    return np.clip(np.expm1(predict_log1p(model, slide)), 0, None)


def evaluate(model: SpotModel, slides: list[Slide], scale: str = "log1p") -> dict:
    """Per-slide and slide-averaged R2 / Pearson / MSE (pooled over spots x genes) and mean
    per-gene Pearson, against the slides' expression normalised as the model was trained:
    on log1p values (``scale="log1p"``, the field's convention) or linear ones (``"linear"``).
    Genes are matched by name when the model and the slides carry names."""
    if scale not in ("log1p", "linear"):
        raise ValueError(f"scale must be 'log1p' or 'linear', got {scale!r}")
    slides = _check_slides(model, slides, need_counts=True)
    per = {}
    for s in slides:
        pred, true = predict_log1p(model, s), s.expression(model.target_sum)
        if scale == "linear":
            pred, true = np.clip(np.expm1(pred), 0, None), np.expm1(true)
        per[s.name] = slide_metrics(pred, true)
    return {"mean": average(list(per.values())), "slides": per, "scale": scale}


def predict_anndata(model: SpotModel, slide: Slide, template=None):
    """Predict a slide into an AnnData for scanpy / squidpy.

    ``X``: predicted expression, normalised to ``model.target_sum`` counts per spot (raw counts
    when None); ``layers["log1p"]``: the model's log1p output; ``var``: the model's gene names;
    ``layers["counts"]``: the measured counts of those genes when the slide has them all.
    With ``template`` (the AnnData the slide was read from) its ``obs``, ``obsm`` and ``uns``
    are kept, so ``uns["spatial"]`` (images, scale factors) still draws under ``sc.pl.spatial``;
    ``obs`` gains the lattice sites the model used (``lattice_row`` / ``lattice_col``)."""
    import anndata as ad
    import pandas as pd

    if not isinstance(model, SpotModel):
        raise TypeError(f"model must be a SpotModel (HiST, a baseline), got {type(model).__name__}")
    if not isinstance(slide, Slide):
        raise TypeError(f"slide must be an icml26.hist.Slide, got {type(slide).__name__}")
    if template is not None and not isinstance(template, ad.AnnData):
        raise TypeError(f"template must be an AnnData or None, got {type(template).__name__}")
    # prediction needs no counts: a slide measuring other genes than the model's loses them
    measured = slide.counts is not None and model.genes and slide.genes
    if measured and not set(model.genes) <= set(slide.genes):
        slide = replace(slide, counts=None, genes=[], library_size=None)
    (slide,) = _check_slides(model, [slide], need_counts=False)
    log1p = predict_log1p(model, slide).astype(np.float32)
    pred = np.clip(np.expm1(log1p), 0, None)
    genes = model.genes or slide.genes or [f"gene{j}" for j in range(pred.shape[1])]
    if len(genes) != pred.shape[1]:
        genes = [f"gene{j}" for j in range(pred.shape[1])]
    if template is not None:
        if template.n_obs != len(slide):
            raise ValueError(
                f"template has {template.n_obs} spots, slide {slide.name} has {len(slide)}"
            )
        obs = template.obs.copy()
    else:
        obs = pd.DataFrame(index=pd.Index(slide.spot_names, name="spot"))
    obs["lattice_row"] = slide.coords[:, 0]
    obs["lattice_col"] = slide.coords[:, 1]
    adata = ad.AnnData(X=pred, obs=obs, var=pd.DataFrame(index=pd.Index(genes, name="gene")))
    adata.layers["log1p"] = log1p
    if template is not None:
        for key, value in template.obsm.items():
            adata.obsm[key] = value
        adata.uns.update(template.uns)
    adata.obsm["spatial"] = slide.xy.astype(np.float64)
    if slide.counts is not None and slide.counts.shape[1] == pred.shape[1]:
        adata.layers["counts"] = slide.counts.astype(np.float32)
    adata.uns["hist"] = {
        "model": type(model).__name__,
        "slide": slide.name,
        "target_sum": "none" if model.target_sum is None else float(model.target_sum),
    }
    return adata
