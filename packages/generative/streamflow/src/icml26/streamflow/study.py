"""StreamFlow at small scale: a flow-matching UNet trained here on 8x8 digits is sampled by the
naive sequential loop, homogeneous batches and the stream pipeline, with diffusers' flow-matching
Euler schedule and with PeRFlow's piecewise windows; the stream must reproduce the sequential
images (same noise), and the throughput of every method is measured at N = 4, 8 and 16 steps on
the trained model and on random diffusers UNets.

Verdict (``verdict``, one row per claim; rules fixed before the full run; timings are minima over
repeats within one run, judged as ratios):
  1. exact, flow matching: the stream reproduces diffusers' sequential loop,
     max |stream - sequential| <= 1e-5 x max |sequential| on the trained model (36 images);
  2. exact, PeRFlow windows: the stream with per-sample windows (eps-parameterised, 4 windows,
     8 steps) reproduces PeRFlow's sequential scheduler (``reference.PeRFlowSequential``, a
     scalar port of the authors' scheduler) under the same relative rule;
  3. batch cost, one row per N: a full stream emits images at >= 85% of the throughput of
     homogeneous batches of N (a stream call is a batch-of-N call) on every model;
  4. bulk, one row per N: the same against one batch of all M images (offline batching, the
     most batching gives on this hardware);
  5. faster, one row per N: the stream in steady state beats the sequential loop by at least half
     of the bulk batch's speed-up (capped at the ideal N x), and by more than 1x, on every model;
  6. the paper's speed-up: the stream reaches 6.1x the sequential loop (best model and N). The
     paper measures it on a GPU with TensorRT and a tiny VAE: on a CPU the row is "untestable
     here" and its evidence gives the measured ratios.
Rows 3-6 count a ratio only beyond the run-to-run spread measured in the same run (within it:
inconclusive). The models: the trained digits UNet, random UNets at 16x16, and a random
text-to-image UNet whose every arm runs classifier-free guidance and decodes with a tiny VAE
inside the timed loop.
"""

from contextlib import contextmanager
from dataclasses import dataclass

import torch

from icml26.streamflow.adapters import DiffusersDenoiser
from icml26.streamflow.baselines import sequential_sample
from icml26.streamflow.bench import measure
from icml26.streamflow.model import digits_images, text_to_image, train_flow_matching, unet
from icml26.streamflow.pipeline import StreamPipeline
from icml26.streamflow.reference import PeRFlowSequential
from icml26.streamflow.scheduler import PeRFlowWindows
from icml26.testing.checks import integer
from icml26.testing.command import DemoOptions
from icml26.testing.results import (
    resolve_device,
)

TRAINED = "digits UNet 8x8 (trained)"
TEXT_TO_IMAGE = "text-to-image UNet 4x8x8 + CFG + tiny VAE"


@dataclass(frozen=True)
class DemoConfig(DemoOptions):
    """Stream vs sequential vs batched flow sampling: same images, how much faster.

    ``--quick``: short training, N in (2, 4), one repeat: well under 30 s."""

    seed: int = 0
    train_steps: int = 600
    """Flow-matching steps of the digits UNet."""
    num_steps: tuple[int, ...] = (4, 8, 16)
    """N values: sampling steps = in-flight samples in the stream."""
    images: int = 32
    """M images per throughput measurement."""
    repeats: int = 3
    """Timed runs per arm (after a warm-up); the minimum counts."""
    sizes: tuple[str, ...] = ("tiny", "small")
    """Random UNet sizes also measured at 16x16 (weights do not change speed)."""
    threads: int = 1
    """torch threads: 1 on a shared CPU, ratios from one run."""
    text_to_image: bool = True
    """Also time a random text-to-image UNet with classifier-free guidance and a tiny VAE
    decoding every finished image inside the timed loop (what a real-time pipeline runs)."""
    guidance_scale: float = 5.0
    """Classifier-free guidance weight of the text-to-image timing."""

    def quick_settings(self) -> dict:
        return dict(
            train_steps=100, images=8, sizes=(), num_steps=(2, 4), repeats=1, text_to_image=False
        )

    def validate(self) -> None:
        for c in (self, self.resolved()):
            if not c.num_steps:
                raise ValueError("num_steps must name at least one step count, got none")
            for n in c.num_steps:
                integer("num_steps", n, low=1)
            integer("images", c.images, low=1)
            integer("train_steps", c.train_steps, low=0)
            integer("repeats", c.repeats, low=1)
            integer("threads", c.threads, low=1)
            if not c.guidance_scale > 1.0:
                raise ValueError(f"guidance_scale must be > 1 (guidance), got {c.guidance_scale}")


