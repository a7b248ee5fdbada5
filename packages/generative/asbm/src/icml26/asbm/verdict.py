"""Adjoint Schrödinger Bridge Matching: the claim rules. ``verdict(results)`` judges
``study.experiment``'s numbers, one row per claim with its controls and margin (pure; tested on
a null world).

Results of the official-recipe study carry ``"protocol": "official"``; a results file without it
is the earlier study (Brownian reference, posterior-mean stage 2, equal network evaluations),
judged by the earlier rules (``EARLIER_BASELINES``, ``EARLIER_STEPS``, its stage-1 control) so
that its committed rows can be re-judged from their stored measurements."""

import math

from icml26.testing.results import claim_row, control, judge, paired_interval

BASELINES = ("Score matching", "CFM", "OT-CFM", "SB-CFM", "Reflow")
"""Every baseline of the official-recipe study, each trained for ASBM's gradient steps."""

CONTROL_ARM = "Stage 2, independent coupling"
"""ASBM's stage 2 (VP 0.1 -> 4) trained on the independent coupling for the baselines' gradient
steps: the positive control of the stage-2 code."""

TRIVIAL_ARM = "Gaussian fit"
"""Draws from a Gaussian with the training set's mean and covariance: the trivial generator."""

DATA_FLOOR = "Training data"
"""Training samples scored like a generator's samples: the metric's floor at this sample size."""

VERDICT_STEPS = (1, 2, 4, 8, 20, 50, 100)
"""One verdict row per data set and step count: the few-step regime and the paper's 20-100."""

EARLIER_BASELINES = ("CFM", "OT-CFM", "SB-CFM", "Reflow")
EARLIER_STEPS = (1, 2, 4, 8)


def _value(v) -> float:
    """A metric as stored: None (a non-finite number in JSON) counts as infinitely bad."""
    return math.inf if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def _compare(name: str, p: dict, method: str, k: str, claim: str,
             baselines=EARLIER_BASELINES, rests_on=None, partly: bool = True) -> dict:  # fmt: skip
    """``method`` at k steps against every baseline at k steps, each difference paired over
    seeds: better than all (every interval below 0) is reproduced, worse than any (an interval
    above 0) is not; otherwise, with ``partly``, better than some and tied with the rest is
    partly (the earlier rules), and tied with at least one baseline is inconclusive. The row
    rests on ``rests_on`` (default: the problem's stage-1 control)."""
    metric, seeds = p["metric"], p["seeds"]
    mk = "1" if method.endswith("(1 step)") else k
    mine = _value(p["metrics"][method][mk][metric])
    parts, his, los = [], [], []
    for b in baselines:
        diffs = [_value(r["metrics"][method][mk][metric]) - _value(r["metrics"][b][k][metric])
                 for r in seeds]  # fmt: skip
        if any(math.isnan(d) or d == math.inf for d in diffs):
            mean = lo = hi = math.inf  # the method failed (non-finite metric) on some seed
        elif any(d == -math.inf for d in diffs):
            mean = lo = hi = -math.inf  # the baseline failed where the method did not
        else:
            mean, lo, hi = paired_interval(diffs)
        his.append(hi)
        los.append(lo)
        ci = "" if len(seeds) < 2 else f" [{lo:+.3g}, {hi:+.3g}]"
        parts.append(f"{b} {_value(p['metrics'][b][k][metric]):.4g} (diff {mean:+.3g}{ci})")
    sw2 = ", ".join(f"{m} {_value(p['metrics'][m][mk if m == method else k]['sw2']):.3g}"
                    for m in (method, *baselines))  # fmt: skip
    evidence = (
        f"{metric}, seed mean, against {p.get('reference', 'held-out')} data: {method} "
        f"{mine:.4g}; at {k} step(s): {'; '.join(parts)}. Sliced W2: {sw2}"
    )
    if len(seeds) < 2:
        verdict = "untestable here"
        evidence += ("; one seed: no interval, so no verdict at this budget (more seeds: "
                     "--seeds / --face-seeds)")  # fmt: skip
    else:
        evidence += f"; 95% t-intervals of the paired differences over {len(seeds)} seeds"
        if all(h < 0 for h in his):
            verdict = "reproduced"
        elif any(lo > 0 for lo in los):
            verdict = "not reproduced"
        elif partly and any(h < 0 for h in his):
            verdict = "partly"
            evidence += " (better than some baselines, a tie with the others)"
        else:
            verdict = "inconclusive"
            ties = [b for b, h in zip(baselines, his, strict=True) if h >= 0]
            evidence += (
                " (a tie with every baseline)" if partly else f" (a tie with {', '.join(ties)})"
            )
    evidence += (
        ". Rule: better than every baseline (all intervals below 0) reproduced; "
        "any baseline better (an interval above 0) not reproduced; "
        + ("better than some and tied with the rest partly; tied with all inconclusive"
           if partly else "a tie with any baseline inconclusive")
    )  # fmt: skip
    return claim_row(f"{name}: {claim}", verdict, evidence, rests_on or [stage1_name(name)])


