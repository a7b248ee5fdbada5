"""Figures of the study: AUPRC against the labeled fraction, the ablations, the case study."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np

from icml26.testing.files import save_figure

ARM_STYLE = {
    "lipopu": ("LipoPU (ranking, nn)", "C3", "o-"),
    "nnpu": ("nnPU", "C0", "s-"),
    "pu_auc": ("PU-AUC", "C2", "^-"),
    "bce": ("BCE (MIL)", "C7", "v--"),
    "slipp_forest": ("SLiPP forest", "C5", "x--"),
    "random_forest": ("random forest (tuned)", "C1", "d--"),
    "gradient_boosting": ("gradient boosting", "C4", "P--"),
    "logistic": ("logistic probe", "C8", "*--"),
    "best_descriptor": ("best single descriptor", "C9", ".:"),
}


def _sd(values) -> float:
    """The seeds' standard deviation (ddof = 1, as the tables), 0 for a single seed."""
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def _per_seed(results, arm, c, metric="auprc"):
    return [r["metrics"][metric] for r in results["runs"] if r["arm"] == arm and r["c"] == c]


def plot_study(results: dict, path: Path) -> Path:
    """AUPRC vs c per arm (mean and seed std); prior and bag ablations; multi-label per category."""
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), gridspec_kw={"width_ratios": [2, 1.2, 1.2]})
    ax = axes[0]
    fractions = sorted(results["fractions"])
    for arm, (label, color, style) in ARM_STYLE.items():
        vals = [_per_seed(results, arm, c) for c in fractions]
        if not all(vals):
            continue
        mean = [np.mean(v) for v in vals]
        std = [_sd(v) for v in vals]
        ax.errorbar(fractions, mean, yerr=std, fmt=style, color=color, label=label, capsize=3)
    # zoom on the learned rankers; the single-descriptor floor is named instead of drawn
    learned = [
        np.mean(v)
        for arm in ARM_STYLE
        if arm != "best_descriptor"
        for v in (_per_seed(results, arm, c) for c in fractions)
        if v
    ]
    floor = [np.mean(_per_seed(results, "best_descriptor", c)) for c in fractions]
    if learned and all(floor) and max(floor) < min(learned) - 0.05:
        ax.set_ylim(min(learned) - 0.04, max(learned) + 0.02)
        ax.text(0.02, 0.03, f"best single descriptor: {min(floor):.2f}-{max(floor):.2f} (below)",
                transform=ax.transAxes, fontsize=8)  # fmt: skip
    ax.set_xlabel("labeled fraction c of training lipid pockets")
    ax.set_ylabel("test AUPRC (true labels)")
    ax.set_title(f"{results['data']['source']}: {results['seeds']} seeds, grouped splits")
    ax.set_xscale("log")
    ax.set_xticks(fractions, [f"{c:g}" for c in fractions])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)

    ax = axes[1]
    c = results["ablation_c"]
    arms = sorted({r["arm"] for r in results["runs"] if r["c"] == c and "(" in r["arm"]})
    names = ["lipopu", "nnpu", *arms]
    vals = [_per_seed(results, a, c) for a in names]
    names = [n for n, v in zip(names, vals, strict=True) if v]
    vals = [v for v in vals if v]
    ax.bar(range(len(vals)), [np.mean(v) for v in vals], yerr=[_sd(v) for v in vals],
           color=["C3" if n.startswith("lipopu") else "C0" for n in names], capsize=3)  # fmt: skip
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=7)
    low = min((min(v) for v in vals), default=0)
    ax.set_ylim(max(0, low - 0.05), None)
    ax.set_title(f"ablations at c = {c:g} (lipopu, nnpu: estimated prior)", fontsize=9)
    ax.set_ylabel("test AUPRC")

    ax = axes[2]
    ml = results["multilabel"]
    cats = [k for k in ("sterol", "fatty_acyl") if any(r.get(k) for r in ml)]
    for j, arm in enumerate(("bce", "lipopu")):
        means = [np.mean([r[k]["auprc"] for r in ml if r["arm"] == arm and r.get(k)]) for k in cats]
        stds = [_sd([r[k]["auprc"] for r in ml if r["arm"] == arm and r.get(k)]) for k in cats]
        ax.bar(np.arange(len(cats)) + 0.4 * j, means, 0.4, yerr=stds, capsize=3,
               label="multi-label " + ("LipoPU" if arm == "lipopu" else "BCE"),
               color="C3" if arm == "lipopu" else "C7")  # fmt: skip
    ax.set_xticks(np.arange(len(cats)) + 0.2, cats)
    ax.set_ylabel("test AUPRC per category")
    ax.set_title("multi-label lipid categories")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    return path


def plot_case_study(case: dict, path: Path) -> Path:
    """The top pocket's residues by attention, and how each scorer ranks the ligand's pocket."""
    top = case["top_pocket"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [1.4, 1]})
    ax = axes[0]
    by_type = top["attention_by_type"]
    counts = {}
    for label in top["residues"]:
        counts[label[:3]] = counts.get(label[:3], 0) + 1
    names = list(by_type)
    ax.bar(range(len(names)), [by_type[n] for n in names], color="C3", label="attention share")
    n = max(len(top["residues"]), 1)
    ax.plot(range(len(names)), [counts[k] / n for k in names], "k_", ms=14,
            label="share of the residues")  # fmt: skip
    ax.set_xticks(range(len(names)), names, rotation=60, fontsize=8)
    ax.set_ylabel("share of the pocket")
    ax.set_title(f"{case['structure']}: LipoPU's top pocket (fpocket rank {top['fpocket_rank']}, "
                 f"{top['overlap']:.0%} of its spheres on {case['ligand']}), by residue type",
                 fontsize=9)  # fmt: skip
    ax.legend(fontsize=7)
    ax = axes[1]
    names = list(case["site_rank"])
    ranks = [case["site_rank"][n] or case["pockets"] for n in names]
    ax.barh(range(len(names)), ranks, color=["C3" if n == "lipopu" else "C7" for n in names])
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel(f"rank of the {case['ligand']} pocket (1 = first of {case['pockets']})")
    ax.set_xlim(0, max(ranks) + 1)
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    return path
