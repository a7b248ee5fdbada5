"""Command line: ``icml26-varjepa demo [--quick]``, ``train``, ``evaluate`` (also
``python -m icml26.varjepa``). ``train`` runs unchanged under ``torchrun``."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import tyro

from icml26.testing.command import DeviceOption, dispatch
from icml26.varjepa.bench import BenchConfig, run_bench
from icml26.varjepa.demo import run_demo
from icml26.varjepa.study import DemoConfig


@dataclass(frozen=True)
class TrainCli(DeviceOption):
    """Pretrain Var-T-JEPA (or T-JEPA) on a CSV file or a bundled table; save a checkpoint."""

    out: Path
    """Checkpoint folder (model.safetensors, config.json, tokenizer.json, training state)."""
    csv: Path | None = None
    """A CSV file of rows; numerical and categorical columns, missing values allowed."""
    table: str | None = None
    """Or a bundled table by name (breast_cancer, digits, wa_churn, credit_data, ...)."""
    drop: tuple[str, ...] = ()
    """Columns to leave out of pretraining (e.g. the label)."""
    model: Literal["vartjepa", "tjepa"] = "vartjepa"
    steps: int = 600
    batch_size: int = 128
    lr: float = 1e-3
    dim: int = 32
    depth: int = 2
    n_reg: int = 0
    """[REG] tokens (T-JEPA only)."""
    beta: float = 1.0
    """KL weight (Var-T-JEPA only)."""
    seed: int = 0
    resume: bool = False
    """Continue from the checkpoint in --out."""
    checkpoint_every: int = 0


@dataclass(frozen=True)
class EvaluateCli(DeviceOption):
    """Probe a saved checkpoint's embeddings against the raw columns on a labelled table."""

    checkpoint: tyro.conf.Positional[Path]
    """Folder written by ``icml26-varjepa train``."""
    target: str | None = None
    """Label column of --csv (bundled tables know their label)."""
    csv: Path | None = None
    table: str | None = None
    seed: int = 0


def _check_source(csv: Path | None, table: str | None) -> None:
    if (csv is None) == (table is None):
        raise ValueError("give exactly one of --csv or --table")


def _rows_to_pretrain_on(csv: Path | None, table: str | None):
    """The feature columns of a bundled table or every column of a CSV (labels are not used)."""
    import pandas as pd

    from icml26.varjepa.data import load_table

    _check_source(csv, table)
    if table is not None:
        return load_table(table).features
    try:
        return pd.read_csv(csv)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as e:
        raise ValueError(f"{csv}: not a readable CSV ({e})") from None


def _labelled_table(csv: Path | None, table: str | None, target: str | None):
    from icml26.varjepa.data import load_table, read_csv

    _check_source(csv, table)
    if table is not None:
        return load_table(table)
    if target is None:
        raise ValueError("--target: name the label column of --csv")
    return read_csv(csv, target)


def _init_distributed(device: str) -> tuple[int, bool]:
    import torch.distributed as dist

    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
        return dist.get_rank(), True
    return 0, False


def run_train(cfg: TrainCli) -> Path:
    import torch

    from icml26.testing.files import atomic_write
    from icml26.testing.results import resolve_device
    from icml26.varjepa.model import TJEPA, ModelConfig, VarTJEPA
    from icml26.varjepa.tokenizer import FeatureTokenizer
    from icml26.varjepa.train import TrainConfig, pretrain

    device = resolve_device(cfg.device)
    frame = _rows_to_pretrain_on(cfg.csv, cfg.table)
    missing = [c for c in cfg.drop if c not in frame.columns]
    if missing:
        raise ValueError(f"--drop: columns {missing} are not in the table")
    features = frame.drop(columns=list(cfg.drop))
    rank, distributed = _init_distributed(device)
    if distributed and device.startswith("cuda"):
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
    tok = FeatureTokenizer().fit(features)
    torch.manual_seed(cfg.seed)
    mcfg = ModelConfig(
        dim=cfg.dim,
        depth=cfg.depth,
        predictor_dim=cfg.dim,
        n_reg=cfg.n_reg if cfg.model == "tjepa" else 0,
    )
    n_num, cards = len(tok.numerical_), tok.cardinalities
    model = (
        VarTJEPA(n_num, cards, mcfg, beta=cfg.beta)
        if cfg.model == "vartjepa"
        else TJEPA(n_num, cards, mcfg)
    ).to(device)
    tcfg = TrainConfig(
        steps=cfg.steps, batch_size=cfg.batch_size, lr=cfg.lr, seed=cfg.seed,
        checkpoint_every=cfg.checkpoint_every,
    )  # fmt: skip
    if rank == 0:  # first, so a checkpoint of an interrupted run can be evaluated too
        cfg.out.mkdir(parents=True, exist_ok=True)
        state = json.dumps(tok.state(), indent=2)
        atomic_write(cfg.out / "tokenizer.json", lambda p: Path(p).write_text(state))
    history = pretrain(
        model, tok.transform(features), tcfg, checkpoint_dir=cfg.out, resume=cfg.resume
    )
    if rank == 0:
        print(
            f"saved {cfg.model} to {cfg.out}; last loss {history[-1]['loss']:.4f}"
            if history
            else f"{cfg.out} was already trained to {cfg.steps} steps"
        )
    return cfg.out


def run_evaluate(cfg: EvaluateCli) -> dict:
    from icml26.testing.results import resolve_device
    from icml26.varjepa.baselines import fit_probe, raw_design
    from icml26.varjepa.data import split_table
    from icml26.varjepa.evaluate import embed_rows, rankme
    from icml26.varjepa.model import load_pretrained
    from icml26.varjepa.tokenizer import FeatureTokenizer

    device = resolve_device(cfg.device)
    table = _labelled_table(cfg.csv, cfg.table, cfg.target)  # arguments first, then the work
    model = load_pretrained(cfg.checkpoint).to(device)
    tok_path = cfg.checkpoint / "tokenizer.json"
    if not tok_path.is_file():
        raise ValueError(f"{cfg.checkpoint}: no tokenizer.json (save with `icml26-varjepa train`)")
    tok = FeatureTokenizer.from_state(json.loads(tok_path.read_text()))
    split = split_table(table, cfg.seed)
    Z = embed_rows(model, tok.transform(table.features))
    design = raw_design(table.features, split.train)
    out = {"rankme": rankme(Z[split.test])}
    for name, X in (("embeddings", Z), ("raw columns", design(slice(None)))):
        for kind in ("logreg", "mlp"):
            r = fit_probe(kind, X[split.train], table.target[split.train], X[split.val],
                          table.target[split.val], X[split.test], table.target[split.test],
                          table.task, cfg.seed)  # fmt: skip
            out[f"{name} {kind}"] = r.test
    print(json.dumps(out, indent=2))
    return out


DESCRIPTION = "Var-JEPA for tabular data (arXiv 2603.20111)."
COMMANDS = {
    "demo": (DemoConfig, run_demo),
    "train": (TrainCli, run_train),
    "evaluate": (EvaluateCli, run_evaluate),
    "bench": (BenchConfig, run_bench),
}


def main(argv: list[str] | None = None) -> int:
    return dispatch("icml26-varjepa", DESCRIPTION, COMMANDS, argv)
