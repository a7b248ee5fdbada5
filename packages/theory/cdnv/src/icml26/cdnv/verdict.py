"""directional CDNV, its few-shot bound, and tools to watch them during training: the claim rules.
``verdict(results)`` judges ``study.experiment``'s numbers, one row per claim with its controls
and margin (pure; tested on a null world)."""

import math

import numpy as np
from scipy import stats as sps

from icml26.testing.results import (
    claim_row,
    compare,
    control,
    judge,
    summarise,
)

# -- verdict ---------------------------------------------------------------------------------

CLAIMS = {
    "collapse": "(a) SSL features show directional collapse on unseen classes: during "
    "pretraining V~ falls relative to V (V~ / V and V~ d_eff / V both fall from the random "
    "encoder, its null) and V~ d_eff / V ends below 1 (classes spread evenly over the directions "
    "they use)",
    "holds": "(b) the m-shot NCC error bound through V~ holds (the authors' formula)",
    "tracks": "(b) the bound closely tracks the few-shot NCC error (the authors' formula)",
    "explains": "(b) few-shot error on unseen classes follows V~ more closely than V",
    "orthogonal": "(c) SSL learns nearly orthogonal decision axes for independent tasks: more "
    "orthogonal than unrelated random directions",
}

RATIO = "V~ d_eff / V"
"""The collapse measure: directional CDNV over its null for classes spread evenly over the
directions they use (``effective_collapse_ratio``), comparable across feature widths."""

ORACLE = "LDA on held-out classes"
"""The near-perfect reference for transfer: the held-out classes' own discriminant axes
(``oracle_lda``). Not a reference for collapse: LDA whitens the within-class scatter, so its
``V~ d_eff / V`` sits near 1 by construction."""


def interval(values) -> tuple[float, float, float]:
    """Mean and 95% t-interval over seeds (the interval is the mean itself for one value)."""
    v = np.asarray(values, dtype=float)
    m = float(v.mean())
    if len(v) < 2:
        return m, m, m
    h = float(sps.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))
    return m, m - h, m + h


def _fmt(ci: tuple[float, float, float], spec: str = ".3f") -> str:
    m, lo, hi = ci
    return format(m, spec) if lo == hi else f"{m:{spec}} [{lo:{spec}}, {hi:{spec}}]"


def _by_count(ok: int, n: int) -> str:
    """All cases pass: reproduced; none: not reproduced; some: partly."""
    return "reproduced" if ok == n else "not reproduced" if ok == 0 else "partly"


def _mean_error(r: dict, dataset: str, encoder: str) -> float:
    """All-way 5-shot error on the held-out classes, mean over seeds (NaN when not measured)."""
    rows = [_five_shot(x, "error") for x in r["runs"] + r["nulls"]
            if x["dataset"] == dataset and x["encoder"] == encoder]  # fmt: skip
    return float(np.mean(rows)) if rows else math.nan


def transfer_gain(r: dict, dataset: str, encoder: str) -> tuple[float, float, float]:
    """Raw pixels' all-way 5-shot error minus the encoder's, paired by seed (the same held-out
    classes and episodes): mean and 95% t-interval over seeds (NaN when not measured)."""
    by_seed = {}
    for x in r["runs"] + r["nulls"]:
        if x["dataset"] == dataset and x["encoder"] in (encoder, "raw pixels"):
            by_seed.setdefault(x["seed"], {})[x["encoder"]] = _five_shot(x, "error")
    gains = [e["raw pixels"] - e[encoder] for e in by_seed.values() if len(e) == 2]
    return interval(gains) if gains else (math.nan, math.nan, math.nan)


def transfers(r: dict, dataset: str, encoder: str) -> bool:
    """The positive control of one (dataset, encoder) cell: the encoder's held-out 5-shot error
    is below the raw pixels', the 95% interval of the paired gain over seeds above 0 (a mean
    gain inside the seed noise does not establish the regime)."""
    return transfer_gain(r, dataset, encoder)[1] > 0


