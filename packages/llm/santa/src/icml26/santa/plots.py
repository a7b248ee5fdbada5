"""The demo's figure: estimator error and decode agreement vs S, per mode."""

import os
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def plot_results(estimator: dict, decode: dict, cfg, path: Path) -> None:
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for i, mode in enumerate(cfg.modes):
        S = list(cfg.samples)
        e = [estimator[f"{mode} S={s}"] for s in S]
        d = [decode[f"{mode} S={s}"] for s in S]
        axes[0].plot(S, [x["relative error"] for x in e], marker="o", color=f"C{i}", label=mode)
        axes[1].plot(S, [x["greedy agreement"] for x in d], marker="o", color=f"C{i}", label=mode)
        axes[2].plot(S, [x["read fraction"] for x in d], marker="o", color=f"C{i}", label=mode)
    axes[0].set(xscale="log", yscale="log", title="||o^ - o|| / RMS(v) (captured rows)", xlabel="S")
    axes[1].set(xscale="log", title="greedy agreement with dense decode", xlabel="S")
    axes[1].axhline(0.99, color="gray", ls="--", lw=1)
    axes[2].set(xscale="log", title="fraction of value rows read", xlabel="S")
    for ax in axes:
        ax.grid(alpha=0.3, which="both")
        ax.set_xticks(list(cfg.samples), [str(x) for x in cfg.samples])
        ax.minorticks_off()
    axes[0].legend()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".png")
    os.close(fd)
    fig.savefig(tmp, dpi=110, bbox_inches="tight")
    plt.close(fig)
    os.replace(tmp, path)
