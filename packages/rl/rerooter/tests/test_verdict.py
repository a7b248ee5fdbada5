"""verdict(): one row per claim, each able to fail on its own; the package verdict summarises."""

import copy
import math

import pytest

from icml26.rerooter.study import curve_area, expansions_to_solve, solved_at
from icml26.rerooter.verdict import CLAIMS, LEARNS, interval, verdict
from icml26.testing import summarise

ROWS = ["search", "area", "to_k", "test", "medium", "subgoal"]
METHODS = ("lts", "phs_star", "sqrt_lts_h", "sqrt_lts_l", "sqrt_lts_lh")
SEEDS = (0, 1, 2)
# Per-seed numbers; √LTS-LH leads each baseline by a margin that varies a little with the seed.
BASE = {
    "area": {
        "lts": 0.20,
        "phs_star": 0.25,
        "sqrt_lts_h": 0.3,
        "sqrt_lts_l": 0.3,
        "sqrt_lts_lh": 0.4,
    },
    "expansions to solve k": {
        "lts": 400_000,
        "phs_star": 300_000,
        "sqrt_lts_h": 200_000,
        "sqrt_lts_l": 200_000,
        "sqrt_lts_lh": 100_000,
    },
    "test solved": {
        "lts": 20,
        "phs_star": 25,
        "sqrt_lts_h": 30,
        "sqrt_lts_l": 30,
        "sqrt_lts_lh": 40,
    },
    "medium solved": {"lts": 2, "phs_star": 3, "sqrt_lts_h": 4, "sqrt_lts_l": 4, "sqrt_lts_lh": 8},
}


def _results(change=None, search=None, methods=METHODS, training=True, learned=True):
    """Every claim that can hold holds with the defaults. ``change[key][method]`` replaces the
    per-seed values of one number for one method (a list, one value per seed)."""
    search = {"lts": 6, "phs_star": 14, "sqrt_lts_h": 20, "sqrt_lts_l": 12, "sqrt_lts_lh": 20} | (
        search or {}
    )
    runs = []
    for i, seed in enumerate(SEEDS):
        for m in methods:
            r = {"method": m, "seed": seed, "rows": [
                {"validation_solved": 3, "validation_solved_ever": 3},
                {"validation_solved": 8, "validation_solved_ever": 8 if learned else 3},
            ]}  # fmt: skip
            for key, by_method in BASE.items():
                jitter = 1 + 0.05 * (i - 1)  # -5%, 0, +5%
                value = by_method[m] * jitter
                r[key] = round(value) if key != "area" else value
            for key, by_method in (change or {}).items():
                if m in by_method:
                    r[key] = by_method[m][i]
            runs.append(r)
    return {
        "n_test": 20,
        "n_train": 1000,
        "n_eval": 100,
        "cap": 2_000_000,
        "k": 100,
        "search_only": {
            m: {"solved": search[m], "expansions": 1000, "expansions/s": 1e4} for m in methods
        },
        "runs": runs if training else [],
        "device": "cpu",
    }


def _verdicts(claims: list[dict]) -> dict[str, str]:
    by_claim = {r["claim"]: r["verdict"] for r in claims}
    assert list(by_claim) == [CLAIMS[k] for k in ROWS]  # one row per claim, in order
    return {k: by_claim[CLAIMS[k]] for k in ROWS}


def test_every_testable_claim_holds():
    judged = verdict(_results())
    claims, v = judged["claims"], judged["verdict"]
    got = _verdicts(claims)
    assert got.pop("subgoal") == "untestable here"
    assert set(got.values()) == {"reproduced"}
    assert v == "reproduced" == summarise([r["verdict"] for r in claims])
    assert "√LTS-LH 20/20 vs LTS 6/20, PHS* 14/20" in claims[0]["evidence"]
    assert "(better)" in claims[1]["evidence"] and "3 seeds" in claims[1]["evidence"]
    assert "k = 100" in claims[2]["evidence"] and "ratio 4.00" in claims[2]["evidence"]


@pytest.mark.parametrize(
    ("row", "change", "expected"),
    [
        # the same area as LTS on every seed: a tie, better than PHS* only
        ("area", {"area": {"lts": [0.38, 0.40, 0.42]}}, "partly"),
        # ahead on two seeds, far behind on one: the interval spans zero against both
        ("area", {"area": {"sqrt_lts_lh": [0.5, 0.5, 0.0]}}, "inconclusive"),
        # √LTS-LH never reaches k on one seed: never "better", however fast elsewhere
        ("to_k", {"expansions to solve k": {"sqrt_lts_lh": [10, 10, None]}}, "inconclusive"),
        ("test", {"test solved": {"phs_star": [45, 46, 47]}}, "partly"),
        ("medium", {"medium solved": {"lts": [8, 8, 9], "phs_star": [9, 7, 8]}}, "inconclusive"),
        (
            "medium",
            {"medium solved": {"lts": [12, 12, 13], "phs_star": [13, 14, 13]}},
            "not reproduced",
        ),
    ],
)
def test_each_row_fails_on_its_own(row, change, expected):
    judged = verdict(_results(change))
    claims, v = judged["claims"], judged["verdict"]
    got = _verdicts(claims)
    assert got[row] == expected, claims
    assert all(got[k] == "reproduced" for k in ROWS if k not in (row, "subgoal"))
    assert v == "partly" == summarise([r["verdict"] for r in claims])


