"""The demo's figures: quality vs sampling steps, and sample grids."""

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from icml26.testing.files import save_figure


def plot_quality(problems: dict, path: Path) -> None:
    """The verdict's metric (seed mean, bars: std over seeds) and straightness vs steps:
    ``problems[name]["metrics"][method][str(steps)]``, metric name in ``problems[name]["metric"]``.
    """
    fig, axes = plt.subplots(2, len(problems), figsize=(5.5 * len(problems), 7), squeeze=False)
    for j, (name, p) in enumerate(problems.items()):
        key = p.get("metric", "mmd")
        for i, (label, rows) in enumerate(p["metrics"].items()):
            steps = sorted(rows, key=int)  # keys are step counts as strings
            xs = [rows[s].get("network calls", int(s)) for s in steps]
            ys = [max(rows[s][key], 1e-5) for s in steps]
            err = [rows[s].get(f"{key} std", 0.0) for s in steps]
            if xs == [0]:  # no network: a reference level (a Gaussian fit, the data's floor)
                axes[0, j].axhline(ys[0], ls="--", lw=1, color=f"C{i}", label=label)
                continue
            if len(steps) == 1:
                axes[0, j].errorbar(xs, ys, yerr=err, marker="*", ms=12, color=f"C{i}",
                                    label=label, zorder=3, ls="none")  # fmt: skip
                continue
            axes[0, j].errorbar(xs, ys, yerr=err, marker="o", color=f"C{i}", label=label,
                                capsize=2)  # fmt: skip
            axes[1, j].plot(xs, [rows[s]["straightness"] for s in steps], marker="o",
                            color=f"C{i}", label=label)  # fmt: skip
        axes[0, j].set(xscale="log", yscale="log", title=f"{name}: {key} vs sampling steps",
                       xlabel="network evaluations")  # fmt: skip
        axes[1, j].set(xscale="log", title=f"{name}: path length / chord", xlabel="steps")
        for ax in axes[:, j]:
            ax.grid(alpha=0.3, which="both")
    axes[0, 0].legend(fontsize=7)
    fig.subplots_adjust(hspace=0.35)
    save_figure(fig, path)


def plot_samples(grids: dict, path: Path) -> None:
    names = list(grids)
    first = grids[names[0]]
    if first.dim() == 2:  # 2-D points
        fig, axes = plt.subplots(
            1, len(names), figsize=(3 * len(names), 3), sharex=True, sharey=True
        )
        for ax, n in zip(axes, names, strict=True):
            pts = grids[n].detach().cpu()
            ax.scatter(pts[:, 0], pts[:, 1], s=4)
            ax.set_title(n, fontsize=9)
            ax.set_aspect("equal")
        save_figure(fig, path)
        return
    fig, axes = plt.subplots(1, len(names), figsize=(2.6 * len(names), 2.8))
    for ax, n in zip(axes, names, strict=True):
        imgs = grids[n][:36].detach().cpu().clamp(-1, 1)
        k = int(math.sqrt(len(imgs)))
        h, w = imgs.shape[-2:]
        tile = imgs[: k * k].view(k, k, h, w).permute(0, 2, 1, 3).reshape(k * h, k * w)
        ax.imshow(tile.numpy(), cmap="gray", vmin=-1, vmax=1)
        ax.set_title(n, fontsize=9)
        ax.axis("off")
    save_figure(fig, path)


def plot_rounds(problems: dict, prior_scale: float, path: Path) -> None:
    """Stage 1 round by round: terminal std (with the Gaussian closed form's) and MMD to the
    prior, per data set (``problems[name]["stage 1 rounds"]``)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for i, (name, p) in enumerate(problems.items()):
        rows = p["stage 1 rounds"]
        r = [row["round"] for row in rows]
        axes[0].plot(r, [row["terminal_std"] for row in rows], "o-", color=f"C{i}", label=name)
        axes[0].plot(r, [row["gaussian_reference_std"] for row in rows], "x--", color=f"C{i}",
                     alpha=0.6, label=f"{name}: Gaussian closed form")  # fmt: skip
        axes[1].semilogy(r, [row["mmd_prior"] for row in rows], "o-", color=f"C{i}", label=name)
    axes[0].axhline(prior_scale, color="black", lw=0.8, label="prior std")
    axes[0].set_title("terminal std of X1 (mean over coordinates)")
    axes[1].set_title("MMD(X1, prior)")
    for ax in axes:
        ax.set_xlabel("stage-1 round")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
