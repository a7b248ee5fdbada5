"""Throughput and latency: (a) the naive sequential loop, (b) a homogeneous batch of N, (c) a
homogeneous batch of M (offline bulk), (d) the stream pipeline (eager, and compiled when asked),
all on the same noise; plus the check that (d) reproduces (a)."""

import time
from dataclasses import dataclass

import torch

from icml26.streamflow._results import resolve_device
from icml26.streamflow.model import unet
from icml26.streamflow.pipeline import (
    DiffusersDenoiser,
    StreamPipeline,
    model_device,
    sequential_sample,
)


@dataclass(frozen=True)
class BenchConfig:
    """Images/s and latency of sequential, batched and streamed flow sampling (CPU: 1 thread)."""

    sizes: tuple[str, ...] = ("tiny", "small")
    """Random diffusers UNet sizes (speed does not depend on the weights)."""
    sample_size: int = 16
    num_steps: int = 4
    """N: sampling steps (= in-flight samples in the stream)."""
    images: int = 32
    """M images per measurement."""
    compile: bool = False
    """Also time backend='compile' (torch.compile; slow to compile on CPU)."""
    threads: int = 1
    seed: int = 0
    device: str = "auto"
    """auto (CUDA when present), cpu, cuda, cuda:N"""


def _timed(fn, device: torch.device):
    # CUDA kernels run asynchronously: wait for them on both sides of the clock.
    sync = torch.cuda.synchronize if device.type == "cuda" else lambda *_: None
    sync(device)
    t = time.perf_counter()
    out = fn()
    sync(device)
    return out, time.perf_counter() - t


def measure(model, shape, N: int, M: int, compile_too: bool, seed: int = 0) -> dict:
    """One size: seconds per image and first-image latency for (a)-(d); max |d - a|. Runs on
    the model's device; the noise is drawn from a seeded CPU generator and moved there."""
    f = DiffusersDenoiser(model)
    device = model_device(f)
    noise = torch.randn(M, *shape, generator=torch.Generator().manual_seed(seed)).to(device)
    rows = {}
    seq, t = _timed(
        lambda: torch.cat([sequential_sample(f, noise[i : i + 1], N) for i in range(M)]), device
    )
    rows["(a) sequential loop"] = {"images/s": M / t, "latency s": t / M, "calls": M * N}
    _, t = _timed(lambda: torch.cat([sequential_sample(f, c, N) for c in noise.split(N)]), device)
    rows[f"(b) batch of N={N}"] = {
        "images/s": M / t,
        "latency s": t * min(N, M) / M,
        "calls": -(-M // N) * N,
    }
    _, t = _timed(lambda: sequential_sample(f, noise, N), device)
    rows[f"(c) batch of M={M}"] = {"images/s": M / t, "latency s": t, "calls": N}
    backends = ["eager"] + (["compile"] if compile_too else [])
    max_err = 0.0
    for backend in backends:
        pipe = StreamPipeline(f, shape, N, backend=backend)
        pipe.warmup()
        first, t_first = _timed(lambda pipe=pipe: [pipe.push(noise[i]) for i in range(N)], device)
        pipe = StreamPipeline(f, shape, N, backend=backend)
        pipe.warmup()
        out, t = _timed(lambda pipe=pipe: pipe.generate(noise), device)
        max_err = max(max_err, (out - seq).abs().max().item())
        rows[f"(d) stream, {backend}"] = {
            "images/s": M / t,
            "latency s": t_first,
            "calls": M + N - 1,
        }
        del first
    base = rows["(a) sequential loop"]["images/s"]
    for r in rows.values():
        r["speedup vs (a)"] = r["images/s"] / base
    return {"rows": rows, "max |stream - sequential|": max_err}


def run_bench(cfg: BenchConfig) -> dict:
    device = resolve_device(cfg.device)
    torch.set_num_threads(cfg.threads)
    results = {}
    for size in cfg.sizes:
        res = measure(
            unet(size, cfg.sample_size, seed=cfg.seed, device=device),
            (1, cfg.sample_size, cfg.sample_size),
            cfg.num_steps,
            cfg.images,
            cfg.compile,
            cfg.seed,
        )
        results[size] = res
        print(
            f"\nUNet {size}, {cfg.sample_size}x{cfg.sample_size}, N={cfg.num_steps}, "
            f"M={cfg.images}, {device}, {cfg.threads} thread(s); "
            f"max |stream - sequential| = {res['max |stream - sequential|']:.1e}"
        )
        print(f"{'method':<24}{'images/s':>10}{'latency s':>11}{'calls':>7}{'speedup':>9}")
        for name, r in res["rows"].items():
            print(
                f"{name:<24}{r['images/s']:>10.1f}{r['latency s']:>11.3f}{r['calls']:>7}"
                f"{r['speedup vs (a)']:>9.2f}"
            )
    return results
