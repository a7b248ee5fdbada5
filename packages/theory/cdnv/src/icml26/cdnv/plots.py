"""The demo's figures."""

import os
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def _save(fig, path: Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".png")
    os.close(fd)
    fig.savefig(tmp, dpi=110, bbox_inches="tight")
    plt.close(fig)
    os.replace(tmp, path)


def plot_dynamics(dynamics: dict, raw: dict, path: Path) -> None:
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    for i, (obj, hist) in enumerate(dynamics.items()):
        ep = [r["epoch"] for r in hist]
        axes[0].plot(ep, [r["V"] for r in hist], color=f"C{i}", label=f"{obj} V")
        axes[0].plot(ep, [r["V~"] for r in hist], color=f"C{i}", ls="--", label=f"{obj} V~")
        axes[1].plot(ep, [r["V~"] / r["V"] for r in hist], color=f"C{i}", label=obj)
        axes[2].plot(ep, [r["5-shot error"] for r in hist], color=f"C{i}", label=obj)
    axes[0].axhline(raw["V"], color="gray", lw=0.8, label="raw pixels V")
    axes[0].axhline(raw["V~"], color="gray", lw=0.8, ls="--", label="raw pixels V~")
    axes[0].set_yscale("log")
    axes[0].set_title("CDNV V (solid) and directional V~ (dashed)")
    axes[1].set_title("V~ / V")
    axes[2].set_title("5-shot NCC error (10-way, held-out images)")
    for ax in axes:
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, ncol=2)
    axes[2].legend(fontsize=8)
    _save(fig, path)


def plot_fewshot(fewshot: dict, path: Path) -> None:
    names = list(fewshot)
    ways = list(fewshot[names[0]])
    fig, axes = plt.subplots(1, len(ways), figsize=(5.5 * len(ways), 4), squeeze=False)
    for j, w in enumerate(ways):
        ax = axes[0, j]
        for i, name in enumerate(names):
            t = fewshot[name][w]
            ax.plot(t["shots"], t["error"], color=f"C{i}", marker="o", label=f"{name} error")
            ax.plot(
                t["shots"], t["bound"], color=f"C{i}", marker="^", ls="--", label=f"{name} bound"
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("shots m")
        ax.set_title(f"NCC error vs bound, {w} episodes")
        ax.grid(alpha=0.3, which="both")
    axes[0, 0].legend(fontsize=7, ncol=2)
    _save(fig, path)


def plot_cosines(cosines: dict, path: Path) -> None:
    fig, axes = plt.subplots(1, len(cosines), figsize=(3.2 * len(cosines), 3.2))
    for ax, (name, M) in zip(axes, cosines.items(), strict=True):
        im = ax.imshow(M, vmin=0, vmax=1, cmap="viridis")
        off = M[~__import__("torch").eye(len(M), dtype=bool)].mean().item()
        ax.set_title(f"{name}\nmean |cos| {off:.2f}", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(im, ax=axes, fraction=0.02)
    fig.suptitle("|cos| between decision axes of independent tasks")
    _save(fig, path)