STAGE1_TOLERANCE = 0.05
"""Stage 1 has learned the forward process when X1's spread is within 5% of the prior's."""


def stage1_name(problem: str) -> str:
    return f"{problem}: stage 1 carries the data to the prior"


def stage1_control(name: str, p: dict) -> dict:
    """Positive control: ASBM's stage 1 ends where the method says it does. Stage 2 and the
    distilled generator learn the coupling stage 1 simulates; if its terminal X1 is not the
    prior (per-coordinate std off the prior draws' by more than STAGE1_TOLERANCE on some seed),
    sampling from the prior starts elsewhere and the comparison tests an unfinished stage 1,
    not the method."""
    last = [r["stage 1 rounds"][-1] for r in p["seeds"] if r.get("stage 1 rounds")]
    if not last:
        return control(stage1_name(name), "positive", False, "stage 1 was not diagnosed")
    ratios = [x["terminal_std"] / x["gaussian_reference_std"] for x in last]
    return control(
        stage1_name(name), "positive", max(abs(r - 1) for r in ratios) <= STAGE1_TOLERANCE,
        f"X1 std / prior std {', '.join(f'{r:.3f}' for r in ratios)} over {len(last)} seeds "
        f"after round {last[0]['round']} (rule: within {STAGE1_TOLERANCE:.0%})",
    )  # fmt: skip


def _verdict_earlier(results: dict) -> dict:
    """The earlier study's rows: one per data set and step count in 1, 2, 4, 8 (ASBM's ODE
    sampler against every equal-compute baseline at that many steps), and one for the distilled
    one-step generator; each data set's rows rest on its stage-1 control."""
    claims, controls = [], []
    for name, p in results["problems"].items():
        controls.append(stage1_control(name, p))
        for k in EARLIER_STEPS:
            if str(k) in p["metrics"]["ASBM"]:
                claims.append(_compare(name, p, "ASBM", str(k),
                                       f"ASBM at {k} step(s) better than every equal-compute "
                                       "baseline"))  # fmt: skip
        claims.append(_compare(name, p, "ASBM distilled (1 step)", "1",
                               "distilled 1-step ASBM better than every equal-compute 1-step "
                               "baseline"))  # fmt: skip
    return judge(claims, controls)


def prior_match_name(problem: str) -> str:
    return f"{problem}: stage 1 reaches the official stopping rule"


def prior_match_control(name: str, p: dict) -> dict:
    """Positive control: on every seed, stage 1 ends on a round whose terminal law passes the
    official stopping rule (terminal covariance and radial statistics match the prior's). A
    stage 1 that never gets there hands stage 2 a coupling whose terminal law is not the prior
    it samples from: the comparison would test an unfinished bridge."""
    seeds = p["seeds"]
    matched = [r["compute"]["ASBM"].get("matched round") for r in seeds]
    rows = [r["stage 1 rounds"][-1].get("prior_match", {}) for r in seeds]
    stats = "; ".join(
        f"round {m if m is not None else 'none'} (max eigenvalue {x.get('top_eigenvalue', 0):.3f}"
        f" vs prior {x.get('prior_top_eigenvalue', 0):.3f}, radial errors "
        f"{x.get('radial_mean_error', 0):.3f} / {x.get('radial_var_error', 0):.3f})"
        for m, x in zip(matched, rows, strict=True)
    )
    return control(prior_match_name(name), "positive", all(m is not None for m in matched),
                   f"over {len(seeds)} seed(s), stage 1 stopped at: {stats} (rule: the "
                   "largest covariance eigenvalue at most a prior draw's and both radial "
                   "errors below 8%)")  # fmt: skip


STAGE2_MARGIN = 1.5
"""The stage-2 control fails when its seed-mean metric exceeds CFM's by more than this factor
(or the paired interval lies wholly above 0) at any of ``STAGE2_STEPS``. Set before any run
from the committed control (``results/controls``): CFM's seed-to-seed coefficient of variation
at 50 steps is 0.33, so a 3-seed mean carries about 0.19 of relative noise; 1.5 is about 2.6 of
those above a tie."""

STAGE2_STEPS = (20, 50, 100)
"""Where the stage-2 control is read: the score sampler's operating point (the official 100
steps and below)."""


def stage2_name(problem: str) -> str:
    return f"{problem}: stage 2 on the independent coupling matches CFM"


