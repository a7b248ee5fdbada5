"""``icml26-td bench``: aggregate TD(0) updates per second, vectorised vs a plain per-step loop.

Both implementations run the same algorithm (i.i.d. sampling, linear TD(0), one float64 iterate
per run) on the same Garnet chain, single-threaded, in one process; the ratio is what counts,
not the absolute numbers, on a shared machine.
"""

import time
from dataclasses import dataclass

import numpy as np

from icml26.td.problems import garnet_mdp
from icml26.td.schedules import ConstantStepSize, ExponentialStepSize
from icml26.td.td import td0_sweep
from icml26.testing.results import resolve_device
from icml26.testing.timing import torch_threads


@dataclass(frozen=True)
class BenchConfig:
    """Vectorised (K schedules x R runs as one tensor) vs a per-step loop, as a ratio."""

    schedules: int = 8
    """K: schedules advanced together."""
    runs: int = 32
    """R: runs per schedule."""
    horizon: int = 2000
    """Steps of the vectorised run."""
    loop_steps: int = 2000
    """Steps of each looped run."""
    loop_runs: int = 4
    """Runs the plain loop does (one after another)."""
    n_states: int = 30
    n_features: int = 8
    threads: int = 1
    """torch threads (1: timings on a shared machine are noisy)."""
    device: str = "auto"
    """auto (CUDA when present), cpu, cuda, cuda:N (the vectorised run; the loop is NumPy)"""


def _loop_td0(P, r, phi, gamma, etas, seed) -> np.ndarray:
    # The plain implementation: one run, one step at a time, NumPy scalars and small vectors.
    rng = np.random.default_rng(seed)
    mu_cdf = np.cumsum(_stationary(P))
    P_cdf = np.cumsum(P, 1)
    theta = np.zeros(phi.shape[1])
    for eta in etas:
        s = min(int(np.searchsorted(mu_cdf, rng.random())), len(r) - 1)
        s2 = min(int(np.searchsorted(P_cdf[s], rng.random())), len(r) - 1)
        delta = r[s] + gamma * phi[s2] @ theta - phi[s] @ theta
        theta = theta + eta * delta * phi[s]
    return theta


def _stationary(P: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eig(P.T)
    mu = np.real(v[:, np.argmin(np.abs(w - 1))])
    return mu / mu.sum()


def run_bench(cfg: BenchConfig) -> dict:
    device = resolve_device(cfg.device)
    with torch_threads(cfg.threads, device):  # restored after: the caller's setting is theirs
        problem = garnet_mdp(cfg.n_states, cfg.n_features, 0.9, 0)
        scheds = [ExponentialStepSize(0.5, cfg.horizon)] + [
            ConstantStepSize(0.5 / 2**k) for k in range(cfg.schedules - 1)
        ]
        on_device = problem.to(device)
        t0 = time.perf_counter()
        td0_sweep(on_device, scheds, cfg.horizon, cfg.runs).cpu()  # .cpu() waits for the GPU
        vec_s = time.perf_counter() - t0
        vec_ups = cfg.schedules * cfg.runs * cfg.horizon / vec_s

        P, r, phi = (x.numpy() for x in (problem.P, problem.r, problem.phi))
        etas = ExponentialStepSize(0.5, cfg.loop_steps).values().numpy()
        t0 = time.perf_counter()
        for k in range(cfg.loop_runs):
            _loop_td0(P, r, phi, 0.9, etas, k)
        loop_s = time.perf_counter() - t0
        loop_ups = cfg.loop_runs * cfg.loop_steps / loop_s
        out = {
            "vectorised updates/s": vec_ups,
            "loop updates/s": loop_ups,
            "speedup": vec_ups / loop_ups,
            "device": device,
        }
        print(
            f"vectorised ({device}): {cfg.schedules} schedules x {cfg.runs} runs x {cfg.horizon} "
            f"steps: {vec_ups:,.0f} updates/s"
        )
        print(
            f"plain loop: {cfg.loop_runs} runs x {cfg.loop_steps} steps: {loop_ups:,.0f} updates/s"
        )
        print(f"speedup (vectorised / loop): {out['speedup']:.1f}x  (torch threads: {cfg.threads})")
        return out
