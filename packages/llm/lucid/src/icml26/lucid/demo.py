"""``icml26-lucid demo`` (LUCID attention (arXiv 2602.10410) for PyTorch and Hugging Face
transformers): runs ``study.experiment``, judges it with ``verdict``, writes results.json
through ``icml26.testing.report``."""

import json
import statistics
import time
from dataclasses import replace
from pathlib import Path

from icml26.lucid.study import MEAN, DemoConfig, experiment
from icml26.lucid.verdict import BEST_SOFTMAX, PROBE_MARGIN, verdict
from icml26.testing.report import demo_config, finish_demo, print_verdicts, run_folder
from icml26.testing.results import (
    resolve_device,
)

PACKAGE = "icml26-lucid"


# --- the run: experiment -> verdict -> results.json, figure, table ---


def run_demo(cfg: DemoConfig) -> dict:
    """Run the experiments; write results.json and lucid.png; return the results."""
    cfg.validate()
    asked, cfg = cfg, replace(cfg.resolved(), device=resolve_device(cfg.device))
    out = run_folder(cfg.out, "lucid")
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    measured = experiment(cfg)
    seconds = round(time.perf_counter() - start, 2)
    # the raw measurements first: a verdict or plotting error never costs the runs
    _write_json(out / "measurements.json", {**measured, "seconds": seconds})
    return _conclude(cfg, asked, measured, seconds, out)


def _conclude(cfg: DemoConfig, asked: DemoConfig, measured: dict, seconds: float, out: Path):
    """Verdict, results.json, figure and table from the measurements of ``experiment``."""
    judged = verdict(measured)
    results = finish_demo(
        out,
        package=PACKAGE,
        module_file=__file__,
        cfg=cfg,
        experiment="correlated-keys probe with a noise sweep; MQAR steps-to-solve over "
        f"{len(cfg.cells())} cells ({cfg.mqar_seeds} seeds, budgets {cfg.mqar_steps}) with "
        f"preconditioner variants; multi-needle retrieval ({cfg.needle_seeds} seeds, budget "
        f"{cfg.needle_steps}); pydoc character LM ({cfg.lm_steps} steps)",
        claim="LUCID lets a query single out one key among many similar ones (better "
        "associative and long-context recall) without hurting ordinary language-model loss",
        headline=_headline(judged["claims"], measured),
        judged=judged,
        metrics=_metrics(measured),
        seconds=seconds,
        config=demo_config(PACKAGE, asked, recorded=cfg, skip=("out", "workers")),
        seed=cfg.seed,
        device=measured["device"],
        data=_data_files(),
        measurements={k: v for k, v in measured.items() if k != "device"},
    )
    from icml26.lucid.plots import plot_demo

    plot_demo(results, out / "lucid.png")
    _print(results, out)
    return results


def _data_files() -> dict[str, Path]:
    """The character LM reads the standard library's pydoc topics: fingerprint that file."""
    import pydoc_data.topics

    return {"pydoc_data/topics.py": Path(pydoc_data.topics.__file__)}


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n")
    tmp.replace(path)


def _headline(claims: list[dict], m: dict) -> str:
    """The numbers a reader wants first: where LUCID learns recall faster, the probe, the LM."""
    outcomes: dict[str, list[str]] = {
        "faster": [], "slower": [], "tie": [], "not learnable at the budget": []
    }  # fmt: skip
    for c in claims[1:-1]:
        ev = c["evidence"]
        key = (
            "not learnable at the budget"
            if ev.startswith("control failed") or "neither attention learned" in ev
            else "faster"
            if "LUCID faster" in ev
            else "slower"
            if "LUCID slower" in ev
            else "tie"
        )
        setting = c["claim"].rsplit("(", 1)[-1].rstrip(")")
        for long, short in (("learned positions", "learned"), ("pairs=", "P="), ("heads=", "H=")):
            setting = setting.replace(long, short)
        outcomes[key].append(setting)
    recall = "; ".join(f"{k} in {len(v)} ({', '.join(v)})" for k, v in outcomes.items() if v)
    points = m["probe sweep"]["points"]
    ahead = sum(p["LUCID"] >= p[BEST_SOFTMAX] + PROBE_MARGIN for p in points)
    lm = {k: statistics.mean(r["held-out loss"] for r in v) for k, v in m["char LM"].items()}
    return (
        f"LUCID vs softmax, steps to solve: {recall}; probe: LUCID ahead of tuned-temperature "
        f"softmax at {ahead}/{len(points)} noise points; char LM loss LUCID {lm['lucid']:.3f} vs "
        f"softmax {lm['softmax']:.3f} nats/char"
    )


def _metrics(m: dict) -> dict:
    probe, sizes = m["probe"], m["probe"]["cluster sizes"]

    def group(kind: str, probe_name: str) -> dict:
        g = {
            f"probe cosine, cluster {c}": round(v, 4)
            for c, v in zip(sizes, probe[probe_name], strict=True)
        }
        for task in ("mqar", "needle"):
            for setting, per_arm in m[task].items():
                g[f"{task} {setting} seeds solved"] = per_arm[kind]["solved"]
                g[f"{task} {setting} mean steps"] = per_arm[kind][MEAN]
        losses = [r["held-out loss"] for r in m["char LM"][kind]]
        g["char LM held-out loss (nats/char)"] = round(statistics.mean(losses), 4)
        return g

    return {
        "method": group("lucid", "LUCID"),
        "baseline": group("softmax", "softmax (T=1)"),
        "softmax T=0.5 (probe)": {
            f"probe cosine, cluster {c}": round(v, 4)
            for c, v in zip(sizes, probe["softmax (T=0.5)"], strict=True)
        },
        "softmax, best T (probe)": {
            f"probe cosine, cluster {c}": round(v, 4)
            for c, v in zip(sizes, probe[BEST_SOFTMAX], strict=True)
        },
    }


def _print(results: dict, out: Path) -> None:
    cfg, probe = results["config"], results["probe"]
    print("\ncorrelated-keys probe: cosine(output, queried value) by cluster size")
    print(f"{'':18s}" + "".join(f"{c:>8d}" for c in probe["cluster sizes"]))
    for name in [n for n in probe if n.startswith("softmax")] + ["LUCID"]:
        print(f"{name:18s}" + "".join(f"{v:>8.3f}" for v in probe[name]))
    sweep = results["probe sweep"]
    print(f"\nprobe noise sweep (cluster of {sweep['cluster size']})")
    for p in sweep["points"]:
        print(
            f"  key noise {p['key noise']:<5g} query noise {p['query noise']:<5g} LUCID "
            f"{p['LUCID']:.3f}  softmax T=1 {p['softmax (T=1)']:.3f}  best T "
            f"{p[BEST_SOFTMAX]:.3f}"
        )
    for task in ("mqar", "needle"):
        print(f"\n{task} (solved = {cfg['mqar_threshold']:.0%} accuracy)")
        for setting, per_arm in results[task].items():
            for arm, r in per_arm.items():
                n = len(r["steps per seed"])
                print(
                    f"  {setting:38s} {arm:28s} solved {r['solved']}/{n} in {r['budget']}  "
                    f"mean steps {r[MEAN]:.0f}  per seed {r['steps per seed']}"
                )
    print("\nclaims:")
    print_verdicts(results, out)
