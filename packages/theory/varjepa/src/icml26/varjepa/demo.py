"""``icml26-varjepa demo`` (A Variational Formulation of the Joint-Embedding Predictive
Architecture (Gögl & Yau,): runs ``study.experiment``, judges it with ``verdict``, writes
results.json through ``icml26.testing.report``."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from icml26.testing.report import demo_config, finish_demo, print_verdicts, run_folder
from icml26.varjepa.data import load_table
from icml26.varjepa.study import MODELS, DemoConfig, experiment
from icml26.varjepa.verdict import INIT, _by_dataset, _paired, _test_f1, verdict

PACKAGE = "icml26-varjepa"


RAW = ("raw logreg", "raw MLP", "raw LightGBM", "majority class")


# -- writing ----------------------------------------------------------------------------------


def _per_beta(results: dict) -> list[str]:
    return [k for k in results["runs"][0]["probes"] if k.startswith("Var-T-JEPA (beta=")]


def _metrics(measured: dict) -> dict:
    tables = _by_dataset(measured)
    names = (*MODELS, *_per_beta(measured), INIT, *RAW, "best raw", "best T-JEPA")
    out = {}
    for label, name in (("method", "Var-T-JEPA"), ("baseline", "best T-JEPA")):
        out[label] = {
            d: float(np.mean([_test_f1(r, name) for r in runs])) for d, runs in tables.items()
        }
    for name in names:
        out[name] = {
            d: float(np.mean([_test_f1(r, name) for r in runs])) for d, runs in tables.items()
        }
    out["RankMe at end"] = {
        f"{d} {m}": float(np.mean([r["rankme"][m][-1]["rankme"] for r in runs]))
        for d, runs in tables.items()
        for m in MODELS
    }
    return out


def _headline(measured: dict) -> str:
    tables = _by_dataset(measured)
    gaps = {d: _paired(runs, "Var-T-JEPA", "best T-JEPA")[0] for d, runs in tables.items()}
    raw = {d: _paired(runs, "Var-T-JEPA", "best raw")[0] for d, runs in tables.items()}
    return (
        f"macro-F1 Var-T-JEPA - T-JEPA {min(gaps.values()):+.3f}..{max(gaps.values()):+.3f}, "
        f"- best raw baseline {min(raw.values()):+.3f}..{max(raw.values()):+.3f} on "
        f"{len(tables)} tables"
    )


def run_demo(cfg: DemoConfig) -> dict:
    """Run the experiment, write results.json and the plots into the run folder, return results."""
    out = run_folder(cfg.out, "varjepa")
    start = time.perf_counter()
    measured = experiment(cfg)
    run = cfg.resolved()
    results = finish_demo(
        out,
        package=PACKAGE,
        module_file=__file__,
        cfg=cfg,
        experiment=f"Var-T-JEPA vs T-JEPA (with / without [REG]) vs raw-feature baselines on "
        f"{', '.join(run.datasets)}; {len(run.seeds)} seed(s), {run.steps} pretraining steps",
        claim="Var-T-JEPA improves over T-JEPA and stays competitive with strong raw-feature "
        "baselines, without anti-collapse heuristics, with uncertainty in latent space",
        headline=_headline(measured),
        judged=verdict(measured),
        metrics=_metrics(measured),
        seconds=time.perf_counter() - start,
        config=demo_config(PACKAGE, cfg, recorded=run),
        seed=run.seeds[0],
        device=measured["device"],
        fingerprints=_fingerprints(run),
        measurements={k: v for k, v in measured.items() if k != "device"},
    )
    from icml26.varjepa.plots import plot_probes, plot_rankme, plot_uncertainty

    plot_probes(results, out / "probes.png")
    plot_rankme(results, out / "rankme.png")
    plot_uncertainty(results, out / "uncertainty.png")
    _print_summary(results, out)
    return results


def _fingerprints(run) -> dict[str, str]:
    """A fingerprint of every table the run read."""
    from icml26.varjepa.data import table_fingerprint

    return {name: table_fingerprint(load_table(name)) for name in run.datasets}


def _print_summary(results: dict, out: Path) -> None:
    tables = _by_dataset(results)
    names = (*MODELS, *_per_beta(results), INIT, *RAW)
    print(f"\ntest macro-F1, mean over {len(results['config']['seeds'])} seed(s)")
    print(f"{'':<24}" + "".join(f"{d[:13]:>14}" for d in tables))
    for name in names:
        vals = [np.mean([_test_f1(r, name) for r in runs]) for runs in tables.values()]
        print(f"{name:<24}" + "".join(f"{v:>14.3f}" for v in vals))
    print("\nclaims:")
    print_verdicts(results, out)
