"""``icml26-lipopu demo``: the SCAR study on the SLiPP pocket table, and a case study on 1a28.

Per seed (a split by PDB entry and a SCAR label draw) and labeled fraction c of the training lipid
pockets (everything else unlabeled):
(a) the attention-MIL model trained with BCE (unlabeled as negative), nnPU, PU-AUC and the LipoPU
    objective, one training configuration for all; the class prior the PU risks need is
    *estimated* from the PU data (Elkan & Noto on a PU-naive gradient-boosting classifier), never
    read from hidden labels; and the supervised scikit-learn baselines of ``baselines``, each
    tuned on validation PU-AUROC. AUROC / AUPRC / precision at recall 0.5 on the test pockets'
    true labels, also without test pockets whose composition twins a training pocket.
(b) at c = ``ablation_c``: LipoPU without its non-negative correction, with mean pooling instead
    of gated attention, and without the residue bag; nnPU and LipoPU at the true prior x0.5 / x1
    / x2; multi-label (sterol, fatty acyl) LipoPU against multi-label BCE.
(c) case study: the seed-0 models rank the fpocket-rs pockets of 1a28 (progesterone receptor with
    its steroid, from ``mdanalysistests``) against fpocket's score, the best single descriptor and
    SLiPP's forest.
Without the SLiPP table the study runs on ``synthetic_cohort`` and says so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from icml26.lipopu.baselines import (
    BASELINES,
    composition_features,
    estimate_prior,
    fit_baseline,
)
from icml26.lipopu.data import (
    CATEGORIES,
    DESCRIPTORS,
    PocketTable,
    Standardiser,
    composition_twins,
    find_slipp,
    grouped_split,
    load_slipp,
    scar_labels,
    synthetic_cohort,
)
from icml26.lipopu.metrics import ranking_metrics
from icml26.lipopu.model import PocketAttentionMIL, PocketModelConfig
from icml26.lipopu.train import CompositionBags, TrainConfig, fit, predict_scores
from icml26.testing.command import DemoOptions
from icml26.testing.results import (
    resolve_device,
)

OBJECTIVES = ("bce", "nnpu", "pu_auc", "lipopu")


SURROGATE = {"bce": None, "nnpu": "logistic", "pu_auc": "sigmoid", "lipopu": "logistic"}
"""Each objective's surrogate loss, fixed for every run. PU-AUC keeps Sakai et al.'s symmetric
sigmoid (rank-consistent without a prior); LipoPU is defined with the logistic loss (with the
sigmoid it reduces to PU-AUC); nnPU takes the logistic loss: with Kiryo et al.'s sigmoid it stalls
at this prior (a pilot on seed 0, c = 0.5: validation PU-AUROC 0.65 against 0.95)."""


EXAMPLE_STRUCTURES = ("1a28.pdb.gz", "1hvr.pdb", "4E43.pdb", "adk_closed.pdb", "1osm.pdb.gz",
                      "19hc.pdb.gz")  # fmt: skip
"""mdanalysistests structures whose fpocket-rs pockets set the SASA rescaling."""


ABLATIONS = ("lipopu (no correction)", "lipopu (mean pooling)", "lipopu (descriptors only)")


@dataclass(frozen=True)
class DemoConfig(DemoOptions):
    """The LipoPU study: SCAR label fractions x objectives x seeds, ablations, a case study.

    ``--quick``: smoke run: 400 proteins, one seed, c = 0.5, 2 epochs."""

    slipp: Path | None = None
    """SLiPP's training_pockets.csv (default: $LIPOPU_SLIPP, written into the recorded command);
    without either the synthetic cohort is used."""
    seeds: int = 5
    """Seeds: each a split by PDB entry and a SCAR label draw."""
    label_fractions: tuple[float, ...] = (1.0, 0.5, 0.25)
    """c: the fraction of training lipid pockets that keep their label."""
    ablation_c: float = 0.5
    """c of the ablations, prior-sensitivity and multi-label runs."""
    prior_factors: tuple[float, ...] = (0.5, 2.0)
    """Misspecified priors: the true training prior times these (x1 is always run)."""
    epochs: int = 40
    """Most epochs of a MIL run (early stopping on validation PU-AUROC ends most sooner)."""
    patience: int = 6
    lrs: tuple[float, ...] = (1e-3, 2e-3, 5e-3)
    """The learning-rate grid every MIL objective and ablation is tuned on (validation
    PU-AUROC, per seed and c); the prior runs take their objective's chosen rate (they are
    compared with each other), the multi-label runs the middle one. ``--quick`` runs the middle
    one only."""
    structure: Path | None = None
    """Case-study structure (default: 1a28 from mdanalysistests, when installed)."""
    ligand: str = "STR"
    """The case-study ligand's residue name (STR: progesterone in 1a28)."""

    def check(self) -> None:
        """ValueError naming the flag when a setting is out of range (run before any work)."""
        if self.seeds < 2 and not self.quick:
            raise ValueError(f"--seeds must be >= 2 (an interval needs two), got {self.seeds}")
        if not self.label_fractions or any(not 0 < c <= 1 for c in self.label_fractions):
            raise ValueError(f"--label-fractions must lie in (0, 1], got {self.label_fractions}")
        if len(set(self.label_fractions)) != len(self.label_fractions):
            raise ValueError(f"--label-fractions has repeats: {self.label_fractions}")
        if self.ablation_c not in self.label_fractions:
            raise ValueError(f"--ablation-c {self.ablation_c} must be one of --label-fractions")
        if not self.prior_factors or any(f <= 0 or f == 1 for f in self.prior_factors):
            raise ValueError(f"--prior-factors must be > 0 and != 1, got {self.prior_factors}")
        if self.epochs < 1 or self.patience < 1:
            raise ValueError("--epochs and --patience must be >= 1")
        if not self.lrs or any(not lr > 0 for lr in self.lrs):
            raise ValueError(f"--lrs must be one or more rates > 0, got {self.lrs}")

    @property
    def grid(self) -> tuple[float, ...]:
        """The learning rates a run tunes over (the middle one under ``--quick``)."""
        return (self.lrs[len(self.lrs) // 2],) if self.quick else self.lrs

    def with_data(self) -> DemoConfig:
        """The config with ``$LIPOPU_SLIPP`` written into ``slipp``, so the recorded command
        names the file the run read."""
        return self if self.slipp is not None else replace(self, slipp=find_slipp())

    @property
    def fractions(self) -> tuple[float, ...]:
        return (self.ablation_c,) if self.quick else self.label_fractions


# --- the experiment -------------------------------------------------------------------------------


def _load_table(cfg: DemoConfig) -> PocketTable:
    path = cfg.with_data().slipp
    table = load_slipp(path) if path is not None else synthetic_cohort(seed=0)
    if cfg.quick:  # a subset of proteins keeps the smoke run short
        keep = np.random.default_rng(0).permutation(np.unique(table.protein))[:400]
        table = table.subset(np.flatnonzero(np.isin(table.protein, keep)))
    return table


def _tuned_run(arm, X, bags, observed, split, cfg, seed, device, prior, **kw):
    """``_mil_run`` at every rate of ``cfg.grid``; the one with the best validation PU-AUROC
    (the only criterion a PU user has), with every rate's score in its record."""
    tried = [_mil_run(arm, X, bags, observed, split, cfg, seed, device, prior, lr=lr, **kw)
             for lr in cfg.grid]  # fmt: skip
    model, scores, record = max(tried, key=lambda t: np.nan_to_num(t[2]["val_pu_auroc"], nan=-1))
    record["grid"] = {f"{t[2]['lr']:g}": t[2]["val_pu_auroc"] for t in tried}
    record["seconds"] = sum(t[2]["seconds"] for t in tried)
    return model, scores, record


def _mil_run(
    arm, X, bags, observed, split, cfg, seed, device, prior, beta=0.0, lr=None, **model_kw
):
    """Train one MIL arm; return the model, its test-pocket scores and a record."""
    t0 = time.perf_counter()
    torch.manual_seed(seed)  # every arm of a seed starts from the same initial weights
    n_out = observed.shape[1] if observed.ndim == 2 else 1
    config = PocketModelConfig(n_descriptors=len(DESCRIPTORS), n_outputs=n_out, **model_kw)
    model = PocketAttentionMIL(config).to(device)
    lr = cfg.grid[len(cfg.grid) // 2] if lr is None else lr
    tcfg = TrainConfig(objective=arm, epochs=cfg.epochs, patience=cfg.patience, seed=seed,
                       surrogate=SURROGATE[arm], beta=beta, lr=lr)  # fmt: skip
    result = fit(model, X, bags, observed, split.train, split.val, tcfg, prior=prior)
    scores = predict_scores(model, X, bags, split.test)
    fired = [h["corrected_share"] for h in result.history if "corrected_share" in h]
    record = {"best_epoch": result.best_epoch, "val_pu_auroc": result.best_val,
              "epochs_run": len(result.history), "seconds": time.perf_counter() - t0,
              "surrogate": SURROGATE[arm] or "logistic", "prior": prior, "lr": lr,
              "corrected_share": float(np.mean(fired)) if fired else None}  # fmt: skip
    return model, scores, record


def _baseline_inputs(table: PocketTable, std: Standardiser) -> dict[str, np.ndarray]:
    both = np.concatenate([std(table.descriptors), composition_features(table.composition)], 1)
    return {"slipp_forest": table.descriptors, "best_descriptor": table.descriptors,
            "random_forest": both, "logistic": both, "gradient_boosting": both}  # fmt: skip


def _estimated_prior(inputs, observed, split, seed) -> tuple[float, dict]:
    """Elkan-Noto prior from a PU-naive gradient-boosting classifier (``estimate_prior``), its
    probabilities on the validation pockets' observed labels."""
    prior, c = estimate_prior(inputs, observed, split.train, split.val, seed)
    return prior, {"labeled_share": float(observed[split.train].mean()), "c_hat": c}


def _seed_study(table, cfg, seed, device, bar, keep_models: bool) -> tuple[list, list, dict]:
    split = grouped_split(table.protein, seed)
    std = Standardiser.fit(table.descriptors[split.train])
    X = std(table.descriptors)
    bags = CompositionBags(table.composition)
    y_test, prot_test = table.lipid[split.test], table.protein[split.test]
    twins = composition_twins(table.composition, split.train, split.test)
    true_prior = float(table.lipid[split.train].mean())
    inputs = _baseline_inputs(table, std)
    runs, multilabel, models = [], [], {}

    def record(c, arm, scores, extra):
        m = ranking_metrics(y_test, scores, prot_test)
        m_twinless = ranking_metrics(y_test[~twins], scores[~twins])
        runs.append({"seed": seed, "c": c, "arm": arm, "metrics": m,
                     "metrics_without_twins": m_twinless, **extra})  # fmt: skip
        bar.update()

    for c in cfg.fractions:
        observed = scar_labels(table.lipid, c, seed=10_000 + seed)
        chosen_lr = {}
        prior, estimate = _estimated_prior(inputs["gradient_boosting"], observed, split, seed)
        for arm in OBJECTIVES:
            model, s, rec = _tuned_run(arm, X, bags, observed, split, cfg, seed, device, prior)
            record(c, arm, s[:, 0], {**rec, "prior_estimate": estimate, "true_prior": true_prior})
            chosen_lr[arm] = rec["lr"]
            if keep_models and c == max(cfg.fractions):
                models[arm] = model
        for name in BASELINES:
            t0 = time.perf_counter()
            b = fit_baseline(name, inputs[name], observed, split.train, split.val, split.test, seed)
            extra = {"val_pu_auroc": b.val_pu_auroc, "params": b.params,
                     "seconds": time.perf_counter() - t0}  # fmt: skip
            if name == "slipp_forest" and c == 1.0:
                # SLiPP reports accuracy 96.8% and F1 86.9% (threshold 0.5, pocket-level test)
                extra["at_threshold_0.5"] = _thresholded(y_test, b.scores)
            record(c, name, b.scores, extra)
            kept = ("slipp_forest", "best_descriptor")
            if keep_models and c == max(cfg.fractions) and name in kept:
                models[name] = b
        if c != cfg.ablation_c:
            continue
        lipo = {"lipopu (no correction)": {"beta": float("inf")},
                "lipopu (mean pooling)": {"pooling": "mean"},
                "lipopu (descriptors only)": {"use_bag": False}}  # fmt: skip
        for name, kw in lipo.items():  # each ablated model tuned like the full one
            _, s, rec = _tuned_run("lipopu", X, bags, observed, split, cfg, seed, device, prior,
                                   **kw)  # fmt: skip
            record(c, name, s[:, 0], rec)
        for arm in ("nnpu", "lipopu"):
            for factor in (1.0, *cfg.prior_factors):
                p = min(true_prior * factor, 0.95)
                _, s, rec = _mil_run(arm, X, bags, observed, split, cfg, seed, device, p,
                                     lr=chosen_lr[arm])  # fmt: skip
                record(c, f"{arm} (true prior x{factor:g})", s[:, 0], rec)
        observed_k = scar_labels(table.category, c, seed=20_000 + seed)
        priors_k = [
            _estimated_prior(inputs["gradient_boosting"], observed_k[:, k], split, seed)[0]
            for k in range(len(CATEGORIES))
        ]
        for arm in ("bce", "lipopu"):
            model, s, rec = _mil_run(arm, X, bags, observed_k, split, cfg, seed, device, priors_k)
            multilabel.append({"seed": seed, "c": c, "arm": arm, **rec,
                               **_multilabel_metrics(table, split.test, s)})  # fmt: skip
            if keep_models and arm == "lipopu":
                models["multilabel lipopu"] = model
            bar.update()
    case = {"std": std, "models": models} if keep_models else {}
    return runs, multilabel, case


def _thresholded(y: np.ndarray, probability: np.ndarray) -> dict[str, float]:
    from sklearn.metrics import accuracy_score, f1_score

    pred = (probability >= 0.5).astype(int)
    return {"accuracy": float(accuracy_score(y, pred)), "f1": float(f1_score(y, pred))}


def _multilabel_metrics(table: PocketTable, test: np.ndarray, scores: np.ndarray) -> dict:
    """Per category: the ranking of its pockets among all test pockets; and among the test lipid
    pockets, how well f_sterol - f_fatty_acyl separates sterols from fatty acyls."""
    out = {}
    for k, cat in enumerate(CATEGORIES):
        y = table.category[test, k]
        out[cat] = ranking_metrics(y, scores[:, k]) if 0 < y.sum() < len(y) else None
    lipid = table.lipid[test] == 1
    y = table.category[test][lipid, 0]
    margin = scores[lipid, 0] - scores[lipid, 1]
    out["sterol_vs_fatty_acyl_auroc"] = (
        ranking_metrics(y, margin)["auroc"] if 0 < y.sum() < len(y) else None
    )
    return out


def _example_structures() -> list[Path]:
    try:
        import MDAnalysisTests
    except ImportError:
        return []
    folder = Path(MDAnalysisTests.__file__).parent / "data"
    return [folder / n for n in EXAMPLE_STRUCTURES if (folder / n).is_file()]


def _case_study(cfg: DemoConfig, table: PocketTable, case: dict) -> dict:
    """Rank the case-study structure's pockets with the seed-0 models of the largest c."""
    from icml26.lipopu.predict import score_pockets
    from icml26.lipopu.structure import (
        DescriptorMap,
        descriptor_rows,
        ligand_overlap,
        pockets,
        read_structure,
    )

    examples = _example_structures()
    path = cfg.structure or next((p for p in examples if p.name.startswith("1a28")), None)
    if path is None:
        return {"skipped": "no case-study structure: install icml26-lipopu[examples] or pass "
                "--structure"}  # fmt: skip
    if table.source == "synthetic cohort":
        return {"skipped": "a model trained on the synthetic cohort says nothing about a real "
                "structure"}  # fmt: skip
    found_all = [pockets(p) for p in examples] or [pockets(path)]
    dmap = DescriptorMap.fit(np.concatenate([descriptor_rows(f) for f in found_all]),
                             table.descriptors)  # fmt: skip
    atoms = read_structure(path)
    found = pockets(atoms)
    overlap = ligand_overlap(path, found, cfg.ligand)
    site = overlap >= 0.5
    rankings, preds = {}, {}
    for arm in (*OBJECTIVES, "multilabel lipopu"):
        if arm not in case["models"]:
            continue
        preds[arm] = score_pockets(case["models"][arm], case["std"], dmap, atoms, found)
        rankings[arm] = np.array([float(p.score[0]) for p in preds[arm]])
    if "multilabel lipopu" in rankings:
        rankings["multilabel lipopu (sterol)"] = rankings.pop("multilabel lipopu")
    X = dmap(descriptor_rows(found))
    X = np.where(np.isnan(X), np.median(table.descriptors, axis=0), X)  # flex without B-factors
    forest = case["models"]["slipp_forest"]
    rankings["slipp_forest"] = forest.model.predict_proba(X)[:, 1]
    col, sign = case["models"]["best_descriptor"].params.values()
    rankings[f"best descriptor ({DESCRIPTORS[col]})"] = sign * X[:, col]
    rankings["fpocket score"] = np.array([p.score for p in found])

    def first_site_rank(scores):
        order = np.argsort(-scores, kind="stable")
        return int(np.flatnonzero(site[order])[0]) + 1 if site.any() else None

    top = int(np.argmax(rankings["lipopu"]))
    best = preds["lipopu"][top]
    return {
        "structure": path.name,
        "ligand": cfg.ligand,
        "pockets": len(found),
        "ligand_pockets": [int(i) + 1 for i in np.flatnonzero(site)],
        "overlap": [round(float(v), 3) for v in overlap],
        "site_rank": {k: first_site_rank(v) for k, v in rankings.items()},
        "scores": {k: [float(x) for x in v] for k, v in rankings.items()},
        "top_pocket": {
            "fpocket_rank": found[top].rank,
            "overlap": float(overlap[top]),
            "residues": best.residues,
            "attention": [float(a) for a in best.attention],
            # composition-trained attention can only weigh residue *types*: report it per type
            "attention_by_type": best.attention_by_type(),
        },
        "descriptor_map": dmap.state(),
        "example_structures": [p.name for p in examples],
    }


def experiment(cfg: DemoConfig) -> dict:
    """Run the study; returns the raw measurements (no verdict, no files)."""
    cfg.check()
    device = resolve_device(cfg.device)
    if cfg.quick:
        cfg = replace(cfg, seeds=1, epochs=2, patience=2)
    table = _load_table(cfg)
    per_seed = len(cfg.fractions) * (len(OBJECTIVES) + len(BASELINES)) + len(ABLATIONS)
    per_seed += 2 * (1 + len(cfg.prior_factors)) + 2
    runs, multilabel, case = [], [], {}
    with tqdm(total=cfg.seeds * per_seed, desc="runs", disable=cfg.quick) as bar:
        for seed in range(cfg.seeds):
            r, m, c = _seed_study(table, cfg, seed, device, bar, keep_models=seed == 0)
            runs += r
            multilabel += m
            case = case or c
    return {
        "data": {
            "source": table.source,
            "pockets": len(table),
            "proteins": len(np.unique(table.protein)),
            "lipid_share": float(table.lipid.mean()),
            "categories": {
                cat: int(table.category[:, k].sum()) for k, cat in enumerate(CATEGORIES)
            },
        },
        "fractions": list(cfg.fractions),
        "ablation_c": cfg.ablation_c,
        "prior_factors": list(cfg.prior_factors),
        "seeds": cfg.seeds,
        "runs": runs,
        "multilabel": multilabel,
        "case_study": _case_study(cfg, table, case) if case else {"skipped": "no model"},
        "device": device,
    }
