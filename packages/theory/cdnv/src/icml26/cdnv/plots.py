"""The demo's figures."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from icml26.cdnv.verdict import ORACLE, RATIO, random_direction_cos
from icml26.testing.files import save_figure


def _band(rows: list, key) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Epochs, mean, min and max over seeds of a per-epoch quantity."""
    ep = np.array([h["epoch"] for h in rows[0]["dynamics"]])
    vals = np.array([[key(h) for h in x["dynamics"]] for x in rows])
    return ep, vals.mean(0), vals.min(0), vals.max(0)


def plot_dynamics(r: dict, path: Path) -> None:
    """V~ d / V and 5-shot error on the held-out classes during pretraining, per dataset."""
    D = len(r["datasets"])
    fig, axes = plt.subplots(2, D, figsize=(6.5 * D, 7.5), squeeze=False, layout="constrained")
    for j, d in enumerate(r["datasets"]):
        for i, o in enumerate([*r["objectives"], *r.get("references", [])]):
            rows = [x for x in r["runs"] if x["dataset"] == d and x["encoder"] == o]
            for row, key in enumerate((RATIO, "5-shot error")):
                ep, m, lo, hi = _band(rows, lambda h, k=key: h[k])
                axes[row, j].plot(ep, m, color=f"C{i}", label=o)
                axes[row, j].fill_between(ep, lo, hi, color=f"C{i}", alpha=0.2, lw=0)
        raw = np.mean(
            [x[RATIO] for x in r["nulls"] if x["dataset"] == d and x["encoder"] == "raw pixels"]
        )
        axes[0, j].axhline(1.0, color="k", lw=0.8, ls=":", label="1: evenly spread (the rule)")
        axes[0, j].axhline(raw, color="gray", lw=0.8, ls="--", label="raw pixels")
        axes[0, j].set_title(f"{d}: {RATIO}, held-out classes (epoch 0: random init)")
        axes[1, j].set_title(f"{d}: 5-shot NCC error, all-way on held-out classes")
        for ax in axes[:, j]:
            ax.set_xlabel("epoch")
            ax.grid(alpha=0.3)
        axes[0, j].legend(fontsize=8)
    fig.suptitle("lines: mean over seeds; bands: min-max", fontsize=9)
    save_figure(fig, path)


def plot_fewshot(r: dict, path: Path) -> None:
    """Few-shot error and both bounds vs shots, per dataset and episode size."""
    D = len(r["datasets"])
    fig, axes = plt.subplots(D, 2, figsize=(12, 4.4 * D), squeeze=False, layout="constrained")
    encoders = [*r["objectives"], *r.get("references", []), "random encoder", "raw pixels", ORACLE]
    for i, d in enumerate(r["datasets"]):
        for j, ways in enumerate(("2-way", "all-way")):
            ax = axes[i, j]
            for k, enc in enumerate(encoders):
                rows = [
                    x for x in r["runs"] + r["nulls"] if x["dataset"] == d and x["encoder"] == enc
                ]
                shots = rows[0]["fewshot"][ways]["shots"]
                for key, ls, mk in (
                    ("error", "-", "o"),
                    ("bound (authors)", "--", "^"),
                    ("bound (ours)", ":", "v"),
                ):
                    y = np.mean([x["fewshot"][ways][key] for x in rows], 0)
                    ax.plot(
                        shots,
                        np.clip(y, 1e-3, None),
                        color=f"C{k}",
                        ls=ls,
                        marker=mk,
                        ms=3,
                        label=f"{enc} {key}" if i == 0 and j == 0 else None,
                    )
            ax.axhline(1.0, color="k", lw=0.6)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("shots m")
            ax.set_title(f"{d}, {ways} episodes on held-out classes")
            ax.grid(alpha=0.3, which="both")
    fig.legend(fontsize=7, ncol=len(encoders), loc="outside lower center")
    fig.suptitle("error (solid), authors' bound (dashed), reconstruction (dotted); mean over seeds")
    save_figure(fig, path)


def plot_cosines(r: dict, path: Path) -> None:
    """Mean |cos| between decision axes of independent tasks, and the V~ bound on it."""
    mt = r["multitask"]
    names = [k for k in ("raw input", "whitened input", "random encoder") if k in mt[0]]
    names += r["objectives"]
    if "random directions" in mt[0]:
        names.append("random directions")
    fig, ax = plt.subplots(figsize=(1.4 * len(names) + 2, 3.6), layout="constrained")
    for k, name in enumerate(names):
        cos = np.array([m[name]["mean |cos|"] for m in mt])
        ax.bar(k, cos.mean(), color=f"C{k}", alpha=0.8)
        ax.scatter(np.full(len(cos), k), cos, color="k", s=8, zorder=3)
        if "mean bound" not in mt[0][name]:
            continue
        ax.scatter(
            k,
            np.mean([m[name]["mean bound"] for m in mt]),
            marker="_",
            s=400,
            color="r",
            zorder=3,
            label="bound from V~ (mean)" if k == 0 else None,
        )
    limit = random_direction_cos(r["axes_dim"])
    ax.axhline(limit, color="gray", ls="--", lw=0.8, label="random directions' E|cos| (the rule)")
    ax.set_xticks(range(len(names)), names, rotation=20)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("mean off-diagonal |cos|")
    ax.set_title("decision axes of independent tasks (dots: seeds)")
    ax.legend(fontsize=8)
    save_figure(fig, path)
