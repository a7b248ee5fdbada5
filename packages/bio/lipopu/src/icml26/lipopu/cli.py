"""Command line: ``icml26-lipopu demo [--quick]``, ``train``, ``evaluate``, ``predict``, ``bench``
(also ``python -m icml26.lipopu``). ``train`` runs unchanged under ``torchrun``."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import tyro

from icml26.lipopu.bench import BenchConfig, run_bench
from icml26.lipopu.demo import run_demo
from icml26.lipopu.study import DemoConfig
from icml26.testing.command import DeviceOption, dispatch


@dataclass(frozen=True)
class TrainCli(DeviceOption):
    """Train a pocket model on the SLiPP table (or the synthetic cohort) and save it."""

    out: Path
    """Checkpoint folder (model.safetensors, config.json, training state)."""
    slipp: Path | None = None
    """SLiPP's training_pockets.csv (default: $LIPOPU_SLIPP or shared/data/slipp/ above)."""
    synthetic: bool = False
    """Train on the synthetic cohort instead."""
    objective: Literal["lipopu", "nnpu", "pu_auc", "bce"] = "lipopu"
    c: float = 1.0
    """Keep this fraction of training lipid labels (SCAR); 1 = all."""
    multilabel: bool = False
    """One output per lipid category (sterol, fatty acyl) instead of lipid / not."""
    prior: float | None = None
    """P(lipid) among pockets for nnpu / lipopu (every category under --multilabel); default:
    estimated per category from the labels you have (Elkan-Noto on a gradient-boosting
    classifier), never from hidden ones."""
    surrogate: Literal["sigmoid", "logistic"] | None = None
    """The PU risk's loss; default: the demo's choice (logistic for nnpu and lipopu, sigmoid for
    pu_auc)."""
    epochs: int = 30
    patience: int = 6
    seed: int = 0
    """Seed of the grouped split, the label draw and the weights."""
    resume: bool = False
    """Continue from the training state in --out."""


@dataclass(frozen=True)
class EvaluateCli(DeviceOption):
    """Measure a saved model on the test proteins of its own grouped split (true labels)."""

    checkpoint: tyro.conf.Positional[Path]
    slipp: Path | None = None
    synthetic: bool = False


@dataclass(frozen=True)
class PredictCli:
    """Rank the pockets of a structure file (PDB / mmCIF, .gz ok) and show residue attention."""

    structure: tyro.conf.Positional[Path]
    checkpoint: Path
    """Folder written by ``icml26-lipopu train``."""
    top: int = 5
    """Pockets to print."""


def _table(slipp: Path | None, synthetic: bool):
    from icml26.lipopu.data import find_slipp, load_slipp, synthetic_cohort

    if synthetic:
        return synthetic_cohort()
    path = slipp or find_slipp()
    if path is None:
        raise ValueError(
            "no SLiPP table given: pass --slipp PATH (training_pockets.csv from "
            "github.com/dassamalab/SLiPP_2024), set $LIPOPU_SLIPP, or use --synthetic"
        )
    return load_slipp(path)


def run_train(cfg: TrainCli) -> Path:
    import torch
    import torch.distributed as dist

    from icml26.lipopu.data import (
        DESCRIPTORS,
        SPLIT_FRACTIONS,
        Standardiser,
        grouped_split,
        scar_labels,
    )
    from icml26.lipopu.model import PocketAttentionMIL, PocketModelConfig
    from icml26.lipopu.predict import save_predictor
    from icml26.lipopu.train import CompositionBags, TrainConfig, fit
    from icml26.testing.results import resolve_device

    device = resolve_device(cfg.device)
    table = _table(cfg.slipp, cfg.synthetic)
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
        if device.startswith("cuda"):
            device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
    rank = dist.get_rank() if dist.is_initialized() else 0
    split = grouped_split(table.protein, cfg.seed)
    std = Standardiser.fit(table.descriptors[split.train])
    truth = table.category if cfg.multilabel else table.lipid
    observed = scar_labels(truth, cfg.c, seed=10_000 + cfg.seed)
    prior = _prior(cfg, table, std, observed, split)
    torch.manual_seed(cfg.seed)
    n_out = truth.shape[1] if cfg.multilabel else 1
    model = PocketAttentionMIL(PocketModelConfig(len(DESCRIPTORS), n_out)).to(device)
    from icml26.lipopu.study import SURROGATE

    tcfg = TrainConfig(objective=cfg.objective, epochs=cfg.epochs, patience=cfg.patience,
                       seed=cfg.seed, progress=True,
                       surrogate=cfg.surrogate or SURROGATE[cfg.objective])  # fmt: skip
    result = fit(model, std(table.descriptors), CompositionBags(table.composition), observed,
                 split.train, split.val, tcfg, prior=prior,
                 checkpoint_dir=cfg.out / "state", resume=cfg.resume)  # fmt: skip
    if rank == 0:
        save_predictor(cfg.out, model, std, split_seed=cfg.seed,
                       split_fractions=list(SPLIT_FRACTIONS), source=table.source,
                       table_fingerprint=table.fingerprint(), objective=cfg.objective,
                       c=cfg.c, prior=prior)  # fmt: skip
        print(f"saved to {cfg.out}: best epoch {result.best_epoch}, validation PU-AUROC "
              f"{result.best_val:.3f}")  # fmt: skip
    return cfg.out


