"""The demo's figure: problems solved per method (search only) and online training efficiency."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from icml26.rerooter.bootstrap import METHOD_LABELS


def plot_results(
    search_only: dict[str, dict], curves: dict[str, list], n_test: int, n_train: int, path: Path
) -> None:
    """Left: test levels solved in search-only mode; right: training problems solved against
    cumulative expansions during bootstrap (the paper's online training efficiency)."""
    panels = 2 if curves else 1
    fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 4), squeeze=False)
    ax = axes[0, 0]
    names = [METHOD_LABELS[m] for m in search_only]
    ax.bar(names, [r["solved"] for r in search_only.values()], color="tab:blue")
    ax.set_ylim(0, n_test)
    ax.set_ylabel(f"test levels solved (of {n_test})")
    ax.set_title("(a) search only: uniform policy + hand-written h")
    if curves:
        ax = axes[0, 1]
        for m, pts in curves.items():
            xs = [0] + [p[0] for p in pts]
            ys = [0] + [p[1] for p in pts]
            ax.step(xs, ys, where="post", label=METHOD_LABELS[m])
        ax.set_xlabel("cumulative expansions")
        ax.set_ylabel(f"training problems solved (of {n_train})")
        ax.set_title("(b) online bootstrap training")
        ax.legend()
    fig.tight_layout()
    tmp = path.with_name(f".{path.stem}.tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)
