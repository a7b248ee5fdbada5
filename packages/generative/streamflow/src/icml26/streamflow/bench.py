"""Throughput and latency of every way to sample M images in N steps, on the same noise:

(a) the sequential per-image loop (batch 1, N calls per image);
(b) homogeneous batches of N images (the stream's batch size, N calls per batch);
(c) one homogeneous batch of all M images (offline bulk);
(d) the stream end to end: M pushes and the drain (M + N - 1 calls, fill and drain included);
(e) the stream in steady state: a full pipeline, M pushes that each emit one image.

Every arm runs once untimed (warm-up: compilation, allocator, CUDA graphs), then ``repeats``
rounds run every arm in turn; each arm's minimum counts. The device is synchronised on both
sides of the clock, the noise is made before it starts, and a stream's construction and fill
are outside the timed region.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch

from icml26.streamflow.adapters import DiffusersDenoiser
from icml26.streamflow.baselines import sequential_sample
from icml26.streamflow.model import unet
from icml26.streamflow.pipeline import StreamPipeline, as_decoder, model_device
from icml26.streamflow.scheduler import BatchedFlowScheduler
from icml26.testing.command import DeviceOption
from icml26.testing.results import resolve_device

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
LOOP, STEADY = "(a) sequential loop", "(e) stream steady, {backend}"


@dataclass(frozen=True)
class BenchConfig(DeviceOption):
    """Images/s and latency of sequential, batched and streamed flow sampling."""

    models: tuple[str, ...] = ("tiny", "small")
    """tiny / small / base: random diffusers UNet2DModels at --sample-size; sd15: a random
    UNet2DConditionModel with Stable Diffusion 1.5's config (64x64x4 latents, 77x768 text
    condition; for a GPU). Speed does not depend on the weights."""
    sample_size: int = 16
    num_steps: tuple[int, ...] = (4, 8, 16)
    """N values: sampling steps = in-flight samples in the stream."""
    images: int = 32
    """M images per measurement."""
    repeats: int = 3
    """Timed runs per arm after one warm-up run; the minimum counts."""
    compile: bool = False
    """Also time the stream with backend='compile' (torch.compile; slow to compile on a CPU)."""
    cudagraph: bool = False
    """Also time backend='cudagraph' (CUDA graphs; CUDA only)."""
    threads: int = 1
    seed: int = 0
    dtype: Literal["float32", "float16", "bfloat16"] = "float32"

    def validate(self) -> None:
        if not self.models or not self.num_steps:
            raise ValueError("models and num_steps must not be empty")
        for m in self.models:
            if m not in ("tiny", "small", "base", "sd15"):
                raise ValueError(f"--models takes tiny, small, base, sd15; got {m!r}")
        if min(self.num_steps) < 1 or self.images < 1 or self.repeats < 1 or self.threads < 1:
            raise ValueError("num_steps, images, repeats and threads must be >= 1")


def sd15_unet(device, dtype) -> torch.nn.Module:
    """A randomly initialised UNet2DConditionModel with Stable Diffusion 1.5's architecture."""
    from diffusers import UNet2DConditionModel

    with torch.device(device):
        m = UNet2DConditionModel(
            sample_size=64,
            cross_attention_dim=768,
            block_out_channels=(320, 640, 1280, 1280),
            attention_head_dim=8,
        )
    return m.to(dtype).eval()


def _sync(device: torch.device) -> Callable[[], None]:
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def _interleaved_min(arms: dict, device: torch.device, repeats: int) -> dict:
    """Each arm ``name -> (fn, setup)`` runs once untimed (warm-up), then ``repeats`` rounds run
    every arm in turn (so a slow spell of a shared machine hits all arms alike); the minimum
    over rounds counts. ``setup`` (untimed) runs before each run and its result goes to ``fn``.
    Returns name -> (last output, seconds, spread): ``spread`` is the slowest timed round over the
    fastest, the arm's run-to-run noise on this machine (1.0 with one round)."""
    sync = _sync(device)
    best = dict.fromkeys(arms, float("inf"))
    worst = dict.fromkeys(arms, 0.0)
    outs = {}
    for r in range(repeats + 1):
        for name, (fn, setup) in arms.items():
            arg = setup() if setup is not None else None
            sync()
            t = time.perf_counter()
            outs[name] = fn(arg)
            sync()
            if r:  # round 0 is the warm-up
                took = time.perf_counter() - t
                best[name], worst[name] = min(best[name], took), max(worst[name], took)
    return {name: (outs[name], best[name], worst[name] / best[name]) for name in arms}


