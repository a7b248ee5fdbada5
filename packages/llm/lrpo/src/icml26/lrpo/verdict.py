"""LRPO, language-routed policy optimisation (Guo, Wakaki, Mitsufuji, Ritter, Xu;: the claim rules.
``verdict(results)`` judges ``study.experiment``'s numbers, one row per claim with its controls
and margin (pure; tested on a null world)."""

from __future__ import annotations

from icml26.testing.results import claim_row, control, judge, paired_interval, summarise

ARM_NAMES = {"original": "original language only", "uniform": "uniform routing",
             "english": "routed to English", "ucb": "UCB routing", "exp3": "EXP3 routing",
             "lrpo": "LRPO"}  # fmt: skip


PLANTED_MASS = 0.5
"""The check passes when LRPO's router puts at least this much probability on the informative
languages (2 of 8: 0.25 under uniform) after ``PLANTED_STEPS`` steps, on every topic."""


def claims() -> dict[str, str]:
    """The paper's claims, one verdict row each."""
    return {
        "vs_original": "adaptive language routing improves mean multilingual accuracy over "
        "original-language GRPO at a fixed rollout budget",
        "worst_language": "adaptive language routing improves the worst language's accuracy over "
        "original-language GRPO at a fixed rollout budget",
        "vs_fixed": "a learned router beats fixed routing (uniform over languages; all routed "
        "rollouts in English) at the same budget",
        "vs_bandits": "LRPO's router beats standard bandit routers (UCB, EXP3) at the same budget",
        "signal": "multilingual groups carry more learning signal: fewer GRPO groups whose "
        "rollouts are all correct or all wrong than original-language GRPO",
    }


def _diffs(raw: dict, a: str, b: str, metric: str, sign: float = 1.0) -> list[float]:
    ra = {r["seed"]: r[metric] for r in raw["runs"][a]}
    rb = {r["seed"]: r[metric] for r in raw["runs"][b]}
    return [sign * (ra[s] - rb[s]) for s in sorted(ra) if s in rb]


def _compare(raw: dict, b: str, metric: str, label: str, sign: float = 1.0) -> tuple[str, str]:
    """LRPO vs arm ``b`` on ``metric`` (sign -1: lower is better): the verdict and evidence."""
    if b not in raw["runs"] or not raw["runs"][b]:
        return "untestable here", f"the {ARM_NAMES[b]} arm was not run"
    d = _diffs(raw, "lrpo", b, metric, sign)
    m, lo, hi = paired_interval(d)
    text = (
        f"{label}: LRPO {_mean(raw, 'lrpo', metric):.3f} vs {ARM_NAMES[b]} "
        f"{_mean(raw, b, metric):.3f}; paired difference {m:+.3f}"
    )
    if lo is None:
        return "untestable here", text + " (one seed: no interval)"
    text += f", 95% CI [{lo:+.3f}, {hi:+.3f}] over {len(d)} seeds"
    if lo > 0:
        return "reproduced", text
    if hi < 0:
        return "not reproduced", text + " (LRPO is worse)"
    return "inconclusive", text + " (a tie: the interval holds 0)"


def _mean(raw: dict, arm: str, metric: str) -> float:
    vals = [r[metric] for r in raw["runs"][arm]]
    return sum(vals) / len(vals)


def _either(raw: dict, arms: tuple[str, str], metric: str, label: str) -> tuple[str, str]:
    """LRPO vs two baselines of one claim: reproduced if it beats both, partly if one, not
    reproduced if it loses to both, inconclusive otherwise (ties)."""
    parts = [_compare(raw, b, metric, label) for b in arms]
    verdicts = [v for v, _ in parts]
    if "untestable here" in verdicts and any(v != "untestable here" for v in verdicts):
        verdicts = [v for v in verdicts if v != "untestable here"]
        v = "partly" if "reproduced" in verdicts else summarise(verdicts)
    else:
        v = summarise(verdicts)
    return v, "; ".join(e for _, e in parts)


GRPO_LEARNS = "original-language GRPO improves on the pretrained policy"


PLANTED = "LRPO's router finds the informative languages of a planted bandit"


def rl_effect_check(raw: dict) -> dict:
    """Positive control: does GRPO move held-out accuracy at all at this budget?
    Original-language GRPO vs the pretrained start, paired over seeds: a routing comparison
    means little when RL itself does not improve the policy."""
    parts, passed = [], False
    for arm in raw["runs"]:
        if arm == "pretrained" or not raw["runs"][arm]:
            continue
        m, lo, hi = paired_interval(_diffs(raw, arm, "pretrained", "accuracy"))
        ci = "" if lo is None else f" [{lo:+.3f}, {hi:+.3f}]"
        parts.append(f"{ARM_NAMES[arm]} {m:+.3f}{ci}")
        if arm == "original" and lo is not None and lo > 0:
            passed = True
    return {"passed": passed, "evidence": "held-out accuracy minus the pretrained start's "
            "(95% CI over seeds): " + "; ".join(parts)}  # fmt: skip


def planted_check(raw: dict) -> dict:
    planted = raw["planted"]
    return {
        "passed": bool(planted["passed"]),
        "evidence": f"LRPO's router puts {planted['lrpo_min_mass']:.2f} (lowest topic) of its "
        f"probability on the 2 informative languages of 8 after {planted['steps']} steps "
        f"(uniform 0.25; threshold {PLANTED_MASS}); UCB "
        f"{min(planted['routers']['ucb']['mass'].values()):.2f}, EXP3 "
        f"{min(planted['routers']['exp3']['mass'].values()):.2f}",
    }


def verdict(raw: dict) -> dict:
    """One row per claim of :func:`claims`, the controls they rest on, counts and summary.

    The accuracy rows rest on GRPO improving the pretrained policy (else no routing can show);
    the router rows also on the planted bandit (the router can find informative languages).
    """
    c = claims()
    acc = "mean accuracy"
    rows = [
        claim_row(c["vs_original"], *_compare(raw, "original", "accuracy", acc), [GRPO_LEARNS]),
        claim_row(c["worst_language"],
                  *_compare(raw, "original", "worst_language", "worst-language accuracy"),
                  [GRPO_LEARNS]),
        claim_row(c["vs_fixed"], *_either(raw, ("uniform", "english"), "accuracy", acc),
                  [GRPO_LEARNS, PLANTED]),
        claim_row(c["vs_bandits"], *_either(raw, ("ucb", "exp3"), "accuracy", acc),
                  [GRPO_LEARNS, PLANTED]),
        claim_row(c["signal"], *_compare(
            raw, "original", "zero_variance", "share of groups all correct or all wrong (lower "
            "is better; difference = original - LRPO)", sign=-1.0)),
    ]  # fmt: skip
    checks = [(GRPO_LEARNS, rl_effect_check(raw)), (PLANTED, planted_check(raw))]
    return judge(rows, [control(n, "positive", c["passed"], c["evidence"]) for n, c in checks])
