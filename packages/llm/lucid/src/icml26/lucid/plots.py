"""The demo's figure: probe cosines, MQAR accuracy per seed, LM loss."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def plot_demo(results: dict, path: Path) -> None:
    """Three panels: (1) probe cosine vs cluster size; (2) MQAR accuracy per seed when the run
    stopped, with the number solved; (3) character-LM held-out loss."""
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    probe = results["probe"]
    sizes = probe["cluster sizes"]
    ax = axes[0]
    for name in ("softmax (T=1)", "softmax (T=0.5)", "LUCID"):
        ax.plot(sizes, probe[name], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("keys in the queried cluster")
    ax.set_ylabel("cosine(output, queried value)")
    ax.set_title("correlated-keys probe (no training)")
    ax.legend()
    ax = axes[1]
    cfg = results["config"]
    settings = list(results["mqar"])
    for j, kind in enumerate(("softmax", "lucid")):
        color = "tab:blue" if kind == "softmax" else "tab:green"
        for i, setting in enumerate(settings):
            r = results["mqar"][setting][kind]
            accs = r["final accuracy per seed"]
            ax.scatter([i * 3 + j] * len(accs), accs, color=color, label=kind if i == 0 else None)
            ax.annotate(
                f"solved {r['solved']}/{len(accs)}",
                (i * 3 + j, max(accs)),
                textcoords="offset points",
                xytext=(0, 6),
                ha="center",
                fontsize=8,
            )
    ax.axhline(cfg["mqar_threshold"], color="grey", lw=0.8, ls=":")
    ax.set_xticks([i * 3 + 0.5 for i in range(len(settings))], settings)
    ax.set_xlim(-1, 3 * len(settings) - 1)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy when stopped (solved or budget)")
    ax.set_title(f"MQAR, {cfg['mqar_steps']}-step budget (dotted: the threshold)")
    ax.legend()
    ax = axes[2]
    losses = {k: [r["held-out loss"] for r in v] for k, v in results["char LM"].items()}
    ax.bar(
        list(losses), [sum(v) / len(v) for v in losses.values()], color=["tab:blue", "tab:green"]
    )
    ax.set_ylabel("held-out loss (nats / char)")
    ax.set_title("character LM on pydoc_data.topics")
    fig.tight_layout()
    tmp = path.with_name(f".{path.stem}.tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)
