"""The demo's pictures: probe scores per table, the collapse curves, the uncertainty check."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from icml26.testing.files import save_figure

COLOURS = {
    "Var-T-JEPA": "tab:red",
    "T-JEPA [REG]": "tab:blue",
    "T-JEPA": "tab:cyan",
    "Var-T-JEPA at init": "tab:pink",
    "raw logreg": "tab:gray",
    "raw MLP": "tab:olive",
    "raw LightGBM": "tab:green",
    "majority class": "black",
}


def _tables(results: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in results["runs"]:
        out.setdefault(r["dataset"], []).append(r)
    return out


def _f1(run: dict, name: str) -> float:
    entry = run["probes"][name]
    return entry.get("selected", entry)["test"]["macro_f1"]


def _save(fig, path: Path):
    fig.tight_layout()
    save_figure(fig, path)


def plot_probes(results: dict, path: Path):
    tables = _tables(results)
    fig, axes = plt.subplots(1, len(tables), figsize=(3.6 * len(tables), 3.6), squeeze=False)
    for ax, (name, runs) in zip(axes[0], tables.items(), strict=True):
        per_beta = [k for k in runs[0]["probes"] if k.startswith("Var-T-JEPA (beta=")]
        labels = [*per_beta, *COLOURS] if len(per_beta) > 1 else list(COLOURS)
        vals = np.array([[_f1(r, k) for r in runs] for k in labels])
        ax.bar(
            range(len(labels)),
            vals.mean(1),
            yerr=vals.std(1) if vals.shape[1] > 1 else None,
            color=[COLOURS.get(k, "salmon") for k in labels],
        )
        lo = max(0.0, float(vals[:-1].min()) - 0.05)
        ax.set_ylim(lo, min(1.0, float(vals.max()) + 0.03))
        ax.set_xticks(range(len(labels)), labels, rotation=70, fontsize=7)
        ax.set_title(name, fontsize=9)
        ax.set_ylabel("test macro-F1")
    _save(fig, path)


def plot_rankme(results: dict, path: Path):
    tables = _tables(results)
    fig, axes = plt.subplots(1, len(tables), figsize=(3.6 * len(tables), 3.2), squeeze=False)
    for ax, (name, runs) in zip(axes[0], tables.items(), strict=True):
        for model in ("Var-T-JEPA", "T-JEPA [REG]", "T-JEPA"):
            steps = [p["step"] for p in runs[0]["rankme"][model]]
            vals = np.array([[p["rankme"] for p in r["rankme"][model]] for r in runs])
            ax.plot(steps, vals.mean(0), color=COLOURS[model], label=model)
            ax.fill_between(steps, vals.min(0), vals.max(0), color=COLOURS[model], alpha=0.2)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("pretraining step")
        ax.set_ylabel("RankMe (validation embeddings)")
    axes[0][0].legend(fontsize=7)
    _save(fig, path)


def plot_uncertainty(results: dict, path: Path):
    tables = _tables(results)
    names = list(tables)
    fig, (a, b) = plt.subplots(1, 2, figsize=(8, 3.2))
    for i, runs in enumerate(tables.values()):
        rho = [r["uncertainty"]["spearman_within_column"] for r in runs]
        auc = [r["std_flags_errors_auroc"] for r in runs if r["std_flags_errors_auroc"] is not None]
        a.bar(i, np.mean(rho), color="tab:red", alpha=0.5)
        a.scatter([i] * len(rho), rho, color="tab:red", s=12)
        if auc:
            b.bar(i, np.mean(auc), color="tab:purple", alpha=0.5)
            b.scatter([i] * len(auc), auc, color="tab:purple", s=12)
    a.axhline(0, color="black", lw=0.8)
    a.set_ylabel("Spearman(predicted var, sq. error)\nwithin column")
    b.axhline(0.5, color="black", lw=0.8, ls="--")
    b.set_ylabel("AUROC: posterior std flags\nprobe errors")
    for ax in (a, b):
        ax.set_xticks(range(len(names)), names, rotation=30, fontsize=8)
    _save(fig, path)
