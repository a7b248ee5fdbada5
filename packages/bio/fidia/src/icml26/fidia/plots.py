"""The demo's figure: toys (E[max of N]) and the ProteinMPNN study (success@N, precision, reward
during training)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from icml26.testing.files import save_figure

COLORS = {"base (T for success@N)": "#bbbbbb", "base (T for precision)": "#888888",
          "mean-reward RL": "#4c72b0", "GRPO": "#dd8452", "FIDIA (max@N)": "#55a868"}  # fmt: skip


def _bars(ax, groups, arms, value, title, ylabel):
    width = 0.8 / len(arms)
    for k, arm in enumerate(arms):
        means, errs = [], []
        for g in groups:
            v = np.asarray(value(g, arm), dtype=float)
            means.append(v.mean() if len(v) else np.nan)
            errs.append(v.std(ddof=1) if len(v) > 1 else 0.0)
        x = np.arange(len(groups)) + (k - (len(arms) - 1) / 2) * width
        ax.bar(x, means, width, yerr=errs, label=arm, color=COLORS.get(arm), capsize=2)
    ax.set_xticks(np.arange(len(groups)), groups, fontsize=7)
    ax.set_title(title, fontsize=9)
    ax.set_ylabel(ylabel)


def plot_study(raw: dict, path: str | Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    study = raw["protein"]
    panels = 2 if "skipped" in study else 4
    fig, axes = plt.subplots(1, panels, figsize=(4.2 * panels, 3.6))
    toy_arms = ["mean-reward RL", "GRPO", "FIDIA (max@N)"]
    lands = raw["toy_landscapes"]
    _bars(axes[0], [name.replace(" ", "\n", 1) for name in lands], toy_arms,
          lambda g, a: [r["max_at_n"] for r in raw["toys"]
                        if r["landscape"].replace(" ", "\n", 1) == g and r["arm"] == a],
          "toys: E[max of N] after training", "E[max@N]")  # fmt: skip
    axes[0].legend(fontsize=7)
    _bars(axes[1], [name.replace(" ", "\n", 1) for name in lands], toy_arms,
          lambda g, a: [r["optimum_at_n"] for r in raw["toys"]
                        if r["landscape"].replace(" ", "\n", 1) == g and r["arm"] == a],
          "toys: P(global optimum among N)", "optimum@N")  # fmt: skip
    if "skipped" not in study:
        arms = list(COLORS)
        bbs = list(study["backbones"])
        for ax, key, title in ((axes[2], "success_at_n", f"success@{raw['N']} (held-out judge)"),
                               (axes[3], "precision", "precision (held-out judge)")):  # fmt: skip
            _bars(ax, bbs, arms, lambda g, a, key=key: [
                r["metrics"][key] for r in study["runs"] if r["backbone"] == g and r["arm"] == a
            ], title, key)  # fmt: skip
        axes[2].legend(fontsize=7)
    fig.tight_layout()
    path = Path(path)
    save_figure(fig, path)
    return path
