"""The demo's figure: (a) problems solved per method in search-only mode, (b) online training
efficiency (problems solved against cumulative expansions, mean and range over seeds), and the
trained networks on both test sets."""

from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from icml26.rerooter.bootstrap import METHOD_LABELS


def plot_results(raw: dict, path: Path) -> None:
    """Write the figure of :func:`icml26.rerooter.demo.experiment`'s numbers to ``path``."""
    runs = raw["runs"]
    panels = 3 if runs else 1
    fig, axes = plt.subplots(1, panels, figsize=(5.2 * panels, 4), squeeze=False)
    ax = axes[0, 0]
    search_only, n_test = raw["search_only"], raw["n_test"]
    names = [METHOD_LABELS[m] for m in search_only]
    ax.bar(names, [r["solved"] for r in search_only.values()], color="tab:blue")
    ax.set_ylim(0, n_test)
    ax.set_ylabel(f"test levels solved (of {n_test})")
    ax.set_title("(a) search only: uniform policy + hand-written h", fontsize=10)
    if runs:
        methods = list(dict.fromkeys(r["method"] for r in runs))
        grid = np.linspace(0, raw["cap"], len(runs[0]["curve"]) + 1)
        ax = axes[0, 1]
        for i, m in enumerate(methods):
            ys = np.array([[0, *r["curve"]] for r in runs if r["method"] == m], dtype=float)
            color = f"C{i}"
            ax.plot(grid, ys.mean(0), color=color, label=METHOD_LABELS[m])
            ax.fill_between(grid, ys.min(0), ys.max(0), color=color, alpha=0.2, lw=0)
        ax.set_xlabel("cumulative training expansions")
        ax.set_ylabel(f"training levels solved (of {raw['n_train']})")
        ax.set_title("(b) online training: mean, range over seeds", fontsize=10)
        ax.legend(fontsize=8)
        ax = axes[0, 2]
        width = 0.38
        for j, (key, label) in enumerate(
            (("test solved", "unfiltered"), ("medium solved", "medium"))
        ):
            xs = np.arange(len(methods)) + (j - 0.5) * width
            per = [[r[key] for r in runs if r["method"] == m] for m in methods]
            ax.bar(xs, [np.mean(p) for p in per], width, label=label, color=f"C{j + 5}")
            for x, p in zip(xs, per, strict=True):
                ax.scatter([x] * len(p), p, s=8, color="k", zorder=3)
        ax.set_xticks(np.arange(len(methods)), [METHOD_LABELS[m] for m in methods])
        ax.set_ylim(0, raw["n_eval"])
        ax.set_ylabel(f"levels solved (of {raw['n_eval']})")
        ax.set_title("(b) trained networks (dots: seeds)", fontsize=10)
        ax.legend(fontsize=8)
    fig.tight_layout()
    tmp = path.with_name(f".{path.stem}.tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)
