"""Cost of sampling one graph as it grows: wall-clock time and peak memory, FAHNES against the
flat baseline, each size in a fresh process (``icml26-fahnes bench``; the demo's part c).

Peak memory is the process's resident high-water mark during sampling, reset just before it
(``/proc/self/clear_refs``, Linux) and taken relative to the resident size at that moment, so
imports and the model itself are not counted. Each size runs once after a warm-up sample of 16
nodes (the timings are single draws, not averages). The largest tensor any operation produced
is recorded in a second, untimed draw (a dispatch hook): a dense n x n block shows there first,
and unlike resident memory it does not depend on the allocator.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["BenchConfig", "LargestTensor", "cost_sweep", "run_bench"]


class LargestTensor(TorchDispatchMode):
    """Records the element count of the largest tensor any op returns while active."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return out


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def measure_once(kind: str, model_dir: str, n: int, seed: int = 0) -> dict:
    """Sample one graph of ``n`` nodes in this process: seconds, peak MiB above the resident
    size before sampling, largest tensor, nodes and hyperedges of the sample."""
    from icml26.fahnes.baselines import FlatModel
    from icml26.fahnes.model import FahnesModel

    torch.set_num_threads(1)
    model = (FahnesModel if kind == "fahnes" else FlatModel).from_pretrained(model_dir)
    model.sample_hypergraphs(16, 1, seed=seed)  # warm-up: allocator, first-call costs
    before = _status_kib("VmRSS")
    reset = Path("/proc/self/clear_refs")
    if reset.exists():
        reset.write_text("5")  # resets VmHWM to the current RSS
    t0 = time.perf_counter()
    hg = model.sample_hypergraphs(n, 1, seed=seed)[0]
    seconds = time.perf_counter() - t0
    peak = _status_kib("VmHWM")
    with LargestTensor() as probe:  # a second draw, untimed: the hook slows every op
        model.sample_hypergraphs(n, 1, seed=seed)
    return {
        "n": n,
        "seconds": seconds,
        "peak MiB": max(peak - before, 0) / 1024,
        "largest tensor": probe.largest,
        "nodes": hg.num_nodes,
        "hyperedges": hg.num_edges,
    }


def cost_sweep(
    kind: str, model_dir: Path, sizes: list[int], timeout: float = 900, fresh: bool = True
) -> list[dict]:
    """``measure_once`` for every size, each in a fresh Python process (``fresh=False``: in this
    one, for smoke runs; its peak memory then includes earlier allocations)."""
    if not fresh:
        return [measure_once(kind, str(model_dir), n) for n in sizes]
    rows = []
    for n in sizes:
        code = (
            "import json,sys; from icml26.fahnes.bench import measure_once; "
            f"print('RESULT', json.dumps(measure_once({kind!r}, {str(model_dir)!r}, {n})))"
        )
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        try:
            p = subprocess.run(
                [sys.executable, "-c", code],
                capture_output=True,
                text=True,
                timeout=timeout,
                env=env,
            )
        except subprocess.TimeoutExpired:
            rows.append({"n": n, "error": f"over {timeout:.0f} s"})
            continue
        line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
        if p.returncode or not line:
            rows.append({"n": n, "error": (p.stderr.strip().splitlines() or ["failed"])[-1][:200]})
        else:
            rows.append(json.loads(line[-1][7:]))
    return rows


@dataclass(frozen=True)
class BenchConfig:
    """Sampling cost of trained models (folders written by ``train``) as n grows."""

    fahnes: Path
    """A FAHNES model folder (``train --model fahnes``)."""
    flat: Path | None = None
    """A flat-baseline folder (``train --model flat``), for the ratio."""
    sizes: tuple[int, ...] = (64, 128, 256, 512, 1024, 2048)


def run_bench(cfg: BenchConfig) -> dict:
    if not cfg.sizes or min(cfg.sizes) < 2:
        raise ValueError("sizes must be >= 2")
    out = {"fahnes": cost_sweep("fahnes", cfg.fahnes, list(cfg.sizes))}
    if cfg.flat is not None:
        out["flat"] = cost_sweep("flat", cfg.flat, list(cfg.sizes))
    print(
        f"{'n':>6} {'FAHNES s':>9} {'MiB':>7}"
        + (f" {'flat s':>8} {'MiB':>7} {'time x':>7}" if cfg.flat else "")
    )
    for i, n in enumerate(cfg.sizes):
        a = out["fahnes"][i]
        line = (
            f"{n:>6} {a.get('seconds', float('nan')):>9.2f} {a.get('peak MiB', float('nan')):>7.1f}"
        )
        if cfg.flat is not None:
            b = out["flat"][i]
            ratio = b.get("seconds", float("nan")) / a.get("seconds", float("nan"))
            nan = float("nan")
            line += f" {b.get('seconds', nan):>8.2f} {b.get('peak MiB', nan):>7.1f} {ratio:>7.2f}"
        print(line)
    return out
