"""trajectory-abstraction-conditioned sparse coordination graphs for cooperative MARL: the claim
rules. ``verdict(results)`` judges ``study.experiment``'s numbers, one row per claim with its
controls and margin (pure; tested on a null world)."""

from __future__ import annotations

import numpy as np

from icml26.testing.results import claim_row, control, judge, paired_interval

BASELINES = ("CASEC", "DCG", "QMIX", "VDN")


SUMO_ARMS = ("TACTIC", "CASEC", "QMIX")


def claims() -> dict[str, str]:
    """The paper's claims on the shifting-dependency game, one verdict row each."""
    # the first three rows are the expected order TACTIC >= CASEC > DCG > QMIX after the switch
    return {
        "vs_casec": "TACTIC matches or beats CASEC after the task switch",
        "casec_vs_dcg": "CASEC (pruned graph) beats DCG (full graph) after the switch",
        "dcg_vs_qmix": "DCG beats QMIX after the switch",
        "best": "TACTIC beats the strongest baseline (CASEC, DCG, QMIX, VDN) after the switch",
        "abstraction": "trajectory abstraction of joint observations finds the hidden task types "
        "(adjusted Rand index of the classes against the types > 0)",
        "predictor": "the frozen class predictor recognises the class from one agent's "
        "observation history (held-out accuracy above always guessing the most frequent class)",
        "frozen": "freezing the predictor is at least as good as training it with the TD loss",
        "variance": "pruning by payoff variance beats pruning at random (same share of edges)",
        "sparse": "the pruned graph is at least as good as the full graph with the same "
        "conditioning (TACTIC vs TACTIC with no pruning)",
    }


def _per_seed(raw: dict, arm: str, metric: str) -> dict[int, float]:
    return {r["seed"]: r[metric] for r in raw["runs"] if r["arm"] == arm and metric in r}


def compare(raw: dict, a: str, b: str | tuple[str, ...], metric: str = "success_after",
            at_least: bool = False, lower_is_better: bool = False) -> tuple[str, str]:  # fmt: skip
    """Paired comparison of arm ``a`` with ``b`` (the strongest by mean of several) over seeds.

    The 95% interval of the paired difference decides: above 0, reproduced; below 0, not
    reproduced; holding 0, a tie: inconclusive, for strict claims (a beats b) and ``at_least``
    claims (a >= b) alike (a tie is consistent with >= but does not show it).
    """
    sign = -1.0 if lower_is_better else 1.0
    if isinstance(b, tuple):
        means = {x: sum(v.values()) / len(v) for x in b if (v := _per_seed(raw, x, metric))}
        if not means:
            return "untestable here", f"none of {b} ran"
        b = max(means, key=lambda x: sign * means[x])
    ra, rb = _per_seed(raw, a, metric), _per_seed(raw, b, metric)
    seeds = sorted(set(ra) & set(rb))
    if not seeds:
        return "untestable here", f"{a} or {b} did not run"
    m, lo, hi = paired_interval([ra[s] - rb[s] for s in seeds])
    text = (f"{metric}: {a} {np.mean([ra[s] for s in seeds]):.3f} vs {b} "
            f"{np.mean([rb[s] for s in seeds]):.3f}; difference {m:+.3f}"
            f"{' (lower is better)' if lower_is_better else ''}")  # fmt: skip
    if lo is None:
        return "untestable here", text + " (one seed: no interval)"
    text += f", 95% CI [{lo:+.3f}, {hi:+.3f}] over {len(seeds)} seeds"
    lo, hi = sorted((sign * lo, sign * hi))  # in the direction of "better"
    if lo > 0:
        return "reproduced", text
    if hi < 0:
        return "not reproduced", text + " (worse)"
    return "inconclusive", text + (
        " (a tie: consistent with >=, not shown)" if at_least else " (a tie: the interval holds 0)"
    )


def _above(raw: dict, arm: str, metric: str, floor: float | str, what: str
           ) -> tuple[str, str]:  # fmt: skip
    """Is ``metric`` above ``floor`` (a number, or another metric of the same run: paired per
    seed) with 95% confidence over seeds?"""
    vals = _per_seed(raw, arm, metric)
    floors = _per_seed(raw, arm, floor) if isinstance(floor, str) else dict.fromkeys(vals, floor)
    seeds = sorted(set(vals) & set(floors))
    if not seeds:
        return "untestable here", f"{arm} has no {metric}" + (
            f" or {floor}" if isinstance(floor, str) else ""
        )
    m, lo, hi = paired_interval([vals[s] - floors[s] for s in seeds])
    null = float(np.mean([floors[s] for s in seeds]))
    text = f"{what}: {np.mean([vals[s] for s in seeds]):.3f} (null {null:.3f}); " \
        f"difference {m:+.3f}"  # fmt: skip
    if lo is None:
        return "untestable here", text + " (one seed: no interval)"
    text += f", 95% CI [{lo:+.3f}, {hi:+.3f}] over {len(seeds)} seeds"
    if lo > 0:
        return "reproduced", text
    if hi < 0:
        return "not reproduced", text + " (below the null)"
    return "inconclusive", text + " (the interval holds the null)"


