"""Command line: ``icml26-hist {demo,bench,train,evaluate,predict}``
(also ``python -m icml26.hist``).

Data for train / evaluate / predict: ``synthetic[:spots]`` (a generated cohort: 12 training
slides, or 4 held-out ones for evaluate / predict), ``her2st`` (the bundled
subset), ``her2st:/path/to/her2st`` (the original files, featurised here) or ``.h5ad`` files
(scanpy / squidpy / Space Ranger AnnData) with ``obsm["spatial"]``, per-spot features in
``obsm[--features-key]``, counts in ``X`` (or ``--layer`` / ``--use-raw``) and, when present,
``obs["array_row"/"array_col"]`` as the lattice. ``predict`` on an ``.h5ad`` keeps its ``obs``,
``obsm`` and ``uns`` (``uns["spatial"]``: the image ``sc.pl.spatial`` draws).
"""

import json
from dataclasses import dataclass
from pathlib import Path

from icml26.hist.bench import BenchConfig, run_bench
from icml26.hist.demo import run_demo
from icml26.hist.study import DemoConfig
from icml26.testing.command import DeviceOption, dispatch
from icml26.testing.results import resolve_device

MODEL_NAMES = ("hist", "hist-no-tokens", "knn", "mlp")


@dataclass(frozen=True, kw_only=True)
class SlideOptions(DeviceOption):
    """How the slides of --data are read (every command that reads slides takes these)."""

    data: tuple[str, ...] = ("synthetic",)
    """synthetic[:spots] | her2st | her2st:/path | slide .h5ad files (evaluate and predict read
    synthetic from held-out seeds)."""
    features_key: str = "features"
    """obsm key of the per-spot features in .h5ad input."""
    hexagonal: bool = False
    """The .h5ad slides sit on a hexagonal (Visium) grid (detected from obs array_row /
    array_col when present)."""
    layer: str | None = None
    """Counts of .h5ad input from this layer (default: X)."""
    use_raw: bool = False
    """Counts of .h5ad input from .raw."""


@dataclass(frozen=True)
class TrainCLI(SlideOptions):
    """Train a model on slides; checkpoints (safetensors) in --out, resumable."""

    out: Path
    """Checkpoint folder."""
    model: str = "hist"
    """hist, hist-no-tokens, knn or mlp."""
    dim: int = 512
    """Width (the paper: 512)."""
    stages: str = "111-21"
    """HiST encoder-decoder depths."""
    steps: int = 1000
    """Optimizer steps."""
    lr: float = 1e-4
    """Peak learning rate."""
    target_sum: float | None = 1e4
    """Train on log1p of counts normalised to this library size (None: raw counts)."""
    seed: int = 0
    """Seed."""
    checkpoint_every: int = 100
    """Checkpoint interval in steps."""
    resume: bool = False
    """Continue from the latest checkpoint in --out."""


@dataclass(frozen=True)
class EvaluateCLI(SlideOptions):
    """Evaluate a checkpoint on slides with counts: R2, Pearson, per-gene Pearson."""

    checkpoint: Path
    """Folder written by train (or save_pretrained)."""


@dataclass(frozen=True)
class PredictCLI(SlideOptions):
    """Predict slides into AnnData (.h5ad) files."""

    checkpoint: Path
    """Folder written by train (or save_pretrained)."""
    out: Path
    """Output folder for <slide>.h5ad."""


def load_slides(data, features_key="features", hexagonal=False, held_out=False, **anndata_kw):
    """Resolve the --data argument into a list of Slides."""
    return [slide for slide, _ in _load(data, features_key, hexagonal, held_out, **anndata_kw)]


def _load(data, features_key="features", hexagonal=False, held_out=False, **anndata_kw):
    """(Slide, the AnnData it came from or None) for each item of --data."""
    from icml26.hist.data import Slide, featurise_patches, load_her2st, load_her2st_subset
    from icml26.hist.synthetic import make_cohort

    out = []
    for item in data:
        if item == "synthetic" or item.startswith("synthetic:"):
            spots = item.partition(":")[2] or "1000"
            if not spots.isdigit() or int(spots) < 16:
                raise ValueError(f"--data {item!r}: synthetic:<spots per slide>, at least 16")
            cohort = make_cohort(4 if held_out else 12, int(spots), seed=10_000 if held_out else 0)
            out += [(s, None) for s in cohort]
        elif item == "her2st":
            out += [(s, None) for s in load_her2st_subset().values()]
        elif item.startswith("her2st:"):
            for s in ("C2", "C3", "C4", "C5", "C6"):
                sec = load_her2st(item.split(":", 1)[1], s)
                slide = Slide(
                    s, sec.xy, featurise_patches(sec.patches), sec.counts, sec.genes, sec.spot_names
                )
                out.append((slide, None))
        elif item.endswith(".h5ad"):
            import anndata as ad

            if not Path(item).is_file():
                raise ValueError(f"{item} not found")
            try:
                adata = ad.read_h5ad(item)
            except Exception as e:  # h5py's OSError, anndata's own errors: not an AnnData file
                first = (str(e).strip().splitlines() or [""])[0]
                raise ValueError(f"{item}: not a readable .h5ad file ({type(e).__name__}: "
                                 f"{first})") from None  # fmt: skip
            slide = Slide.from_anndata(
                adata,
                features_key,
                Path(item).stem,
                hexagonal=True if hexagonal else None,
                **anndata_kw,
            )
            out.append((slide, adata))
        else:
            raise ValueError(
                f"--data {item!r}: expected synthetic, her2st, her2st:/path or a .h5ad file"
            )
    return out


