"""The demo's figure: accuracy per arm, per-language accuracy, LRPO's router over training."""

from __future__ import annotations

from pathlib import Path

from icml26.testing.files import save_figure


def plot_study(results: dict, path: str | Path) -> Path:
    """Top row: (a) mean and worst-language held-out accuracy per arm (bars, seed std);
    (b) accuracy per language and arm; (c) share of GRPO groups all correct or all wrong per arm.
    Bottom row: (d) LRPO's routing probabilities per topic over training (seed 0), one line per
    language."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from icml26.lrpo.data import LANGUAGES, TOPICS

    m = {k: v for k, v in results["metrics"].items() if k not in ("method", "baseline")}
    arms = list(m)
    fig, grid = plt.subplots(2, 3, figsize=(16, 8.5))
    axes = grid.ravel()
    ax = axes[0]
    x = range(len(arms))
    ax.bar([i - 0.2 for i in x], [m[a]["accuracy"] for a in arms], 0.4,
           yerr=[m[a].get("accuracy_std", 0) for a in arms], label="mean")  # fmt: skip
    ax.bar([i + 0.2 for i in x], [m[a]["worst_language"] for a in arms], 0.4,
           yerr=[m[a].get("worst_language_std", 0) for a in arms],
           label="worst language")  # fmt: skip
    ax.set_xticks(list(x), arms, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("held-out accuracy")
    ax.set_title("(a) accuracy per arm (± std over seeds)")
    ax.legend(fontsize=8)
    ax = axes[1]
    for a in arms:
        ax.plot(LANGUAGES, [m[a][f"acc_{lang}"] for lang in LANGUAGES], marker="o", label=a)
    ax.set_title("(b) accuracy per question language")
    ax.legend(fontsize=7)
    ax = axes[2]
    rl = [a for a in arms if "zero_variance" in m[a]]
    ax.bar(range(len(rl)), [m[a]["zero_variance"] for a in rl],
           yerr=[m[a].get("zero_variance_std", 0) for a in rl])  # fmt: skip
    ax.set_xticks(range(len(rl)), rl, rotation=30, ha="right", fontsize=8)
    ax.set_title("(c) GRPO groups all correct or all wrong")
    trajectory = next((r["trajectory"] for r in results["runs"].get("lrpo", [])
                       if r.get("trajectory")), None)  # fmt: skip
    for ax, topic in zip(axes[3:], TOPICS, strict=True):
        ax.set_title(f"(d) LRPO router, topic {topic} (seed 0)")
        if trajectory:
            for i, lang in enumerate(LANGUAGES):
                ax.plot([step[topic][i] for step in trajectory], label=lang)
        ax.set_xlabel("GRPO step")
        ax.set_ylabel("routing probability")
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path = Path(path)
    save_figure(fig, path)
    return path
