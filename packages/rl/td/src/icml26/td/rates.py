"""Convergence rates as the paper states them: the slope of log(error) against log(T).

The paper's claims are rates (the error of the last iterate falls as ``T^-1`` up to logs under
i.i.d. sampling), so a comparison of schedules reads the fitted slope over horizons, with an
interval over seeds, rather than a ratio at one horizon.
"""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Slope:
    """A fitted log-log slope with a percentile bootstrap interval over seeds."""

    slope: float
    low: float
    high: float
    level: float = 0.95

    def __str__(self) -> str:
        return f"{self.slope:.2f} [{self.low:.2f}, {self.high:.2f}]"


def _ols_slope(log_t: np.ndarray, log_e: np.ndarray) -> float:
    x = log_t - log_t.mean()
    return float((x * (log_e - log_e.mean())).sum() / (x * x).sum())


def _curve(e: np.ndarray) -> np.ndarray:
    """log of the mean error over seeds, (H,); for (H, F, seeds) the best of the F schedules at
    each horizon (a family tuned in hindsight; a diverged schedule is never the best)."""
    mean = np.where(np.isfinite(e), e, np.inf).mean(-1)
    return np.log(mean if e.ndim == 2 else mean.min(1))


def loglog_slope(horizons, errors, level: float = 0.95, n_boot: int = 2000, seed: int = 0) -> Slope:
    """Slope of ``log(mean error)`` against ``log(T)``, and its bootstrap interval.

    Args:
        horizons: (H,) the horizons T, at least two distinct.
        errors: (H, n_seeds) the error of each seed's run at each horizon (positive, finite);
            or (H, F, n_seeds) for a family of F schedules tuned in hindsight: at each horizon
            the family's curve takes its lowest mean error (non-finite runs excluded), and each
            bootstrap resample picks its best schedule again.
        level: coverage of the interval.
        n_boot: bootstrap resamples of the seeds (the same seeds at every horizon, as the runs
            share their seed across horizons).
        seed: seeds the resampling, so the interval is reproducible.
    """
    t = np.asarray(horizons, dtype=np.float64)
    e = np.asarray(errors, dtype=np.float64)
    if t.ndim != 1 or len(np.unique(t)) < 2 or (t <= 0).any():
        raise ValueError(f"horizons must be >= 2 distinct positive values, got {t.tolist()}")
    if e.ndim not in (2, 3) or e.shape[0] != len(t) or e.shape[-1] < 1:
        raise ValueError(
            f"errors must be (H, n_seeds) or (H, F, n_seeds) with H = {len(t)}, got {e.shape}"
        )
    if (e <= 0).any():
        raise ValueError("errors must be positive")
    if e.ndim == 2 and not np.isfinite(e).all():
        raise ValueError("errors must be finite (a diverged run has no rate)")
    if not np.isfinite(_curve(e)).all():
        raise ValueError("at some horizon every schedule of the family diverged: no rate")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    log_t = np.log(t)
    slope = _ols_slope(log_t, _curve(e))
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, e.shape[-1], size=(n_boot, e.shape[-1]))
    boots = np.array([_ols_slope(log_t, _curve(e[..., p])) for p in picks])
    boots = boots[np.isfinite(boots)]  # a resample of only diverged seeds has no slope
    lo, hi = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2])
    return Slope(slope, float(lo), float(hi), level)