LEARNS = "a coordination-graph learner solves the game after the switch"


LEARNS_FLOOR = 0.5


SUMO_LEARNS = "a learned baseline controller beats the fixed-time plan"


def _learns(raw: dict) -> dict:
    """Positive control: the game is learnable at this budget. The full coordination graph
    (DCG) reaches at least ``LEARNS_FLOOR`` success after the switch (mean over seeds); if no
    graph learner does, comparisons among graph learners read noise."""
    vals = _per_seed(raw, "DCG", "success_after")
    if not vals:
        return control(LEARNS, "positive", False, "DCG did not run")
    mean = float(np.mean(list(vals.values())))
    return control(
        LEARNS, "positive", mean >= LEARNS_FLOOR,
        f"DCG success after the switch {mean:.3f} over {len(vals)} seeds (floor {LEARNS_FLOOR})",
    )  # fmt: skip


def verdict(raw: dict) -> dict:
    """One row per claim of :func:`claims` (game), the learnability control, counts, summary;
    a SUMO run's measurements (``env`` "sumo") are judged by :func:`sumo_verdict`."""
    if raw.get("env", raw.get("config", {}).get("env")) == "sumo":
        return sumo_verdict(raw)
    c = claims()
    rows = [
        claim_row(c["vs_casec"], *compare(raw, "TACTIC", "CASEC", at_least=True), [LEARNS]),
        claim_row(c["casec_vs_dcg"], *compare(raw, "CASEC", "DCG"), [LEARNS]),
        claim_row(c["dcg_vs_qmix"], *compare(raw, "DCG", "QMIX"), [LEARNS]),
        claim_row(c["best"], *compare(raw, "TACTIC", BASELINES), [LEARNS]),
        claim_row(c["abstraction"], *_above(raw, "TACTIC", "class_ari", 0.0, "class ARI")),
        claim_row(
            c["predictor"],
            *_above(raw, "TACTIC", "predictor_acc", "predictor_majority", "predictor accuracy"),
        ),
        claim_row(
            c["frozen"],
            *compare(raw, "TACTIC", "TACTIC, predictor trained", at_least=True),
            [LEARNS],
        ),
        claim_row(c["variance"], *compare(raw, "TACTIC", "TACTIC, random pruning"), [LEARNS]),
        claim_row(
            c["sparse"], *compare(raw, "TACTIC", "TACTIC, no pruning", at_least=True), [LEARNS]
        ),
    ]
    return judge(rows, [_learns(raw)])


def sumo_claims() -> dict[str, str]:
    return {
        "vs_fixed": "TACTIC lowers the mean waiting time below a fixed-time controller (SUMO)",
        "vs_qmix": "TACTIC lowers the mean waiting time below QMIX at equal steps (SUMO)",
        "vs_casec": "TACTIC's waiting time is at most CASEC's (SUMO)",
    }


def _sumo_learns(raw: dict) -> dict:
    """Positive control: RL learns traffic control here. The best learned baseline's (QMIX or
    CASEC; TACTIC itself is left out, so the control does not lean on the method's own numbers)
    mean waiting time lies below the fixed-time plan's (paired 95% interval), else comparing
    TACTIC with baselines that never learned says nothing."""
    m = "mean_waiting_time"
    learned = [a for a in SUMO_ARMS if a != "TACTIC" and _per_seed(raw, a, m)]
    if not learned or not _per_seed(raw, "fixed-time", m):
        return control(SUMO_LEARNS, "positive", False, "the learned arms or fixed-time did not run")
    best = min(learned, key=lambda a: float(np.mean(list(_per_seed(raw, a, m).values()))))
    verdict_, text = compare(raw, best, "fixed-time", m, lower_is_better=True)
    return control(SUMO_LEARNS, "positive", verdict_ == "reproduced", text)


def sumo_verdict(raw: dict) -> dict:
    c, m = sumo_claims(), "mean_waiting_time"
    rows = [
        claim_row(c["vs_fixed"], *compare(raw, "TACTIC", "fixed-time", m, lower_is_better=True)),
        claim_row(
            c["vs_qmix"], *compare(raw, "TACTIC", "QMIX", m, lower_is_better=True), [SUMO_LEARNS]
        ),
        claim_row(
            c["vs_casec"],
            *compare(raw, "TACTIC", "CASEC", m, at_least=True, lower_is_better=True),
            [SUMO_LEARNS],
        ),
    ]
    return judge(rows, [_sumo_learns(raw)])
