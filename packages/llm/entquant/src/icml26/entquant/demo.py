"""``icml26-entquant demo`` (entropy-coded, data-free quantization of transformer checkpoints
(arXiv 2601.22787)): runs ``study.experiment``, judges it with ``verdict``, writes results.json
through ``icml26.testing.report``."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from icml26.entquant import models
from icml26.entquant.study import DemoConfig, experiment
from icml26.entquant.verdict import LOW_BITS, RATE, verdict
from icml26.testing.report import demo_config, finish_demo, print_verdicts, run_folder
from icml26.testing.results import (
    resolve_device,
)

PACKAGE = "icml26-entquant"


# --- the run: experiment -> verdict -> results.json, figure, table ---


def run_demo(cfg: DemoConfig) -> dict:
    """Run the sweep on every model; write results.json and entquant.png; return the results."""
    cfg.validate()
    asked, cfg = cfg, replace(cfg.resolved(), device=resolve_device(cfg.device))
    out = run_folder(cfg.out, "entquant")
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    measured = experiment(cfg, out / "checkpoints" if cfg.keep_checkpoints else None)
    method_key, base_key = _headline_pair(measured, cfg)
    per_model = measured["models"]
    first = per_model[cfg.models[0]]["rows"]
    results = finish_demo(
        out,
        package=PACKAGE,
        module_file=__file__,
        cfg=cfg,
        experiment=f"rate-distortion of EntQuant ({cfg.qtype}) vs RTN/NF4/HQQ and GPTQ on "
        + ", ".join(cfg.models),
        claim="EntQuant matches data-dependent methods below 4 bits per parameter and "
        "compresses a 70B model in under 10 minutes, without calibration data",
        headline=_headline(measured, cfg.models[0], method_key, base_key),
        judged=verdict(measured),
        metrics={
            "method": {**first[method_key], "compression params/s": measured[RATE]},
            "baseline": first[base_key],
            **{f"{m} {k}": v for m, r in per_model.items() for k, v in r["rows"].items()},
        },
        seconds=time.perf_counter() - start,
        config=demo_config(PACKAGE, asked, recorded=cfg),
        seed=cfg.seed,
        device=measured["device"],
        data=models.data_files(cfg.models),
        measurements={k: v for k, v in measured.items() if k != "device"},
    )
    from icml26.entquant.plots import plot_rate_distortion

    plot_rate_distortion(results, out / "entquant.png")
    _print(results, out)
    return results


def _headline_pair(measured: dict, cfg: DemoConfig) -> tuple[str, str]:
    """EntQuant's cheapest point below 4 bits and the best baseline at the lowest baseline rate
    that is not below it (equal or more bits), on the first model."""
    first_model = measured["models"][cfg.models[0]]
    first, key = first_model["rows"], first_model["distortion"]
    ent_keys = [k for k in first if k.startswith("EntQuant")]
    method_key = min(
        (k for k in ent_keys if first[k]["bits/param"] < LOW_BITS),
        key=lambda k: first[k]["bits/param"],
        default=ent_keys[-1],
    )
    m_bits = first[method_key]["bits/param"]
    baselines = [k for k in first if k in cfg.baselines]
    rivals = [k for k in baselines if first[k]["bits/param"] >= m_bits]
    if rivals:
        return method_key, min(rivals, key=lambda k: (first[k]["bits/param"], first[k][key]))
    # every baseline is cheaper: the closest one
    return method_key, min(
        baselines, key=lambda k: m_bits - first[k]["bits/param"], default="original"
    )


def _headline(measured: dict, model: str, method_key: str, base_key: str) -> str:
    first, key = measured["models"][model]["rows"], measured["models"][model]["distortion"]
    headline = (
        f"{model}: {method_key} {first[method_key]['bits/param']:.2f} bits/param, {key} "
        f"{first[method_key][key]:.3g} vs {base_key} {first[base_key]['bits/param']:.2f} bits, "
        f"{first[base_key][key]:.3g}"
    )
    # the data-dependent rival at the same rate, when it was run
    gptq = [k for k in first if k.startswith("GPTQ")
            and first[k]["bits/param"] == first[base_key]["bits/param"]]  # fmt: skip
    if gptq:
        headline += f", {gptq[0]} {first[gptq[0]][key]:.3g}"
    if measured[RATE]:
        headline += (
            f"; 70B in {measured['extrapolated 70B minutes']:,.0f} min at the rate measured "
            f"on {measured['device']}"
        )
    return headline


def _print(results: dict, out: Path) -> None:
    for name, r in results["models"].items():
        key = r["distortion"]
        print(f"\n{name}: {r['layers']} layers, {r['quantised params']:,} quantised parameters")
        print(f"{'':24s}{'bits/param':>12s}{key:>14s}")
        for row, v in sorted(r["rows"].items(), key=lambda kv: -kv[1]["bits/param"]):
            print(f"{row:24s}{v['bits/param']:>12.3f}{v[key]:>14.5f}")
    rate = results[RATE]
    if rate:
        print(
            f"\ncompression: {rate:,.0f} params/s on {results['threads']} threads -> 70B in "
            f"{results['extrapolated 70B minutes']:,.0f} min"
        )
    print("\nclaims:")
    print_verdicts(results, out)
