"""``icml26-cdnv bench``: time and peak memory of the class statistics at scale.

Synthetic embeddings (N samples, d dims, C Gaussian classes) are generated chunk by chunk from a
seed, so no case ever holds the data set. Cases, each in a fresh process so its peak memory is
its own:

- ``data only``: generating and reading the chunks twice (the floor every case pays);
- ``streamed``: ``StreamingClassStats`` (two passes, O(C^2 + C d) state) and the measures;
- ``per-class covariance``: the baseline that keeps one d x d second-moment matrix per class
  (float64) and forms every ``Delta^T Sigma_a Delta`` from it, run only where its C d^2 state
  fits (``baseline_max_classes``); above that its state size is reported, not allocated.

Times are wall-clock in one run of this command; compare the ratio, not the seconds (shared
machines are noisy). On CUDA the peak is ``torch.cuda.max_memory_allocated``; on the CPU the
process's peak resident set.
"""

import json
import multiprocessing as mp
import os
import resource
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path

import torch

from icml26.testing.checks import integer
from icml26.testing.command import DeviceOption
from icml26.testing.results import resolve_device


@dataclass(frozen=True)
class BenchConfig(DeviceOption):
    """Time and peak memory of the streamed statistics vs per-class covariances."""

    classes: tuple[int, ...] = (100, 1000)
    dim: int = 2048
    samples: int = 100_000
    chunk: int = 8192
    """Rows per chunk fed to the accumulator."""
    baseline_max_classes: int = 100
    """Run the per-class covariance baseline up to this C (its state is C d^2 float64)."""
    threads: int = 1
    """torch CPU threads per case (1: ratios are steadier on a shared machine)."""
    seed: int = 0
    quick: bool = False
    """A few seconds: C = 10, d = 64, N = 4000."""
    isolate: bool = True
    """Each case in a fresh process (its own peak memory); off: all in this process (faster
    to start; the CPU peaks are then cumulative)."""
    out: Path | None = None
    """JSON report (default runs/cdnv/bench-<timestamp>.json)."""

    def resolved(self) -> "BenchConfig":
        if not self.quick:
            return self
        return replace(self, classes=(10,), dim=64, samples=4000, chunk=1000)


def _chunks(C: int, d: int, N: int, chunk: int, seed: int, device: torch.device):
    g = torch.Generator().manual_seed(seed)
    means = 3 * torch.randn(C, d, generator=g) / d**0.5
    for i in range(0, N, chunk):
        k = min(chunk, N - i)
        y = torch.randint(0, C, (k,), generator=g)
        x = means[y] + torch.randn(k, d, generator=g) / d**0.5
        yield x.to(device), y.to(device)


def _covariance_baseline(batches, C: int, d: int, device: torch.device) -> float:
    """Per-class d x d second moments (the memory this package avoids); returns mean V~."""
    z = dict(dtype=torch.float64, device=device)
    n, s1, s2 = torch.zeros(C, **z), torch.zeros(C, d, **z), torch.zeros(C, d, d, **z)
    for x, y in batches():
        x = x.double()
        for c in torch.unique(y).tolist():
            xc = x[y == c]
            n[c] += len(xc)
            s1[c] += xc.sum(0)
            s2[c].addmm_(xc.T, xc)
    mu = s1 / n[:, None]
    total = 0.0
    for a in range(C):
        cov = s2[a].div_(n[a]).addr_(mu[a], mu[a], alpha=-1.0)  # in place: no C d^2 temporary
        delta = mu[a] - mu  # (C, d)
        q = ((delta @ cov) * delta).sum(1)
        d2 = delta.pow(2).sum(1)
        total += (q[d2 > 0] / d2[d2 > 0].pow(2)).sum().item()
    return total / (C * (C - 1))


