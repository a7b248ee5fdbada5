"""``icml26-rerooter demo`` (√LTS policy tree search with learned rerooters (ICML 2026)): runs
``study.experiment``, judges it with ``verdict``, writes results.json through
``icml26.testing.report``."""

import time
from pathlib import Path

import numpy as np

from icml26.rerooter.bootstrap import (
    METHOD_LABELS,
)
from icml26.rerooter.study import CURVE_POINTS, DemoConfig, experiment
from icml26.rerooter.verdict import BASELINES, METHOD, interval, verdict
from icml26.testing.report import demo_config, finish_demo, print_verdicts, run_folder

PACKAGE = "icml26-rerooter"


# ---- run: experiment -> verdict -> results.json, figure, table ----


def run_demo(cfg: DemoConfig) -> dict:
    """Run (a) and (b), write results.json (+ PNG) into the run folder, return the results."""
    cfg.validate()
    run_cfg = cfg.resolved()
    out = run_folder(cfg.out, "rerooter")
    start = time.perf_counter()
    raw = experiment(run_cfg)
    seconds = time.perf_counter() - start
    results = finish_demo(
        out,
        package=PACKAGE,
        module_file=__file__,
        cfg=cfg,
        experiment=f"Boxoban: (a) search only on {raw['n_test']} unfiltered test levels at "
        f"{run_cfg.search_budget} expansions; (b) the authors' bootstrap on {raw['n_train']} "
        f"unfiltered training levels from budget {run_cfg.initial_budget} up to "
        f"{run_cfg.expansion_cap} training expansions, {run_cfg.seeds} seeds; trained networks "
        f"on {run_cfg.eval_levels} unfiltered test and {run_cfg.eval_levels} medium levels at "
        f"{run_cfg.eval_budget}",
        claim="√LTS with (learned) rerooters solves more problems than LTS and PHS* at equal "
        "budget, and trains online with fewer expansions",
        headline=_headline(raw),
        judged=verdict(raw),
        metrics=_metrics(raw),
        seconds=seconds,
        # the worker count changes the wall time only, so it is not part of the command
        config=demo_config(PACKAGE, cfg, recorded=run_cfg, skip=("out", "workers")),
        seed=run_cfg.seed,
        device=raw["device"],
        data=_data_files(run_cfg),
        # what verdict() reads, so the rows can be recomputed from the file
        measurements={
            "curves": _curves(raw),
            "runs": [{k: v for k, v in r.items() if k != "curve"} for r in raw["runs"]],
            **{k: raw[k] for k in ("n_test", "n_train", "n_eval", "cap", "k", "search_only")},
        },
    )
    if run_cfg.plot:
        from icml26.rerooter.plots import plot_results

        plot_results(raw, out / "solved.png")
    _print_table(run_cfg, raw, results, out)
    return results


def _data_files(cfg) -> dict[str, Path]:
    """The Boxoban level files the run read (given, or bundled), for the fingerprints."""
    from importlib import resources

    from icml26.rerooter.sokoban import BUNDLED

    out = {}
    for split, given in (("test", cfg.test_file), ("train", cfg.train_file),
                         ("medium", cfg.medium_file)):  # fmt: skip
        path = (
            Path(given)
            if given
            else Path(str(resources.files("icml26.rerooter").joinpath("levels", BUNDLED[split])))
        )
        out[path.name] = path
    return out


def _curves(raw: dict) -> dict:
    """Per method: the expansion grid and, per seed, the problems solved at each grid point."""
    if not raw["runs"]:
        return {}
    grid = np.linspace(0, raw["cap"], CURVE_POINTS + 1)[1:].astype(int).tolist()
    out: dict = {}
    for r in raw["runs"]:
        out.setdefault(r["method"], {"expansions": grid, "solved": {}})
        out[r["method"]]["solved"][str(r["seed"])] = r["curve"]
    return out


