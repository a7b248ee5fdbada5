"""Pictures: sampled graphs and meshes beside data ones; sampling cost against n."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from icml26.testing.files import save_figure

__all__ = ["plot_cost", "plot_samples"]


def _draw_graph(ax, hg) -> None:
    x = hg.x.numpy()
    for e in hg.hyperedges():
        if len(e) == 2:
            ax.plot(x[e, 0], x[e, 1], "-", color="0.4", lw=0.6)
    ax.scatter(x[:, 0], x[:, 1], s=6, color="tab:blue", zorder=3)


def _draw_mesh(ax, hg) -> None:
    x = hg.x.numpy()
    tris = [e for e in hg.hyperedges() if len(e) == 3]
    if tris:
        ax.plot_trisurf(
            x[:, 0],
            x[:, 1],
            x[:, 2],
            triangles=tris,
            color="tab:orange",
            edgecolor="0.3",
            linewidth=0.2,
            alpha=0.8,
        )
    ax.scatter(x[:, 0], x[:, 1], x[:, 2], s=3, color="k")


def plot_samples(keep: dict, path: Path) -> None:
    """Rows: data, FAHNES, flat; columns: planar graphs then meshes."""
    rows = [
        ("data", "planar data", "mesh data"),
        ("FAHNES", "planar FAHNES", "mesh FAHNES"),
        ("flat", "planar flat", "mesh flat"),
    ]
    fig = plt.figure(figsize=(16, 8.5))
    for r, (label, gk, mk) in enumerate(rows):
        for c in range(4):
            ax = fig.add_subplot(3, 8, r * 8 + c + 1)
            if c < len(keep.get(gk, [])):
                _draw_graph(ax, keep[gk][c])
            ax.set_xticks([]), ax.set_yticks([])
            if c == 0:
                ax.set_ylabel(label)
            ax3 = fig.add_subplot(3, 8, r * 8 + c + 5, projection="3d")
            if c < len(keep.get(mk, [])):
                _draw_mesh(ax3, keep[mk][c])
            ax3.set_axis_off()
    fig.suptitle("planar graphs at their coordinates (left) and meshes (right): data, FAHNES, flat")
    fig.tight_layout()
    save_figure(fig, path)


def plot_cost(cost: dict, path: Path) -> None:
    """Seconds and peak MiB to sample one graph against n (log-log)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for kind, color in (("fahnes", "tab:blue"), ("flat", "tab:red")):
        rows = [r for r in cost.get(kind, []) if "seconds" in r]
        if not rows:
            continue
        n = [r["n"] for r in rows]
        axes[0].loglog(n, [r["seconds"] for r in rows], "o-", color=color, label=kind)
        axes[1].loglog(n, [max(r["peak MiB"], 1e-2) for r in rows], "o-", color=color, label=kind)
    air = cost.get("airplane", {})
    if "seconds" in air:
        axes[0].loglog(
            [air["n"]], [air["seconds"]], "*", ms=12, color="tab:green", label="airplane size"
        )
        axes[1].loglog([air["n"]], [max(air["peak MiB"], 1e-2)], "*", ms=12, color="tab:green")
    axes[0].set(xlabel="nodes n", ylabel="seconds to sample one graph")
    axes[1].set(xlabel="nodes n", ylabel="peak MiB while sampling")
    axes[0].legend()
    fig.tight_layout()
    save_figure(fig, path)
