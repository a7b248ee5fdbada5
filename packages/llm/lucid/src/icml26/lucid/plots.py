"""The demo's figure: probe cosines and noise sweep, steps to solve per recall setting, LM loss."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

COLORS = {"softmax": "tab:blue", "lucid": "tab:green"}


def plot_demo(results: dict, path: Path) -> None:
    """Five panels: (1) probe cosine vs cluster size; (2) the probe's noise sweep, LUCID minus
    softmax at its best temperature; (3) character-LM held-out loss; (4) steps to solve per seed
    in every MQAR cell (every arm, variants included); (5) final accuracy per seed in every
    needle setting."""
    fig = plt.figure(figsize=(16, 9))
    grid = fig.add_gridspec(2, 6)
    _probe_panel(fig.add_subplot(grid[0, 0:2]), results["probe"])
    _sweep_panel(fig, fig.add_subplot(grid[0, 2:4]), results["probe sweep"])
    _lm_panel(fig.add_subplot(grid[0, 4:6]), results["char LM"])
    _needle_panel(fig.add_subplot(grid[1, 4:6]), results["needle"])
    _steps_panel(fig.add_subplot(grid[1, 0:4]), results["mqar"], "mqar")
    fig.tight_layout()
    tmp = path.with_name(f".{path.stem}.tmp.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    tmp.replace(path)


def _probe_panel(ax, probe: dict) -> None:
    for name in ("softmax (T=1)", "softmax (T=0.5)", "softmax (best T)", "LUCID"):
        if name in probe:
            ax.plot(probe["cluster sizes"], probe[name], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("keys in the queried cluster")
    ax.set_ylabel("cosine(output, queried value)")
    ax.set_title("correlated-keys probe (no training)")
    ax.legend()


def _sweep_panel(fig, ax, sweep: dict) -> None:
    points = sweep["points"]
    kn = sorted({p["key noise"] for p in points})
    qn = sorted({p["query noise"] for p in points})
    gap = [[0.0] * len(qn) for _ in kn]
    for p in points:
        best = p["softmax (best T)"]
        gap[kn.index(p["key noise"])][qn.index(p["query noise"])] = p["LUCID"] - best
    im = ax.imshow(gap, cmap="RdBu", vmin=-1, vmax=1, aspect="auto", origin="lower")
    for i in range(len(kn)):
        for j in range(len(qn)):
            ax.text(j, i, f"{gap[i][j]:+.2f}", ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(qn)), [f"{q:g}" for q in qn])
    ax.set_yticks(range(len(kn)), [f"{k:g}" for k in kn])
    ax.set_xlabel("query noise")
    ax.set_ylabel("key noise")
    ax.set_title(f"probe sweep: LUCID - softmax at best T (cluster {sweep['cluster size']})")
    fig.colorbar(im, ax=ax)


def _lm_panel(ax, char_lm: dict) -> None:
    losses = {k: [r["held-out loss"] for r in v] for k, v in char_lm.items()}
    ax.bar(list(losses), [sum(v) / len(v) for v in losses.values()], color=list(COLORS.values()))
    ax.set_ylabel("held-out loss (nats / char)")
    ax.set_title("character LM on pydoc_data.topics")


def _needle_panel(ax, needle: dict) -> None:
    x = 0
    ticks, labels = [], []
    for setting, arms in needle.items():
        for arm, r in arms.items():
            accs = r["final accuracy per seed"]
            ax.scatter([x] * len(accs), accs, color=COLORS.get(arm, "tab:olive"), s=14)
            ax.plot([x - 0.3, x + 0.3], [sum(accs) / len(accs)] * 2, color=COLORS.get(arm))
            ticks.append(x)
            labels.append(f"{setting} | {arm} (solved {r['solved']}/{len(accs)})")
            x += 1
        x += 0.5
    ax.set_xticks(ticks, labels, rotation=90, fontsize=6)
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("accuracy at the end (solved runs stop at 0.9)")
    ax.set_title("needles: final accuracy per seed (bar: mean)")


def _steps_panel(ax, cells: dict, task: str) -> None:
    labels, x = [], 0
    for setting, arms in cells.items():
        for arm, r in arms.items():
            steps = [r["budget"] if s is None else s for s in r["steps per seed"]]
            color = COLORS.get(arm, "tab:olive")
            ax.scatter([x] * len(steps), steps, color=color, s=14)
            ax.plot([x - 0.3, x + 0.3], [sum(steps) / len(steps)] * 2, color=color)
            ax.plot([x - 0.4, x + 0.4], [r["budget"]] * 2, color="grey", lw=0.8, ls=":")
            labels.append(f"{setting} | {arm}")
            x += 1
        x += 0.5
    positions, x = [], 0
    for arms in cells.values():
        positions += [x + i for i in range(len(arms))]
        x += len(arms) + 0.5
    ax.set_xticks(positions, labels, rotation=90, fontsize=6)
    ax.set_ylabel("steps to solve (dotted: budget, unsolved)")
    ax.set_title(f"{task}: steps to solve per seed (bar: mean)")
