"""``icml26-asbm demo`` (Adjoint Schrödinger Bridge Matching): runs ``study.experiment``, judges it
with ``verdict``, writes results.json through ``icml26.testing.report``."""

import math
import time
from pathlib import Path

import torch

from icml26.asbm.study import DemoConfig, experiment
from icml26.asbm.verdict import BASELINES, _value, verdict
from icml26.testing.report import demo_config, finish_demo, print_verdicts, run_folder
from icml26.testing.results import demo_command

PACKAGE = "icml26-asbm"


def _metrics(results: dict) -> dict:
    method, baseline = {}, {}
    for name, p in results["problems"].items():
        m, key = p["metrics"], p["metric"]
        method[f"{name} ASBM distilled 1-step {key}"] = m["ASBM distilled (1 step)"]["1"][key]
        for k in m["ASBM"]:
            method[f"{name} ASBM {k}-step {key}"] = m["ASBM"][k][key]
            for label in BASELINES:
                baseline[f"{name} {label} {k}-step {key}"] = m[label][k][key]
    return {"method": _clean(method), "baseline": _clean(baseline)}


def _headline(results: dict) -> str:
    parts = []
    for n, p in results["problems"].items():
        m, key = p["metrics"], p["metric"]
        k = max(m["ASBM"], key=int)
        best = min(BASELINES, key=lambda b: _value(m[b][k][key]))
        parts.append(f"{n}: {k}-step {key} ASBM {m['ASBM'][k][key]:.3g} / best baseline "
                     f"({best}) {m[best][k][key]:.3g}")  # fmt: skip
    return "; ".join(parts)


def run_demo(cfg: DemoConfig) -> dict:
    """Run the experiment, write results.json and the plots into the run folder, return results."""
    out = run_folder(cfg.out, "asbm")
    start = time.perf_counter()
    measured = experiment(cfg, out)
    run = cfg.resolved()
    command = demo_command(PACKAGE, cfg, skip=("out", "resume"))
    # seeds reused from an earlier run (--resume), with the time they took then and its commit
    parts = [{"command": f"{command} --resume", "part": name, **part}
             for name, part in measured["reused"].items()]  # fmt: skip
    results = finish_demo(
        out,
        package=PACKAGE,
        module_file=__file__,  # moons are generated; digits and LFW ship with sklearn
        cfg=cfg,
        experiment="quality vs sampling steps (1-100) at equal gradient steps, ASBM on the "
        "official recipe vs memoryless-VP score matching, CFM, OT-CFM, SB-CFM and reflow, on "
        f"{', '.join(measured['problems'])}",
        claim="a learned Schrödinger-bridge coupling gives nearly straight paths: good samples "
        "in very few steps, beyond what minibatch OT couplings give in high dimension",
        headline=_headline(measured),
        judged=verdict(measured),
        metrics=_metrics(measured),
        seconds=time.perf_counter() - start + sum(p["seconds"] for p in parts),
        config=demo_config(PACKAGE, cfg, recorded=run, skip=("out", "resume")),
        seed=run.seeds[0],
        device=measured["device"],
        parts=parts,
        measurements={
            "protocol": measured["protocol"],  # which rules verdict() applies
            "seeds": list(run.seeds),
            "steps": measured["steps"],  # with "problems": what verdict() reads
            "problems": _finite_tree(measured["problems"]),
        },
    )
    from icml26.asbm.plots import plot_quality, plot_rounds, plot_samples

    plot_quality(measured["problems"], out / "quality_vs_steps.png")
    plot_rounds(measured["problems"], cfg.prior_scale, out / "stage1_rounds.png")
    for name, grid in measured["samples"].items():
        slug = name.replace(" (TinyUNet)", "_unet").replace(" ", "_")
        # (the faces' held-out set is the grid's "data" panel)
        plot_samples({k: torch.tensor(v) for k, v in grid.items()}, out / f"samples_{slug}.png")
    _print(measured["problems"], results, out)
    return results


def _clean(d: dict) -> dict:
    return {
        k: (v if isinstance(v, int | float) and math.isfinite(v) else None) for k, v in d.items()
    }


def _finite_tree(obj):
    """The measurements as strict JSON: a non-finite number becomes None."""
    if isinstance(obj, dict):
        return {k: _finite_tree(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite_tree(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _print(problems: dict, results: dict, out: Path) -> None:
    for name, p in problems.items():
        m, key = p["metrics"], p["metric"]
        steps = list(m["ASBM"])
        print(f"\n{name}: {key} (seed mean; straightness) by sampling steps, "
              f"{len(p['seeds'])} seed(s); ASBM (Heun) by Heun steps")  # fmt: skip
        print(f"{'method':<30}" + "".join(f"{s:>18}" for s in steps) + "   wall-clock / ASBM")
        for label, rows in m.items():
            cells = "".join(
                f"{rows[s][key]:>11.4g} ({rows[s]['straightness']:.2f})" if s in rows
                else f"{'':>18}" for s in steps
            )  # fmt: skip
            ratio = p["wall-clock vs ASBM"].get(label)
            if label == "ASBM (Heun)":
                cells = "".join(f"{k}: {r[key]:.4g} ({r['network calls']} calls)  "
                                for k, r in rows.items())  # fmt: skip
            print(f"{label:<30}{cells}" + (f"   {ratio:.2f}" if ratio else ""))
        print("stage-1 rounds (first seed): terminal mean / std (Gaussian reference), MMD to the "
              "prior, corrector loss (affine floor), stopping rule")  # fmt: skip
        for r in p["stage 1 rounds"]:
            rule = r.get("prior_match", {}).get("passed")
            print(f"  {r['round']}: {r['terminal_mean']:+.3f} / {r['terminal_std']:.3f} "
                  f"({r['gaussian_reference_mean']:+.3f} / {r['gaussian_reference_std']:.3f}), "
                  f"{r['mmd_prior']:.4f}, {r['corrector_loss']:.2f} "
                  f"({r['corrector_linear_floor']:.2f}), "
                  f"{'passed' if rule else 'not passed'}")  # fmt: skip
    print()
    print_verdicts(results, out)
