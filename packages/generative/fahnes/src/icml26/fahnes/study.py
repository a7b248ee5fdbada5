"""``icml26-fahnes demo``: FAHNES against a flat one-shot model of the same size.

(a) featured planar graphs (SPECTRE's setting: 200 Delaunay graphs of n = 64 with their point
coordinates, split 128 / 32 / 40): Ratio of degree / clustering / spectral / orbit MMD to the
train-vs-test MMD, V.U.N., node-count error, coordinate and edge-length MMD, crossing-free
drawings; (b) a mesh family (icospheres, tori, capsules, ~60 triangles): Chamfer, closed-manifold
edges, Euler characteristic; (c) the cost of sampling one graph as n grows 64 -> 2,048, and the
pyvista airplane's size, each in a fresh process. Both models get the same denoiser, diffusion
steps, optimiser, learning rate, number of gradient steps and validation early stopping;
FAHNES's batch holds ``batch`` refinement examples (one level of one graph each), the flat
model's ``flat_batch`` whole graphs, sized so both pass messages over about as many links a step.
Seeds vary the models' initialisation, training draws and sampling; the data sets are fixed.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from icml26.fahnes.baselines import FlatConfig, FlatModel, erdos_renyi_like
from icml26.fahnes.bench import cost_sweep
from icml26.fahnes.data import mesh_family, planar_graphs, pyvista_mesh, split
from icml26.fahnes.metrics import graph_metrics, mesh_metrics
from icml26.fahnes.model import FahnesConfig, FahnesModel
from icml26.fahnes.train import FitConfig, fit
from icml26.fahnes.verdict import ER
from icml26.testing.command import DemoOptions
from icml26.testing.results import (
    resolve_device,
)


@dataclass(frozen=True)
class DemoConfig(DemoOptions):
    """The demo's settings (``--quick``: a smoke run in well under a minute)."""

    seeds: int = 3
    n: int = 64
    """Nodes of the planar graphs."""
    graphs: int = 200
    """Planar graphs generated (split 64% / 16% / 20%: SPECTRE's 128 / 32 / 40)."""
    steps: int = 3000
    """Gradient steps of every model on the planar graphs."""
    mesh_steps: int = 2000
    batch: int = 16
    """FAHNES refinement examples per step."""
    flat_batch: int = 4
    """Flat-model graphs per step (about as many message links as FAHNES's batch)."""
    lr: float = 2e-3
    flat_diffusion_steps: int = 100
    """The flat model's denoising steps: about as many denoiser passes per sample as FAHNES makes
    (10 per level, over about 10 levels at n = 64)."""
    sequences: int = 8
    """Coarsening sequences per training graph."""
    samples: int = 40
    """Graphs sampled per model and seed (as many as the test set)."""
    meshes: int = 60
    mesh_faces: int = 60
    cost_sizes: tuple[int, ...] = (64, 128, 256, 512, 1024, 2048)
    flat_cost_max: int = 1024
    """Largest n the flat model is timed at (its 100 dense steps at n = 2,048 take ~10 minutes)."""
    airplane: bool = True
    """Also time FAHNES at the pyvista airplane's vertex count (needs the `meshes` extra)."""
    device: str = "auto"
    """auto, cpu, or cuda[:N]. This version trains and samples on the CPU only: auto picks the
    CPU (and says so when CUDA is present), an explicit CUDA device is refused."""

    def quick_settings(self) -> dict:
        return dict(
            seeds=1,
            n=20,
            graphs=20,
            steps=20,
            mesh_steps=10,
            batch=8,
            flat_batch=2,
            sequences=2,
            samples=4,
            meshes=6,
            mesh_faces=40,
            cost_sizes=(16, 32),
            airplane=False,
            flat_diffusion_steps=10,
        )


# ---- the experiment -----------------------------------------------------------------------------