@contextmanager
def _plain_fp32():
    """No TF32 in CUDA convolutions and matmuls (the flags do nothing on a CPU): the stream and
    the loop run different batch sizes, so different kernels, and TF32's rounding would swamp
    the agreement the exactness rules check."""
    flags = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = flags


def _exactness(f, noise, N: int, scheduler=None, reference=None) -> dict:
    """Stream vs a per-image sequential loop on the same noise: diffusers' own loop, or
    ``reference(f, one_noise)``."""
    if reference is None:
        seq = torch.cat([sequential_sample(f, z[None], N) for z in noise])
    else:
        seq = torch.cat([reference(f, z[None]) for z in noise])
    stream = StreamPipeline(f, noise.shape[1:], N, scheduler=scheduler).generate(noise)
    return {
        "max |stream - sequential|": (stream - seq).abs().max().item(),
        "max |sequential|": seq.abs().max().item(),
        "num_steps": N,
        "images": len(noise),
        "samples": {"sequential": seq.cpu(), "stream": stream.cpu()},
    }


def experiment(cfg: DemoConfig) -> dict:
    """Train the digits model, sample it every way, time every method; the raw measurements."""
    cfg.validate()
    cfg = cfg.resolved()
    device = resolve_device(cfg.device)
    model = unet("tiny", 8, seed=cfg.seed, device=device)
    losses = train_flow_matching(model, digits_images(device), cfg.train_steps, seed=cfg.seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)  # timings only: the shared CPU is noisy
    f = DiffusersDenoiser(model)
    noise = torch.randn(36, 1, 8, 8, generator=torch.Generator().manual_seed(cfg.seed + 1))
    noise = noise.to(device)
    try:
        with _plain_fp32():
            exact = {
                "flow matching": _exactness(f, noise, max(cfg.num_steps)),
                # PeRFlow's eps parameterisation on the same network: exactness does not depend
                # on what the weights were trained for.
                "PeRFlow windows": _exactness(
                    f,
                    noise,
                    8,
                    PeRFlowWindows(8, num_windows=4, prediction_type="ddim_eps"),
                    PeRFlowSequential(8, num_windows=4, prediction_type="ddim_eps").sample,
                ),
            }
        models = {TRAINED: (f, (1, 8, 8), {})}
        for size in cfg.sizes:
            m = DiffusersDenoiser(unet(size, 16, seed=cfg.seed, device=device))
            models[f"random UNet {size} 16x16"] = (m, (1, 16, 16), {})
        if cfg.text_to_image:
            u, vae, cond, uncond = text_to_image(seed=cfg.seed, device=device)
            models[TEXT_TO_IMAGE] = (
                DiffusersDenoiser(u),
                (4, 8, 8),
                dict(condition=cond, uncond=uncond, guidance_scale=cfg.guidance_scale, decode=vae),
            )
        tables = {}
        for name, (m, shape, extra) in models.items():
            for N in cfg.num_steps:
                tables[f"{name}, N={N}"] = measure(
                    m, shape, N, cfg.images, repeats=cfg.repeats, seed=cfg.seed, **extra
                ) | {"model": name, "N": N}
    finally:
        torch.set_num_threads(threads)
    samples = exact["flow matching"].pop("samples")
    exact["PeRFlow windows"].pop("samples")
    return {
        "device": str(next(model.parameters()).device),
        "threads": cfg.threads,
        "images": cfg.images,
        "repeats": cfg.repeats,
        "exact": exact,
        "tables": tables,
        "final training loss": losses[-1] if losses else None,
        "samples": {k: v.tolist() for k, v in samples.items()},  # for the figure
    }
