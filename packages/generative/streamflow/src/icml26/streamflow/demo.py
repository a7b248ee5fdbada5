"""StreamFlow at small scale: a flow-matching UNet trained here on 8x8 digits is sampled by the
naive sequential loop, homogeneous batches and the stream pipeline; the stream must reproduce the
sequential images exactly (same noise) and the table gives each method's throughput and latency.

Verdict (``verdict``, one row per claim; rules fixed before the full run; timings come from one
run, ratios within it):
  1. exact: the stream reproduces the sequential loop's images, max |stream - sequential| <= 1e-5
     on the trained digits model (36 images, same noise);
  2. the paper's speed-up: the stream reaches 6.1x the sequential loop's throughput (best model).
     The paper measures it on a GPU with TensorRT and a tiny VAE: on a CPU the row is "untestable
     here" and its evidence gives the measured ratio;
  3. faster: the stream's throughput is above the sequential loop's on every measured model.
"""

import json
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path

import torch

from icml26.streamflow._results import (
    as_smoke,
    claim_row,
    demo_command,
    resolve_device,
    summarise,
    write_results,
)
from icml26.streamflow.bench import measure
from icml26.streamflow.model import digits_images, train_flow_matching, unet
from icml26.streamflow.pipeline import DiffusersDenoiser, StreamPipeline, sequential_sample

PACKAGE = "icml26-streamflow"
PAPER_SPEEDUP = 6.1
EXACT_TOL = 1e-5
STREAM, SEQUENTIAL = "(d) stream, eager", "(a) sequential loop"


@dataclass(frozen=True)
class DemoConfig:
    """Stream vs sequential vs batched flow sampling: same images, how much faster."""

    quick: bool = False
    """Short training and one UNet size: well under 30 s."""
    out: Path | None = None
    """Run folder (default runs/streamflow/<timestamp>)."""
    seed: int = 0
    train_steps: int = 600
    """Flow-matching steps of the digits UNet."""
    num_steps: int = 4
    """N: sampling steps = in-flight samples in the stream."""
    images: int = 32
    """M images per throughput measurement."""
    sizes: tuple[str, ...] = ("tiny", "small")
    """Random UNet sizes also measured at 16x16 (weights do not change speed)."""
    compile: bool = False
    """Also measure backend='compile' (torch.compile; compiling takes a while on CPU)."""
    threads: int = 1
    """torch threads: 1 on a shared CPU, ratios from one run."""
    device: str = "auto"
    """auto (CUDA when present), cpu, cuda, cuda:N"""

    def resolved(self) -> "DemoConfig":
        return replace(self, train_steps=100, images=12, sizes=("tiny",)) if self.quick else self

    def validate(self) -> None:
        for c in (self, self.resolved()):
            if c.num_steps < 1 or c.images < 1 or c.train_steps < 0:
                raise ValueError("num_steps and images must be >= 1, train_steps >= 0")


def _timing_tables(model, cfg: DemoConfig) -> dict:
    """Throughput and latency of (a)-(d) for the trained model and each random UNet size."""
    tables = {
        "digits UNet 8x8 (trained)": measure(
            model, (1, 8, 8), cfg.num_steps, cfg.images, cfg.compile, cfg.seed
        )
    }
    for size in cfg.sizes:
        tables[f"random UNet {size} 16x16"] = measure(
            unet(size, 16, seed=cfg.seed, device=next(model.parameters()).device),
            (1, 16, 16),
            cfg.num_steps,
            cfg.images,
            cfg.compile,
            cfg.seed,
        )
    return tables


@contextmanager
def _plain_fp32():
    """No TF32 in CUDA convolutions and matmuls (the flags do nothing on a CPU): the stream and
    the loop run different batch sizes, so different kernels, and TF32's rounding would swamp
    the agreement the exactness rule checks."""
    flags = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = flags


def experiment(cfg: DemoConfig) -> dict:
    """Train the digits model, sample it every way, time every method; the raw measurements."""
    cfg.validate()
    cfg = cfg.resolved()
    device = resolve_device(cfg.device)
    model = unet("tiny", 8, seed=cfg.seed, device=device)
    losses = train_flow_matching(model, digits_images(device), cfg.train_steps, seed=cfg.seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)  # timings only: the shared CPU is noisy
    try:
        f = DiffusersDenoiser(model)
        noise = torch.randn(36, 1, 8, 8, generator=torch.Generator().manual_seed(cfg.seed + 1))
        noise = noise.to(device)
        with _plain_fp32():
            seq = torch.cat(
                [sequential_sample(f, noise[i : i + 1], cfg.num_steps) for i in range(len(noise))]
            )
            stream = StreamPipeline(f, (1, 8, 8), cfg.num_steps).generate(noise)
        tables = _timing_tables(model, cfg)
    finally:
        torch.set_num_threads(threads)
    rows = {k: t["rows"] for k, t in tables.items()}
    return {
        "device": str(next(model.parameters()).device),
        "threads": cfg.threads,
        "num_steps": cfg.num_steps,
        "images": cfg.images,
        "max |stream - sequential|": (stream - seq).abs().max().item(),
        "stream speedups": {k: r[STREAM]["speedup vs (a)"] for k, r in rows.items()},
        "bulk speedups": {
            k: r[f"(c) batch of M={cfg.images}"]["speedup vs (a)"] for k, r in rows.items()
        },
        "tables": tables,
        "final training loss": losses[-1] if losses else None,
        "samples": {"sequential": seq.tolist(), "stream": stream.tolist()},  # for the figure
    }


# ---- verdict: a pure function of the measurements, one row per claim ----

