"""``icml26-lipopu demo`` (pocket-centric positive-unlabeled learning for lipid-binding prediction
(ICML 2026)): runs ``study.experiment``, judges it with ``verdict``, writes results.json through
``icml26.testing.report``."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from icml26.lipopu.baselines import (
    BASELINES,
)
from icml26.lipopu.study import DemoConfig, experiment
from icml26.lipopu.verdict import _chosen_on_validation, _metric, verdict
from icml26.testing.report import finish_demo, print_verdicts, run_folder

# --- tables, files ----------------------------------------------------------------------------


def summary_table(results: dict) -> dict[str, dict[str, float]]:
    """``metrics``: per arm and c, the mean and std over seeds of each test metric."""
    out: dict[str, dict[str, float]] = {}
    arms = dict.fromkeys(r["arm"] for r in results["runs"])
    for arm in arms:
        for c in results["fractions"]:
            rows = [r for r in results["runs"] if r["arm"] == arm and r["c"] == c]
            if not rows:
                continue
            group = out.setdefault(f"{arm} @ c={c:g}", {})
            for key in rows[0]["metrics"]:
                vals = [r["metrics"][key] for r in rows if key in r["metrics"]]
                group[key] = float(np.mean(vals))
                group[f"{key}_std"] = float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0
            group["auprc_without_twins"] = float(
                np.mean([r["metrics_without_twins"]["auprc"] for r in rows])
            )
    return out


def headline(results: dict) -> str:
    c = min(results["fractions"])
    lip = np.mean(list(_metric(results, c, "lipopu").values()))
    bce = np.mean(list(_metric(results, c, "bce").values()))
    base = _chosen_on_validation(results, c, BASELINES)
    b = np.mean(list(_metric(results, c, base).values()))
    return (f"AUPRC at c = {c:g}: LipoPU {lip:.3f}, BCE {bce:.3f}, {base} {b:.3f} "
            f"({results['seeds']} seeds, {results['data']['source']})")  # fmt: skip


def run_demo(cfg: DemoConfig) -> dict:
    """Run, judge, write results.json and the figures, print the table; return the results."""
    from icml26.lipopu.plots import plot_case_study, plot_study

    out = run_folder(cfg.out, "lipopu")
    cfg = cfg.with_data()
    t0 = time.perf_counter()
    raw = experiment(cfg)
    metrics = summary_table(raw)
    c = min(raw["fractions"])
    metrics["method"] = metrics[f"lipopu @ c={c:g}"]
    metrics["baseline"] = metrics[f"{_chosen_on_validation(raw, c, BASELINES)} @ c={c:g}"]
    keep = ("data", "runs", "multilabel", "case_study", "fractions", "seeds", "ablation_c",
            "prior_factors")  # fmt: skip
    results = finish_demo(
        out,
        package="icml26-lipopu",
        module_file=__file__,
        cfg=cfg,
        experiment="SCAR label fractions on SLiPP pockets: BCE / nnPU / PU-AUC / LipoPU on "
        "one attention-MIL model, 5 supervised baselines, correction / pooling / bag / prior / "
        "multi-label ablations, 1a28 case study",
        claim="Pocket-centric PU learning with a ranking objective and residue attention "
        "finds lipid-binding pockets better than supervised training that treats unlabeled "
        "pockets as negatives",
        headline=headline(raw),
        judged=verdict(raw),
        metrics=metrics,
        seconds=time.perf_counter() - t0,
        seed=0,
        device=raw["device"],
        data=_data_files(cfg),
        measurements={k: raw[k] for k in keep},
    )
    out.mkdir(parents=True, exist_ok=True)
    plot_study(raw, out / "study.png")
    if "skipped" not in raw["case_study"]:
        plot_case_study(raw["case_study"], out / "case_study.png")
    _print(results)
    return results


def _data_files(cfg: DemoConfig) -> dict[str, Path]:
    """SLiPP's pocket table and the case-study structure, when the run read them."""
    out = {}
    if cfg.slipp is not None:
        out[Path(cfg.slipp).name] = Path(cfg.slipp)
    if cfg.structure is not None:
        out[Path(cfg.structure).name] = Path(cfg.structure)
    return out


def _jsonable(obj):
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    return str(obj) if isinstance(obj, Path) else obj


def _print(results: dict) -> None:
    print(f"\n{results['headline']}\n")
    keys = [k for k in results["metrics"] if k not in ("method", "baseline")]
    print(f"{'arm @ c':38s} {'AUROC':>13s} {'AUPRC':>13s} {'P@R0.5':>13s}")
    for k in keys:
        m = results["metrics"][k]
        cells = [f"{m[x]:.3f}±{m[x + '_std']:.3f}" for x in
                 ("auroc", "auprc", "precision_at_recall_0.5")]  # fmt: skip
        print(f"{k:38s} " + " ".join(f"{c:>13s}" for c in cells))
    print()
    print_verdicts(results)
