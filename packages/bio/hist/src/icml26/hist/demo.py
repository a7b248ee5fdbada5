"""``icml26-hist demo`` (a hierarchical sparse transformer from H&E spot features to spatial
transcriptomics): runs ``study.experiment``, judges it with ``verdict``, writes results.json
through ``icml26.testing.report``."""

from __future__ import annotations

import time
from pathlib import Path

from icml26.hist import cost
from icml26.hist.study import HER2ST_MODELS, PARTS, DemoConfig, experiment
from icml26.hist.verdict import _growth, strongest_baseline, verdict
from icml26.testing.report import demo_config, finish_demo, run_folder

PACKAGE = "icml26-hist"


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
        m["ridge multi-scale"] = pick(s["ridge multi-scale"])
    if "her2st" in results:
        h = results["her2st"]["models"]
        base = strongest_baseline(results["her2st"])
        for group, name in (("method", "HiST"), ("baseline", base)):
            for key in ("hvg", "heg", "mse"):
                m.setdefault(group, {})[f"her2st {key}"] = h[name][key]
        for name in HER2ST_MODELS:
            keys = ("hvg", "hvg std", "heg", "mse", "pooled pcc", "pooled r2")
            m[f"her2st {name}"] = {k: h[name][k] for k in keys}
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
