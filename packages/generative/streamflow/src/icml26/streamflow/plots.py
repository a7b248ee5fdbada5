"""The demo's figure: sequential vs stream samples (same noise), and throughput per method."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from icml26.testing.files import save_figure


def _tile(x):
    k = int(len(x) ** 0.5)
    h, w = x.shape[-2:]
    return x[: k * k, 0].view(k, k, h, w).permute(0, 2, 1, 3).reshape(k * h, k * w).clamp(-1, 1)


def plot_demo(seq, stream, tables: dict, path: Path) -> None:
    """Samples of both samplers, and each method's speed-up over the loop against N per model."""
    fig, axes = plt.subplots(1, 3, figsize=(14, 4), gridspec_kw={"width_ratios": [1, 1, 2]})
    axes[0].imshow(_tile(seq).cpu().numpy(), cmap="gray", vmin=-1, vmax=1)
    axes[0].set_title("sequential loop")
    axes[1].imshow(_tile(stream).cpu().numpy(), cmap="gray", vmin=-1, vmax=1)
    axes[1].set_title("stream pipeline (same noise)")
    for ax in axes[:2]:
        ax.axis("off")
    models = sorted(
        {t["model"] for t in tables.values()}, key=list(t["model"] for t in tables.values()).index
    )
    styles = {"(b)": ":", "(c)": "--", "(e)": "-"}
    labels = {"(b)": "batch of N", "(c)": "batch of M", "(e)": "stream (steady)"}
    for j, model in enumerate(models):
        ts = [t for t in tables.values() if t["model"] == model]
        ns = [t["N"] for t in ts]
        for prefix, ls in styles.items():
            ys = [
                next(r["speedup vs (a)"] for k, r in t["rows"].items() if k.startswith(prefix))
                for t in ts
            ]
            axes[2].plot(ns, ys, ls, marker="o", color=f"C{j}", label=f"{model}: {labels[prefix]}")
    axes[2].axhline(1, color="k", lw=0.8)
    ns = sorted({t["N"] for t in tables.values()})
    axes[2].set_xscale("log", base=2)
    axes[2].set_xticks(ns, [str(n) for n in ns])
    axes[2].set_xlabel("N (steps = images in flight)")
    axes[2].set_ylabel("images/s / sequential loop's")
    axes[2].legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    save_figure(fig, path)