def _anndata_kw(cfg) -> dict:
    return {"layer": cfg.layer, "use_raw": cfg.use_raw}


def build_model(name: str, features: int, genes: int, dim: int, stages: str):
    from icml26.hist.baselines import BaselineConfig, KNNAttention, SpotMLP
    from icml26.hist.model import HiST, HiSTConfig

    if name not in MODEL_NAMES:
        raise ValueError(f"--model must be one of {MODEL_NAMES}, got {name!r}")
    if name.startswith("hist"):
        return HiST(HiSTConfig(features, genes, dim=dim, stages=stages, use_tokens=name == "hist"))
    cls = KNNAttention if name == "knn" else SpotMLP
    return cls(BaselineConfig(features, genes, dim=dim))


def run_train(cfg: TrainCLI) -> None:
    import os

    import torch.distributed as dist

    device = resolve_device(cfg.device)
    # under torchrun: one process per rank, DDP over slides (gloo on CPU, NCCL on GPU)
    launched = int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized()
    if launched:
        if device.startswith("cuda") and device != "cuda":
            raise ValueError(f"--device {device}: under torchrun each rank takes its own GPU")
        if device == "cuda":
            import torch

            device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
            torch.cuda.set_device(device)  # NCCL works on the rank's current device
        dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
    try:
        _train(cfg, device)
    finally:
        if launched:
            dist.destroy_process_group()


def _train(cfg: TrainCLI, device: str) -> None:
    from icml26.hist.train import TrainConfig, train

    slides = load_slides(cfg.data, cfg.features_key, cfg.hexagonal, **_anndata_kw(cfg))
    if any(s.counts is None for s in slides):
        raise ValueError("training needs counts on every slide")
    model = build_model(
        cfg.model, slides[0].features.shape[1], slides[0].counts.shape[1], cfg.dim, cfg.stages
    ).to(device)
    tc = TrainConfig(
        steps=cfg.steps,
        lr=cfg.lr,
        seed=cfg.seed,
        checkpoint_every=cfg.checkpoint_every,
        target_sum=cfg.target_sum,
    )
    res = train(model, slides, tc, out_dir=cfg.out, resume=cfg.resume)
    print(
        f"trained {cfg.model} for {res.steps} steps; last loss {res.losses[-1]:.4f}; "
        f"checkpoints in {cfg.out} (device {device})"
    )


def _load_checkpoint(path: Path, device: str):
    from icml26.hist.model import SpotModel

    latest = path / "latest.json"
    if latest.is_file():  # a train folder: use its latest step
        path = path / json.loads(latest.read_text())["folder"]
    return SpotModel.from_pretrained(path, device=device)


def run_evaluate(cfg: EvaluateCLI) -> None:
    from icml26.hist.train import evaluate

    model = _load_checkpoint(cfg.checkpoint, resolve_device(cfg.device))
    slides = load_slides(
        cfg.data, cfg.features_key, cfg.hexagonal, held_out=True, **_anndata_kw(cfg)
    )
    res = evaluate(model, slides)
    print(json.dumps(res, indent=2))


def run_predict(cfg: PredictCLI) -> None:
    from icml26.hist.train import predict_anndata
    from icml26.testing.files import atomic_write

    model = _load_checkpoint(cfg.checkpoint, resolve_device(cfg.device))
    pairs = _load(cfg.data, cfg.features_key, cfg.hexagonal, held_out=True, **_anndata_kw(cfg))
    for slide, template in pairs:
        adata = predict_anndata(model, slide, template=template)
        path = atomic_write(cfg.out / f"{slide.name}.h5ad", adata.write_h5ad, suffix=".h5ad")
        print(f"wrote {path} ({adata.n_obs} spots x {adata.n_vars} genes)")


DESCRIPTION = (
    "HiST: hierarchical sparse transformer, H&E -> spatial transcriptomics (arXiv 2606.14251)."
)
COMMANDS = {
    "demo": (DemoConfig, run_demo),
    "bench": (BenchConfig, run_bench),
    "train": (TrainCLI, run_train),
    "evaluate": (EvaluateCLI, run_evaluate),
    "predict": (PredictCLI, run_predict),
}


def main(argv: list[str] | None = None) -> int:
    return dispatch("icml26-hist", DESCRIPTION, COMMANDS, argv)