def test_a_baseline_that_never_gets_there_is_charged_the_cap():
    change = {"expansions to solve k": {"lts": [None, None, None]}}
    claims = verdict(_results(change))["claims"]
    assert _verdicts(claims)["to_k"] == "reproduced"
    assert "never reached: LTS 3, √LTS-LH 0" in claims[2]["evidence"]
    # charged the cap (2e6) against ~1e5: a ratio near 20, not infinite
    assert "ratio 20.0" in claims[2]["evidence"]


def test_worse_everywhere_is_not_reproduced():
    change = {
        "area": {"sqrt_lts_lh": [0.1, 0.1, 0.1]},
        "expansions to solve k": {"sqrt_lts_lh": [900_000, 950_000, 1_000_000]},
        "test solved": {"sqrt_lts_lh": [1, 2, 3]},
        "medium solved": {"sqrt_lts_lh": [0, 0, 1]},
    }
    judged = verdict(_results(change, search={"sqrt_lts_lh": 1}))
    claims, v = judged["claims"], judged["verdict"]
    got = _verdicts(claims)
    assert got.pop("subgoal") == "untestable here"
    assert set(got.values()) == {"not reproduced"} and v == "not reproduced"
    assert "(worse)" in claims[1]["evidence"]


def test_parts_not_run_are_untestable_rows():
    judged = verdict(_results(training=False))
    claims, v = judged["claims"], judged["verdict"]
    got = _verdicts(claims)
    assert got["search"] == "reproduced"
    assert all(got[k] == "untestable here" for k in ROWS if k != "search")
    assert v == "reproduced" and "--skip-training" in claims[1]["evidence"]
    judged = verdict(_results(methods=("lts", "sqrt_lts_h")))
    claims, v = judged["claims"], judged["verdict"]
    assert set(_verdicts(claims).values()) == {"untestable here"} and v == "untestable here"
    assert "--methods" in claims[0]["evidence"]


def test_verdict_is_pure():
    results = _results()
    before = copy.deepcopy(results)
    assert verdict(results) == verdict(results)
    assert results == before


def test_interval_is_the_t_interval():
    m, lo, hi = interval([1.0, 2.0, 3.0])
    # mean 2, sd 1, t(0.975, 2) = 4.303: half-width 4.303 / sqrt(3)
    assert m == 2.0 and hi - m == pytest.approx(4.303 / math.sqrt(3)) == m - lo
    assert interval([5.0]) == (5.0, 5.0, 5.0)
    # large samples approach the normal quantile
    m, _, hi = interval([0.0, 1.0] * 50)
    assert (hi - m) / (0.5025 / 10) == pytest.approx(1.984, abs=0.01)


def test_curve_numbers():
    # solved 1 after 100 expansions, 3 after 300, over a cap of 400 and 4 problems
    curve = [(50, 0), (100, 1), (200, 1), (300, 3)]
    assert curve_area(curve, 400, 4) == pytest.approx((1 * 200 + 3 * 100) / (400 * 4))
    # a run that went past the cap is cut at the cap
    assert curve_area([*curve, (600, 4)], 400, 4) == curve_area(curve, 400, 4)
    assert expansions_to_solve(curve, 3) == 300 and expansions_to_solve(curve, 4) is None
    assert solved_at(curve, [0, 99, 100, 250, 1000]).tolist() == [0, 0, 1, 1, 3]
    assert solved_at([], [10]).tolist() == [0]


def test_networks_that_do_not_learn_leave_the_training_rows_untestable():
    judged = verdict(_results(learned=False))
    got = _verdicts(judged["claims"])
    assert got["search"] == "reproduced"  # search only needs no training
    assert {got[k] for k in ("area", "to_k", "test", "medium")} == {"untestable here"}
    assert judged["claims"][1]["evidence"].startswith(f"control failed: {LEARNS}")


def test_null_world_does_not_reproduce():
    """√LTS-LH trained numbers drawn like the baselines': no training row may read reproduced
    beyond the intervals' error rate."""
    import random

    rng = random.Random(0)
    hits = 0
    for _ in range(20):
        change = {key: {m: [BASE[key]["lts"] * rng.uniform(0.9, 1.1) for _ in SEEDS]
                        for m in ("lts", "phs_star", "sqrt_lts_lh")}
                  for key in ("area", "test solved", "medium solved")}  # fmt: skip
        got = _verdicts(verdict(_results(change))["claims"])
        hits += sum(got[k] == "reproduced" for k in ("area", "test", "medium"))
    assert hits / 60 < 0.05