def _train(kind: str, train, val, cfg: DemoConfig, seed: int, steps: int, desc: str):
    """A model trained on ``train`` with early stopping on ``val``'s loss; (model, info)."""
    torch.manual_seed(seed)
    if kind == "fahnes":
        model, ex = FahnesModel.from_data(train, FahnesConfig(sequences=cfg.sequences), seed=seed)
        vex = [x for s in _val_sequences(model, val, seed) for x in s]
        batch = cfg.batch
    else:
        flat_cfg = FlatConfig(diffusion_steps=cfg.flat_diffusion_steps)
        model, ex = FlatModel.from_data(train, flat_cfg)
        _, vex = FlatModel.from_data(val, flat_cfg)
        for e in vex:  # standardised with the training statistics
            e["x0"] = (e["x"] - torch.tensor(model.stats.mean_x)) / torch.tensor(model.stats.std_x)
        batch = cfg.flat_batch
    t0 = time.perf_counter()
    info = fit(
        model,
        ex,
        FitConfig(steps=steps, batch=batch, lr=cfg.lr, seed=seed, eval_every=max(steps // 20, 10)),
        val=vex,
        progress=True,
        desc=desc,
    )
    info["train seconds"] = time.perf_counter() - t0
    return model, info


def _val_sequences(model: FahnesModel, val, seed: int):
    """Validation refinement examples scaled with the model's own (training) statistics."""
    from icml26.fahnes.coarsening import coarsen

    rng = np.random.default_rng(seed + 1000)
    out = []
    for h in val:
        ex = model._examples(coarsen(h, rng, model.cfg.reduction, model.cfg.spectral_k))
        for e in ex:
            e["residual"] = e["residual"] / model._sigma(e)[:, None]
        out.append(ex)
    return out


def experiment(cfg: DemoConfig) -> dict:
    """Train, sample and score every arm on every seed; returns the raw measurements."""
    device = resolve_device(cfg.device)
    if device != "cpu":
        if cfg.device != "auto":
            raise ValueError(f"--device {cfg.device}: icml26-fahnes 0.1 runs on the CPU only")
        print("icml26-fahnes 0.1 runs on the CPU only; CUDA is present but unused")
    cfg = cfg.resolved()
    torch.set_num_threads(1)  # small sparse ops: a second thread only adds synchronisation
    runs, keep = [], {}
    train, val, test = split(planar_graphs(cfg.graphs, cfg.n, seed=0), seed=0)
    meshes, names = mesh_family(cfg.meshes, seed=0, target_faces=cfg.mesh_faces)
    m_train, m_val, m_test = split(meshes, seed=1)
    ref = graph_metrics(train[: len(test)], train, test, None)
    runs.append({"problem": "planar", "arm": "train set", "seed": 0, **ref})
    runs.append(
        {"problem": "mesh", "arm": "train set", "seed": 0, **mesh_metrics(m_train, m_train, m_test)}
    )
    cost_models = {}
    for seed in range(cfg.seeds):
        # the trivial generator, scored like the models: the floor a learned generator must clear
        er = erdos_renyi_like(train, cfg.samples, cfg.n, seed=seed + 100)
        runs.append(
            {"problem": "planar", "arm": ER, "seed": seed,
             **graph_metrics(er, train, test, [cfg.n] * cfg.samples)}
        )  # fmt: skip
        for arm in ("FAHNES", "flat"):
            kind = "fahnes" if arm == "FAHNES" else "flat"
            model, row, samples = _planar_arm(arm, kind, train, val, test, cfg, seed)
            mesh_row, msamples = _mesh_arm(arm, kind, m_train, m_val, m_test, cfg, seed)
            runs += [row, mesh_row]
            if seed == 0:
                keep[f"planar {arm}"], keep[f"mesh {arm}"] = samples[:4], msamples[:4]
                cost_models[kind] = model
    keep["planar data"], keep["mesh data"] = test[:4], m_test[:4]
    cost = _cost(cost_models, cfg)
    return {
        "runs": runs,
        "cost": cost,
        "keep": keep,
        "config": asdict(cfg),
        "mesh families": sorted(set(names)),
    }


def _planar_arm(arm: str, kind: str, train, val, test, cfg: DemoConfig, seed: int):
    """Train ``arm`` on the planar graphs, sample and score it; (model, run row, samples)."""
    model, info = _train(kind, train, val, cfg, seed, cfg.steps, f"{arm} planar s{seed}")
    t0 = time.perf_counter()
    samples = model.sample_hypergraphs(cfg.n, cfg.samples, seed=seed + 100)
    sample_s = (time.perf_counter() - t0) / cfg.samples
    m = graph_metrics(samples, train, test, [cfg.n] * cfg.samples)
    row = {"problem": "planar", "arm": arm, "seed": seed, **m,
           "train seconds": info["train seconds"], "best step": info["best_step"],
           "sample seconds": sample_s}  # fmt: skip
    return model, row, samples


def _mesh_arm(arm: str, kind: str, m_train, m_val, m_test, cfg: DemoConfig, seed: int):
    """Train ``arm`` on the mesh family, sample and score it; (run row, samples)."""
    mm, minfo = _train(kind, m_train, m_val, cfg, seed, cfg.mesh_steps, f"{arm} mesh s{seed}")
    # sizes drawn from the training meshes (the test sizes would name the families)
    msamples = mm.sample_hypergraphs(None, len(m_test), seed=seed + 200)
    row = {"problem": "mesh", "arm": arm, "seed": seed, **mesh_metrics(msamples, m_train, m_test),
           "train seconds": minfo["train seconds"]}  # fmt: skip
    return row, msamples


def _cost(cost_models: dict, cfg: DemoConfig) -> dict:
    """Sampling time and memory of the saved seed-0 models across graph sizes, each size in a
    fresh process (full runs), and FAHNES on the airplane mesh's size."""
    cost = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind, model in tqdm(cost_models.items(), desc="cost", leave=False):
            model.save_pretrained(Path(tmp) / kind)
            sizes = [n for n in cfg.cost_sizes if kind == "fahnes" or n <= cfg.flat_cost_max]
            cost[kind] = cost_sweep(kind, Path(tmp) / kind, sizes, fresh=not cfg.quick)
        if cfg.airplane:
            try:
                n_air = pyvista_mesh("airplane").num_nodes
                cost["airplane"] = cost_sweep("fahnes", Path(tmp) / "fahnes", [n_air])[0]
            except (ValueError, FileNotFoundError) as e:
                cost["airplane"] = {"error": str(e)}
    return cost
