"""Cost of HiST vs the dense-grid model vs full attention: time and *measured* peak memory.

Two sweeps (the paper's cost claim: HiST's cost follows the number of spots, not the area):

* spots at fixed area: a ``side x side`` canvas, N spots at random distinct sites;
* area at fixed spots: N spots scattered over canvases of growing side.

Peak memory is measured, not estimated. On CUDA: ``torch.cuda.max_memory_allocated``. On a Linux
CPU: the process's resident-set high-water mark (``VmHWM``), reset before each measurement through
``/proc/self/clear_refs``, minus the resident size just before it; glibc is told (``mallopt``) to
serve every allocation above 16 KiB with its own mapping so freed tensors leave the resident set
and ``malloc_trim`` hands freed heap pages back before each measurement, so the next
measurement starts clean. Where neither is available memory is reported as None.
Each point is one forward + backward pass in eval mode (no dropout), after one warm-up pass.
"""

import ctypes
import gc
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from icml26.hist.baselines import BaselineConfig, FullAttention
from icml26.hist.model import DenseGridHiST, HiST, HiSTConfig

_PROC = Path("/proc/self")


_LIBC = None


def _cpu_memory_probe() -> bool:
    """Set glibc up for measuring (once) and release freed heap pages; False if unsupported."""
    global _LIBC
    try:
        if _LIBC is None:
            libc = ctypes.CDLL("libc.so.6")
            m_mmap_threshold = -3
            if libc.mallopt(m_mmap_threshold, 16 * 1024) != 1:
                return False
            _LIBC = libc
        _LIBC.malloc_trim(0)  # free heap pages leave the resident set: reuse is counted again
        (_PROC / "clear_refs").write_text("5")
        return "VmHWM" in (_PROC / "status").read_text()
    except (OSError, AttributeError):
        return False


def _status_kb(field: str) -> int:
    for line in (_PROC / "status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


@dataclass
class Measurement:
    seconds: float
    peak_mb: float | None


def measure(model, features, coords, repeats: int = 1, backward: bool = True) -> Measurement:
    """Median time and peak extra memory of forward + backward (or forward only, without
    autograd) of ``model`` on one slide."""
    model.eval()
    cuda = features.is_cuda

    def step():
        if not backward:
            with torch.no_grad():
                model(features, coords)
            return
        out = model(features, coords)
        out.float().square().mean().backward()
        model.zero_grad(set_to_none=True)

    probe = not cuda and _cpu_memory_probe()  # before the warm-up: fixes glibc's threshold
    step()  # warm-up
    gc.collect()
    probe = probe and _cpu_memory_probe()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    elif probe:
        (_PROC / "clear_refs").write_text("5")
        base = _status_kb("VmRSS")
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        step()
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    if cuda:
        peak = (torch.cuda.max_memory_allocated() - base) / 2**20
    elif probe:
        peak = (_status_kb("VmHWM") - base) / 1024
    else:
        peak = None
    return Measurement(float(np.median(times)), peak)


def random_slide(num_spots: int, side: int, seed: int = 0, features: int = 32, device="cpu"):
    """``num_spots`` distinct random sites on a ``side x side`` canvas, random features."""
    if not 2 <= num_spots <= side * side:
        raise ValueError(f"need 2 <= num_spots <= side**2, got {num_spots} on {side}x{side}")
    g = torch.Generator().manual_seed(seed)
    # the two corner sites make every canvas exactly side x side, for the dense model
    others = torch.randperm(side * side - 2, generator=g)[: num_spots - 2] + 1
    flat = torch.cat([torch.tensor([0, side * side - 1]), others])
    coords = torch.stack([flat // side, flat % side], 1)
    feats = torch.randn(len(coords), features, generator=g)
    return feats.to(device), coords.to(device)


def build_models(dim: int, features: int = 32, genes: int = 50):
    """HiST, the dense-grid model (same weights shape) and full attention at ``dim`` width."""
    cfg = HiSTConfig(features, genes, dim=dim)
    return {
        "HiST": HiST(cfg),
        "dense grid": DenseGridHiST(cfg),
        "full attention": FullAttention(BaselineConfig(features, genes, dim=dim, layers=6)),
    }


def sweep(
    points: list[tuple[int, int]],
    dim: int = 64,
    device: str = "cpu",
    max_dense_sites: int = 300_000,
    max_full_spots: int = 20_000,
    progress=None,
) -> list[dict]:
    """Measure every model at each (num_spots, side) point. Points beyond the limits (dense
    canvas cells, full-attention spots) are skipped and recorded as None with the reason."""
    torch.manual_seed(0)
    models = {k: m.to(device) for k, m in build_models(dim).items()}
    rows = []
    for n, side in points:
        feats, coords = random_slide(n, side, device=device)
        row = {"spots": len(coords), "side": side, "area": side * side}
        for name, model in models.items():
            if name == "dense grid" and side * side > max_dense_sites:
                row[name] = {"skipped": f"canvas of {side * side} cells > {max_dense_sites}"}
                continue
            if name == "full attention" and n > max_full_spots:
                row[name] = {"skipped": f"{n} spots > {max_full_spots}"}
                continue
            m = measure(model, feats, coords)
            row[name] = {"seconds": m.seconds, "peak_mb": m.peak_mb}
        rows.append(row)
        if progress is not None:
            progress(row)
    return rows


def format_rows(rows: list[dict]) -> str:
    """A plain-text table: time (s) and peak memory (MB) per model, ratios to HiST."""
    names = ["HiST", "dense grid", "full attention"]
    head = f"{'spots':>7} {'side':>6} " + " ".join(f"{n + ' s / MB':>24}" for n in names)
    lines = [head + "   dense/HiST time, mem"]
    for r in rows:
        cells = []
        for n in names:
            v = r[n]
            if "skipped" in v:
                cells.append(f"{'skipped':>24}")
            else:
                mb = "n/a" if v["peak_mb"] is None else f"{v['peak_mb']:.1f}"
                cells.append(f"{v['seconds']:>13.3f} / {mb:>8}")
        h, d = r["HiST"], r["dense grid"]
        ratio = ""
        if "skipped" not in d:
            mem = (
                "n/a"
                if h["peak_mb"] is None or d["peak_mb"] is None
                else f"{d['peak_mb'] / max(h['peak_mb'], 0.1):.1f}x"
            )
            ratio = f"   {d['seconds'] / h['seconds']:.1f}x, {mem}"
        lines.append(f"{r['spots']:>7} {r['side']:>6} " + " ".join(cells) + ratio)
    return "\n".join(lines)


def tissue_sweep(sizes: list[int], dim: int = 64, device: str = "cpu", progress=None):
    """HiST inference (forward, no autograd) on synthetic tissue of each size (hexagonal,
    Visium-like): the realistic case of contiguous spots, up to Visium HD scale."""
    from icml26.hist.synthetic import make_slide

    torch.manual_seed(0)
    model = HiST(HiSTConfig(32, 50, dim=dim)).to(device)
    rows = []
    for n in sizes:
        slide = make_slide(n, seed=0, hexagonal=True)
        feats = torch.as_tensor(slide.features, device=device)
        coords = torch.as_tensor(slide.coords, device=device)
        m = measure(model, feats, coords, backward=False)
        canvas = (coords.max(0).values + 1).tolist()
        rows.append({"spots": n, "canvas": canvas, "seconds": m.seconds, "peak_mb": m.peak_mb})
        if progress is not None:
            progress(rows[-1])
    return rows
