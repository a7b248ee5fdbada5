"""Command line: ``icml26-fahnes demo [--quick]``, ``train``, ``sample``, ``bench`` (also
``python -m icml26.fahnes``). ``train`` runs unchanged under ``torchrun`` (DDP: every rank draws
its own refinement examples; gradients are averaged)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import tyro

from icml26.fahnes.bench import BenchConfig, run_bench
from icml26.fahnes.demo import run_demo
from icml26.fahnes.study import DemoConfig
from icml26.testing.command import dispatch

DATASETS = ("planar", "sbm", "trees", "hypergraph-sbm", "meshes")


@dataclass(frozen=True)
class TrainCli:
    """Train FAHNES (or the flat baseline) on a generated data set and save it to ``out``
    (``config.json`` + ``model.safetensors``); checkpoints go to ``<out>.ckpt``."""

    out: Path = Path("runs/fahnes/model")
    data: Literal["planar", "sbm", "trees", "hypergraph-sbm", "meshes"] = "planar"
    model: Literal["fahnes", "flat"] = "fahnes"
    graphs: int = 128
    """Training hypergraphs generated."""
    steps: int = 3000
    batch: int = 16
    lr: float = 2e-3
    seed: int = 0
    save_every: int = 500
    resume: bool = False
    """Continue from ``<out>.ckpt``."""


@dataclass(frozen=True)
class SampleCli:
    """Sample hypergraphs from a trained model and write them as JSON (hyperedges, features)."""

    model: tyro.conf.Positional[Path]
    """A folder written by ``train``."""
    output: tyro.conf.Positional[Path]
    """The JSON file to write."""
    n: int | None = None
    """Nodes per sample (default: sizes drawn from the training set)."""
    num_samples: int = 8
    seed: int = 0


def _dataset(name: str, count: int, seed: int):
    from icml26.fahnes import data

    if name == "planar":
        return data.planar_graphs(count, 64, seed)
    if name == "sbm":
        return data.sbm_graphs(count, seed)
    if name == "trees":
        return data.tree_graphs(count, 64, seed)
    if name == "hypergraph-sbm":
        return data.hypergraph_sbm(count, seed=seed)
    return data.mesh_family(count, seed)[0]


def train_cli(cfg: TrainCli) -> None:
    import torch
    import torch.distributed as dist

    from icml26.fahnes.baselines import FlatModel
    from icml26.fahnes.model import FahnesConfig, FahnesModel
    from icml26.fahnes.train import FitConfig, fit

    if cfg.graphs < 1 or cfg.steps < 1:
        raise ValueError("--graphs and --steps must be >= 1")
    ckpt = cfg.out.with_name(cfg.out.name + ".ckpt")
    if not cfg.resume and (ckpt.exists() or cfg.out.exists()):
        raise ValueError(f"{cfg.out} already holds a run: pass --resume or choose another --out")
    if cfg.resume and not (ckpt / "state.json").is_file():
        raise ValueError(
            f"--resume: no checkpoint at {ckpt} (it is written every --save-every steps)"
        )
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed and not dist.is_initialized():
        dist.init_process_group("gloo")
    torch.manual_seed(cfg.seed)
    graphs = _dataset(cfg.data, cfg.graphs, cfg.seed)
    if cfg.model == "fahnes":
        model, examples = FahnesModel.from_data(graphs, FahnesConfig(), seed=cfg.seed)
    else:
        model, examples = FlatModel.from_data(graphs)
    info = fit(
        model,
        examples,
        FitConfig(
            steps=cfg.steps,
            batch=cfg.batch,
            lr=cfg.lr,
            seed=cfg.seed,
            eval_every=0,
            save_every=cfg.save_every,
        ),
        checkpoint=ckpt,
        resume=cfg.resume,
        desc=f"train {cfg.model}",
    )
    if not distributed or dist.get_rank() == 0:
        model.save_pretrained(cfg.out)
        print(f"saved {cfg.out} (last loss {info['last_loss']:.3f})")


def sample_cli(cfg: SampleCli) -> None:
    from icml26.fahnes.baselines import FlatModel
    from icml26.fahnes.model import FahnesModel

    meta = cfg.model / "config.json"
    if not meta.is_file():
        raise FileNotFoundError(f"{cfg.model} holds no config.json: train a model first")
    try:
        flat = "edge_prior" in json.loads(meta.read_text())["stats"]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise ValueError(f"{meta}: not a model config ({type(e).__name__}: {e})") from None
    model = (FlatModel if flat else FahnesModel).from_pretrained(cfg.model)
    hgs = model.sample_hypergraphs(cfg.n, cfg.num_samples, seed=cfg.seed)
    doc = [
        {
            "num_nodes": h.num_nodes,
            "hyperedges": h.hyperedges(),
            "x": h.x.tolist(),
            "edge_x": h.edge_x.tolist(),
        }
        for h in hgs
    ]
    cfg.output.parent.mkdir(parents=True, exist_ok=True)
    tmp = cfg.output.with_name(f".{cfg.output.name}.partial")
    tmp.write_text(json.dumps(doc))
    os.replace(tmp, cfg.output)
    print(f"wrote {len(doc)} samples to {cfg.output}")


DESCRIPTION = "FAHNES: featured graph and hypergraph generation by next-scale prediction."
COMMANDS = {
    "demo": (DemoConfig, run_demo),
    "train": (TrainCli, train_cli),
    "sample": (SampleCli, sample_cli),
    "bench": (BenchConfig, run_bench),
}
ERRORS = (ValueError, TypeError, OSError)
"""The exceptions that end as one line and exit 2 (a mistake the user can fix)."""


def main(argv: list[str] | None = None) -> int:
    return dispatch("icml26-fahnes", DESCRIPTION, COMMANDS, argv, errors=ERRORS)
