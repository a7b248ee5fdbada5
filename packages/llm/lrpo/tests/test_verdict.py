import pytest

from icml26.lrpo.study import planted_bandit
from icml26.lrpo.verdict import (
    GRPO_LEARNS,
    PLANTED,
    claims,
    rl_effect_check,
    verdict,
)

ARMS = ("pretrained", "original", "uniform", "english", "ucb", "exp3", "lrpo")


PLANTED_OK = {
    "passed": True,
    "lrpo_min_mass": 0.8,
    "steps": 200,
    "routers": {"ucb": {"mass": {"add": 0.5}}, "exp3": {"mass": {"add": 0.4}}},
}


def raw_with(acc: dict, worst: dict | None = None, zero: dict | None = None, seeds=3, noise=0.01):
    runs = {}
    for arm in ARMS:
        runs[arm] = []
        for s in range(seeds):
            d = noise * (s - (seeds - 1) / 2)
            runs[arm].append({"seed": s, "accuracy": acc[arm] + d,
                              "worst_language": (worst or acc)[arm] + d,
                              "zero_variance": (zero or {}).get(arm, 0.1) + d,
                              "by_language": {}})  # fmt: skip
    return {"runs": runs, "planted": PLANTED_OK}


BASE = {"pretrained": 0.4, "original": 0.45, "uniform": 0.45, "english": 0.45, "ucb": 0.45,
        "exp3": 0.45}  # fmt: skip


def test_clear_win_everywhere_reproduces():
    raw = raw_with({**BASE, "lrpo": 0.55}, zero={"original": 0.3, "lrpo": 0.05})
    judged = verdict(raw)
    rows, summary = judged["claims"], judged["verdict"]
    assert [r["claim"] for r in rows] == list(claims().values())
    assert all(r["verdict"] == "reproduced" for r in rows) and summary == "reproduced"


def test_tie_is_inconclusive_and_says_tie():
    raw = raw_with({**BASE, "lrpo": 0.45})
    raw["runs"]["lrpo"][0]["accuracy"] += 0.05  # noisy seeds: the interval holds 0
    raw["runs"]["lrpo"][1]["accuracy"] -= 0.05
    rows = verdict(raw)["claims"]
    assert rows[0]["verdict"] == "inconclusive" and "tie" in rows[0]["evidence"]


def test_worse_is_not_reproduced():
    judged = verdict(raw_with({**BASE, "lrpo": 0.35}))
    rows, summary = judged["claims"], judged["verdict"]
    assert rows[0]["verdict"] == "not reproduced" and "worse" in rows[0]["evidence"]
    assert [r["verdict"] for r in rows[:4]] == ["not reproduced"] * 4
    assert rows[4]["verdict"] == "inconclusive"  # equal zero-variance shares: a tie
    assert summary == "inconclusive"  # nothing reproduced, not everything refuted


def test_beating_one_bandit_is_partly():
    judged = verdict(raw_with({**BASE, "ucb": 0.6, "lrpo": 0.5}))
    rows, summary = judged["claims"], judged["verdict"]
    bandit = rows[3]
    assert bandit["verdict"] == "partly"
    assert summary == "partly"


def test_missing_arm_is_untestable_not_no():
    raw = raw_with({**BASE, "lrpo": 0.55})
    del raw["runs"]["ucb"], raw["runs"]["exp3"]
    rows = verdict(raw)["claims"]
    assert rows[3]["verdict"] == "untestable here"
    one = raw_with({**BASE, "lrpo": 0.55}, seeds=1)
    assert all(r["verdict"] == "untestable here" for r in verdict(one)["claims"])


def test_signal_row_counts_lower_zero_variance_as_better():
    raw = raw_with({**BASE, "lrpo": 0.45}, zero={"original": 0.4, "lrpo": 0.1})
    assert verdict(raw)["claims"][4]["verdict"] == "reproduced"
    raw = raw_with({**BASE, "lrpo": 0.45}, zero={"original": 0.1, "lrpo": 0.4})
    assert verdict(raw)["claims"][4]["verdict"] == "not reproduced"


def test_rl_effect_check_and_interval():
    assert rl_effect_check(raw_with({**BASE, "lrpo": 0.5}))["passed"]
    assert not rl_effect_check(raw_with({**BASE, "original": 0.4, "lrpo": 0.5}))["passed"]


def test_planted_bandit_check_finds_the_informative_languages():
    out = planted_bandit()
    assert out["passed"] and out["lrpo_min_mass"] > 0.5
    assert out["routers"]["uniform"]["mass"]["add"] == pytest.approx(0.25)


def test_beating_one_fixed_router_is_partly():
    rows = verdict(raw_with({**BASE, "english": 0.6, "lrpo": 0.5}))["claims"]
    assert rows[2]["verdict"] == "partly" and "routed to English" in rows[2]["evidence"]


def test_inert_grpo_makes_accuracy_rows_untestable_not_no():
    flat = {arm: 0.4 for arm in ARMS}
    raw = raw_with(flat, zero={"original": 0.4, "lrpo": 0.1})
    for arm in ARMS[1:]:  # seed-to-seed noise around the pretrained start
        raw["runs"][arm][0]["accuracy"] += 0.03
        raw["runs"][arm][1]["accuracy"] -= 0.03
    judged = verdict(raw)
    rows = judged["claims"]
    assert not judged["controls"][0]["passed"]
    assert [r["verdict"] for r in rows[:4]] == ["untestable here"] * 4
    assert rows[0]["evidence"].startswith(f"control failed: {GRPO_LEARNS}")
    assert rows[4]["verdict"] == "reproduced"  # the signal row does not depend on accuracy


def test_an_untrained_router_makes_the_router_rows_untestable():
    raw = raw_with({**BASE, "lrpo": 0.55})
    raw["planted"] = {**PLANTED_OK, "passed": False, "lrpo_min_mass": 0.26}
    rows = verdict(raw)["claims"]
    assert rows[0]["verdict"] == "reproduced"
    assert rows[2]["verdict"] == rows[3]["verdict"] == "untestable here"
    assert PLANTED in rows[3]["evidence"]


def test_null_world_does_not_reproduce():
    """LRPO's numbers drawn like every other trained arm's: no row may read reproduced beyond
    the 95% intervals' error rate."""
    import random

    rng = random.Random(0)
    hits = 0
    for _ in range(20):
        raw = raw_with({**BASE, "lrpo": 0.45}, zero={arm: 0.2 for arm in ARMS})
        for arm in ARMS[1:]:
            for r in raw["runs"][arm]:
                r["accuracy"] += rng.gauss(0, 0.02)
                r["worst_language"] += rng.gauss(0, 0.02)
                r["zero_variance"] += rng.gauss(0, 0.02)
        hits += sum(r["verdict"] == "reproduced" for r in verdict(raw)["claims"])
    assert hits / (20 * 5) < 0.05
