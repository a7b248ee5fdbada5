"""The rate-distortion figure: bits per parameter vs distortion, EntQuant's curve vs baselines."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

MARKERS = {"RTN": "s", "NF4": "D", "HQQ": "^", "GPTQ": "*"}


def plot_rate_distortion(results: dict, path: Path) -> None:
    runs = results["models"]
    fig, axes = plt.subplots(1, len(runs), figsize=(5.2 * len(runs), 4), squeeze=False)
    for ax, (name, r) in zip(axes[0], runs.items(), strict=True):
        key, rows = r["distortion"], r["rows"]
        ent = sorted((v["bits/param"], v[key]) for k, v in rows.items() if k.startswith("EntQuant"))
        ax.plot(*zip(*ent, strict=True), "o-", color="C3", label="EntQuant (lambda sweep)", lw=2)
        for k, v in rows.items():
            family = k.split("-")[0]
            if family in MARKERS:
                ax.scatter(
                    v["bits/param"],
                    v[key],
                    marker=MARKERS[family],
                    s=90 if family == "GPTQ" else 50,
                    color=f"C{list(MARKERS).index(family)}",
                    label=family if family not in ax.get_legend_handles_labels()[1] else None,
                )
        ax.set_yscale("log")
        ax.set_xlabel("bits per parameter (as stored)")
        ax.set_ylabel(key + " (lower is better)")
        ax.set_title(f"{name}: {r['quantised params']:,} params")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"EntQuant vs data-free baselines and GPTQ; verdict: {results['verdict']}")
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, dpi=120)
    plt.close(fig)
    tmp.replace(path)
