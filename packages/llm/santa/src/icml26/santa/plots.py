"""The demo's figure: (a) estimator error against the value rows read, per mode and for the top-k
baseline; (b) free-running agreement and KL against dense decode, with intervals; (c) needle
success per cell."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from icml26.santa.verdict import wilson
from icml26.testing.files import save_figure


def plot_results(m: dict, path: Path) -> None:
    modes = m["modes"]
    fig, axes = plt.subplots(1, 4, figsize=(21, 4.2))
    # (a) error vs rows read: every mode at the same S, over the per-tile budget sweep
    contexts = sorted({r["context"] for r in m["estimator"].values()})
    for i, mode in enumerate([*modes, "top-k"]):
        for j, L in enumerate(contexts):
            rows = sorted(
                (r for r in m["estimator"].values() if r["mode"] == mode and r["context"] == L),
                key=lambda r: r["draws per tile"],
            )
            axes[0].plot(
                [r["read fraction"] for r in rows], [r["error"] for r in rows],
                marker="os^"[j % 3], color="k" if mode == "top-k" else f"C{i}",
                ls=["-", "--", ":"][j % 3],
                label=f"{mode} @{L}" if len(contexts) > 1 else mode,
            )  # fmt: skip
    axes[0].set(xscale="log", yscale="log", xlabel="fraction of value rows read",
                title="(a) RMS error / RMS value-row norm")  # fmt: skip
    axes[0].legend(fontsize=7, ncol=2)
    # (b) agreement and KL per context, with 95% bootstrap intervals over prompts
    Ls = list(m["decode"])
    width = 0.8 / max(len(modes), 1)
    for i, mode in enumerate(modes):
        xs = [j + (i - (len(modes) - 1) / 2) * width for j in range(len(Ls))]
        for ax, key in ((axes[1], "agreement"), (axes[2], "kl")):
            c = [m["decode"][L][mode][key] for L in Ls]
            ax.errorbar(
                xs, [x["mean"] for x in c],
                yerr=[[x["mean"] - x["lo"] for x in c], [x["hi"] - x["mean"] for x in c]],
                fmt="o", color=f"C{i}", label=mode, capsize=3,
            )  # fmt: skip
    for ax in axes[1:3]:
        ax.set_xticks(range(len(Ls)), [f"{L} tokens" for L in Ls])
    axes[1].axhline(0.99, color="gray", ls="--", lw=1)
    axes[1].set(title="(b) free-running greedy agreement with dense")
    axes[2].set(yscale="log", title="(b) KL(dense || SANTA) per step")
    axes[1].legend(fontsize=8)
    # (c) needle success per (length, depth) cell, Wilson intervals
    cells = list(m["needle"])
    names = ["dense", *modes]
    width = 0.8 / len(names)
    for i, n in enumerate(names):
        xs = [j + (i - (len(names) - 1) / 2) * width for j in range(len(cells))]
        rate, lo, hi = [], [], []
        for key in cells:
            c = m["needle"][key]
            k, t = c[n]["found"], c["trials"]
            a, b = wilson(k, t)
            rate.append(k / t)
            lo.append(k / t - a)
            hi.append(b - k / t)
        axes[3].errorbar(xs, rate, yerr=[lo, hi], fmt="s", capsize=2, label=n,
                         color="k" if n == "dense" else f"C{i - 1}")  # fmt: skip
    axes[3].set_xticks(range(len(cells)), [k.replace(" depth=", "\nd=") for k in cells], fontsize=7)
    axes[3].set(ylim=(-0.05, 1.05), title="(c) needle found (Wilson 95%)")
    if cells:
        axes[3].legend(fontsize=7)
    for ax in axes:
        ax.grid(alpha=0.3, which="both")
    save_figure(fig, path)
