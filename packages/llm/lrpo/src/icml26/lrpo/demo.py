"""``icml26-lrpo demo`` (LRPO, language-routed policy optimisation (Guo, Wakaki, Mitsufuji, Ritter,
Xu;): runs ``study.experiment``, judges it with ``verdict``, writes results.json through
``icml26.testing.report``."""

from __future__ import annotations

import math
import time
from pathlib import Path

from icml26.lrpo.data import LANGUAGES
from icml26.lrpo.study import DemoConfig, experiment
from icml26.lrpo.verdict import ARM_NAMES, verdict
from icml26.testing.report import finish_demo, print_verdicts, run_folder


def summary_table(raw: dict) -> dict[str, dict[str, float]]:
    """Per arm: mean and std over seeds of accuracy, worst language, zero-variance share."""
    out = {}
    for arm, runs in raw["runs"].items():
        row = {}
        for metric in ("accuracy", "worst_language", "zero_variance", "zero_reward_variance",
                       "train_reward", "train_accuracy"):  # fmt: skip
            vals = [r[metric] for r in runs if metric in r]
            if vals:
                m = sum(vals) / len(vals)
                sd = (
                    math.sqrt(sum((v - m) ** 2 for v in vals) / (len(vals) - 1))
                    if len(vals) > 1
                    else 0.0
                )
                row[metric], row[f"{metric}_std"] = m, sd
        for lang in LANGUAGES:
            row[f"acc_{lang}"] = sum(r["by_language"][lang] for r in runs) / len(runs)
        out["pretrained" if arm == "pretrained" else ARM_NAMES[arm]] = row
    return out


def headline(raw: dict) -> str:
    t = summary_table(raw)
    lrpo, orig = t[ARM_NAMES["lrpo"]], t.get(ARM_NAMES["original"])
    text = f"held-out accuracy: LRPO {lrpo['accuracy']:.3f}"
    if orig:
        text += f" vs original-language GRPO {orig['accuracy']:.3f}"
    best = max((k for k in t if k not in ("pretrained", ARM_NAMES["lrpo"])),
               key=lambda k: t[k]["accuracy"], default=None)  # fmt: skip
    if best and best != ARM_NAMES.get("original"):
        text += f", best other arm {best} {t[best]['accuracy']:.3f}"
    return (
        text + f" (pretrained {t['pretrained']['accuracy']:.3f}; {len(raw['runs']['lrpo'])} seeds)"
    )


def run_demo(cfg: DemoConfig) -> dict:
    """Run, judge, write results.json and the figure, print the table; return the results."""
    from icml26.lrpo.plots import plot_study

    out = run_folder(cfg.out, "lrpo")
    t0 = time.perf_counter()
    raw = experiment(cfg)
    metrics = summary_table(raw)
    metrics["method"] = metrics[ARM_NAMES["lrpo"]]
    metrics["baseline"] = metrics.get(ARM_NAMES["original"], metrics["pretrained"])
    results = finish_demo(
        out,
        package="icml26-lrpo",
        module_file=__file__,
        cfg=cfg,
        experiment="character GPT on multilingual arithmetic/counting; GRPO with original-"
        "language, uniform, UCB, EXP3 and LRPO routing at one rollout budget; held-out accuracy "
        "answered in each question's own language",
        claim="adaptive routing improves multilingual performance at a fixed rollout budget",
        headline=headline(raw),
        judged=verdict(raw),
        metrics=metrics,
        seconds=time.perf_counter() - t0,
        seed=0,
        device=raw["device"],
        measurements={k: raw[k] for k in ("parameters", "n_test", "runs", "planted")},
    )
    out.mkdir(parents=True, exist_ok=True)
    plot_study(results, out / "study.png")
    _print(results)
    return results


def _jsonable(d: dict) -> dict:
    return {k: (str(v) if isinstance(v, Path) else list(v) if isinstance(v, tuple) else v)
            for k, v in d.items()}  # fmt: skip


def _print(results: dict) -> None:
    print(f"\nicml26-lrpo {results['version']}: {results['headline']}")
    cols = ("accuracy", "worst_language", "zero_variance")
    print(f"{'arm':26s}" + "".join(f"{c:>22s}" for c in cols))
    for arm, m in results["metrics"].items():
        if arm in ("method", "baseline"):
            continue
        cells = "".join(f"{m[c]:>14.3f} ± {m[c + '_std']:.3f}" if c in m else f"{'-':>22s}"
                        for c in cols)  # fmt: skip
        print(f"{arm:26s}{cells}")
    print_verdicts(results)
