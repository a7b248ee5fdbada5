"""``icml26-santa demo`` (SANTA / S²ANTA sampled value aggregation for decode attention): runs
``study.experiment``, judges it with ``verdict``, writes results.json through
``icml26.testing.report``."""

import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from icml26.santa.study import PARTS, DemoConfig, experiment
from icml26.santa.verdict import verdict, wilson
from icml26.testing.report import demo_config, finish_demo, print_verdicts, run_folder
from icml26.testing.results import (
    demo_command,
    resolve_device,
)

PACKAGE = "icml26-santa"


def equal_reads(estimator: dict, draws_per_tile: int) -> dict:
    """Each mode's error at the value rows systematic reads at ``draws_per_tile``: interpolated
    log-log along the mode's budget sweep (None outside the sweep's range)."""
    out = {}
    for L in sorted({r["context"] for r in estimator.values()}):
        rows = [r for r in estimator.values() if r["context"] == L]
        target = [
            r for r in rows if r["mode"] == "systematic" and r["draws per tile"] == draws_per_tile
        ]
        if not target:
            continue
        f = target[0]["read fraction"]
        out[str(L)] = {"read fraction": f}
        for mode in dict.fromkeys(r["mode"] for r in rows):
            pts = sorted((r["read fraction"], r["error"]) for r in rows if r["mode"] == mode)
            x = np.log([a for a, _ in pts])
            y = np.log([b for _, b in pts])
            inside = x[0] <= math.log(f) <= x[-1]
            out[str(L)][mode] = float(np.exp(np.interp(math.log(f), x, y))) if inside else None
    return out


# --- the run: experiment -> verdict -> results.json, figure, table ---


def run_demo(cfg: DemoConfig) -> dict:
    """Run (a), (b) and (c); write results.json and santa.png; return the results."""
    cfg.check()
    cfg.resolved().check()
    asked, cfg = cfg, replace(cfg.resolved(), device=resolve_device(cfg.device))
    out = run_folder(cfg.out, "santa")
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    measured = experiment(cfg, out)
    missing = [n for n in PARTS if measured[n] is None]
    if missing:
        print(f"parts saved under {out / 'parts'}; still to run: {', '.join(missing)} (then "
              "rerun with --resume and every part to write the results)")  # fmt: skip
        return measured
    measured["equal rows read"] = equal_reads(measured["estimator"], cfg.draws_per_tile)
    measured["needle intervals"] = {
        key: {n: wilson(c[n]["found"], c["trials"]) for n in ["dense", *cfg.modes]}
        for key, c in measured["needle"].items()
    }  # 95% Wilson intervals of each cell's success rate
    command = demo_command(PACKAGE, asked, skip=("out", "resume"))
    # parts reused from an earlier run (--resume) are listed with the time they took then
    parts = [
        {"command": f"{command} --resume", "part": name, "seconds": secs}
        for name, secs in measured["reused parts"].items()
    ]
    results = finish_demo(
        out,
        package=PACKAGE,
        module_file=__file__,
        cfg=cfg,
        experiment=f"{cfg.model}: ~{cfg.draws_per_tile} draws per tile; free-running decode "
        f"at {list(cfg.decode_contexts)} tokens ({cfg.prompts} prompts x {cfg.free_tokens}, "
        f"and {cfg.perplexity_tokens} teacher-forced true tokens); "
        f"needles at {list(cfg.needle_lengths)} x depths {list(cfg.needle_depths)} "
        f"({cfg.needle_trials} trials); estimator at {list(cfg.capture_contexts)}",
        claim="sampled value aggregation matches dense decode accuracy while reading a "
        "fraction of the value rows",
        headline=_headline(cfg.model, measured),
        judged=verdict(measured),
        metrics=_metrics(measured),
        # this run, plus the recorded time of the parts it reused from an earlier one
        seconds=time.perf_counter()
        - start
        + sum(v or 0 for v in measured["reused parts"].values()),
        config=demo_config(PACKAGE, asked, recorded=cfg, skip=("out", "resume")),
        seed=cfg.seed,
        device=measured["device"],
        data=_data_files(cfg),
        parts=parts,
        measurements={k: v for k, v in measured.items() if k != "device"},
    )
    from icml26.santa.plots import plot_results

    plot_results(measured, out / "santa.png")
    _print(results, out)
    return results


