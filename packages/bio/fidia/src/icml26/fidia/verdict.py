"""function-informed inverse folding aligned with best-of-N inference (ICML 2026): the claim rules.
``verdict(results)`` judges ``study.experiment``'s numbers, one row per claim with its controls
and margin (pure; tested on a null world)."""

from __future__ import annotations

import numpy as np

from icml26.testing.results import claim_row, control, judge, paired_interval

BASE_ARMS = {"success_at_n": "base (T for success@N)", "precision": "base (T for precision)"}


RL_ARMS = ("mean-reward RL", "GRPO", "FIDIA (max@N)")


FIDIA = "FIDIA (max@N)"


TOY_OBJECTIVES = {"mean": "mean-reward RL", "grpo": "GRPO", "maxn": "FIDIA (max@N)"}


def claims() -> dict[str, str]:
    """The paper's claims, one verdict row each."""
    return {
        "toy": "Training for best-of-N escapes a local mode on which mean-reward RL and GRPO "
        "collapse: N draws reach the global optimum (two-mode landscapes)",
        "success_vs_rl": "FIDIA raises the success rate of best-of-N design (success@N) over "
        "mean-reward RL and GRPO at one sample budget",
        "precision_vs_rl": "FIDIA raises precision (the share of the N designs that pass) over "
        "mean-reward RL and GRPO at one sample budget",
        "vs_base": "FIDIA raises success@N and precision over sampling the released model at a "
        "tuned temperature",
    }


# ---------------------------------------------------------------------- the verdict
def _compare(diffs: list[float]) -> tuple[str, str]:
    """'win' / 'loss' / 'tie' of a paired difference, with its text."""
    mean, lo, hi = paired_interval(diffs)
    if lo is None:
        return "tie", f"{mean:+.3f} (one seed, no interval)"
    text = f"{mean:+.3f} [{lo:+.3f}, {hi:+.3f}]"
    return ("win" if lo > 0 else "loss" if hi < 0 else "tie"), text


def _by_seed(rows, **match) -> dict[int, float]:
    key = match.pop("key")
    return {r["seed"]: r[key] if key in r else r["metrics"][key] for r in rows
            if all(r[k] == v for k, v in match.items())}  # fmt: skip


def _diffs(a: dict[int, float], b: dict[int, float]) -> list[float]:
    return [a[s] - b[s] for s in sorted(set(a) & set(b))]


def _judge(outcomes: list[str]) -> str:
    """reproduced: every comparison a win; partly: some wins and no loss; not reproduced: a loss
    anywhere; inconclusive: ties only (the intervals hold 0 throughout)."""
    if not outcomes or "loss" in outcomes:
        return "not reproduced"
    wins = sum(o == "win" for o in outcomes)
    if wins == len(outcomes):
        return "reproduced"
    return "partly" if wins else "inconclusive"


def estimator_check(g: dict) -> dict:
    """The implementation check of (a): unbiased (cosine >= 0.999, every |z| < 4) and the
    leave-one-out baseline lowering the variance (one group's cosine to the truth higher)."""
    ok = (g["cosine"] >= 0.999 and g["max_z"] < 4.0 and
          g["single_cosine_loo"] > g["single_cosine_raw"])  # fmt: skip
    text = (f"mean of {g['replicates']} estimates vs the exact gradient: cosine "
            f"{g['cosine']:.5f}, largest |z| {g['max_z']:.2f}; one group's cosine "
            f"{g['single_cosine_loo']:.2f} with the leave-one-out baseline, "
            f"{g['single_cosine_raw']:.2f} without")  # fmt: skip
    return {"passed": bool(ok), "evidence": text}


def control_check(results: dict) -> dict:
    """The additive landscape has one mode: FIDIA should gain nothing there (no win)."""
    land = next(x for x in results["toy_landscapes"] if x.startswith("additive"))
    rows = [r for r in results["toys"] if r["landscape"] == land]
    mine = _by_seed(rows, arm=FIDIA, key="max_at_n")
    outcomes, parts = [], []
    for other in ("mean-reward RL", "GRPO"):
        o, text = _compare(_diffs(mine, _by_seed(rows, arm=other, key="max_at_n")))
        outcomes.append(o)
        parts.append(f"vs {other}: E[max@N] {text} ({o})")
    return {"passed": "win" not in outcomes, "evidence": f"{land}: " + "; ".join(parts)}