CLAIMS = {
    "exact": "the stream pipeline produces the same images as the sequential per-image loop",
    "paper speedup": f"stream batching reaches the paper's {PAPER_SPEEDUP}x speed-up over the "
    "sequential loop (measured there on a GPU with TensorRT and a tiny VAE)",
    "faster": "the stream pipeline has a higher throughput than the sequential loop",
}


def _speedups(results: dict) -> str:
    return ", ".join(f"{k} {v:.2f}x" for k, v in results["stream speedups"].items())


def verdict(results: dict) -> tuple[list[dict], str]:
    """One row per claim from the measurements of :func:`experiment`, and their summary."""
    diff = results["max |stream - sequential|"]
    speedups = results["stream speedups"].values()
    setting = (
        f"{results['device']}, {results['threads']} thread(s), N={results['num_steps']}, "
        f"M={results['images']}"
    )
    exact = claim_row(
        CLAIMS["exact"],
        "reproduced" if diff <= EXACT_TOL else "not reproduced",
        f"max |stream - sequential| {diff:.1e} on the trained digits model, same noise "
        f"(rule: <= {EXACT_TOL:.0e})",
    )
    best = f"best stream speed-up {max(speedups):.2f}x ({_speedups(results)}; {setting})"
    if results["device"].startswith("cuda"):
        held = max(speedups) >= PAPER_SPEEDUP
        paper = claim_row(
            CLAIMS["paper speedup"],
            "reproduced" if held else "not reproduced",
            f"{best}; rule: >= {PAPER_SPEEDUP}x",
        )
    else:
        paper = claim_row(
            CLAIMS["paper speedup"],
            "untestable here",
            f"a GPU speed claim, measured on {results['device']}: {best}",
        )
    faster = claim_row(
        CLAIMS["faster"],
        "reproduced" if min(speedups) > 1.0 else "not reproduced",
        f"stream / sequential images/s: {_speedups(results)} ({setting}; rule: > 1 on every model)",
    )
    claims = [exact, paper, faster]
    return claims, summarise([r["verdict"] for r in claims])


# ---- run: experiment -> verdict -> results.json, figure, table ----


def run_demo(cfg: DemoConfig) -> dict:
    """Run the comparison; write results.json and streamflow.png; return the results."""
    cfg.validate()
    run_cfg = cfg.resolved()
    out = cfg.out or Path("runs") / "streamflow" / datetime.now().strftime("%Y%m%d-%H%M%S")
    start = time.perf_counter()
    raw = experiment(run_cfg)
    claims, verdict_ = verdict(raw)
    if run_cfg.quick:
        claims, verdict_ = as_smoke(claims)
    tables = raw["tables"]
    results = {
        "package": PACKAGE,
        "version": _version(),
        "experiment": f"flow-matching UNets, N={run_cfg.num_steps} steps, M={run_cfg.images} "
        f"images, {raw['device']} {run_cfg.threads} thread(s): sequential vs batched vs stream",
        "claim": f"stream batching of heterogeneous time steps speeds rectified-flow inference up "
        f"to {PAPER_SPEEDUP}x over a sequential per-image loop",
        "headline": _headline(raw),
        "claims": claims,
        "metrics": {
            "method": {f"{k} stream speedup": v for k, v in raw["stream speedups"].items()}
            | {"max |stream - sequential|": raw["max |stream - sequential|"]},
            "baseline": {f"{k} bulk batch speedup": v for k, v in raw["bulk speedups"].items()},
        },
        "verdict": verdict_,
        "quick": run_cfg.quick,
        "seconds": round(time.perf_counter() - start, 2),
        "config": json.loads(json.dumps(asdict(run_cfg), default=str))
        | {"command": demo_command("icml26-streamflow", cfg)},
        "seed": run_cfg.seed,
        "device": raw["device"],
        "torch": torch.__version__,
        "tables": tables,
        "final training loss": raw["final training loss"],
    }
    write_results(out / "results.json", results)
    from icml26.streamflow.plots import plot_demo

    samples = {k: torch.tensor(v) for k, v in raw["samples"].items()}
    plot_demo(samples["sequential"], samples["stream"], tables, out / "streamflow.png")
    _print_table(tables, claims, verdict_, results["seconds"], out)
    return results


def _headline(raw: dict) -> str:
    s, b = raw["stream speedups"].values(), raw["bulk speedups"].values()
    return (
        f"stream {min(s):.2f}-{max(s):.2f}x the sequential loop's throughput on {raw['device']} "
        f"(paper {PAPER_SPEEDUP}x on a GPU); identical images (max diff "
        f"{raw['max |stream - sequential|']:.1e}); bulk batching of all M images "
        f"{min(b):.2f}-{max(b):.2f}x"
    )


def _print_table(tables: dict, claims: list[dict], verdict_: str, seconds: float, out: Path):
    for name, t in tables.items():
        print(f"\n{name}: max |stream - sequential| {t['max |stream - sequential|']:.1e}")
        print(f"{'method':<24}{'images/s':>10}{'latency s':>11}{'calls':>7}{'speedup':>9}")
        for k, r in t["rows"].items():
            print(
                f"{k:<24}{r['images/s']:>10.1f}{r['latency s']:>11.3f}{r['calls']:>7}"
                f"{r['speedup vs (a)']:>9.2f}"
            )
    print("\nclaims:")
    for r in claims:
        print(f"  {r['verdict']:<15} {r['claim']}\n  {'':<15} {r['evidence']}")
    print(f"verdict: {verdict_}  ({seconds:.1f} s)  -> {out / 'results.json'}")


def _version() -> str:
    from icml26.streamflow import __version__

    return __version__