def _summary(raw: dict) -> dict[str, dict]:
    """Per method, over seeds: mean and 95% interval of each judged number."""
    out: dict[str, dict] = {}
    for m in dict.fromkeys(r["method"] for r in raw["runs"]):
        rs = [r for r in raw["runs"] if r["method"] == m]
        row = {}
        for key in ("area", "train solved", "test solved", "medium solved", "train seconds"):
            row[key] = interval([r[key] for r in rs])
        reached = [r["expansions to solve k"] for r in rs]
        row["expansions to solve k"] = (
            interval(reached) if all(e is not None for e in reached) else None
        )
        row["reached k"] = sum(e is not None for e in reached)
        row["seeds"] = len(rs)
        out[m] = row
    return out


def _headline(raw: dict) -> str:
    """√LTS-LH against the baselines: (a) counts, (b) area under the curve and test levels."""
    ran = [m for m in (METHOD, *BASELINES) if m in raw["search_only"]]
    n = raw["n_test"]
    line = "test levels solved, search only: " + ", ".join(
        f"{METHOD_LABELS[m]} {raw['search_only'][m]['solved']}/{n}" for m in ran
    )
    if raw["runs"]:
        summary = _summary(raw)
        ran = [m for m in ran if m in summary]
        area = ", ".join(f"{METHOD_LABELS[m]} {summary[m]['area'][0]:.3f}" for m in ran)
        test = ", ".join(f"{METHOD_LABELS[m]} {summary[m]['test solved'][0]:.1f}" for m in ran)
        seeds = max(r["seeds"] for r in summary.values())
        line += (
            f"; online training (mean of {seeds} seeds), "
            f"area under solved-vs-expansions {area}; trained networks, unfiltered test levels "
            f"solved of {raw['n_eval']}: {test}"
        )
    return line


def _metrics(raw: dict) -> dict:
    search_only = raw["search_only"]
    summary = _summary(raw) if raw["runs"] else {}

    def group(m: str) -> dict:
        g = {
            "search-only solved": search_only[m]["solved"],
            "search-only expansions": search_only[m]["expansions"],
            "search-only expansions/s": round(search_only[m]["expansions/s"], 1),
        }
        for key, ci in summary.get(m, {}).items():
            if isinstance(ci, tuple):
                g[key] = round(ci[0], 4)
                g[f"{key} 95% low"] = round(ci[1], 4)
                g[f"{key} 95% high"] = round(ci[2], 4)
            elif ci is not None:
                g[key] = ci
        return g

    metrics = {METHOD_LABELS[m]: group(m) for m in search_only}
    metrics["method"] = metrics.get(METHOD_LABELS[METHOD], {})
    metrics["baseline"] = metrics.get(METHOD_LABELS["lts"], {})
    return metrics


def _print_table(cfg, raw, results, out) -> None:
    n_test = raw["n_test"]
    print(
        f"\n(a) search only, uniform policy + hand-written h, {n_test} test levels, "
        f"budget {cfg.search_budget}"
    )
    print(f"{'method':10s} {'solved':>8s} {'expansions':>11s} {'exp/s':>8s}")
    for m, r in raw["search_only"].items():
        print(
            f"{METHOD_LABELS[m]:10s} {r['solved']:>5d}/{n_test:<2d} {r['expansions']:>11d} "
            f"{r['expansions/s']:>8.0f}"
        )
    if raw["runs"]:
        summary = _summary(raw)
        print(
            f"\n(b) authors' bootstrap on {raw['n_train']} training levels up to {raw['cap']} "
            f"expansions, {cfg.seeds} seeds (mean [95% interval]); trained networks at "
            f"{cfg.eval_budget} expansions on {raw['n_eval']} levels"
        )
        to_k = f"exp. to k={raw['k']}"
        print(
            f"{'method':10s} {'area':>22s} {'train solved':>14s} {to_k:>16s}"
            f" {'test':>7s} {'medium':>7s}"
        )
        for m, r in summary.items():
            a = r["area"]
            to_k = r["expansions to solve k"]
            to_k = f"{to_k[0]:>16.0f}" if to_k else f"{'reached ' + str(r['reached k']):>16s}"
            print(
                f"{METHOD_LABELS[m]:10s} {a[0]:>8.3f} [{a[1]:.3f}, {a[2]:.3f}] "
                f"{r['train solved'][0]:>14.1f} {to_k} {r['test solved'][0]:>7.1f} "
                f"{r['medium solved'][0]:>7.1f}"
            )
    print("\nclaims:")
    print_verdicts(results, out)
