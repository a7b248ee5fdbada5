"""The demo's figure: accuracy bars, HER2ST folds, cost curves and one predicted gene map."""

from pathlib import Path

import numpy as np


def plot_demo(results: dict, path: Path) -> Path:
    """Write a PNG with one panel per part of the demo that ran; atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from icml26.testing.files import atomic_write

    panels = []
    if "synthetic" in results:
        panels += ["synthetic", "map"]
    if "her2st" in results:
        panels.append("her2st")
    if "cost" in results:
        panels += ["cost area", "cost spots"]
    fig, axes = plt.subplots(
        1,
        len(panels),
        figsize=(4.2 * len(panels) + (2 if "her2st" in panels else 0), 3.8),
        squeeze=False,
    )
    draw = {"synthetic": _synthetic_panel, "map": _map_panel, "her2st": _her2st_panel}
    for ax, panel in zip(axes[0], panels, strict=True):
        draw.get(panel, _cost_panel)(ax, results, panel)
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"), suffix=".png")
    plt.close(fig)
    return path


def _synthetic_panel(ax, results: dict, panel: str) -> None:
    s = results["synthetic"]["models"]
    names = list(s)
    x = np.arange(len(names))
    for j, key in enumerate(("pearson", "r2")):
        ax.bar(
            x + 0.38 * j,
            [s[n][key] for n in names],
            0.38,
            yerr=[s[n][key + " std"] for n in names],
            label=key,
            capsize=3,
        )
    ax.set_xticks(x + 0.19, [n.replace(" ", "\n", 1) for n in names], fontsize=8)
    ax.set_title("(a) synthetic held-out slides")
    ax.legend(fontsize=8)


def _map_panel(ax, results: dict, panel: str) -> None:
    ex = results["synthetic"]["example"]
    xy = np.array(ex["xy"])
    both = np.array([ex["true"], ex["pred"]])
    vmax = np.quantile(both, 0.99)
    half = (xy[:, 0].max() - xy[:, 0].min()) * 1.1
    ax.scatter(xy[:, 0], -xy[:, 1], c=ex["true"], s=3, vmin=0, vmax=vmax)
    ax.scatter(xy[:, 0] + half, -xy[:, 1], c=ex["pred"], s=3, vmin=0, vmax=vmax)
    ax.set_title(f"{ex['gene']}: measured | HiST", fontsize=10)
    ax.set_aspect("equal")
    ax.axis("off")


def _her2st_panel(ax, results: dict, panel: str) -> None:
    h = results["her2st"]
    names = list(h["models"])
    x = np.arange(len(names))
    for j, key in enumerate(("hvg", "heg")):
        ax.bar(
            x + 0.38 * j,
            [h["models"][n][key] for n in names],
            0.38,
            yerr=[h["models"][n][f"{key} std"] for n in names],
            label=f"{key.upper()} panel",
            capsize=3,
        )
        for i, n in enumerate(names):  # one dot per held-out fold (seed mean)
            folds = h["per_fold"][n]
            ys = [np.mean([np.mean(r[key]) for r in folds[f]]) for f in folds]
            ax.scatter([i + 0.38 * j] * len(ys), ys, s=6, color="k", zorder=3)
    ax.set_xticks(x + 0.19, [n.replace(" ", "\n", 1) for n in names], fontsize=7)
    ax.set_ylabel("mean per-gene Pearson (log1p)")
    ax.set_title(f"(b) HER2ST, leave one {h['split']} out (dots: folds)", fontsize=9)
    ax.legend(fontsize=8)


def _cost_panel(ax, results: dict, panel: str) -> None:
    key = "fixed spots" if panel == "cost area" else "fixed area"
    xkey = "area" if key == "fixed spots" else "spots"
    rows = results["cost"][key]
    for name in ("HiST", "dense grid", "full attention"):
        pts = [(r[xkey], r[name]) for r in rows if "skipped" not in r[name]]
        use_mem = pts and all(v["peak_mb"] is not None for _, v in pts)
        ys = [v["peak_mb"] if use_mem else v["seconds"] for _, v in pts]
        ax.plot([p[0] for p in pts], ys, "o-", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("canvas cells" if xkey == "area" else "spots")
    ax.set_ylabel("peak MB (else seconds)")
    ax.set_title(f"(c) cost, {key}")
    ax.legend(fontsize=8)