def _case(kind: str, cfg: BenchConfig, C: int, device: str, queue) -> None:
    torch.set_num_threads(cfg.threads)
    dev = torch.device(device)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)

    def batches():
        return _chunks(C, cfg.dim, cfg.samples, cfg.chunk, cfg.seed, dev)

    start = time.perf_counter()
    value = None
    if kind == "data only":
        for _ in range(2):
            for x, _y in batches():
                x.sum()
    elif kind == "streamed":
        from icml26.cdnv.measures import directional_cdnv
        from icml26.cdnv.stats import StreamingClassStats

        acc = StreamingClassStats(num_classes=C)
        for x, y in batches():
            acc.update(x, y)
        acc.second_pass()
        for x, y in batches():
            acc.update(x, y)
        # "mean" convention, per ordered pair u^T Sigma_a u / d2: comparable to the baseline's
        value = directional_cdnv(acc.finalize(), "mean").mean
    else:
        value = _covariance_baseline(batches, C, cfg.dim, dev)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
        peak = torch.cuda.max_memory_allocated(dev) / 2**20
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    queue.put({"seconds": time.perf_counter() - start, "peak_mb": peak, "mean V~": value})


class _Box:
    """A queue stand-in for cases run in this process."""

    def put(self, item) -> None:
        self.item = item


def _run_case(kind: str, cfg: BenchConfig, C: int, device: str) -> dict:
    if not cfg.isolate:
        box = _Box()
        threads = torch.get_num_threads()
        try:
            _case(kind, cfg, C, device, box)
        finally:
            torch.set_num_threads(threads)
        return box.item
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_case, args=(kind, cfg, C, device, q))
    p.start()
    p.join()
    if p.exitcode != 0:
        raise RuntimeError(f"bench case {kind!r} at C = {C} exited with code {p.exitcode}")
    return q.get(timeout=10)


def run_bench(cfg: BenchConfig) -> dict:
    run = cfg.resolved()
    if not run.classes or min(run.classes) < 2:
        raise ValueError("classes: give one or more C >= 2")
    integer("dim", run.dim, low=1)
    integer("chunk", run.chunk, low=1)
    integer("samples (two per class of the largest C)", run.samples, low=2 * max(run.classes))
    device = str(resolve_device(cfg.device))
    rows = []
    for C in run.classes:
        state_mb = {
            "streamed": (6 * C * run.dim + C * C) * 8 / 2**20,
            "per-class covariance": C * run.dim**2 * 8 / 2**20,
        }
        floor = _run_case("data only", run, C, device)
        row = {"C": C, "d": run.dim, "N": run.samples, "data only": floor}
        for kind in ("streamed", "per-class covariance"):
            if kind == "per-class covariance" and run.baseline_max_classes < C:
                row[kind] = {"skipped": f"state would be {state_mb[kind] / 1024:.1f} GiB"}
            else:
                row[kind] = _run_case(kind, run, C, device)
            row[kind]["state_mb"] = state_mb[kind]
            print(_line(C, kind, row[kind], floor), flush=True)
        base, ours = row["per-class covariance"], row["streamed"]
        if "seconds" in base:
            row["time ratio (covariance / streamed)"] = base["seconds"] / ours["seconds"]
            row["peak ratio (covariance / streamed)"] = base["peak_mb"] / ours["peak_mb"]
            print(
                f"C={C:<5} per-class covariance / streamed: "
                f"{row['time ratio (covariance / streamed)']:.2f}x the time, "
                f"{row['peak ratio (covariance / streamed)']:.1f}x the peak memory",
                flush=True,
            )
        rows.append(row)
    report = {
        "config": json.loads(json.dumps(asdict(run), default=str)),
        "device": device,
        "torch": torch.__version__,
        "cases": rows,
    }
    out = cfg.out or Path("runs") / "cdnv" / f"bench-{datetime.now():%Y%m%d-%H%M%S}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.")
    with os.fdopen(fd, "w") as f:
        json.dump(report, f, indent=2)
    os.replace(tmp, out)
    print(f"-> {out}")
    return report


def _line(C: int, kind: str, r: dict, floor: dict) -> str:
    if "skipped" in r:
        return f"C={C:<5} {kind:<22} skipped ({r['skipped']})"
    return (
        f"C={C:<5} {kind:<22} {r['seconds']:8.1f} s  peak {r['peak_mb']:8.0f} MB "
        f"(data only {floor['peak_mb']:.0f} MB)  state {r['state_mb']:8.1f} MB  "
        f"mean V~ {r['mean V~']:.6g}"
    )