def _prior(cfg: TrainCli, table, std, observed, split) -> list[float]:
    import numpy as np

    from icml26.lipopu.baselines import composition_features, estimate_prior
    from icml26.lipopu.losses import check_prior

    n_out = observed.shape[1] if observed.ndim == 2 else 1
    if cfg.prior is not None:
        return [check_prior(cfg.prior, "--prior")] * n_out
    if cfg.objective not in ("nnpu", "lipopu"):
        return [0.5] * n_out  # unused
    X = np.concatenate([std(table.descriptors), composition_features(table.composition)], 1)
    out = []
    for obs in observed.T if observed.ndim == 2 else [observed]:
        out.append(estimate_prior(X, obs, split.train, split.val, cfg.seed)[0])
    print("estimated prior(s): " + ", ".join(f"{p:.3f}" for p in out))
    return out


def run_evaluate(cfg: EvaluateCli) -> dict:
    from icml26.lipopu.data import LEGACY_SPLIT_FRACTIONS, grouped_split
    from icml26.lipopu.metrics import ranking_metrics
    from icml26.lipopu.predict import load_predictor
    from icml26.lipopu.train import CompositionBags, predict_scores
    from icml26.testing.results import resolve_device

    device = resolve_device(cfg.device)
    model, std, _, meta = load_predictor(cfg.checkpoint)
    table = _table(cfg.slipp, cfg.synthetic)
    if meta.get("table_fingerprint") not in (None, table.fingerprint()):
        raise ValueError(
            f"{cfg.checkpoint} was trained on another table ({meta.get('source')}): its split "
            "cannot be rebuilt here, and test proteins could overlap its training"
        )
    fractions = tuple(meta.get("split_fractions", LEGACY_SPLIT_FRACTIONS))
    split = grouped_split(table.protein, int(meta.get("split_seed", 0)), fractions)
    scores = predict_scores(model.to(device), std(table.descriptors),
                            CompositionBags(table.composition), split.test)  # fmt: skip
    truth = table.category if model.config.n_outputs > 1 else table.lipid[:, None]
    report = {
        f"output {k}": ranking_metrics(
            truth[split.test, k], scores[:, k], table.protein[split.test]
        )
        for k in range(scores.shape[1])
    }
    print(json.dumps(report, indent=2))
    return report


def run_predict(cfg: PredictCli) -> list:
    from icml26.lipopu.predict import predict

    preds = predict(cfg.structure, cfg.checkpoint)
    print(f"{cfg.structure.name}: {len(preds)} pockets, best first")
    for i, p in enumerate(preds[: cfg.top], 1):
        names = ", ".join(f"{r} {a:.2f}" for r, a in p.top_residues(5))
        print(f"{i}. fpocket pocket {p.pocket.rank}: score {float(p.score[0]):+.2f}; "
              f"most attended: {names}")  # fmt: skip
    return preds


DESCRIPTION = "LipoPU: positive-unlabeled lipid-binding pocket prediction."
COMMANDS = {
    "demo": (DemoConfig, run_demo),
    "train": (TrainCli, run_train),
    "evaluate": (EvaluateCli, run_evaluate),
    "predict": (PredictCli, run_predict),
    "bench": (BenchConfig, run_bench),
}


def main(argv: list[str] | None = None) -> int:
    return dispatch("icml26-lipopu", DESCRIPTION, COMMANDS, argv)