def _cells(r: dict):
    """(dataset, objective, runs) of the SSL cells whose features transfer; the rest are listed
    as not judged by the rows that use them."""
    for d in r["datasets"]:
        for o in r["objectives"]:
            if transfers(r, d, o):
                yield d, o, [x for x in r["runs"] if x["dataset"] == d and x["encoder"] == o]


def _unjudged(r: dict) -> str:
    skipped = [f"{d}/{o}" for d in r["datasets"] for o in r["objectives"]
               if not transfers(r, d, o)]  # fmt: skip
    return (f" Not judged (transfer not better than raw pixels): {', '.join(skipped)}."
            if skipped else "")  # fmt: skip


def _by_cells(ok: int, n: int) -> str:
    """No cell to judge: untestable here; otherwise as ``_by_count``."""
    return "untestable here" if n == 0 else _by_count(ok, n)


def _ratio_of(r: dict, d: str, encoder: str) -> tuple[float, float, float]:
    return interval([x[RATIO] for x in r["nulls"] + r["runs"]
                     if x["dataset"] == d and x["encoder"] == encoder])  # fmt: skip


def _log_change(runs: list, value) -> tuple[float, float, float]:
    """Paired log change of ``value(dynamics entry)`` from initialisation to the end, over seeds."""
    return interval([math.log(value(x["dynamics"][-1]) / value(x["dynamics"][0])) for x in runs])


def _relative(e: dict) -> float:
    return e["V~"] / e["V"]


def _falls(change: tuple[float, float, float]) -> str:
    """A paired log change whose interval lies below 0 (reproduced), above it (not reproduced)
    or across it (a tie: inconclusive)."""
    return compare(-change[2], -change[1])


def _collapse_cell(ratio, rel, end_mean: float) -> str:
    """Both measures fall and the ratio ends below 1: reproduced; either rises, or the ratio ends
    at or above 1: not reproduced; otherwise (a tie in either): inconclusive."""
    parts = [_falls(ratio), _falls(rel), "reproduced" if end_mean < 1 else "not reproduced"]
    if "not reproduced" in parts:
        return "not reproduced"
    return "reproduced" if all(v == "reproduced" for v in parts) else "inconclusive"


def _collapse_row(r: dict) -> dict:
    parts, cells = [], []
    for d, o, runs in _cells(r):
        start = [x["dynamics"][0][RATIO] for x in runs]
        end_ci = interval([x["dynamics"][-1][RATIO] for x in runs])
        ratio, rel = _log_change(runs, lambda e: e[RATIO]), _log_change(runs, _relative)
        d_eff = _log_change(runs, lambda e: e["d_eff"])
        cells.append(_collapse_cell(ratio, rel, end_ci[0]))
        parts.append(
            f"{d}/{o} {_fmt(interval(start))} -> {_fmt(end_ci)} (x{math.exp(ratio[0]):.2f}; "
            f"V~ / V x{math.exp(rel[0]):.2f} [{math.exp(rel[1]):.2f}, {math.exp(rel[2]):.2f}], "
            f"d_eff x{math.exp(d_eff[0]):.2f}): {cells[-1]}"
        )
    nulls = "; ".join(f"{d}: raw pixels {_fmt(_ratio_of(r, d, 'raw pixels'))}, {ORACLE} "
                      f"{_fmt(_ratio_of(r, d, ORACLE))}" for d in r["datasets"])  # fmt: skip
    evidence = (
        f"{RATIO} on the held-out classes, initialisation (the random encoder, the null) -> end "
        f"of pretraining, mean [95% CI] over {len(r['seeds'])} seeds, with the change of V~ / V "
        "and of d_eff, SSL cells whose features transfer: "
        + ("; ".join(parts) or "none")
        + f". References: {nulls}. Rule per cell: the paired log changes of {RATIO} and of "
        "V~ / V both have their 95% interval below 0 (either above: not reproduced; across: a "
        f"tie) and the mean end is below 1. Reproduced in {cells.count('reproduced')}/"
        f"{len(cells)} cells." + _unjudged(r)
    )
    verdict = summarise(cells) if cells else "untestable here"
    return claim_row(CLAIMS["collapse"], verdict, evidence, [TRANSFER])


