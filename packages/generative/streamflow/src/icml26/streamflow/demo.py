"""``icml26-streamflow demo`` (streaming, batched rectified-flow inference on diffusers models):
runs ``study.experiment``, judges it with ``verdict``, writes results.json through
``icml26.testing.report``."""

import time
from pathlib import Path

import torch

from icml26.streamflow.study import DemoConfig, experiment
from icml26.streamflow.verdict import PAPER_SPEEDUP, STEADY_EAGER, _batch_arm, _ratio, verdict
from icml26.testing.report import demo_config, finish_demo, print_verdicts, run_folder

PACKAGE = "icml26-streamflow"


# ---- run: experiment -> verdict -> results.json, figure, table ----


def run_demo(cfg: DemoConfig) -> dict:
    """Run the comparison; write results.json and streamflow.png; return the results."""
    cfg.validate()
    run_cfg = cfg.resolved()
    out = run_folder(cfg.out, "streamflow")
    start = time.perf_counter()
    raw = experiment(run_cfg)
    tables = raw["tables"]
    steady = {k: t["rows"][STEADY_EAGER]["speedup vs (a)"] for k, t in tables.items()}
    bulk = {
        k: t["rows"][f"(c) batch of M={run_cfg.images}"]["speedup vs (a)"]
        for k, t in tables.items()
    }
    per_n = {k: _ratio(t, _batch_arm(t)) for k, t in tables.items()}
    results = finish_demo(
        out,
        package=PACKAGE,
        module_file=__file__,
        cfg=cfg,
        experiment=f"flow-matching UNets, N in {list(run_cfg.num_steps)} steps, "
        f"M={run_cfg.images} images, {raw['device']} {run_cfg.threads} thread(s): sequential vs "
        "batched vs stream, flow-matching Euler and PeRFlow windows",
        claim=f"stream batching of heterogeneous time steps speeds rectified-flow inference up "
        f"to {PAPER_SPEEDUP}x over a sequential per-image loop, with the same images",
        headline=_headline(raw, steady, bulk),
        judged=verdict(raw),
        metrics={
            "method": {f"{k} steady stream speedup": v for k, v in steady.items()}
            | {f"{k} steady stream / batch of N": v for k, v in per_n.items()}
            | {
                f"max |stream - sequential|, {k}": e["max |stream - sequential|"]
                for k, e in raw["exact"].items()
            },
            "baseline": {f"{k} bulk batch speedup": v for k, v in bulk.items()},
        },
        seconds=time.perf_counter() - start,
        config=demo_config("icml26-streamflow", cfg, recorded=run_cfg),
        seed=run_cfg.seed,
        device=raw["device"],
        measurements={
            "exact": raw["exact"],
            "tables": tables,
            "final training loss": raw["final training loss"],
            "threads": raw["threads"],
            "images": raw["images"],
        },
    )
    from icml26.streamflow.plots import plot_demo

    samples = {k: torch.tensor(v) for k, v in raw["samples"].items()}
    plot_demo(samples["sequential"], samples["stream"], tables, out / "streamflow.png")
    _print_table(tables, results, out)
    return results


def _headline(raw: dict, steady: dict, bulk: dict) -> str:
    s, b = steady.values(), bulk.values()
    diff = max(e["max |stream - sequential|"] for e in raw["exact"].values())
    ns = "/".join(str(n) for n in sorted({t["N"] for t in raw["tables"].values()}))
    return (
        f"steady stream {min(s):.2f}-{max(s):.2f}x the sequential loop's throughput at N = {ns} "
        f"on {raw['device']} (paper {PAPER_SPEEDUP}x on a GPU); same images as the loop (max "
        f"diff {diff:.1e}, flow matching and PeRFlow windows); bulk batching {min(b):.2f}-"
        f"{max(b):.2f}x"
    )


def _print_table(tables: dict, results: dict, out: Path):
    from icml26.streamflow.bench import print_table

    for name, t in tables.items():
        print_table(name, t)
    print("\nclaims:")
    print_verdicts(results, out)
