"""The headline experiment at small scale: HiST vs its ablation and baselines, and its cost.

(a) Synthetic cohort (:mod:`icml26.hist.synthetic`): train on slides alternating square and
    hexagonal lattices, test on held-out slides; HiST, HiST without calibration tokens, kNN
    attention (STFlow-like), a per-spot MLP, and two closed-form ridge probes (spot features;
    plus the slide's feature statistics); R2 / Pearson on linear values (pooled over spots x
    genes, averaged over slides) and mean per-gene Pearson, over seeds.
(b) HER2ST (the bundled C2-C6 subset, or original files): leave one section (or patient) out,
    the next group held back for validation; gene panels (most variable, most expressed) chosen
    on the non-test sections; per-gene Pearson of normalised log1p expression for the per-gene
    mean, three ridge probes, an early-stopped MLP, kNN attention, HiST with and without tokens.
(c) Cost (:mod:`icml26.hist.cost`): time and measured peak memory of forward + backward vs the
    number of spots at fixed area and vs the area at fixed spots; HiST vs the dense-grid model
    vs full attention.

Verdict (``verdict``, one row per claim). Synthetic rows: a model "beats" another when its
seed-mean pooled Pearson is higher by more than the two seed stds together (inside that band it
is a tie, which does not reproduce a claim of improvement). HER2ST rows: the paired margin in
mean per-gene Pearson (``paired_margin``), "better" only when its gene-bootstrap and seed
t-intervals both lie above zero.
  1. calibration tokens help: HiST beats HiST without tokens (a);
  2. sparse spatial context helps: HiST without tokens beats the per-spot MLP (a);
  3. HiST beats local attention: HiST beats kNN attention (a);
  4. HiST beats the strongest synthetic baseline, ridge probes included (a);
  5. cost follows spots, not area: at fixed spots HiST's peak memory grows less than 2x over the
     area sweep while the dense grid's grows more than 4x (time instead of memory where memory
     cannot be measured) (c);
  6. HiST beats the strongest HER2ST baseline (b);
  7. calibration tokens help on HER2ST (b);
  8. across patients and cohorts: untestable here (the paper's cohorts and foundation-model
     features).
Rows 1-2 split the ordering HiST > no-token HiST > MLP, which with row 5 was fixed before any
run; the noise band and row 3 were defined after a full run had measured the synthetic numbers;
rows 4, 6 and 7 were added with the ridge probes and the HER2ST benchmark. A part left out with
``--parts`` makes its rows "untestable here".

Deviation from the paper's recipe, for a CPU budget: width 64 (paper 512), learning rate 1e-3
(paper 1e-4) for a few hundred steps instead of many epochs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from icml26.hist import cost
from icml26.hist.baselines import BaselineConfig, KNNAttention, SpotMLP
from icml26.hist.data import Slide, featurise_patches, load_her2st, load_her2st_subset
from icml26.hist.genes import highly_expressed_genes, highly_variable_genes
from icml26.hist.linear import MeanExpression, RidgeProbe
from icml26.hist.metrics import average, gene_pearsons, slide_metrics
from icml26.hist.model import HiST, HiSTConfig
from icml26.hist.synthetic import SyntheticWorld, make_cohort
from icml26.hist.train import TrainConfig, evaluate, predict, predict_log1p, train
from icml26.hist.verdict import HER2ST_BASELINES
from icml26.testing.checks import integer
from icml26.testing.command import DemoOptions
from icml26.testing.results import (
    resolve_device,
)

MODELS = ("HiST", "HiST no tokens", "kNN attention", "MLP")


PARTS = ("synthetic", "her2st", "cost")


@dataclass(frozen=True)
class DemoConfig(DemoOptions):
    """HiST vs no-token HiST / kNN attention / MLP on synthetic and HER2ST slides, and its cost.

    ``--quick``: tiny budgets: finishes in seconds (numbers are not meaningful)."""

    seed: int = 0
    """First seed; seed, seed+1, ... for the repeated trainings."""
    seeds: int = 3
    """Trainings per model (different initialisation and slide order)."""
    parts: tuple[str, ...] = PARTS
    """Which parts to run: synthetic, her2st, cost."""
    dim: int = 64
    """Width of every model (the paper: 512)."""
    lr: float = 1e-3
    """Peak learning rate (the paper: 1e-4 over far more steps)."""
    train_slides: int = 12
    """Synthetic training slides."""
    test_slides: int = 6
    """Synthetic held-out slides."""
    spots: int = 1000
    """Spots per synthetic slide."""
    steps: int = 120
    """Training steps per model on the synthetic cohort."""
    shift_variants: bool = True
    """Also train HiST with and without tokens on the stain-shift-only and biology-shift-only
    cohorts (the tokens' null control: no gain when no slide summary can help)."""
    her2st_lrs: tuple[float, ...] = (3e-4, 1e-3, 3e-3)
    """HER2ST validation grid, the same for every network: peak learning rates."""
    her2st_step_caps: tuple[int, ...] = (300, 600)
    """HER2ST validation grid: step budgets (the cosine schedule ends at the cap; the weights
    are early-stopped on the validation section, scored every ``her2st_eval_every`` steps)."""
    her2st_eval_every: int = 25
    """Steps between validation scores on HER2ST."""
    her2st_genes: int = 50
    """Size of each gene panel (most variable, most expressed), chosen on the training
    sections of each fold."""
    her2st_folds: int = 5
    """Folds run (the first this many; 0: all)."""
    her2st_data: Path | None = None
    """Folder of original HER2ST files (her2st_files layouts); None: the bundled C2-C6 subset."""
    her2st_sections: tuple[str, ...] = ("C2", "C3", "C4", "C5", "C6")
    """Sections read from --her2st-data."""
    her2st_split: str = "section"
    """section: leave one section out; patient: leave one patient out (sections A1, A2, ...
    belong to patient A), for data with several patients."""
    cost_spots: tuple[int, ...] = (1000, 4000, 16000)
    """Spot counts of the fixed-area sweep (canvas cost_side x cost_side)."""
    cost_side: int = 128
    """Canvas side of the fixed-area sweep."""
    cost_sides: tuple[int, ...] = (64, 128, 256, 512)
    """Canvas sides of the fixed-spots sweep (cost_spots[0] spots)."""
    max_dense_sites: int = 70_000
    """Skip the dense grid beyond this many canvas cells (memory and time on a laptop)."""
    max_full_spots: int = 4000
    """Skip full attention beyond this many spots."""

    def quick_settings(self) -> dict:
        return dict(
            seeds=1,
            dim=32,
            train_slides=4,
            test_slides=2,
            spots=256,
            steps=15,
            her2st_lrs=(1e-3,),
            her2st_step_caps=(8,),
            her2st_eval_every=4,
            her2st_folds=1,
            cost_spots=(128, 512),
            cost_side=32,
            cost_sides=(24, 32),
        )

    def validate(self) -> None:
        bad = [p for p in self.parts if p not in PARTS]
        if bad or not self.parts:
            raise ValueError(f"parts must be a non-empty subset of {PARTS}, got {self.parts}")
        for name, low in (("seeds", 1), ("steps", 1), ("dim", 8)):
            if getattr(self, name) < low:
                raise ValueError(f"{name} must be >= {low}, got {getattr(self, name)}")
        if not self.her2st_lrs or any(not lr > 0 for lr in self.her2st_lrs):
            raise ValueError(f"her2st_lrs must be positive numbers, got {self.her2st_lrs}")
        if not self.her2st_step_caps or any(c < 1 for c in self.her2st_step_caps):
            raise ValueError(f"her2st_step_caps must be >= 1, got {self.her2st_step_caps}")
        integer("train_slides", self.train_slides, low=1)
        integer("test_slides", self.test_slides, low=1)
        integer("spots (per slide)", self.spots, low=16)
        integer("her2st_folds", self.her2st_folds, low=0)
        integer("her2st_eval_every", self.her2st_eval_every, low=1)
        integer("her2st_genes", self.her2st_genes, low=2)
        if self.her2st_split not in ("section", "patient"):
            raise ValueError(f"her2st_split must be section or patient, got {self.her2st_split!r}")
        if self.her2st_data is None and self.her2st_sections != DemoConfig.her2st_sections:
            raise ValueError("--her2st-sections needs --her2st-data (the bundle holds C2-C6)")
        groups = len({_group(sec, self.her2st_split) for sec in self.her2st_sections})
        if groups < 3:
            raise ValueError(
                f"{groups} {self.her2st_split} group(s) in --her2st-sections: need 3 "
                "(test, validation and training)"
            )
        resolve_device(self.device)  # a malformed or unavailable device fails here, before work
        if min(self.cost_sides) ** 2 < self.cost_spots[0]:
            raise ValueError("cost_sides[0]**2 must hold cost_spots[0] spots")


def _model(name: str, features: int, genes: int, dim: int):
    if name == "HiST":
        return HiST(HiSTConfig(features, genes, dim=dim))
    if name == "HiST no tokens":
        return HiST(HiSTConfig(features, genes, dim=dim, use_tokens=False))
    if name == "kNN attention":
        return KNNAttention(BaselineConfig(features, genes, dim=dim, layers=2))
    return SpotMLP(BaselineConfig(features, genes, dim=dim, layers=2))


def _fit(name, train_slides, steps, cfg: DemoConfig, seed: int):
    torch.manual_seed(seed)
    s0 = train_slides[0]
    model = _model(name, s0.features.shape[1], s0.counts.shape[1], cfg.dim).to(cfg.device)
    # the synthetic cohort keeps the earlier protocol: log1p of raw counts, linear-scale metrics
    tc = TrainConfig(steps=steps, lr=cfg.lr, seed=seed, target_sum=None)
    train(model, train_slides, tc, progress=False)
    return model


SYNTHETIC_RIDGES = {
    "ridge": "spot",
    "ridge + slide stats": "slide",
    "ridge multi-scale": "multiscale",
}
"""Closed-form references with the same information (row 4 judges HiST against them): ridge
on each spot's features, with the slide's feature statistics (what the tokens summarise), and
with neighbourhood means at two scales."""


def _ridge_runs(probes: dict[str, str], train_slides, test_slides, seeds: int) -> dict:
    """Each ridge probe (name -> context), fit on all but the last two training slides (which
    choose the penalty), scored on the test slides; one deterministic score repeated per seed."""
    fit_on, choose_on = train_slides[:-2] or train_slides, train_slides[-2:]
    out = {}
    for name, context in probes.items():
        probe = RidgeProbe(context)
        probe.target_sum = None
        probe.fit(fit_on, choose_on)
        pred = [np.clip(np.expm1(probe.predict_log1p(t)), 0, None) for t in test_slides]
        scores = [slide_metrics(p, t.counts) for p, t in zip(pred, test_slides, strict=True)]
        out[name] = [average(scores)] * seeds
    return out


def run_synthetic(cfg: DemoConfig) -> dict:
    world = SyntheticWorld()
    train_slides = make_cohort(cfg.train_slides, cfg.spots, seed=0, world=world)
    test_slides = make_cohort(cfg.test_slides, cfg.spots, seed=10_000, world=world)
    runs = {m: [] for m in MODELS}
    example = None
    bar = tqdm(total=len(MODELS) * cfg.seeds, desc="(a) synthetic")
    for s in range(cfg.seeds):
        for name in MODELS:
            model = _fit(name, train_slides, cfg.steps, cfg, cfg.seed + s)
            runs[name].append(evaluate(model, test_slides, scale="linear")["mean"])
            if name == "HiST" and s == 0:
                example = _example_map(model, test_slides[0])
            bar.update()
    bar.close()
    runs |= _ridge_runs(SYNTHETIC_RIDGES, train_slides, test_slides, cfg.seeds)
    summary = {m: _mean_std(r) for m, r in runs.items()}
    out = {
        "models": summary,
        "per_seed": runs,
        "example": example,
        "slides": {"train": cfg.train_slides, "test": cfg.test_slides, "spots": cfg.spots},
        "seeds": cfg.seeds,
    }
    if cfg.shift_variants:
        out["shift variants"] = {v: run_shift_variant(cfg, v) for v in SHIFT_VARIANTS}
    return out


SHIFT_VARIANTS = {
    "stain shift only": SyntheticWorld(stain_shift=1.0, biology_shift=0.0),
    "biology shift only": SyntheticWorld(stain_shift=0.0, biology_shift=1.0),
}
"""The batch shift split in two (:mod:`icml26.hist.synthetic`): in the features only, and in
the expression only."""


def run_shift_variant(cfg: DemoConfig, variant: str) -> dict:
    """HiST with and without tokens (same seeds and budget as the main cohort) and the ridge probe
    with and without slide statistics, on one shift variant's cohort."""
    world = SHIFT_VARIANTS[variant]
    train_slides = make_cohort(cfg.train_slides, cfg.spots, seed=0, world=world)
    test_slides = make_cohort(cfg.test_slides, cfg.spots, seed=10_000, world=world)
    runs = {m: [] for m in ("HiST", "HiST no tokens")}
    for s in tqdm(range(cfg.seeds), desc=f"(a) {variant}"):
        for name in runs:
            model = _fit(name, train_slides, cfg.steps, cfg, cfg.seed + s)
            runs[name].append(evaluate(model, test_slides, scale="linear")["mean"])
    runs |= _ridge_runs(
        {k: SYNTHETIC_RIDGES[k] for k in ("ridge", "ridge + slide stats")},
        train_slides,
        test_slides,
        cfg.seeds,
    )
    return {"models": {m: _mean_std(r) for m, r in runs.items()}, "per_seed": runs}


def _example_map(model, slide) -> dict:
    pred = predict(model, slide)
    g = int(np.argmax(slide.counts.var(0)))
    return {
        "gene": slide.genes[g],
        "xy": slide.xy.tolist(),
        "true": slide.counts[:, g].tolist(),
        "pred": pred[:, g].tolist(),
    }


def _mean_std(runs: list[dict]) -> dict:
    out = {}
    for k in runs[0]:
        v = np.array([r[k] for r in runs])
        out[k] = float(v.mean())
        out[f"{k} std"] = float(v.std())
    return out


HER2ST_MODELS = (*HER2ST_BASELINES, "HiST no tokens", "HiST")


_CLOSED_FORM = {
    "mean": lambda: MeanExpression(),
    "ridge": lambda: RidgeProbe("spot"),
    "ridge + neighbours": lambda: RidgeProbe("neighbours"),
    "ridge + slide stats": lambda: RidgeProbe("slide"),
    "ridge multi-scale": lambda: RidgeProbe("multiscale"),
}


def _group(section: str, split: str) -> str:
    """The fold a section belongs to: itself, or its patient (the letter of A1, B2, ...)."""
    return section if split == "section" else section[:1]


def _her2st_slides(cfg: DemoConfig) -> dict[str, Slide]:
    if cfg.her2st_data is None:
        return load_her2st_subset()
    out = {}
    for sec in tqdm(cfg.her2st_sections, desc="(b) reading HER2ST", leave=False):
        h = load_her2st(cfg.her2st_data, sec)
        out[sec] = Slide(sec, h.xy, featurise_patches(h.patches), h.counts, h.genes, h.spot_names)
    return out


def run_her2st(cfg: DemoConfig) -> dict:
    """Leave-one-section-out (or -patient-out) on HER2ST: per fold, gene panels from the
    training sections, one training section held back for validation (ridge penalties, early
    stopping), every model scored on the held-out group by per-gene Pearson of normalised log1p
    expression."""
    slides = _her2st_slides(cfg)
    # panels are drawn from genes every section measured (names only, no values), so a held-out
    # section never lacks a panel gene
    first = next(iter(slides.values()))
    shared = set.intersection(*(set(s.genes) for s in slides.values()))
    if any(len(s.genes) != len(shared) for s in slides.values()):
        common = [g for g in first.genes if g in shared]
        slides = {n: s.select_genes(common) for n, s in slides.items()}
    groups = list(dict.fromkeys(_group(n, cfg.her2st_split) for n in slides))
    folds = groups[: cfg.her2st_folds or len(groups)]
    neural = ("MLP", "kNN attention", "HiST no tokens", "HiST")
    per: dict[str, dict[str, list]] = {m: {} for m in HER2ST_MODELS}
    panels = {}
    grids: dict[str, dict] = {m: {} for m in neural}
    grid_size = len(cfg.her2st_lrs) * len(cfg.her2st_step_caps)
    bar = tqdm(total=len(folds) * len(neural) * (grid_size + cfg.seeds - 1), desc="(b) HER2ST")
    by_group = {
        g: [s for n, s in slides.items() if _group(n, cfg.her2st_split) == g] for g in groups
    }
    for held in folds:
        val = groups[(groups.index(held) + 1) % len(groups)]
        rest = [s for g in groups if g != held for s in by_group[g]]
        hvg = highly_variable_genes(rest, cfg.her2st_genes)
        heg = highly_expressed_genes(rest, cfg.her2st_genes)
        panel = list(dict.fromkeys(hvg + heg))
        panels[held] = {"validation": val, "hvg": hvg, "heg": heg}
        train_s = [
            s.select_genes(panel) for g in groups if g not in (held, val) for s in by_group[g]
        ]
        val_s = [s.select_genes(panel) for s in by_group[val]]
        test_s = [s.select_genes(panel) for s in by_group[held]]
        cols = {"hvg": [panel.index(g) for g in hvg], "heg": [panel.index(g) for g in heg]}

        for name, make in _CLOSED_FORM.items():
            est = make().fit(train_s, val_s)
            per[name][held] = [_score(est.predict_log1p, test_s, cols)] * cfg.seeds  # fixed
        for name in neural:
            per[name][held], grids[name][held] = _fit_her2st(
                name, cfg, train_s, val_s, lambda m, t=test_s, c=cols: _score(m, t, c), bar
            )
    bar.close()
    return {
        "folds": folds,
        "split": cfg.her2st_split,
        "panels": panels,
        "per_fold": per,
        "validation grid": grids,
        "models": _her2st_summary(per),
        "spots": {n: len(s) for n, s in slides.items()},
        "genes": cfg.her2st_genes,
        "seeds": cfg.seeds,
    }


def _fit_her2st(name: str, cfg: DemoConfig, train_s, val_s, score, bar) -> tuple[list, dict]:
    """One network on one fold: the (lr, step cap) grid trained with the first seed and scored
    on the validation section only (best early-stopped validation score); the best setting is
    kept for that seed and retrained with the other seeds. Returns the test scores per seed
    and the grid's validation scores."""
    grid, models = {}, {}
    for lr in cfg.her2st_lrs:
        for cap in cfg.her2st_step_caps:
            model, res = _train_her2st(name, cfg, train_s, val_s, lr, cap, cfg.seed)
            key = f"lr={lr:g} cap={cap}"
            grid[key] = max(v for _, v in res.validation)
            models[key] = (model, res, lr, cap)
            bar.update()
    best = max(grid, key=grid.get)
    model, res, lr, cap = models[best]
    runs = [_her2st_run(model, res, lr, cap, score)]
    for s in range(1, cfg.seeds):
        model, res = _train_her2st(name, cfg, train_s, val_s, lr, cap, cfg.seed + s)
        runs.append(_her2st_run(model, res, lr, cap, score))
        bar.update()
    return runs, {"validation": grid, "chosen": best}


def _train_her2st(name, cfg: DemoConfig, train_s, val_s, lr: float, cap: int, seed: int):
    torch.manual_seed(seed)
    model = _model(name, train_s[0].features.shape[1], len(train_s[0].genes), cfg.dim)
    tc = TrainConfig(steps=cap, lr=lr, seed=seed, eval_every=cfg.her2st_eval_every, target_sum=1e4)
    res = train(model.to(cfg.device), train_s, tc, progress=False, validation=val_s)
    return model, res


def _her2st_run(model, res, lr: float, cap: int, score) -> dict:
    out = score(lambda t: predict_log1p(model, t))
    return out | {"best_step": res.best_step, "lr": lr, "steps cap": cap}


def _score(predict_fn, test_slides: list[Slide], cols: dict[str, list[int]]) -> dict:
    """Per-gene Pearson on each panel (the genes of every held-out section in a row) and the
    MSE on the HVG panel, of normalised log1p expression; and the authors' metric: Pearson and
    R2 pooled over a slide's spots x HVG-panel genes on the expm1 (normalised count) scale,
    averaged over the held-out slides."""
    r: dict[str, list] = {k: [] for k in cols}
    mse, pooled = [], []
    for t in test_slides:
        pred, truth = predict_fn(t), t.expression(1e4)
        g = gene_pearsons(pred, truth)
        for k, c in cols.items():
            r[k] += g[c].tolist()
        mse.append(float(((pred - truth)[:, cols["hvg"]] ** 2).mean()))
        hvg = cols["hvg"]
        pooled.append(slide_metrics(np.expm1(pred[:, hvg]), np.expm1(truth[:, hvg])))
    return r | {
        "mse": float(np.mean(mse)),
        "pooled pcc": float(np.mean([p["pearson"] for p in pooled])),
        "pooled r2": float(np.mean([p["r2"] for p in pooled])),
    }


def _her2st_summary(per: dict) -> dict:
    """Per model: per-seed mean per-gene Pearson on each panel (mean over folds of the mean over
    the panel's genes), their mean and std; MSE and the pooled metrics on the HVG panel."""
    out = {}
    for name, folds in per.items():
        seeds = len(next(iter(folds.values())))
        row = {}
        for key in ("hvg", "heg", "mse", "pooled pcc", "pooled r2"):
            per_seed = [
                float(np.mean([np.mean(folds[f][s][key]) for f in folds])) for s in range(seeds)
            ]
            row[key] = float(np.mean(per_seed))
            row[f"{key} std"] = float(np.std(per_seed))
            row[f"{key} per seed"] = per_seed
        out[name] = row
    return out


def run_cost(cfg: DemoConfig) -> dict:
    fixed_area = [(n, cfg.cost_side) for n in cfg.cost_spots]
    fixed_spots = [(cfg.cost_spots[0], side) for side in cfg.cost_sides]
    bar = tqdm(total=len(fixed_area) + len(fixed_spots), desc="(c) cost")
    rows = {}
    for key, points in (("fixed area", fixed_area), ("fixed spots", fixed_spots)):
        rows[key] = cost.sweep(
            points,
            dim=cfg.dim,
            device=cfg.device,
            max_dense_sites=cfg.max_dense_sites,
            max_full_spots=cfg.max_full_spots,
            progress=lambda _row: bar.update(),
        )
    bar.close()
    return rows


def experiment(cfg: DemoConfig) -> dict:
    """Run the selected parts; return the raw measurements (no verdict, no files)."""
    cfg = cfg.resolved()
    cfg.validate()
    cfg = replace(cfg, device=resolve_device(cfg.device))  # every part runs on this one device
    results: dict = {"device": cfg.device}
    if "synthetic" in cfg.parts:
        results["synthetic"] = run_synthetic(cfg)
    if "her2st" in cfg.parts:
        results["her2st"] = run_her2st(cfg)
    if "cost" in cfg.parts:
        results["cost"] = run_cost(cfg)
    return results
