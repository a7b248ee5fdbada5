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

import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import scipy.stats as sps
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
from icml26.testing.report import demo_config, finish_demo, run_folder
from icml26.testing.results import (
    claim_row,
    control,
    judge,
    resolve_device,
)

PACKAGE = "icml26-hist"
MODELS = ("HiST", "HiST no tokens", "kNN attention", "MLP")
PARTS = ("synthetic", "her2st", "cost")

OUTCOME = {"better": "reproduced", "worse": "not reproduced", "tie": "inconclusive"}


@dataclass(frozen=True)
class DemoConfig:
    """HiST vs no-token HiST / kNN attention / MLP on synthetic and HER2ST slides, and its cost."""

    quick: bool = False
    """Tiny budgets: finishes in seconds (numbers are not meaningful)."""
    out: Path | None = None
    """Run folder (default runs/hist/<timestamp>)."""
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
    her2st_steps: int = 300
    """Most training steps per model and fold on HER2ST (early-stopped on the validation
    section, scored every ``her2st_eval_every`` steps)."""
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
    device: str = "auto"
    """auto (CUDA when present), cpu, cuda, cuda:N"""

    def resolved(self) -> DemoConfig:
        if not self.quick:
            return self
        return replace(
            self,
            seeds=1,
            dim=32,
            train_slides=4,
            test_slides=2,
            spots=256,
            steps=15,
            her2st_steps=8,
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
        if self.seeds < 1 or self.dim < 8 or self.steps < 1 or self.her2st_steps < 1:
            raise ValueError("seeds, steps and her2st_steps must be >= 1 and dim >= 8")
        if self.train_slides < 1 or self.test_slides < 1 or self.spots < 16:
            raise ValueError("need >= 1 train and test slide and >= 16 spots per slide")
        if self.her2st_folds < 0 or self.her2st_eval_every < 1 or self.her2st_genes < 2:
            raise ValueError("need her2st_folds >= 0, her2st_eval_every >= 1, her2st_genes >= 2")
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
    # Closed-form references with the same information (row 4 judges HiST against them): ridge
    # on each spot's features, and with the slide's feature statistics (what the tokens
    # summarise); fit on all but the last two training slides, which choose the penalty.
    fit_on, choose_on = train_slides[:-2] or train_slides, train_slides[-2:]
    for name, probe in (
        ("ridge", RidgeProbe("spot")),
        ("ridge + slide stats", RidgeProbe("slide")),
    ):
        probe.target_sum = None
        probe.fit(fit_on, choose_on)
        score = average(
            [
                slide_metrics(np.clip(np.expm1(probe.predict_log1p(t)), 0, None), t.counts)
                for t in test_slides
            ]
        )
        runs[name] = [score] * cfg.seeds
    summary = {m: _mean_std(r) for m, r in runs.items()}
    return {
        "models": summary,
        "per_seed": runs,
        "example": example,
        "slides": {"train": cfg.train_slides, "test": cfg.test_slides, "spots": cfg.spots},
        "seeds": cfg.seeds,
    }


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


HER2ST_BASELINES = (
    "mean",
    "ridge",
    "ridge + neighbours",
    "ridge + slide stats",
    "MLP",
    "kNN attention",
)
HER2ST_MODELS = (*HER2ST_BASELINES, "HiST no tokens", "HiST")
_CLOSED_FORM = {
    "mean": lambda: MeanExpression(),
    "ridge": lambda: RidgeProbe("spot"),
    "ridge + neighbours": lambda: RidgeProbe("neighbours"),
    "ridge + slide stats": lambda: RidgeProbe("slide"),
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
    bar = tqdm(total=len(folds) * len(neural) * cfg.seeds, desc="(b) HER2ST")
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
            per[name][held] = []
            for s in range(cfg.seeds):
                seed = cfg.seed + s
                torch.manual_seed(seed)
                model = _model(name, train_s[0].features.shape[1], len(panel), cfg.dim)
                res = train(
                    model.to(cfg.device),
                    train_s,
                    TrainConfig(
                        steps=cfg.her2st_steps,
                        lr=cfg.lr,
                        seed=seed,
                        eval_every=cfg.her2st_eval_every,
                        target_sum=1e4,
                    ),
                    progress=False,
                    validation=val_s,
                )
                out = _score(lambda t, m=model: predict_log1p(m, t), test_s, cols)
                per[name][held].append(out | {"best_step": res.best_step})
                bar.update()
    bar.close()
    return {
        "folds": folds,
        "split": cfg.her2st_split,
        "panels": panels,
        "per_fold": per,
        "models": _her2st_summary(per),
        "spots": {n: len(s) for n, s in slides.items()},
        "genes": cfg.her2st_genes,
        "seeds": cfg.seeds,
    }


def _score(predict_fn, test_slides: list[Slide], cols: dict[str, list[int]]) -> dict:
    """Per-gene Pearson on each panel (the genes of every held-out section in a row) and the
    MSE on the HVG panel, of normalised log1p expression."""
    r: dict[str, list] = {k: [] for k in cols}
    mse = []
    for t in test_slides:
        pred, truth = predict_fn(t), t.expression(1e4)
        g = gene_pearsons(pred, truth)
        for k, c in cols.items():
            r[k] += g[c].tolist()
        mse.append(float(((pred - truth)[:, cols["hvg"]] ** 2).mean()))
    return r | {"mse": float(np.mean(mse))}


def _her2st_summary(per: dict) -> dict:
    """Per model: per-seed mean per-gene Pearson on each panel (mean over folds of the mean over
    the panel's genes), their mean and std; MSE on the HVG panel."""
    out = {}
    for name, folds in per.items():
        seeds = len(next(iter(folds.values())))
        row = {}
        for key in ("hvg", "heg", "mse"):
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


def _growth(rows: list[dict], model: str) -> tuple[float | None, str]:
    """Peak-memory (else time) ratio between the largest measured and the smallest area."""
    ok = [r for r in rows if "skipped" not in r[model]]
    if len(ok) < 2:
        return None, "n/a"
    # memory where every point was measured and the smallest is above the probe's resolution
    mem = [r[model]["peak_mb"] for r in ok]
    key = "peak_mb" if all(m is not None for m in mem) and mem[0] > 0 else "seconds"
    return ok[-1][model][key] / ok[0][model][key], key


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


# ---- verdict: a pure function of the measurements, one row per claim ----

CLAIMS = {
    "tokens": "slide calibration tokens improve accuracy (HiST beats HiST without tokens)",
    "context": "sparse spatial context beats a per-spot model (HiST without tokens beats the MLP)",
    "local": "HiST beats a local-attention model (kNN attention, STFlow-like)",
    "strongest": "HiST beats the strongest baseline on the synthetic cohort, closed-form ridge "
    "probes with the same information included",
    "cost": "HiST's cost grows with the number of spots, not with the slide's area",
    "real": "HiST predicts held-out real sections more accurately than the strongest baseline "
    "(HER2ST)",
    "real_tokens": "slide calibration tokens improve accuracy on real sections (HiST vs HiST "
    "without tokens, HER2ST)",
    "cohorts": "HiST is more accurate than its baselines across patients and cohorts (the "
    "paper's cohorts and foundation-model features)",
}


def _compare(a: dict, b: dict, key: str = "pearson") -> str:
    """'better', 'tie' or 'worse': a's seed mean against b's, ties inside the summed seed stds."""
    diff, noise = a[key] - b[key], a[f"{key} std"] + b[f"{key} std"]
    return "better" if diff > noise else "worse" if diff < -noise else "tie"


def _ranking_row(claim: str, synthetic: dict | None, a: str, b: str) -> dict:
    if synthetic is None:
        return claim_row(claim, "untestable here", "not run (--parts without synthetic)")
    s, n = synthetic["models"], synthetic["seeds"]
    outcome = _compare(s[a], s[b])
    evidence = (
        f"pooled Pearson on {synthetic['slides']['test']} held-out synthetic slides, "
        f"mean ± std over {n} seed(s): {a} {s[a]['pearson']:.3f} ± {s[a]['pearson std']:.3f} vs "
        f"{b} {s[b]['pearson']:.3f} ± {s[b]['pearson std']:.3f} ({outcome}; per-gene Pearson "
        f"{s[a]['gene_pearson']:.3f} vs {s[b]['gene_pearson']:.3f})"
    )
    return claim_row(claim, OUTCOME[outcome], evidence)


SYNTHETIC_BASELINES = ("kNN attention", "MLP", "ridge", "ridge + slide stats")


def _strongest_synthetic(synthetic: dict) -> str:
    """The synthetic baseline with the highest seed-mean pooled Pearson (among those run)."""
    ran = [m for m in SYNTHETIC_BASELINES if m in synthetic["models"]]
    return max(ran, key=lambda m: synthetic["models"][m]["pearson"])


def _sides(rows: list[dict], model: str) -> str:
    ok = [r["side"] for r in rows if "skipped" not in r[model]]
    return f"{ok[0]}²-{ok[-1]}²" if ok else "none"


def _cost_row(cost_results: dict | None) -> dict:
    if cost_results is None:
        return claim_row(CLAIMS["cost"], "untestable here", "not run (--parts without cost)")
    rows = cost_results["fixed spots"]
    (h, hkey), (d, dkey) = _growth(rows, "HiST"), _growth(rows, "dense grid")
    if h is None or d is None:
        evidence = "fewer than two measured canvases for HiST or the dense grid"
        return claim_row(CLAIMS["cost"], "untestable here", evidence)
    what = {"peak_mb": "peak memory", "seconds": "time"}
    evidence = (
        f"{rows[0]['spots']} spots, growth over the area sweep: HiST {what[hkey]} {h:.2f}x "
        f"(canvas {_sides(rows, 'HiST')}), dense grid {what[dkey]} {d:.2f}x (canvas "
        f"{_sides(rows, 'dense grid')}); rule: HiST < 2x and dense grid > 4x"
    )
    return claim_row(
        CLAIMS["cost"], "reproduced" if h < 2 and d > 4 else "not reproduced", evidence
    )


def paired_margin(per: dict, a: str, b: str, panel: str = "hvg", resamples: int = 2000) -> dict:
    """``a`` minus ``b`` in mean per-gene Pearson on ``panel``, paired by fold, gene and seed.

    margin: mean over folds of the mean over genes of the seed-averaged difference;
    gene interval: 95% percentile bootstrap resampling genes within each fold (fixed seed, so
    the verdict stays a pure function); seed interval: 95% t-interval of the per-seed margins."""
    folds = list(per[a])
    seeds = len(per[a][folds[0]])
    diffs = [
        np.mean([np.asarray(per[a][f][s][panel]) - per[b][f][s][panel] for s in range(seeds)], 0)
        for f in folds
    ]
    margin = float(np.mean([d.mean() for d in diffs]))
    rng = np.random.default_rng(0)
    boots = [
        np.mean([d[rng.integers(len(d), size=len(d))].mean() for d in diffs])
        for _ in range(resamples)
    ]
    lo, hi = (float(v) for v in np.percentile(boots, [2.5, 97.5]))
    per_seed = [
        float(
            np.mean([np.mean(np.asarray(per[a][f][s][panel]) - per[b][f][s][panel]) for f in folds])
        )
        for s in range(seeds)
    ]
    if seeds > 1:
        half = float(sps.t.ppf(0.975, seeds - 1) * np.std(per_seed, ddof=1) / np.sqrt(seeds))
    else:
        half = 0.0
    m = float(np.mean(per_seed))
    return {
        "margin": margin,
        "gene interval": [lo, hi],
        "seed interval": [m - half, m + half],
        "per seed": per_seed,
    }


def _call(p: dict) -> str:
    """better / worse only when both the gene and the seed interval exclude zero; else a tie."""
    (glo, ghi), (slo, shi) = p["gene interval"], p["seed interval"]
    return "better" if glo > 0 and slo > 0 else "worse" if ghi < 0 and shi < 0 else "tie"


def _margin_text(p: dict) -> str:
    (glo, ghi), (slo, shi) = p["gene interval"], p["seed interval"]
    return (
        f"{p['margin']:+.3f} (genes 95% [{glo:+.3f}, {ghi:+.3f}], seeds 95% "
        f"[{slo:+.3f}, {shi:+.3f}])"
    )


def strongest_baseline(her2st: dict) -> str:
    """The baseline with the highest mean per-gene Pearson on the HVG panel (picked on the test
    folds themselves: a choice in the baselines' favour)."""
    return max(HER2ST_BASELINES, key=lambda m: her2st["models"][m]["hvg"])


def _her2st_setting(her2st: dict) -> str:
    within = (
        "within one patient: serial sections"
        if her2st["split"] == "section"
        else ("across patients")
    )
    return (
        f"leave one {her2st['split']} out ({within}), {len(her2st['folds'])} folds, "
        f"{her2st['seeds']} seeds, normalised log1p, {her2st['genes']} most variable genes "
        "chosen on each fold's training sections"
    )


def _real_row(her2st: dict | None) -> dict:
    if her2st is None:
        return claim_row(CLAIMS["real"], "untestable here", "not run (--parts without her2st)")
    base = strongest_baseline(her2st)
    p = paired_margin(her2st["per_fold"], "HiST", base)
    heg = paired_margin(her2st["per_fold"], "HiST", base, panel="heg")
    m = her2st["models"]
    call = _call(p)
    evidence = (
        f"{_her2st_setting(her2st)}: mean per-gene Pearson HiST {m['HiST']['hvg']:.3f} vs the "
        f"strongest baseline, {base}, {m[base]['hvg']:.3f}; margin {_margin_text(p)} ({call}); "
        f"on the {her2st['genes']} most expressed genes: margin {_margin_text(heg)}"
    )
    return claim_row(CLAIMS["real"], OUTCOME[call], evidence, [HER2ST_LEARNS])


def _real_tokens_row(her2st: dict | None) -> dict:
    if her2st is None:
        return claim_row(
            CLAIMS["real_tokens"], "untestable here", "not run (--parts without her2st)"
        )
    p = paired_margin(her2st["per_fold"], "HiST", "HiST no tokens")
    m = her2st["models"]
    call = _call(p)
    evidence = (
        f"{_her2st_setting(her2st)}: HiST {m['HiST']['hvg']:.3f} vs without tokens "
        f"{m['HiST no tokens']['hvg']:.3f}; margin {_margin_text(p)} ({call})"
    )
    return claim_row(CLAIMS["real_tokens"], OUTCOME[call], evidence, [HER2ST_LEARNS])


def _cohorts_row(her2st: dict | None) -> dict:
    evidence = (
        "the paper's cohorts and pathology foundation-model features are not available here; "
        "the bundled HER2ST sections are serial sections of one patient"
    )
    if her2st is not None and her2st["split"] == "patient":
        evidence += "; see the HER2ST row for this run's leave-one-patient-out numbers"
    return claim_row(CLAIMS["cohorts"], "untestable here", evidence)


HER2ST_LEARNS = "HiST predicts HER2ST expression better than the training mean (MSE)"


def her2st_control(her2st: dict | None) -> dict:
    """Positive control of the HER2ST rows: HiST's held-out MSE is below the mean predictor's
    on every seed, so its per-gene correlations are read off a model that learned something."""
    if her2st is None:
        return control(HER2ST_LEARNS, "positive", False, "HER2ST was not run")
    m = her2st["models"]
    hist, mean = m["HiST"]["mse per seed"], m["mean"]["mse per seed"]
    ok = all(h < b for h, b in zip(hist, mean, strict=True))
    return control(
        HER2ST_LEARNS, "positive", ok,
        f"normalised log1p MSE HiST {m['HiST']['mse']:.4f} vs the mean predictor "
        f"{m['mean']['mse']:.4f} (below it on {sum(h < b for h, b in zip(hist, mean, strict=True))}"
        f"/{len(hist)} seeds)",
    )  # fmt: skip


def verdict(results: dict) -> dict:
    """One row per claim from the measurements of :func:`experiment`, the HER2ST control,
    counts and the summary. A tie (inside the seeds' noise) is inconclusive."""
    synthetic = results.get("synthetic")
    claims = [
        _ranking_row(CLAIMS["tokens"], synthetic, "HiST", "HiST no tokens"),
        _ranking_row(CLAIMS["context"], synthetic, "HiST no tokens", "MLP"),
        _ranking_row(CLAIMS["local"], synthetic, "HiST", "kNN attention"),
        _ranking_row(
            CLAIMS["strongest"],
            synthetic,
            "HiST",
            _strongest_synthetic(synthetic) if synthetic else "",
        ),
        _cost_row(results.get("cost")),
        _real_row(results.get("her2st")),
        _real_tokens_row(results.get("her2st")),
        _cohorts_row(results.get("her2st")),
    ]
    if results.get("her2st") is None:  # untestable rows rest on nothing
        claims = [{**c, "controls": []} for c in claims]
    return judge(claims, [her2st_control(results.get("her2st"))])


# ---- run: experiment -> verdict -> results.json, figure, table ----


def run_demo(cfg: DemoConfig) -> dict:
    """Run the selected parts; write results.json and hist.png; return the results."""
    run_cfg = cfg.resolved()
    run_cfg.validate()
    out = run_folder(cfg.out, "hist")
    t0 = time.perf_counter()
    raw = experiment(run_cfg)
    measurements = {k: x for k, x in raw.items() if k in PARTS}
    if "synthetic" in raw:  # the example map is for the plot only
        measurements["synthetic"] = {k: x for k, x in raw["synthetic"].items() if k != "example"}
    results = finish_demo(
        out,
        package=PACKAGE,
        module_file=__file__,
        cfg=cfg,
        experiment="sparse hierarchical ST prediction: synthetic cohort, HER2ST LOSO, cost",
        claim="HiST's slide calibration tokens and sparse dyadic U-Net beat local and per-spot "
        "models, at a cost that grows with the number of spots, not the slide's area",
        headline=_headline(raw),
        judged=verdict(raw),
        metrics=_metrics(raw),
        seconds=time.perf_counter() - t0,
        config=demo_config(PACKAGE, cfg, recorded=run_cfg),
        seed=run_cfg.seed,
        device=raw["device"],
        data=_data_files(run_cfg, raw),
        measurements=measurements,
    )
    claims, v = results["claims"], results["verdict"]
    from icml26.hist.plots import plot_demo

    plot_demo(raw, out / "hist.png")
    print(_table(raw, claims, v, out))
    return results


def _data_files(cfg, raw: dict) -> dict[str, Path]:
    """The HER2ST files the run read: the bundled subset, or the original files of each section
    under ``--her2st-data`` (the synthetic cohort is generated)."""
    if "her2st" not in raw:
        return {}
    if cfg.her2st_data is None:
        from importlib import resources

        subset = resources.files("icml26.hist").joinpath("data/her2st_subset.npz")
        return {"her2st_subset.npz": Path(str(subset))}
    from icml26.hist.data import her2st_files

    out = {}
    for section in cfg.her2st_sections:
        for path in her2st_files(cfg.her2st_data, section).values():
            out[Path(path).name] = path
    return out


def _headline(raw: dict) -> str:
    parts = []
    if "synthetic" in raw:
        p = {m: s["pearson"] for m, s in raw["synthetic"]["models"].items()}
        parts.append(
            f"synthetic pooled Pearson HiST {p['HiST']:.3f} vs {p['HiST no tokens']:.3f} without "
            f"tokens, {p['kNN attention']:.3f} kNN, {p['MLP']:.3f} MLP"
        )
    if "cost" in raw:
        rows = raw["cost"]["fixed spots"]
        (h, key), (d, _) = _growth(rows, "HiST"), _growth(rows, "dense grid")
        if h is not None and d is not None:
            what = "peak memory" if key == "peak_mb" else "time"
            parts.append(f"{what} as the canvas grows: HiST {h:.2f}x, dense grid {d:.1f}x")
        else:
            parts.append("cost: fewer than two measured canvases")
    if "her2st" in raw:
        h = raw["her2st"]["models"]
        base = strongest_baseline(raw["her2st"])
        parts.append(
            f"HER2ST per-gene Pearson (normalised log1p, HVG panel) HiST {h['HiST']['hvg']:.3f} "
            f"vs strongest baseline {base} {h[base]['hvg']:.3f}"
        )
    return "; ".join(parts)


def _metrics(results: dict) -> dict:
    m: dict = {}
    if "synthetic" in results:
        s = results["synthetic"]["models"]
        pick = lambda d: {k: d[k] for k in ("pearson", "r2", "gene_pearson")}  # noqa: E731
        m["method"] = pick(s["HiST"])
        m["baseline"] = pick(s["MLP"])
        m["ablation (no tokens)"] = pick(s["HiST no tokens"])
        m["kNN attention"] = pick(s["kNN attention"])
        m["ridge"] = pick(s["ridge"])
        m["ridge + slide stats"] = pick(s["ridge + slide stats"])
    if "her2st" in results:
        h = results["her2st"]["models"]
        base = strongest_baseline(results["her2st"])
        for group, name in (("method", "HiST"), ("baseline", base)):
            for key in ("hvg", "heg", "mse"):
                m.setdefault(group, {})[f"her2st {key}"] = h[name][key]
        for name in HER2ST_MODELS:
            m[f"her2st {name}"] = {k: h[name][k] for k in ("hvg", "hvg std", "heg", "mse")}
    if "cost" in results:
        for model in ("HiST", "dense grid"):
            g, key = _growth(results["cost"]["fixed spots"], model)
            group = "method" if model == "HiST" else "dense grid"
            m.setdefault(group, {})[f"{key} growth over area sweep"] = g
        m.setdefault("baseline", {})
    return m


def _table(raw: dict, claims: list[dict], v: str, out: Path) -> str:
    lines = []
    if "synthetic" in raw:
        lines.append("(a) synthetic held-out slides (mean ± std over seeds)")
        lines.append(f"{'model':<20} {'Pearson':>16} {'R2':>16} {'gene Pearson':>16}")
        for name, s in raw["synthetic"]["models"].items():
            cells = " ".join(
                f"{s[k]:>8.3f} ± {s[k + ' std']:.3f}" for k in ("pearson", "r2", "gene_pearson")
            )
            lines.append(f"{name:<20} {cells}")
    if "her2st" in raw:
        h = raw["her2st"]
        lines.append(
            f"(b) HER2ST, leave one {h['split']} out: mean per-gene Pearson of normalised log1p "
            "(± seed std), MSE on the HVG panel"
        )
        lines.append(f"{'model':<20} {'HVG':>16} {'HEG':>16} {'MSE':>8}")
        for name, s in h["models"].items():
            lines.append(
                f"{name:<20} {s['hvg']:>8.3f} ± {s['hvg std']:.3f} "
                f"{s['heg']:>8.3f} ± {s['heg std']:.3f} {s['mse']:>8.4f}"
            )
    if "cost" in raw:
        for key, rows in raw["cost"].items():
            lines.append(f"(c) cost, {key}: forward + backward, seconds / peak MB")
            lines.append(cost.format_rows(rows))
    lines.append("claims:")
    lines += [f"  {r['verdict']:<15} {r['claim']}\n  {'':<15} {r['evidence']}" for r in claims]
    lines.append(f"verdict: {v}")
    lines.append(f"wrote {out / 'results.json'} and {out / 'hist.png'}")
    return "\n".join(lines)
