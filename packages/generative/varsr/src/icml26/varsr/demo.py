"""``icml26-varsr demo`` (varsr): runs ``study.experiment``, judges it with ``verdict``, writes
results.json through ``icml26.testing.report``."""

from __future__ import annotations

import time

from icml26.testing.report import finish_demo, print_verdicts, run_folder
from icml26.varsr.plots import picture_grid
from icml26.varsr.study import DemoConfig, experiment
from icml26.varsr.verdict import verdict

ARMS = ("bicubic", "bicubic, 8-px tiles", "ESPCN", "VAR-RQ", "VAR-HIT", "VAR-HIT+DPO")


def summary_table(raw: dict) -> dict[str, dict[str, float]]:
    out = {}
    for arm in ARMS:
        rows = [r for r in raw["runs"] if r["arm"] == arm]
        if not rows:
            continue
        keys = [k for k in ("psnr_x4", "ssim_x4", "ms_ssim_x4", "psnr_x2", "consistency_x2")
                if k in rows[0]]  # fmt: skip
        out[arm] = {k: sum(r[k] for r in rows) / len(rows) for k in keys}
    return out


def run_demo(cfg: DemoConfig) -> dict:
    """Run, judge, write results.json, print the table; return the results."""
    out = run_folder(cfg.out, "varsr")
    t0 = time.perf_counter()
    raw = experiment(cfg)
    metrics = summary_table(raw)
    metrics["method"], metrics["baseline"] = metrics["VAR-HIT+DPO"], metrics["bicubic"]
    m = metrics
    results = finish_demo(
        out,
        package="icml26-varsr",
        module_file=__file__,
        cfg=cfg,
        experiment="x4 / x2 super-resolution of held-out natural images: bicubic, ESPCN, "
        "VAR-RQ, VAR-HIT, VAR-HIT+DPO trained on 32x32 patches",
        claim="a VAR with hierarchical tokenization and DPO regularisation super-resolves "
        "better than prior methods, and one pass yields every intermediate scale",
        headline=f"x4 PSNR (Y): VAR-HIT+DPO {m['VAR-HIT+DPO']['psnr_x4']:.2f} dB, ESPCN "
        f"{m['ESPCN']['psnr_x4']:.2f}, bicubic {m['bicubic']['psnr_x4']:.2f}",
        judged=verdict(raw),
        metrics=metrics,
        seconds=time.perf_counter() - t0,
        seed=0,
        device=raw["device"],
        measurements={"runs": raw["runs"]},
    )
    out.mkdir(parents=True, exist_ok=True)
    picture_grid(raw["grid"], out / "grid.png", raw["grid_image"])
    print(f"\nicml26-varsr {results['version']}: {results['headline']}")
    print_verdicts(results)
    return results
