import pytest

from icml26.lrpo.demo import (
    claims,
    grpo_is_inert,
    paired_interval,
    planted_bandit,
    rl_effect_check,
    verdict,
)

ARMS = ("pretrained", "original", "uniform", "english", "ucb", "exp3", "lrpo")


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
    return {"runs": runs}


BASE = {"pretrained": 0.4, "original": 0.45, "uniform": 0.45, "english": 0.45, "ucb": 0.45,
        "exp3": 0.45}  # fmt: skip


def test_clear_win_everywhere_reproduces():
    raw = raw_with({**BASE, "lrpo": 0.55}, zero={"original": 0.3, "lrpo": 0.05})
    rows, summary = verdict(raw)
    assert [r["claim"] for r in rows] == list(claims().values())
    assert all(r["verdict"] == "reproduced" for r in rows) and summary == "reproduced"


def test_tie_is_not_reproduced_and_says_tie():
    raw = raw_with({**BASE, "lrpo": 0.45})
    raw["runs"]["lrpo"][0]["accuracy"] += 0.05  # noisy seeds: the interval holds 0
    raw["runs"]["lrpo"][1]["accuracy"] -= 0.05
    rows, _ = verdict(raw)
    assert rows[0]["verdict"] == "not reproduced" and "tie" in rows[0]["evidence"]


def test_worse_is_not_reproduced():
    rows, summary = verdict(raw_with({**BASE, "lrpo": 0.35}))
    assert rows[0]["verdict"] == "not reproduced" and "worse" in rows[0]["evidence"]
    assert summary == "not reproduced"


def test_beating_one_bandit_is_partly():
    rows, summary = verdict(raw_with({**BASE, "ucb": 0.6, "lrpo": 0.5}))
    bandit = rows[3]
    assert bandit["verdict"] == "partly"
    assert summary == "partly"


def test_missing_arm_is_untestable_not_no():
    raw = raw_with({**BASE, "lrpo": 0.55})
    del raw["runs"]["ucb"], raw["runs"]["exp3"]
    rows, _ = verdict(raw)
    assert rows[3]["verdict"] == "untestable here"
    one = raw_with({**BASE, "lrpo": 0.55}, seeds=1)
    assert all(r["verdict"] == "untestable here" for r in verdict(one)[0])


def test_signal_row_counts_lower_zero_variance_as_better():
    raw = raw_with({**BASE, "lrpo": 0.45}, zero={"original": 0.4, "lrpo": 0.1})
    assert verdict(raw)[0][4]["verdict"] == "reproduced"
    raw = raw_with({**BASE, "lrpo": 0.45}, zero={"original": 0.1, "lrpo": 0.4})
    assert verdict(raw)[0][4]["verdict"] == "not reproduced"


def test_rl_effect_check_and_interval():
    assert rl_effect_check(raw_with({**BASE, "lrpo": 0.5}))["passed"]
    assert not rl_effect_check(raw_with({**BASE, "original": 0.4, "lrpo": 0.5}))["passed"]
    m, lo, _ = paired_interval([0.1, 0.2, 0.3])
    assert m == pytest.approx(0.2) and lo == pytest.approx(0.2 - 4.303 * 0.1 / 3**0.5)


def test_planted_bandit_check_finds_the_informative_languages():
    out = planted_bandit()
    assert out["passed"] and out["lrpo_min_mass"] > 0.5
    assert out["routers"]["uniform"]["mass"]["add"] == pytest.approx(0.25)


def test_beating_one_fixed_router_is_partly():
    rows, _ = verdict(raw_with({**BASE, "english": 0.6, "lrpo": 0.5}))
    assert rows[2]["verdict"] == "partly" and "routed to English" in rows[2]["evidence"]


def test_inert_grpo_makes_accuracy_rows_untestable_not_no():
    flat = {arm: 0.4 for arm in ARMS}
    raw = raw_with(flat, zero={"original": 0.4, "lrpo": 0.1})
    for arm in ARMS[1:]:  # seed-to-seed noise around the pretrained start
        raw["runs"][arm][0]["accuracy"] += 0.03
        raw["runs"][arm][1]["accuracy"] -= 0.03
    assert grpo_is_inert(raw)
    rows, _ = verdict(raw)
    assert [r["verdict"] for r in rows[:4]] == ["untestable here"] * 4
    assert "within noise of the pretrained start" in rows[0]["evidence"]
    assert rows[4]["verdict"] == "reproduced"  # the signal row does not depend on accuracy
    assert not grpo_is_inert(raw_with({**BASE, "lrpo": 0.5}))
