"""verdict() on hand-built measurements: one row per claim and data set, each able to fail."""

import copy

import pytest

from icml26.asbm._results import summarise
from icml26.asbm.demo import OT_FACTOR, verdict

ROWS = [(name, ref) for name in ("moons", "digits") for ref in ("CFM", "OT-CFM")]


def _rows(mmd_1: float, straightness_32: float) -> dict:
    return {
        "1": {"mmd": mmd_1, "sw2": 0.1, "straightness": 1.0},
        "32": {"mmd": 0.01, "sw2": 0.05, "straightness": straightness_32},
    }


def _problem() -> dict:
    """1-step MMD: ASBM 0.05, CFM 1.0, OT-CFM 0.04 (ASBM within 1.5x of it)."""
    return {
        "metrics": {
            "ASBM": _rows(0.05, 1.1),
            "ASBM distilled (1 step)": {"1": {"mmd": 0.04, "sw2": 0.1, "straightness": 1.0}},
            "CFM": _rows(1.0, 2.0),
            "OT-CFM": _rows(0.04, 1.02),
        },
        "stage 1 terminal": {"x1 mean": 0.0, "x1 std": 1.0, "target std": 1.0},
        "n test": 1000,
    }


def _results() -> dict:
    return {"steps": [1, 32], "problems": {"moons": _problem(), "digits": _problem()}}


def test_every_row_reproduced():
    claims, summary = verdict(_results())
    assert [c["verdict"] for c in claims] == ["reproduced"] * 4
    assert summary == "reproduced"
    assert claims[0]["claim"] == "moons: 1-step ASBM beats independent CFM (MMD)"
    assert claims[3]["claim"].startswith("digits: 1-step ASBM at least as good as OT-CFM")
    assert "ASBM 0.0500 vs independent CFM 1.0000" in claims[0]["evidence"]
    assert "ASBM 1.10 vs CFM 2.00" in claims[0]["evidence"]


@pytest.mark.parametrize("failing", ROWS)
def test_only_one_row_fails(failing):
    results = _results()
    name, ref = failing
    # CFM as good as ASBM: no longer beaten; OT-CFM 3x better: beyond the 1.5x tolerance
    results["problems"][name]["metrics"][ref]["1"]["mmd"] = 0.05 if ref == "CFM" else 0.05 / 3
    claims, summary = verdict(results)
    expected = ["not reproduced" if r == failing else "reproduced" for r in ROWS]
    assert [c["verdict"] for c in claims] == expected
    assert summary == summarise(expected) == "partly"


def test_ot_tolerance_is_inclusive():
    results = _results()
    results["problems"]["moons"]["metrics"]["OT-CFM"]["1"]["mmd"] = 0.05 / OT_FACTOR
    assert verdict(results)[0][1]["verdict"] == "reproduced"
    results["problems"]["moons"]["metrics"]["OT-CFM"]["1"]["mmd"] = 0.049 / OT_FACTOR
    assert verdict(results)[0][1]["verdict"] == "not reproduced"


def test_quick_run_has_only_the_toy_rows():
    results = _results()
    del results["problems"]["digits"]
    claims, summary = verdict(results)
    assert [c["claim"].split(":")[0] for c in claims] == ["moons", "moons"]
    assert summary == "reproduced"


def test_every_row_failing_is_not_reproduced():
    results = _results()
    for p in results["problems"].values():
        p["metrics"]["ASBM"]["1"]["mmd"] = 2.0
    claims, summary = verdict(results)
    assert [c["verdict"] for c in claims] == ["not reproduced"] * 4
    assert summary == "not reproduced"


def test_verdict_is_pure():
    results = _results()
    before = copy.deepcopy(results)
    assert verdict(results) == verdict(results)
    assert results == before
