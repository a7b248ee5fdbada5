"""Command line: ``icml26-varsr demo [--quick]``, ``train``, ``upscale``, ``bench`` (also
``python -m icml26.varsr``). ``train`` runs unchanged under ``torchrun`` (each rank draws its own
patches; gradients are averaged across ranks)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import tyro

from icml26.testing.command import DeviceOption, dispatch
from icml26.varsr.bench import BenchConfig, run_bench
from icml26.varsr.demo import run_demo
from icml26.varsr.study import DemoConfig

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff")


@dataclass(frozen=True)
class TrainCli(DeviceOption):
    """Train a HIT tokenizer, then the VAR transformer (cross-entropy, then CE + lambda DPO), and
    save the model to ``<out>/model``. Every stage checkpoints to ``<out>/<stage>``."""

    out: Path = Path("runs/varsr/train")
    images: Path | None = None
    """A folder of training images (png / jpg / bmp / tif); default: the package's offline
    training images (the demo's held-out five are never among them)."""
    tokenizer_steps: int = 1000
    var_steps: int = 600
    dpo_steps: int = 100
    dpo_weight: float = 0.5
    dpo_beta: float = 0.1
    batch: int = 32
    lr: float = 1e-3
    seed: int = 0
    save_every: int = 100
    resume: bool = False
    """Continue every unfinished stage from its checkpoint in --out."""


@dataclass(frozen=True)
class UpscaleCli(DeviceOption):
    """Super-resolve an image file by 4 with a trained model (and write the x2 image of the same
    pass with --x2)."""

    input: tyro.conf.Positional[Path]
    """The low-resolution image file."""
    output: tyro.conf.Positional[Path]
    """Where the x4 image goes (png / jpg / ...)."""
    model: Path = Path("runs/varsr/train/model")
    """A folder written by ``train`` (or ``icml26.varsr.pretrained.save_pretrained``)."""
    x2: Path | None = None


def _read_image(path: Path):
    from skimage.io import imread

    from icml26.varsr.data import to_image

    if not path.is_file():
        raise ValueError(f"no image file at {path}")
    try:
        pixels = imread(path)
    except Exception as e:  # imageio raises a different error per format and plugin
        first = (str(e).strip().splitlines() or [""])[0]  # imageio's advice runs to many lines
        raise ValueError(f"cannot read {path} as an image ({type(e).__name__}: {first})") from None
    return to_image(pixels, str(path))


def _write_image(x, path: Path) -> None:
    """Write (3, H, W) in [0, 1] as 8-bit, atomically (temporary file in the same folder)."""
    from skimage.io import imsave

    arr = (x.clamp(0, 1) * 255).round().byte().permute(1, 2, 0).cpu().numpy()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.partial{path.suffix}")
    imsave(tmp, arr, check_contrast=False)
    os.replace(tmp, path)


def train_cli(cfg: TrainCli) -> None:
    import torch
    import torch.distributed as dist

    from icml26.testing.results import resolve_device
    from icml26.varsr.data import load_data, patches
    from icml26.varsr.pretrained import save_pretrained
    from icml26.varsr.tokenizer import MultiScaleRQ, TokenizerConfig
    from icml26.varsr.train import FitConfig, fit, tokenizer_objective, var_objective
    from icml26.varsr.var import VARConfig, VARTransformer

    if min(cfg.tokenizer_steps, cfg.var_steps) < 1 or cfg.dpo_steps < 0:
        raise ValueError("--tokenizer-steps, --var-steps >= 1 and --dpo-steps >= 0 needed")
    if not cfg.resume and (cfg.out / "tokenizer").exists():
        raise ValueError(f"{cfg.out} already holds a run: pass --resume or choose another --out")
    distributed = "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) > 1
    if distributed and not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    device = resolve_device(cfg.device)
    if distributed and device.startswith("cuda"):
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
        torch.cuda.set_device(device)
    if cfg.images is None:
        train = load_data().train
    else:
        files = sorted(p for p in cfg.images.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        if not files:
            raise ValueError(f"{cfg.images} holds no {'/'.join(IMAGE_SUFFIXES)} images")
        imgs = [_read_image(p) for p in files]
        small = [p.name for p, x in zip(files, imgs, strict=True) if min(x.shape[1:]) < 32]
        if small:
            raise ValueError(f"images must be at least 32 x 32 px: {small}")
        train = patches([x[:, : x.shape[1] // 32 * 32, : x.shape[2] // 32 * 32] for x in imgs])
    train = train.to(device)
    torch.manual_seed(cfg.seed)

    def stage(model, loss_fn, steps, name, seed, hook=None):
        ckpt = cfg.out / name
        fit(model, train, loss_fn,
            FitConfig(steps=steps, batch=cfg.batch, lr=cfg.lr, seed=seed,
                      save_every=cfg.save_every),
            checkpoint=ckpt, resume=cfg.resume and (ckpt / "state.json").is_file(),
            progress=True, desc=name, hook=hook)  # fmt: skip

    tok = MultiScaleRQ(TokenizerConfig()).to(device)
    loss_fn, hook = tokenizer_objective(tok, steps=cfg.tokenizer_steps)
    stage(tok, loss_fn, cfg.tokenizer_steps, "tokenizer", cfg.seed, hook)
    tok.eval().requires_grad_(False)
    var = VARTransformer(tok, VARConfig()).to(device)
    stage(var, var_objective(var), cfg.var_steps, "var", cfg.seed)
    if cfg.dpo_steps and cfg.dpo_weight > 0:
        objective = var_objective(var, cfg.dpo_weight, cfg.dpo_beta)  # reference = stage 1
        stage(var, objective, cfg.dpo_steps, "dpo", cfg.seed + 100)
    if not distributed or dist.get_rank() == 0:
        path = save_pretrained(var.eval(), cfg.out / "model")
        print(f"saved {path}")


def upscale_cli(cfg: UpscaleCli) -> None:
    from icml26.testing.results import resolve_device
    from icml26.varsr.pretrained import load_pretrained
    from icml26.varsr.upscale import upscale

    device = resolve_device(cfg.device)
    var = load_pretrained(cfg.model, device)
    lr = _read_image(cfg.input).to(device)
    out = upscale(var, lr, return_scales=True)
    _write_image(out[4][0], cfg.output)
    print(f"wrote {cfg.output} ({out[4].shape[-1]} x {out[4].shape[-2]})")
    if cfg.x2 is not None:
        _write_image(out[2][0], cfg.x2)
        print(f"wrote {cfg.x2} ({out[2].shape[-1]} x {out[2].shape[-2]})")


DESCRIPTION = "VAR super-resolution with hierarchical tokenization and DPO."
COMMANDS = {
    "demo": (DemoConfig, run_demo),
    "train": (TrainCli, train_cli),
    "upscale": (UpscaleCli, upscale_cli),
    "bench": (BenchConfig, run_bench),
}
ERRORS = (ValueError, TypeError, OSError)
"""The exceptions that end as one line and exit 2 (a mistake the user can fix)."""


def main(argv: list[str] | None = None) -> int:
    return dispatch("icml26-varsr", DESCRIPTION, COMMANDS, argv, errors=ERRORS)
