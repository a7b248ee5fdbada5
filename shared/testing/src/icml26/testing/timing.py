"""Bench timing every package shares: best-of / median-of repeats, device-synchronised, with
the CPU held to one thread so ratios are stable on a shared machine. Stdlib only; torch is used
when the caller has loaded it."""

from __future__ import annotations

import contextlib
import statistics
import sys
import time
from collections.abc import Callable, Iterator


def synchronize(device: str = "cpu") -> None:
    """Wait for queued CUDA work on ``device`` (a no-op on the CPU), so a timer reads the work."""
    torch = sys.modules.get("torch")
    if torch is not None and str(device).startswith("cuda"):
        torch.cuda.synchronize(device)


def _timings(fn: Callable[[], object], repeats: int, device: str, warmup: int) -> list[float]:
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        synchronize(device)
        start = time.perf_counter()
        fn()
        synchronize(device)
        times.append(time.perf_counter() - start)
    return times


def best_time(
    fn: Callable[[], object], repeats: int, device: str = "cpu", warmup: int = 0
) -> float:
    """The fastest of ``repeats`` timed calls of ``fn`` (seconds), after ``warmup`` untimed ones."""
    return min(_timings(fn, repeats, device, warmup))


def median_time(
    fn: Callable[[], object], repeats: int, device: str = "cpu", warmup: int = 0
) -> float:
    """The median of ``repeats`` timed calls of ``fn`` (seconds), after ``warmup`` untimed ones."""
    return statistics.median(_timings(fn, repeats, device, warmup))


@contextlib.contextmanager
def torch_threads(n: int | None = 1, device: str = "cpu") -> Iterator[None]:
    """Hold torch to ``n`` CPU threads inside the block (on the CPU; ``None`` leaves it), and
    restore the previous count after, so a bench does not change its caller's settings."""
    torch = sys.modules.get("torch")
    if torch is None or n is None or not str(device).startswith("cpu"):
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