def _points(r: dict, variant: str):
    """(dataset, encoder, seed, ways, m, error, bound) over every measured encoder."""
    for x in r["runs"] + r["nulls"]:
        for ways, t in x["fewshot"].items():
            for m, e, b in zip(t["shots"], t["error"], t[f"bound ({variant})"], strict=True):
                yield x["dataset"], x["encoder"], x["seed"], ways, m, e, b


MIN_INFORMATIVE = 20
"""The bound's row is judged only on at least this many points where it is below 1."""


def _holds_row(r: dict) -> dict:
    """Judged where the authors' bound says something (below 1) about a trained encoder (SSL or
    supervised): a bound at or above 1 holds trivially, and the references' points (the oracle's
    above all, its error one to two orders of magnitude below its bound) test the formula on
    features it was never in doubt for."""
    pts = {v: list(_points(r, v)) for v in ("authors", "ours")}
    useful = {v: [p for p in pts[v] if p[6] < 1] for v in pts}
    held = {v: sum(p[6] >= p[5] for p in useful[v]) for v in pts}
    trained = {x["encoder"] for x in r["runs"]}
    judged = [p for p in useful["authors"] if p[1] in trained]
    k_all, n, k = len(useful["authors"]), len(pts["authors"]), len(judged)
    ok = sum(p[6] >= p[5] for p in judged)
    per_set = "; ".join(
        f"{d}: {sum(p[0] == d for p in judged)} "
        f"({', '.join(sorted({p[1] for p in judged if p[0] == d})) or 'no trained encoder'})"
        for d in r["datasets"]
    )
    evidence = (
        f"the authors' bound is below 1 (informative) for a trained encoder at {k}/{n} points "
        f"(2-way and all-way, m in {sorted({p[4] for p in pts['authors']})}, every seed; per "
        f"dataset {per_set}) and >= the measured error at {ok}/{k} of those; with the "
        f"references (nulls and oracle) informative at {k_all} and held at "
        f"{held['authors']}/{k_all}. The reconstruction (Cantelli) is informative at "
        f"{len(useful['ours'])}/{n} and holds at {held['ours']}/{len(useful['ours'])}. Judged on "
        f"the trained encoders' informative points (the null, the trivial bound 1, holds at every "
        f"point); any violation: not reproduced; fewer than {MIN_INFORMATIVE}: untestable here"
    )
    if k < MIN_INFORMATIVE:  # a handful of points cannot show a bound holds in general
        verdict = "untestable here"
    else:
        verdict = "reproduced" if ok == k else "not reproduced"
    return claim_row(CLAIMS["holds"], verdict, evidence)


def slack_left(error: float, bound: float) -> float:
    """The share of the trivial bound's slack a bound leaves: (bound - error) / (1 - error). The
    trivial bound (an error is at most 1) scores 1; a bound equal to the error, 0. Unlike
    bound / error, it does not blow up for near-perfect features, whose error is near 0."""
    return (bound - error) / max(1.0 - error, 1e-9)


def _slacks(r: dict, variant: str, encoders) -> dict:
    """Slack left for m >= 5 per (dataset, encoder, ways, m), over seeds."""
    out: dict = {}
    for d, o, _seed, ways, m, e, b in _points(r, variant):
        if o in encoders(d) and m >= 5:
            out.setdefault((d, o, ways, m), []).append(slack_left(e, b))
    return out


def _transferring(r: dict):
    return lambda d: {o for o in r["objectives"] if transfers(r, d, o)}