def measure(
    denoiser,
    shape,
    N: int,
    M: int,
    backends=("eager",),
    repeats: int = 3,
    seed: int = 0,
    condition=None,
    dtype: torch.dtype | None = None,
    guidance_scale: float | None = None,
    uncond=None,
    decode=None,
) -> dict:
    """One model at one N: images/s, latency and model calls of (a)-(e), each arm's speed-up
    over (a), and max |stream - sequential| on the same noise. ``condition``: one condition
    (no batch dim) used for every image. ``guidance_scale`` with ``uncond`` (shaped like
    ``condition``): classifier-free guidance in every arm (a batch of 2B per call); ``decode``
    (a callable or a diffusers VAE): every arm decodes its finished latents inside the timed
    region, as a real-time pipeline must. With ``"compile"`` in ``backends`` the loop and the
    batches of N are also timed through a compiled model, so the stream's compiled arm has a
    compiled baseline."""
    device = model_device(denoiser)
    dtype = dtype or next(denoiser.parameters()).dtype
    g = torch.Generator().manual_seed(seed)
    noise = torch.randn(M, *shape, generator=g).to(device, dtype)
    sched = BatchedFlowScheduler(N)

    decoder = as_decoder(decode)

    def batch_cond(c, b):
        return None if c is None else c.expand(b, *c.shape)

    def sample(model, chunk):
        b = len(chunk)
        x = sequential_sample(
            model, chunk, N, batch_cond(condition, b), sched, guidance_scale, batch_cond(uncond, b)
        )
        if decoder is None:
            return x
        with torch.no_grad():
            return decoder(x)

    def loop(model, size):  # homogeneous batches of `size` images, N calls each
        return lambda _: torch.cat([sample(model, c) for c in noise.split(size)])

    arms = {
        LOOP: (loop(denoiser, 1), None),
        f"(b) batch of N={N}": (loop(denoiser, N), None),
        f"(c) batch of M={M}": (loop(denoiser, M), None),
    }
    calls = {LOOP: M * N, f"(b) batch of N={N}": -(-M // N) * N, f"(c) batch of M={M}": N}
    if "compile" in backends:
        compiled = torch.compile(denoiser, dynamic=False)
        arms[f"{LOOP}, compile"] = (loop(compiled, 1), None)
        arms[f"(b) batch of N={N}, compile"] = (loop(compiled, N), None)
        calls[f"{LOOP}, compile"] = M * N
        calls[f"(b) batch of N={N}, compile"] = -(-M // N) * N
    for backend in backends:
        pipe = StreamPipeline(
            denoiser, shape, N, guidance_scale=guidance_scale, backend=backend, dtype=dtype,
            uncond=uncond, decode=decoder, condition=condition,
        )  # fmt: skip
        _stream_arms(arms, calls, pipe, backend, noise)
    timed = _interleaved_min(arms, device, repeats)
    rows = {
        name: _row(name, t, spread, M, N, calls[name]) for name, (_, t, spread) in timed.items()
    }
    seq = timed[LOOP][0]
    max_err = max(
        (timed[f"(d) stream end to end, {b}"][0].float() - seq.float()).abs().max().item()
        for b in backends
    )
    base = rows[LOOP]["images/s"]
    for r in rows.values():
        r["speedup vs (a)"] = r["images/s"] / base
    return {"rows": rows, "max |stream - sequential|": max_err}


def _stream_arms(arms: dict, calls: dict, pipe: StreamPipeline, backend: str, noise) -> None:
    """The stream's two arms: (d) end to end (M pushes and the drain) and (e) steady state (a
    full pipeline, M pushes that each emit one image; its construction and fill untimed)."""
    M, N = len(noise), pipe.N

    def fill():  # a full pipeline: N - 1 samples in flight
        pipe.reset()
        for i in range(N - 1):
            pipe.push(noise[i % M])

    arms[f"(d) stream end to end, {backend}"] = (lambda _: pipe.generate(noise), pipe.reset)
    arms[STEADY.format(backend=backend)] = (lambda _: [pipe.push(noise[i]) for i in range(M)], fill)
    calls[f"(d) stream end to end, {backend}"] = M + N - 1
    calls[STEADY.format(backend=backend)] = M


def _row(name: str, t: float, spread: float, M: int, N: int, calls: int) -> dict:
    """One arm's throughput, latency (per image, where the arm has one) and model calls."""
    if name.startswith("(a)"):
        latency = t / M
    elif name.startswith("(b)"):
        latency = t * min(N, M) / M  # the first batch's images arrive together
    elif name.startswith("(c)"):
        latency = t
    elif name.startswith("(e)"):
        latency = N * t / M  # an image spends N calls (each on a batch of N) in the stream
    else:
        latency = None  # end to end: fill and drain included, no single latency
    return {"images/s": M / t, "latency s": latency, "calls": calls, "spread": spread}


def _model(name: str, cfg: BenchConfig, device, dtype):
    if name == "sd15":
        cond = torch.randn(77, 768, generator=torch.Generator().manual_seed(cfg.seed))
        return DiffusersDenoiser(sd15_unet(device, dtype)), (4, 64, 64), cond.to(device, dtype)
    m = unet(name, cfg.sample_size, seed=cfg.seed, device=device).to(dtype)
    return DiffusersDenoiser(m), (1, cfg.sample_size, cfg.sample_size), None


def run_bench(cfg: BenchConfig, print_tables: bool = True) -> dict:
    cfg.validate()
    device = torch.device(resolve_device(cfg.device))
    if cfg.cudagraph and device.type != "cuda":
        raise ValueError("--cudagraph needs --device cuda")
    dtype = DTYPES[cfg.dtype]
    backends = (
        ["eager"] + (["compile"] if cfg.compile else []) + (["cudagraph"] if cfg.cudagraph else [])
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)
    results = {}
    try:
        for name in cfg.models:
            f, shape, cond = _model(name, cfg, device, dtype)
            for N in cfg.num_steps:
                res = measure(f, shape, N, cfg.images, backends, cfg.repeats, cfg.seed, cond, dtype)
                results[f"{name} N={N}"] = res
                if print_tables:
                    print_table(
                        f"{name} {shape}, N={N}, M={cfg.images}, {device}, {cfg.dtype}", res
                    )
    finally:
        torch.set_num_threads(threads)
    return results


def print_table(title: str, res: dict) -> None:
    print(f"\n{title}; max |stream - sequential| = {res['max |stream - sequential|']:.1e}")
    print(f"{'method':<34}{'images/s':>10}{'latency s':>11}{'calls':>7}{'speedup':>9}")
    for name, r in res["rows"].items():
        lat = "" if r["latency s"] is None else f"{r['latency s']:.3f}"
        print(
            f"{name:<34}{r['images/s']:>10.1f}{lat:>11}{r['calls']:>7}{r['speedup vs (a)']:>9.2f}"
        )
