"""Pictures of the demo: the x4 picture grid of every arm on one held-out crop."""

from __future__ import annotations

from pathlib import Path

import torch

from icml26.testing.files import save_figure


def picture_grid(images: dict[str, torch.Tensor], path: Path, name: str) -> None:
    """One row of x4 outputs on the same held-out crop (pixels, not interpolated), saved to
    ``path`` via a temporary file."""

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    order = ["LR (nearest)", "bicubic", "ESPCN", "VAR-RQ", "VAR-HIT", "VAR-HIT+DPO", "HR"]
    keys = [k for k in order if k in images]
    fig, axes = plt.subplots(1, len(keys), figsize=(2.2 * len(keys), 2.5))
    for ax, k in zip(axes, keys, strict=True):
        ax.imshow(images[k].clamp(0, 1).permute(1, 2, 0).numpy(), interpolation="nearest")
        ax.set_title(k, fontsize=9)
        ax.axis("off")
    fig.suptitle(f"x4 super-resolution of a held-out crop ({name}, seed 0)", fontsize=10)
    fig.tight_layout()
    save_figure(fig, path)
