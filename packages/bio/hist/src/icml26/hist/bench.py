"""``icml26-hist bench``: HiST's cost against the dense-grid and full-attention baselines, as
the canvas grows at a fixed number of spots and as the spots grow at a fixed canvas (seconds and
peak memory of a forward and backward, measured in one run)."""

import sys
from dataclasses import dataclass

from icml26.testing.results import resolve_device
from icml26.testing.timing import torch_threads


@dataclass(frozen=True)
class BenchConfig:
    """Cost sweep: time and measured peak memory, HiST vs dense grid vs full attention."""

    spots: tuple[int, ...] = (1000, 4000, 16000, 64000)
    """Spot counts of the fixed-area sweep."""
    side: int = 256
    """Canvas side of the fixed-area sweep."""
    sides: tuple[int, ...] = (64, 128, 256, 512, 1024)
    """Canvas sides of the fixed-spots sweep (spots[0] spots)."""
    dim: int = 64
    """Model width."""
    device: str = "auto"
    """auto (CUDA when present), cpu, cuda, cuda:N (on CUDA try --spots 100000 300000 600000
    --side 1024)."""
    max_dense_sites: int = 300_000
    """Skip the dense grid beyond this many canvas cells."""
    max_full_spots: int = 20_000
    """Skip full attention beyond this many spots."""
    threads: int = 1
    """torch CPU threads (1 for steadier ratios)."""
    tissue: tuple[int, ...] = ()
    """Also time HiST inference on synthetic tissue of these sizes (e.g. 2000 20000 200000)."""


def run_bench(cfg: BenchConfig) -> None:

    from icml26.hist import cost

    device = resolve_device(cfg.device)
    with torch_threads(cfg.threads, device):  # restored after: the caller's setting is theirs
        for title, points in (
            (f"fixed area {cfg.side}x{cfg.side}", [(n, cfg.side) for n in cfg.spots]),
            (f"fixed spots {cfg.spots[0]}", [(cfg.spots[0], s) for s in cfg.sides]),
        ):
            rows = cost.sweep(
                points,
                dim=cfg.dim,
                device=device,
                max_dense_sites=cfg.max_dense_sites,
                max_full_spots=cfg.max_full_spots,
                progress=lambda r: print(
                    f"  measured {r['spots']} spots on {r['side']}^2", file=sys.stderr
                ),
            )
            print(f"{title}: forward + backward, seconds / peak MB (device {device})")
            print(cost.format_rows(rows))
        if cfg.tissue:
            print(f"HiST inference on synthetic hexagonal tissue (device {device})")
            print(f"{'spots':>8} {'canvas':>12} {'seconds':>9} {'peak MB':>9}")
            for r in cost.tissue_sweep(list(cfg.tissue), cfg.dim, device):
                mb = "n/a" if r["peak_mb"] is None else f"{r['peak_mb']:.0f}"
                canvas = "x".join(map(str, r["canvas"]))
                print(f"{r['spots']:>8} {canvas:>12} {r['seconds']:>9.2f} {mb:>9}")
