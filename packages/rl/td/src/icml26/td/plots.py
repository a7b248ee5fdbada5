"""The demo's figures: error vs T (log-log) and the eta0 sensitivity sweep.

Both read the demo's ``curves[sampling][omega][str(T)][schedule] = {"mean", "se", ...}``;
a diverged mean (None) is left off the plot.
"""

import math
import os
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

STYLE = {
    "exponential": dict(color="C3", lw=2.5, marker="o", label="exponential, eta0=1/(1+gamma)"),
    "oracle": dict(color="k", lw=1.8, ls="--", marker="s", label="oracle 1/(omega(1-gamma)t)"),
    "constant": dict(color="C0", lw=1.5, marker="^", label="best constant (hindsight, per T)"),
    "1/sqrt(t)": dict(color="C2", lw=1.5, marker="v", label="best 1/sqrt(t) (hindsight)"),
    "tail-avg constant": dict(
        color="C4", lw=1.5, marker="d", label="best tail-avg constant (hindsight)"
    ),
    "exponential, no reg": dict(
        color="C1", lw=1.2, ls=":", marker="x", label="exponential, no reg"
    ),
}


def _save(fig, path: Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".png")
    os.close(fd)
    fig.savefig(tmp, dpi=110, bbox_inches="tight")
    plt.close(fig)
    os.replace(tmp, path)


def _mean(summary: dict) -> float:
    return math.nan if summary["mean"] is None else summary["mean"]


def _best_mean(errs: dict, family: str) -> float:
    means = [_mean(v) for k, v in errs.items() if k.startswith(family + " ")]
    return min((m for m in means if not math.isnan(m)), default=math.nan)


def _grid(curves: dict):
    """One panel per (sampling, omega): rows are samplings, columns omegas."""
    samplings = list(curves)
    omegas = list(curves[samplings[0]])
    fig, axes = plt.subplots(
        len(samplings),
        len(omegas),
        figsize=(4.2 * len(omegas), 3.6 * len(samplings)),
        squeeze=False,
        sharex=True,
    )
    return samplings, omegas, fig, axes


def plot_error_vs_T(curves: dict, horizons: list[int], path: Path) -> None:
    samplings, omegas, fig, axes = _grid(curves)
    for i, s in enumerate(samplings):
        for j, o in enumerate(omegas):
            ax = axes[i, j]
            by_T = curves[s][o]
            for name, style in STYLE.items():
                if name in ("exponential", "oracle", "exponential, no reg"):
                    if name not in by_T[str(horizons[0])]:
                        continue
                    ys = [_mean(by_T[str(T)][name]) for T in horizons]
                else:
                    ys = [_best_mean(by_T[str(T)], name) for T in horizons]
                ax.loglog(horizons, ys, **style)
            ax.set_title(f"{s} sampling, omega={o}", fontsize=10)
            ax.grid(True, which="both", alpha=0.3)
            if i == len(samplings) - 1:
                ax.set_xlabel("horizon T")
            if j == 0:
                ax.set_ylabel("||V_theta_T - V*||_D^2")
    handles, labels = axes[-1, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, bbox_to_anchor=(0.5, -0.06))
    fig.suptitle("TD(0) last-iterate error vs horizon (mean over seeds)")
    _save(fig, path)


def plot_eta0_sweep(curves: dict, eta0_grid, T: int, path: Path) -> None:
    samplings, omegas, fig, axes = _grid(curves)
    fams = ["exponential", "constant", "1/sqrt(t)", "tail-avg constant"]
    for i, s in enumerate(samplings):
        for j, o in enumerate(omegas):
            ax = axes[i, j]
            errs = curves[s][o][str(T)]
            for fam in fams:
                ys = [_mean(errs[f"{fam} {eta:g}"]) for eta in eta0_grid]
                style = {k: v for k, v in STYLE[fam].items() if k != "label"}
                ax.loglog(eta0_grid, ys, label=fam, **style)
            ax.axhline(_mean(errs["oracle"]), color="k", ls="--", lw=1, label="oracle")
            ax.set_title(f"{s}, omega={o}, T={T}", fontsize=10)
            ax.grid(True, which="both", alpha=0.3)
            if i == len(samplings) - 1:
                ax.set_xlabel("eta0 (or constant eta)")
            if j == 0:
                ax.set_ylabel("error at T (diverged: off the plot)")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("Sensitivity to the step-size scale")
    _save(fig, path)