def _data_files(cfg: "DemoConfig") -> dict[str, Path]:
    """The model file the demo read (SmolLM2's GGUF); the tiny model and its tokens are made
    from the seed. The corpus is the interpreter's own pydoc topics and stdlib sources."""
    if cfg.model != "smollm2":
        return {}
    from icml26.santa.model import GGUF_FILE, smollm2_path

    return {GGUF_FILE: smollm2_path() / GGUF_FILE}


def _metrics(m: dict) -> dict:
    method, baseline = {}, {}
    for L, r in m["decode"].items():
        t = m["perplexity"][L]
        baseline[f"dense perplexity @{L}"] = t["dense"]["perplexity"]["mean"]
        for mode in m["modes"]:
            method[f"{mode} agreement @{L}"] = r[mode]["agreement"]["mean"]
            method[f"{mode} KL @{L}"] = r[mode]["kl"]["mean"]
            method[f"{mode} perplexity @{L}"] = t[mode]["perplexity"]["mean"]
            method[f"{mode} read fraction @{L}"] = r[mode]["read fraction"]
    for key, c in m["needle"].items():
        baseline[f"dense needle {key}"] = c["dense"]["found"] / c["trials"]
        for mode in m["modes"]:
            method[f"{mode} needle {key}"] = c[mode]["found"] / c["trials"]
    for L, r in m["equal rows read"].items():
        if r.get("top-k") is not None:
            baseline[f"top-k error at equal rows read @{L}"] = r["top-k"]
        for mode in m["modes"]:
            if r.get(mode) is not None:
                method[f"{mode} error at equal rows read @{L}"] = r[mode]
    return {"method": method, "baseline": baseline}


def _headline(model: str, m: dict) -> str:
    parts = []
    for L, r in m["decode"].items():
        agree = ", ".join(f"{mode} {r[mode]['agreement']['mean']:.1%}" for mode in m["modes"])
        parts.append(f"@{L}: {agree}")
    line = f"{model}, ~16 draws/tile, free-running agreement with dense " + "; ".join(parts)
    if m["needle"]:
        found = {
            n: sum(c[n]["found"] for c in m["needle"].values()) for n in ["dense", *m["modes"]]
        }
        trials = sum(c["trials"] for c in m["needle"].values())
        line += "; needles found " + ", ".join(f"{n} {v}/{trials}" for n, v in found.items())
    return line


def _num(x, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def _print(results: dict, out: Path) -> None:
    print(f"\n{'(a) estimator':<34}{'S':>6}{'error':>9}{'read':>8}{'max|z|':>8}{'bias':>10}")
    for k, e in results["estimator"].items():
        print(
            f"{k:<34}{e['S']:>6}{e['error']:>9.4f}{e['read fraction']:>8.3f}"
            f"{_num(e['max |z| of the mean'], '.1f'):>8}{_num(e['exact bias'], '.1e'):>10}"
        )
    for L, r in results["equal rows read"].items():
        print(
            f"at equal rows read ({r['read fraction']:.1%} of V @{L}): "
            + ", ".join(f"{m} {_num(e, '.4f')}" for m, e in r.items() if m != "read fraction")
        )
    print(f"\n{'(b) decode':<24}{'agreement':>11}{'KL':>10}{'=dense':>8}{'read':>8}{'ppl x':>8}")
    for L, r in results["decode"].items():
        t = results["perplexity"][L]
        print(
            f"@{L}: S={r['S']}, {r['block_n']}-key tiles, dense teacher-forced perplexity "
            f"{t['dense']['perplexity']['mean']:.3f}"
        )
        for mode in results["modes"]:
            x = r[mode]
            print(
                f"  {mode:<22}{x['agreement']['mean']:>11.3f}{x['kl']['mean']:>10.2e}"
                f"{x['tokens equal to dense greedy']['mean']:>8.1f}{x['read fraction']:>8.3f}"
                f"{t[mode]['perplexity ratio']['mean']:>8.3f}"
            )
    for key, c in results["needle"].items():
        print(
            f"(c) needle {key}: "
            + ", ".join(f"{n} {c[n]['found']}/{c['trials']}" for n in ["dense", *results["modes"]])
        )
    print("\nclaims:")
    print_verdicts(results, out)
