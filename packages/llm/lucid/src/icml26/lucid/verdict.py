"""LUCID attention (arXiv 2602.10410) for PyTorch and Hugging Face transformers: the claim rules.
``verdict(results)`` judges ``study.experiment``'s numbers, one row per claim with its controls
and margin (pure; tested on a null world)."""

import random
import statistics

from icml26.testing.results import (
    claim_row,
    control,
    judge,
)

BEST_SOFTMAX = "softmax (best T)"
"""(a): the probe's baseline, softmax at the temperature that does best at each point."""


PROBE_MARGIN = 0.1
"""(a): LUCID's probe cosine must beat the best softmax temperature by this much."""


LM_TOLERANCE = 1.02
"""(c): LUCID's held-out loss may be at most this many times softmax's."""


BOOTSTRAP = 10_000
"""(b): resamples of the bootstrap interval."""


# --- the verdict: a pure function of the measurements, one row per claim and setting ---


def learnable(setting: str) -> str:
    """The name of the positive control of one recall setting."""
    return f"an attention learns {setting} within the budget"


def _learnable_control(setting: str, arms: dict) -> dict:
    """Positive control: the task at this setting is learnable at this budget (softmax or LUCID
    solves at least half its seeds), so steps-to-solve compare learners, not two failures."""
    n = len(arms["softmax"]["steps per seed"])
    solved = {k: arms[k]["solved"] for k in ("softmax", "lucid")}
    return control(
        learnable(setting),
        "positive",
        max(solved.values()) * 2 >= n,
        f"seeds solved within {arms['softmax']['budget']} steps: softmax {solved['softmax']}/{n}, "
        f"LUCID {solved['lucid']}/{n}",
    )


def verdict(results: dict) -> dict:
    """One claim row per claim of the paper and setting, the controls they rest on (each
    recall setting must be learnable at its budget), counts and the package verdict."""
    cells = [("MQAR", "LUCID learns multi-query associative recall in fewer steps than softmax",
              results["mqar"]),
             ("needles", "LUCID learns multi-needle retrieval among distractors faster than "
              "softmax", results["needle"])]  # fmt: skip
    recall, controls = [], []
    for prefix, claim, table in cells:
        for cell, arms in table.items():
            recall.append(_recall_claim(claim, f"{prefix} {cell}", arms))
            controls.append(_learnable_control(f"{prefix} {cell}", arms))
    claims = [_probe_claim(results["probe"], results["probe sweep"]), *recall,
              _lm_claim(results["char LM"])]  # fmt: skip
    return judge(claims, controls)


def _probe_claim(probe: dict, sweep: dict) -> dict:
    sizes = probe["cluster sizes"]
    i = sizes.index(max(sizes))
    points = sweep["points"]
    wins = [p for p in points if p["LUCID"] >= p[BEST_SOFTMAX] + PROBE_MARGIN]
    verdict_ = "reproduced" if len(wins) == len(points) else "partly" if wins else "not reproduced"
    losses = [
        f"key noise {p['key noise']:g} / query noise {p['query noise']:g}: LUCID "
        f"{p['LUCID']:.2f} vs softmax {p[BEST_SOFTMAX]:.2f}"
        for p in points
        if p not in wins
    ]
    return claim_row(
        "LUCID singles out the queried key among many similar ones (correlated-keys probe)",
        verdict_,
        f"cosine to the queried value, cluster of {sizes[i]} keys, {probe['trials']} problems: "
        f"LUCID {probe['LUCID'][i]:.3f} vs softmax at its best temperature "
        f"{probe[BEST_SOFTMAX][i]:.3f} (T=1 {probe['softmax (T=1)'][i]:.3f}); noise sweep: LUCID "
        f"ahead by >= {PROBE_MARGIN} at {len(wins)}/{len(points)} points"
        + (f" (not at {'; '.join(losses)})" if losses else "")
        + " (rule: at every sweep point LUCID >= softmax at its best temperature + "
        f"{PROBE_MARGIN})",
    )


def bootstrap_difference(a: list[float], b: list[float], seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of mean(a) - mean(b), the two samples resampled
    independently (``BOOTSTRAP`` times, a fixed stream: the verdict stays a pure function)."""
    rng = random.Random(seed)
    diffs = sorted(
        statistics.mean(rng.choices(a, k=len(a))) - statistics.mean(rng.choices(b, k=len(b)))
        for _ in range(BOOTSTRAP)
    )
    return diffs[int(0.025 * BOOTSTRAP)], diffs[int(0.975 * BOOTSTRAP) - 1]


def _recall_claim(claim: str, setting: str, arms: dict) -> dict:
    lucid, softmax = arms["lucid"], arms["softmax"]
    budget = lucid["budget"]
    n = len(lucid["steps per seed"])
    solved = f"seeds solved LUCID {lucid['solved']}/{n} vs softmax {softmax['solved']}/{n}"
    if lucid["solved"] or softmax["solved"]:
        a = [budget if s is None else s for s in lucid["steps per seed"]]
        b = [budget if s is None else s for s in softmax["steps per seed"]]
        lo, hi = bootstrap_difference(a, b)
        what, fmt = f"mean steps to solve (unsolved = budget {budget})", ".0f"
        better, worse = hi < 0, lo > 0
    else:
        a, b = lucid["final accuracy per seed"], softmax["final accuracy per seed"]
        lo, hi = bootstrap_difference(a, b)
        what, fmt = f"final accuracy after the {budget}-step budget", ".3f"
        better, worse = lo > 0, hi < 0
    if better:
        verdict_, outcome = "reproduced", "LUCID faster"
    elif worse:
        verdict_, outcome = "not reproduced", "LUCID slower"
    elif lucid["solved"] or softmax["solved"]:
        verdict_, outcome = "inconclusive", "a tie"
    else:
        verdict_, outcome = "untestable here", "neither attention learned within the budget"
    return claim_row(
        f"{claim} ({setting})",
        verdict_,
        f"{solved}; {what} LUCID {_mean_std(a, fmt)} vs softmax {_mean_std(b, fmt)}, difference "
        f"{statistics.mean(a) - statistics.mean(b):+{fmt}} [95% bootstrap {lo:+{fmt}}, "
        f"{hi:+{fmt}}]: {outcome} (rule: interval below 0 in steps, or above 0 in accuracy "
        "when no seed solves; holding 0: inconclusive)",
        [learnable(setting)],
    )


def _lm_claim(lm: dict) -> dict:
    loss = {k: [r["held-out loss"] for r in runs] for k, runs in lm.items()}
    mean = {k: statistics.mean(v) for k, v in loss.items()}
    held = mean["lucid"] <= LM_TOLERANCE * mean["softmax"]
    ratio = mean["lucid"] / mean["softmax"]
    return claim_row(
        "LUCID does not hurt ordinary language-model loss (character LM)",
        "reproduced" if held else "not reproduced",
        f"held-out loss LUCID {_mean_std(loss['lucid'], '.4f')} vs softmax "
        f"{_mean_std(loss['softmax'], '.4f')} nats/char, ratio {ratio:.3f}, "
        f"{len(loss['lucid'])} seed(s) (rule: ratio <= {LM_TOLERANCE})",
    )


def _mean_std(xs: list[float], fmt: str = ".0f") -> str:
    if len(xs) < 2:
        return format(statistics.mean(xs), fmt)
    return f"{statistics.mean(xs):{fmt}} ± {statistics.stdev(xs):{fmt}}"
