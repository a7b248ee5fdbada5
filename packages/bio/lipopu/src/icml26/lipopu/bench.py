"""``icml26-lipopu bench``: scoring throughput and training cost, as ratios against baselines.

- pockets scored per second by the attention-MIL model against SLiPP's random forest on the same
  pockets (the method's inference cost relative to the field's tool);
- seconds per training epoch of each objective against BCE (the pairwise ranking risks cost
  n_p x n_u pairs per step);
- fpocket-rs seconds per structure on the example structures, when installed.
Timings use the synthetic cohort (timing does not depend on the labels); the CPU runs with one
thread so the ratios are stable; CUDA timings synchronise the device.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import torch

from icml26.testing.command import DeviceOption
from icml26.testing.results import resolve_device
from icml26.testing.timing import best_time, torch_threads


@dataclass(frozen=True)
class BenchConfig(DeviceOption):
    """Throughput and training-cost ratios."""

    pockets: int = 20_000
    """Pockets scored in the throughput test."""
    repeats: int = 3
    """Best of this many timings."""


def run_bench(cfg: BenchConfig) -> dict:
    """Measure, print and return the ratios (JSON)."""
    if cfg.pockets < 100 or cfg.repeats < 1:
        raise ValueError("--pockets must be >= 100 and --repeats >= 1")
    device = resolve_device(cfg.device)
    with torch_threads(1, device):  # stable ratios on a shared CPU
        return _measure(cfg, device)


def _measure(cfg: BenchConfig, device: str) -> dict:
    from sklearn.ensemble import RandomForestClassifier

    from icml26.lipopu.data import DESCRIPTORS, Standardiser, grouped_split, synthetic_cohort
    from icml26.lipopu.model import PocketAttentionMIL, PocketModelConfig
    from icml26.lipopu.train import CompositionBags, TrainConfig, fit, predict_scores

    table = synthetic_cohort(n_proteins=max(cfg.pockets // 8, 4), seed=0)
    std = Standardiser.fit(table.descriptors)
    X = std(table.descriptors)
    bags = CompositionBags(table.composition)
    model = PocketAttentionMIL(PocketModelConfig(len(DESCRIPTORS))).to(device)
    forest = RandomForestClassifier(n_jobs=1, random_state=0).fit(table.descriptors, table.lipid)
    t_mil = best_time(lambda: predict_scores(model, X, bags), cfg.repeats, device)
    t_rf = best_time(lambda: forest.predict_proba(table.descriptors), cfg.repeats, "cpu")
    report = {
        "device": device,
        "pockets": len(table),
        "mil_pockets_per_second": len(table) / t_mil,
        "slipp_forest_pockets_per_second": len(table) / t_rf,
        "mil_over_forest_throughput": t_rf / t_mil,
    }
    split = grouped_split(table.protein, 0)
    epoch = {}

    def one_epoch(objective):
        torch.manual_seed(0)
        m = PocketAttentionMIL(PocketModelConfig(len(DESCRIPTORS))).to(device)
        tcfg = TrainConfig(objective=objective, epochs=1, seed=0)
        fit(m, X, bags, table.lipid, split.train, split.val, tcfg, prior=0.13)

    one_epoch("bce")  # warm-up: first-call costs stay out of the timings
    for objective in ("bce", "nnpu", "pu_auc", "lipopu"):
        epoch[objective] = best_time(lambda o=objective: one_epoch(o), cfg.repeats, device)
    report["seconds_per_epoch"] = epoch
    report["epoch_over_bce"] = {k: v / epoch["bce"] for k, v in epoch.items()}
    report["fpocket_rs_seconds"] = _fpocket_times()
    print(json.dumps(report, indent=2))
    return report


def _fpocket_times() -> dict[str, float]:
    from icml26.lipopu.structure import pockets, read_structure
    from icml26.lipopu.study import _example_structures

    out = {}
    for path in _example_structures():
        atoms = read_structure(path)
        t0 = time.perf_counter()
        pockets(atoms)
        out[path.name] = round(time.perf_counter() - t0, 3)
    return out
