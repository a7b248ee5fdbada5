"""The demo's figure: sequential vs stream samples (same noise), and throughput per method."""

import os
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def _tile(x):
    k = int(len(x) ** 0.5)
    h, w = x.shape[-2:]
    return x[: k * k, 0].view(k, k, h, w).permute(0, 2, 1, 3).reshape(k * h, k * w).clamp(-1, 1)


def plot_demo(seq, stream, tables: dict, path: Path) -> None:
    fig, axes = plt.subplots(1, 3, figsize=(14, 4), gridspec_kw={"width_ratios": [1, 1, 2]})
    axes[0].imshow(_tile(seq).cpu().numpy(), cmap="gray", vmin=-1, vmax=1)
    axes[0].set_title("sequential loop")
    axes[1].imshow(_tile(stream).cpu().numpy(), cmap="gray", vmin=-1, vmax=1)
    axes[1].set_title("stream pipeline (same noise)")
    for ax in axes[:2]:
        ax.axis("off")
    names = list(next(iter(tables.values()))["rows"])
    width = 0.8 / len(tables)
    for i, (tname, t) in enumerate(tables.items()):
        axes[2].bar(
            [j + i * width for j in range(len(names))],
            [t["rows"][n]["speedup vs (a)"] for n in names],
            width,
            label=tname,
        )
    axes[2].set_xticks(
        [j + width * (len(tables) - 1) / 2 for j in range(len(names))],
        names,
        rotation=20,
        fontsize=8,
    )
    axes[2].axhline(1, color="k", lw=0.8)
    axes[2].set_ylabel("images/s relative to the sequential loop")
    axes[2].legend(fontsize=8)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".png")
    os.close(fd)
    fig.savefig(tmp, dpi=110, bbox_inches="tight")
    plt.close(fig)
    os.replace(tmp, path)
