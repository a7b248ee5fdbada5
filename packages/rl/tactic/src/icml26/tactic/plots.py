"""Pictures: test curves per arm, and the edges each graph learner keeps under each task type."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from icml26.testing.files import save_figure


def plot_curves(curves: dict[str, list[list[dict]]], path: Path, metric: str) -> None:
    """Mean (line) and min-max over seeds (band) of ``metric`` against environment steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for arm, runs in curves.items():
        runs = [r for r in runs if r and metric in r[0]]
        if not runs:
            continue
        n = min(len(r) for r in runs)
        steps = [runs[0][i]["steps"] for i in range(n)]
        vals = np.array([[r[i][metric] for i in range(n)] for r in runs])
        style = "-" if not arm.startswith("TACTIC,") else ":"
        lw = 2.4 if arm == "TACTIC" else 1.4
        ax.plot(steps, vals.mean(0), style, lw=lw, label=arm)
        ax.fill_between(steps, vals.min(0), vals.max(0), alpha=0.12)
    ax.set_xlabel("environment steps")
    ax.set_ylabel(metric.replace("_", " "))
    ax.set_title(f"greedy test {metric.replace('_', ' ')} (mean over seeds, band: min-max)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    save_figure(fig, path)


def plot_edges(edge_counts: dict[str, list[list[int]]], path: Path,
               required: list[tuple[tuple[int, int], ...]] | None = None) -> None:  # fmt: skip
    """For each graph learner (rows) and task type (columns): each edge drawn with width and
    opacity in proportion to how often it is kept; the type's required pairs dashed in green."""
    import itertools

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from icml26.tactic.env import task_matchings

    arms = [a for a, c in edge_counts.items() if np.asarray(c).sum() > 0]
    if not arms:
        return
    K, E = np.asarray(edge_counts[arms[0]]).shape
    n = round((1 + np.sqrt(1 + 8 * E)) / 2)
    required = required or task_matchings(n, K)
    edges = list(itertools.combinations(range(n), 2))
    ang = np.pi / 2 + 2 * np.pi * np.arange(n) / n
    xy = np.stack([np.cos(ang), np.sin(ang)], 1)
    fig, axes = plt.subplots(len(arms), K, figsize=(2.3 * K, 2.3 * len(arms)), squeeze=False)
    for r, arm in enumerate(arms):
        c = np.asarray(edge_counts[arm], float)
        freq = c / np.maximum(c.sum(1, keepdims=True), 1) * (c.sum(1, keepdims=True) > 0)
        freq = freq / max(freq.max(), 1e-9)
        for k in range(K):
            ax = axes[r, k]
            for e, (i, j) in enumerate(edges):
                if (i, j) in required[k]:
                    ax.plot(*xy[[i, j]].T, "--", color="tab:green", lw=1.0, alpha=0.8)
                ax.plot(*xy[[i, j]].T, color="tab:blue", lw=0.5 + 5 * freq[k, e],
                        alpha=0.15 + 0.85 * freq[k, e])  # fmt: skip
            ax.scatter(*xy.T, s=160, color="white", edgecolor="black", zorder=3)
            for i in range(n):
                ax.text(*xy[i], str(i), ha="center", va="center", fontsize=8, zorder=4)
            ax.set_xlim(-1.4, 1.4)
            ax.set_ylim(-1.4, 1.4)
            ax.set_aspect("equal")
            ax.axis("off")
            if r == 0:
                ax.set_title(f"task type {k}", fontsize=9)
            if k == 0:
                ax.text(-1.55, 0, arm, rotation=90, ha="center", va="center", fontsize=9)
    fig.suptitle("edges kept per task type (width: share of steps; green dashes: required "
                 "pairs)", fontsize=9)  # fmt: skip
    fig.tight_layout()
    save_figure(fig, path)
