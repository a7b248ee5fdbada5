"""The demo's figures: error vs T (log-log), the Markov error split into optimisation error and
closed-form bias floor, and the eta0 sensitivity sweep.

Both read the demo's measurements (``experiment()``, also the results file):
``studies[sampling][problem]`` with per-horizon ``{"mean", "se"}`` summaries; a diverged mean
(None) is left off the plot. The first chain of each (gamma, omega) is drawn.
"""

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from icml26.testing.files import save_figure

STYLE = {
    "method": dict(color="C3", lw=2.5, marker="o"),
    "best last-iterate": dict(
        color="C0", lw=1.5, marker="^", label="best last-iterate schedule (hindsight, per T)"
    ),
    "oracle": dict(color="k", lw=1.5, ls="--", marker="s", label="oracle 1/(omega(1-gamma)t)"),
    "best averaged": dict(
        color="C4", lw=1.2, marker="d", label="best averaged schedule (hindsight, per T)"
    ),
    "best prior work": dict(
        color="C2", lw=1.5, marker="v", label="best prior-work fix (hindsight, per T)"
    ),
    "no reg": dict(color="C1", lw=1.2, ls=":", marker="x", label="exponential, no regularisation"),
}


def _means(rows: list[dict]) -> list[float]:
    return [math.nan if r["mean"] is None else r["mean"] for r in rows]


def _first_chains(study: dict) -> list[str]:
    return [k for k in study if k.endswith("chain=0")]


def plot_error_vs_T(measured: dict, path: Path) -> None:
    studies, horizons = measured["studies"], measured["horizons"]
    samplings = list(studies)
    keys = _first_chains(studies[samplings[0]])
    fig, axes = plt.subplots(
        len(samplings),
        len(keys),
        figsize=(3.6 * len(keys), 3.4 * len(samplings)),
        squeeze=False,
        sharex=True,
    )
    for i, s in enumerate(samplings):
        for j, k in enumerate(keys):
            ax, r = axes[i, j], studies[s][k]
            label = "exponential" if s == "iid" else "regularised exponential"
            ax.loglog(horizons, _means(r["method"]), label=label, **STYLE["method"])
            for name, style in STYLE.items():
                if name != "method" and name in r:
                    ax.loglog(horizons, _means(r[name]), **style)
            if "bias floor" in r:
                ax.loglog(horizons, r["bias floor"], color="0.5", lw=1, ls="-.", label="bias floor")
            ax.set_title(f"{s}, {k.removesuffix(' chain=0')}", fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
            if i == len(samplings) - 1:
                ax.set_xlabel("horizon T")
            if j == 0:
                ax.set_ylabel("||V_theta_T - V*||_D^2")
    handles = {}
    for ax in axes[:, 0]:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(lab, h)
    fig.legend(
        list(handles.values()),
        list(handles),
        loc="lower center",
        ncol=4,
        fontsize=8,
        bbox_to_anchor=(0.5, -0.05),
    )
    fig.suptitle("TD(0) error vs horizon (mean over seeds; first chain of each setting)")
    save_figure(fig, path)


def plot_eta0_sweep(measured: dict, path: Path) -> None:
    studies = measured["studies"]
    samplings = list(studies)
    T = measured["horizons"][-1]
    fig, axes = plt.subplots(1, len(samplings), figsize=(5.5 * len(samplings), 4), squeeze=False)
    for i, s in enumerate(samplings):
        ax = axes[0, i]
        for j, k in enumerate(_first_chains(studies[s])):
            r = studies[s][k]
            etas = [float(e) for e in r["eta0 sweep"]]
            name = k.removesuffix(" chain=0")
            ax.loglog(
                etas,
                _means(list(r["eta0 sweep"].values())),
                color=f"C{j}",
                marker="o",
                label=f"exponential, {name}",
            )
            consts = [float(e) for e in r["constant sweep"]]
            ax.loglog(
                consts,
                _means(list(r["constant sweep"].values())),
                color=f"C{j}",
                ls=":",
                marker=".",
                lw=1,
            )
        ax.set_title(f"{s} sampling, T={T} (dotted: constant step eta)", fontsize=10)
        ax.set_xlabel("eta0 (exponential) or eta (constant)")
        ax.grid(True, which="both", alpha=0.3)
        if i == 0:
            ax.set_ylabel("error at T (diverged: off the plot)")
        ax.legend(fontsize=7)
    fig.suptitle("Sensitivity to the step-size scale")
    save_figure(fig, path)


def plot_markov_split(measured: dict, path: Path) -> None:
    """Markov sampling, first chain at the first gamma: the regularised method's error, its
    optimisation error and the closed-form bias floor out to ``floor_horizon``, per omega (columns)
    and mixing regime (rows: as drawn, then each lazy copy)."""
    study, horizons = measured["studies"]["markov"], measured["horizons"]
    firsts = [k for k in study if " chain=0" in k]
    gamma = study[firsts[0]]["gamma"]
    firsts = [k for k in firsts if study[k]["gamma"] == gamma]
    regimes = sorted({study[k]["lazy eps"] or 1.0 for k in firsts}, reverse=True)
    omegas = sorted({study[k]["omega"] for k in firsts}, reverse=True)
    fig, axes = plt.subplots(
        len(regimes), len(omegas), figsize=(3.8 * len(omegas), 3.2 * len(regimes)), squeeze=False
    )
    for k in firsts:
        r = study[k]
        ax = axes[regimes.index(r["lazy eps"] or 1.0), omegas.index(r["omega"])]
        ax.loglog(horizons, _means(r["method"]), label="regularised exponential", **STYLE["method"])
        ax.loglog(
            horizons, _means(r["optimisation error"]), color="C1", marker="x", lw=1.5,
            label="its optimisation error (to theta_lambda)",
        )  # fmt: skip
        ax.loglog(
            r["floor"]["T"], r["floor"]["floor"], color="0.4", ls="-.", lw=1.2,
            label="bias floor (closed form)",
        )  # fmt: skip
        ax.loglog(horizons, _means(r["tuned method"]), color="C3", ls=":", lw=1.2,
                  label="regularised exponential, c tuned in hindsight")  # fmt: skip
        ax.loglog(horizons, _means(r["best prior work"]), **STYLE["best prior work"])
        eps = "as drawn" if r["lazy eps"] is None else f"lazy eps={r['lazy eps']:g}"
        ax.set_title(f"omega={r['omega']:.2g}, {eps}, tau_mix {r['tau_mix']}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("horizon T")
    for ax in axes[:, 0]:
        ax.set_ylabel("||V - V*||_D^2")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, bbox_to_anchor=(0.5, -0.04))
    fig.suptitle(
        f"Markov sampling, gamma={gamma:g}: the error is optimisation error + bias floor, and the "
        "floor's rate is known in closed form"
    )
    save_figure(fig, path)