def _toy_row(results: dict) -> tuple[str, str]:
    outcomes, parts = [], []
    for land in results["toy_landscapes"]:
        if not land.startswith("two-mode"):
            continue
        rows = [r for r in results["toys"] if r["landscape"] == land]
        hits = {a: np.mean([r["optimum_at_n"] for r in rows if r["arm"] == a])
                for a in TOY_OBJECTIVES.values()}  # fmt: skip
        mine = _by_seed(rows, arm=FIDIA, key="optimum_at_n")
        for other in ("mean-reward RL", "GRPO"):
            o, text = _compare(_diffs(mine, _by_seed(rows, arm=other, key="optimum_at_n")))
            outcomes.append(o)
            parts.append(f"{land} vs {other}: optimum@N {text} ({o})")
        parts[-1] += (f" [mean optimum@N: FIDIA {hits[FIDIA]:.2f}, mean-RL "
                      f"{hits['mean-reward RL']:.2f}, GRPO {hits['GRPO']:.2f}]")  # fmt: skip
    return _judge(outcomes), "; ".join(parts)


def _protein_row(results: dict, pairs: list[tuple[str, str]]) -> tuple[str, str]:
    """FIDIA against each (metric, arm) pair on every backbone, paired by seed."""
    study = results["protein"]
    if "skipped" in study:
        return "untestable here", study["skipped"]
    outcomes, parts = [], []
    for bb in study["backbones"]:
        rows = [r for r in study["runs"] if r["backbone"] == bb]
        for key, other in pairs:
            o, text = _compare(_diffs(_by_seed(rows, arm=FIDIA, key=key),
                                      _by_seed(rows, arm=other, key=key)))  # fmt: skip
            outcomes.append(o)
            parts.append(f"{bb} {key} vs {other}: {text} ({o})")
    return _judge(outcomes), "FIDIA - arm, 95% t interval over seeds: " + "; ".join(parts)


ESTIMATOR = "the max@N gradient estimator is unbiased and its baseline lowers the variance"


ADDITIVE = "on a one-mode (additive) landscape FIDIA gains nothing over mean-reward RL or GRPO"


RL_LEARNS = "RL improves the tuned pretrained policy's success@N on every backbone"


def rl_learns_check(results: dict) -> dict:
    """Positive control for the protein rows: the best of mean-reward RL and GRPO beats the
    temperature-tuned base on success@N (paired by seed) on every backbone, so the RL loop, the
    reward and the budget can move this policy at all."""
    study = results["protein"]
    if "skipped" in study:
        return {"passed": False, "evidence": study["skipped"]}
    parts, ok = [], True
    for bb in study["backbones"]:
        rows = [r for r in study["runs"] if r["backbone"] == bb]
        base = _by_seed(rows, arm=BASE_ARMS["success_at_n"], key="success_at_n")
        best = None
        for arm in ("mean-reward RL", "GRPO"):
            o, text = _compare(_diffs(_by_seed(rows, arm=arm, key="success_at_n"), base))
            if best is None or o == "win":
                best = (arm, o, text)
        ok &= best[1] == "win"
        parts.append(f"{bb}: {best[0]} - tuned base success@N {best[2]} ({best[1]})")
    return {"passed": bool(ok), "evidence": "; ".join(parts)}


def verdict(results: dict) -> dict:
    """The claims' rows, the controls they rest on, counts and the package verdict, from
    ``experiment``'s measurements only."""
    texts = claims()
    rl = [a for a in RL_ARMS if a != FIDIA]
    protein = [ESTIMATOR, RL_LEARNS]
    rows = [
        claim_row(texts["toy"], *_toy_row(results), [ESTIMATOR, ADDITIVE]),
        claim_row(
            texts["success_vs_rl"],
            *_protein_row(results, [("success_at_n", a) for a in rl]),
            protein,
        ),
        claim_row(
            texts["precision_vs_rl"],
            *_protein_row(results, [("precision", a) for a in rl]),
            protein,
        ),
        claim_row(texts["vs_base"], *_protein_row(results, list(BASE_ARMS.items())), protein),
    ]
    if "skipped" in results["protein"]:  # untestable rows need no competence control
        rows[1:] = [{**r, "controls": []} for r in rows[1:]]
    checks = [
        (ESTIMATOR, "positive", estimator_check(results["gradient_check"])),
        (ADDITIVE, "null", control_check(results)),
        (RL_LEARNS, "positive", rl_learns_check(results)),
    ]
    return judge(rows, [control(n, k, c["passed"], c["evidence"]) for n, k, c in checks])