def stage2_control(name: str, p: dict) -> dict:
    """Positive control of the stage-2 code: trained on the independent coupling (no stage 1) for
    CFM's gradient steps, bridge matching and flow matching learn the same marginals, so its
    samples must be as good as CFM's at each of ``STAGE2_STEPS`` both were sampled with."""
    metric, seeds = p["metric"], p["seeds"]
    ks = [str(k) for k in STAGE2_STEPS if str(k) in p["metrics"][CONTROL_ARM]]
    ks = ks or [max(p["metrics"][CONTROL_ARM], key=int)]  # --quick: the most steps run
    parts, passed = [], True
    for k in ks:
        mine, cfm = (_value(p["metrics"][m][k][metric]) for m in (CONTROL_ARM, "CFM"))
        diffs = [_value(r["metrics"][CONTROL_ARM][k][metric])
                 - _value(r["metrics"]["CFM"][k][metric]) for r in seeds]  # fmt: skip
        ok = len(seeds) > 1 and all(map(math.isfinite, diffs))
        lo = paired_interval(diffs)[1] if ok else None
        # MMD-type metrics can be slightly negative near 0: compare the ratio on a floor
        ratio = mine / max(cfm, 1e-3) if math.isfinite(mine) else math.inf
        passed &= ratio <= STAGE2_MARGIN and (lo is None or lo <= 0)
        ci = "" if lo is None else f", interval low end {lo:+.3g}"
        parts.append(f"{k} steps: {mine:.4g} vs CFM {cfm:.4g} (ratio {ratio:.2f}{ci})")
    return control(stage2_name(name), "positive", passed,
                   f"{metric}, seed mean, stage 2 on the independent coupling: "
                   f"{'; '.join(parts)} (rule: ratio at most {STAGE2_MARGIN} and the paired "
                   "interval not wholly above 0 at every step count)")  # fmt: skip


def trivial_name(problem: str) -> str:
    return f"{problem}: ASBM beats a Gaussian fit to the training data"


def trivial_control(name: str, p: dict) -> dict:
    """Positive control of the setting and its metric: at the official operating point (100
    Euler-Maruyama steps, or the most steps run), ASBM's samples must score better than draws
    from a Gaussian with the training data's mean and covariance, the difference paired over
    seeds (its 95% interval wholly below 0; one seed: below 0). If the metric cannot tell the two
    apart, or ASBM has learned no more than the second moments, no row can show anything."""
    metric, seeds, m = p["metric"], p["seeds"], p["metrics"]
    k = "100" if "100" in m["ASBM"] else max(m["ASBM"], key=int)
    diffs = [_value(r["metrics"]["ASBM"][k][metric])
             - _value(r["metrics"][TRIVIAL_ARM]["1"][metric]) for r in seeds]  # fmt: skip
    finite = all(map(math.isfinite, diffs))
    if finite and len(seeds) > 1:
        mean, lo, hi = paired_interval(diffs)
        passed, ci = hi < 0, f" (diff {mean:+.3g} [{lo:+.3g}, {hi:+.3g}])"
    else:
        passed, ci = finite and sum(diffs) < 0, ""
    floor = m.get(DATA_FLOOR, {}).get("1", {}).get(metric)
    floor_text = "" if floor is None else (f"; training data against held-out data (the "
                                           f"metric's floor here) {_value(floor):.4g}")  # fmt: skip
    return control(trivial_name(name), "positive", passed,
                   f"{metric}, seed mean: ASBM at {k} steps {_value(m['ASBM'][k][metric]):.4g}, "
                   f"Gaussian fit {_value(m[TRIVIAL_ARM]['1'][metric]):.4g}{ci}{floor_text} "
                   "(rule: ASBM better, the paired 95% interval wholly below 0)")  # fmt: skip


def _verdict_official(results: dict) -> dict:
    claims, controls = [], []
    for name, p in results["problems"].items():
        rests_on = [prior_match_name(name), stage2_name(name)]
        controls += [prior_match_control(name, p), stage2_control(name, p)]
        if TRIVIAL_ARM in p["metrics"]:  # results made before the arm existed keep their rules
            rests_on.append(trivial_name(name))
            controls.append(trivial_control(name, p))
        for k in VERDICT_STEPS:
            if str(k) in p["metrics"]["ASBM"]:
                claims.append(_compare(name, p, "ASBM", str(k),
                                       f"ASBM (Euler-Maruyama) at {k} step(s) better than every "
                                       "baseline at equal gradient steps", BASELINES,
                                       rests_on, partly=False))  # fmt: skip
        claims.append(_compare(name, p, "ASBM distilled (1 step)", "1",
                               "distilled 1-step ASBM better than every 1-step baseline at "
                               "equal gradient steps", BASELINES, rests_on,
                               partly=False))  # fmt: skip
    return judge(claims, controls)


def verdict(results: dict) -> dict:
    """The official-recipe study: one row per data set and step count in 1 ... 100 (ASBM's
    Euler-Maruyama sampler against every baseline at that many steps) and one for the
    distilled generator, each resting on the data set's two controls (stage 1 reaches the
    stopping rule; stage 2 matches CFM on the independent coupling). Results without
    ``"protocol": "official"`` are the earlier study, judged by its own rules."""
    if results.get("protocol") == "official":
        return _verdict_official(results)
    return _verdict_earlier(results)