def _tracks_row(r: dict) -> dict:
    limit = 1 / r["track_factor"]
    means = {k: interval(v)[0] for k, v in _slacks(r, "authors", _transferring(r)).items()}
    ours = [interval(v)[0] for v in _slacks(r, "ours", _transferring(r)).values()]
    ok = sum(v <= limit for v in means.values())
    if means:
        vals = list(means.values())
        measured = (
            f"{min(vals):.2f}-{max(vals):.2f} over {len(vals)} points; at most {limit:.2f} at "
            f"{ok}/{len(vals)}. Reconstruction: {min(ours):.2f}-{max(ours):.2f}."
        )
    else:
        measured = "no SSL cell to judge."
    evidence = (
        "slack the authors' bound leaves, (bound - error) / (1 - error) (the trivial bound 1 "
        "scores 1, the error itself 0), on the SSL features that transfer, m >= 5, mean over "
        f"seeds per (dataset, objective, ways, m): {measured} Rule: at most "
        f"1/{r['track_factor']:g} of the trivial bound's slack." + _unjudged(r)
    )
    return claim_row(CLAIMS["tracks"], _by_cells(ok, len(means)), evidence,
                     [TRANSFER, ORACLE_TRACKS])  # fmt: skip


def _spearman_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman rho of every row pair of (B, n) arrays (NaN where a row is constant)."""
    ra, rb = sps.rankdata(a, axis=1), sps.rankdata(b, axis=1)
    ra, rb = ra - ra.mean(1, keepdims=True), rb - rb.mean(1, keepdims=True)
    den = np.sqrt((ra**2).sum(1) * (rb**2).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (ra * rb).sum(1) / den, np.nan)


def spearman_gap(error, v_tilde, v, resamples: int = 2000, seed: int = 0):
    """Spearman rho(error, V~) - rho(error, V) and a percentile bootstrap 95% interval (resamples
    in which a rho is undefined, a constant column, are dropped)."""
    error, v_tilde, v = (np.asarray(a, dtype=float)[None] for a in (error, v_tilde, v))
    gap = (_spearman_rows(error, v_tilde) - _spearman_rows(error, v))[0]
    n = error.shape[1]
    idx = np.random.default_rng(seed).integers(0, n, (resamples, n))
    boots = _spearman_rows(error[0][idx], v_tilde[0][idx]) - _spearman_rows(
        error[0][idx], v[0][idx]
    )
    boots = boots[np.isfinite(boots)]
    return float(gap), float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))


def _explains_rows(r: dict) -> list:
    """Per dataset where some SSL cell transfers, over the trained encoders (SSL objectives and
    supervised) and seeds: features read at the same place of the same network, so V and V~
    share a scale. The references are left out: raw pixels live in another space, and their
    distance from every encoder alone can order error with one measure against the other."""
    out = []
    for d in r["datasets"]:
        if not _transferring(r)(d):
            continue
        pts = [x for x in r["runs"] if x["dataset"] == d]
        err = [_five_shot(x, "error") for x in pts]
        out.append((d, len(pts), spearman_gap(err, [x["V~"] for x in pts], [x["V"] for x in pts])))
    return out


def _explains_row(r: dict) -> dict:
    rows = _explains_rows(r)
    cells = [compare(lo, hi) for _, _, (_, lo, hi) in rows]
    skipped = [d for d in r["datasets"] if not _transferring(r)(d)]
    gaps = "; ".join(
        f"{d} {g:+.2f} [{lo:+.2f}, {hi:+.2f}] over {n} points: {c}"
        for (d, n, (g, lo, hi)), c in zip(rows, cells, strict=True)
    )
    evidence = (
        "Spearman rho(all-way 5-shot error, V~) - rho(error, V) across the trained encoders (SSL "
        f"objectives and supervised) and seeds, [bootstrap 95% CI]: {gaps or 'none'}. Rule per "
        "dataset: the interval above 0 (V~ the better predictor); across 0: a tie"
        + (f". Not judged (no SSL cell transfers): {', '.join(skipped)}" if skipped else "")
    )
    verdict = summarise(cells) if cells else "untestable here"
    return claim_row(CLAIMS["explains"], verdict, evidence, [TRANSFER])


def _orthogonal_cell(cos: list, rand: list, limit: float) -> str:
    """One objective under the rule: reproduced when the upper 95% limit of the mean |cos| lies
    below ``limit`` (unrelated random directions' expected |cos|), not reproduced when the lower
    limit lies above it, inconclusive when the interval straddles it (a tie); not reproduced in
    any case unless every seed is below the random encoder's."""
    _, lo, hi = interval(cos)
    if not all(c < q for c, q in zip(cos, rand, strict=True)):
        return "not reproduced"
    return compare(limit - hi, limit - lo)


def _orthogonal_row(r: dict) -> dict:
    mt, limit = r["multitask"], random_direction_cos(r["axes_dim"])
    rand = [m["random encoder"]["mean |cos|"] for m in mt]
    parts, cells = [], []
    for o in r["objectives"]:
        cos = [m[o]["mean |cos|"] for m in mt]
        cells.append(_orthogonal_cell(cos, rand, limit))
        bnd = interval([m[o]["mean bound"] for m in mt])
        within = sum(m[o]["pairs within bound"] for m in mt)
        pairs = sum(m[o]["pairs"] for m in mt)
        parts.append(f"{o} {_fmt(interval(cos))} (V~ bound {_fmt(bnd, '.2f')}, holds at "
                     f"{within}/{pairs}): {cells[-1]}")  # fmt: skip
    refs = [k for k in ("raw input", "whitened input", "random directions") if k in mt[0]]
    base = ", ".join(f"{k} {_fmt(interval([m[k]['mean |cos|'] for m in mt]))}" for k in refs)
    evidence = (
        f"mean off-diagonal |cos| of the decision axes in R^{r['axes_dim']} [95% CI over "
        f"{len(mt)} seeds]: {base}, random encoder {_fmt(interval(rand))}; "
        + "; ".join(parts)
        + f". Rule per objective: upper CI below unrelated random directions' E|cos| = "
        f"{limit:.3f} (an interval across it: inconclusive) and below the random encoder in "
        "every seed"
    )
    return claim_row(
        CLAIMS["orthogonal"], summarise(cells), evidence, [RANDOM_AXES, WHITENED_PASSES],
    )  # fmt: skip


def _orthogonal_passes(cos: list, rand: list, limit: float) -> bool:
    return _orthogonal_cell(cos, rand, limit) == "reproduced"


TRANSFER = "some SSL encoder transfers better than raw pixels (all-way 5-shot error)"
ORACLE_TRACKS = f"the tracking rule passes a near-perfect representation ({ORACLE})"
RANDOM_AXES = "unrelated random directions do not pass the orthogonality rule"
WHITENED_PASSES = "the orthogonality rule passes the whitened input (a linear map that untangles)"


def transfer_control(r: dict) -> dict:
    """Positive control: some SSL objective's held-out 5-shot error is below raw pixels' on some
    dataset, the paired gain's 95% interval over seeds above 0. Each claim row then judges only
    the (dataset, objective) cells that pass: features that do not transfer better than the input
    they are computed from are not the regime whose collapse is said to explain transfer. The
    supervised encoder is reported beside them."""
    parts = []
    for d in r["datasets"]:
        names = [*r["objectives"], *r.get("references", [])]
        cells = ", ".join(
            f"{e} {_mean_error(r, d, e):.3f} (gain {_fmt(transfer_gain(r, d, e), '+.3f')})"
            f"{'' if transfers(r, d, e) else ' no'}"
            for e in names
        )
        parts.append(f"{d}: raw pixels {_mean_error(r, d, 'raw pixels'):.3f}; {cells}")
    ok = any(transfers(r, d, o) for d in r["datasets"] for o in r["objectives"])
    return control(TRANSFER, "positive", ok, "error, mean over seeds (paired gain over raw "
                   "pixels [95% CI]; 'no': the interval does not lie above 0): "
                   + "; ".join(parts))  # fmt: skip


def oracle_tracks_control(r: dict) -> dict:
    """Positive control of the tracking rule: the oracle's features (few-shot error near 0) must
    pass it at every (dataset, ways, m >= 5), or the rule asks more of the bound than tracking
    (a ratio bound / error fails them: their error is near 0)."""
    limit = 1 / r["track_factor"]
    vals = {k: interval(v)[0] for k, v in _slacks(r, "authors", lambda d: {ORACLE}).items()}
    ok = bool(vals) and all(v <= limit for v in vals.values())
    passed = sum(v <= limit for v in vals.values())
    got = f"{min(vals.values()):.2f}-{max(vals.values()):.2f}" if vals else "not measured"
    return control(ORACLE_TRACKS, "positive", ok,
                   f"{ORACLE}: slack left {got}, at most {limit:.2f} at {passed}/{len(vals)} "
                   "(dataset, ways, m >= 5) points")  # fmt: skip


def random_direction_cos(dim: int) -> float:
    """E|cos| between two independent uniformly random directions in R^dim:
    Gamma(dim/2) / (sqrt(pi) Gamma((dim+1)/2))."""
    return math.exp(math.lgamma(dim / 2) - math.lgamma((dim + 1) / 2)) / math.sqrt(math.pi)


def random_axes_control(r: dict) -> dict:
    """Null control of the orthogonality rule: k random unit vectors drawn in the features' space
    in the same run (as many as the tasks) must fail the rule, or it calls unrelated axes
    orthogonal."""
    mt, limit = r["multitask"], random_direction_cos(r["axes_dim"])
    cos = [m["random directions"]["mean |cos|"] for m in mt]
    rand = [m["random encoder"]["mean |cos|"] for m in mt]
    passes = _orthogonal_passes(cos, rand, limit)
    return control(RANDOM_AXES, "null", not passes,
                   f"random directions in R^{r['axes_dim']}: mean |cos| {_fmt(interval(cos))} vs "
                   f"the rule's limit {limit:.3f}: {'passes' if passes else 'fails'}")  # fmt: skip


def whitened_control(r: dict) -> dict:
    """Positive control of the orthogonality rule: the PCA-whitened input, the simplest linear map
    that untangles correlated directions, must pass it, or the rule asks more than orthogonality."""
    mt, limit = r["multitask"], random_direction_cos(r["axes_dim"])
    cos = [m["whitened input"]["mean |cos|"] for m in mt]
    rand = [m["random encoder"]["mean |cos|"] for m in mt]
    passes = _orthogonal_passes(cos, rand, limit)
    return control(WHITENED_PASSES, "positive", passes,
                   f"whitened input: mean |cos| {_fmt(interval(cos))} vs the rule's limit "
                   f"{limit:.3f}")  # fmt: skip


def verdict(results: dict) -> dict:
    """One row per claim, in the order of CLAIMS, the controls they rest on, counts and the
    package verdict."""
    claims = [
        _collapse_row(results),
        _holds_row(results),
        _tracks_row(results),
        _explains_row(results),
        _orthogonal_row(results),
    ]
    controls = [transfer_control(results), oracle_tracks_control(results),
                random_axes_control(results), whitened_control(results)]  # fmt: skip
    return judge(claims, controls)


def _five_shot(x: dict, key: str) -> float:
    """All-way ``key`` at m = 5 (or the largest m measured when 5 is not among the shots)."""
    t = x["fewshot"]["all-way"]
    return t[key][t["shots"].index(5) if 5 in t["shots"] else -1]
