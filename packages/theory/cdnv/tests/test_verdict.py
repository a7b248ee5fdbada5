"""verdict() on hand-built measurements: one row per claim, each able to fail on its own."""

import copy

import pytest

from icml26.cdnv._results import summarise
from icml26.cdnv.demo import CLAIMS, verdict

ROWS = list(CLAIMS)  # collapse, holds, tracks, orthogonal


def _passing() -> dict:
    """Every claim holds: V~ falls 4x (V 1.3x), bound above error and 2.4x it at m = 5,
    decision axes |cos| 0.1 against 0.7 for the random encoder."""
    history = [{"epoch": 0, "V": 1.6, "V~": 0.08}, {"epoch": 10, "V": 1.2, "V~": 0.02}]
    table = {"2-way": {"shots": [1, 5], "error": [0.1, 0.05], "bound": [0.3, 0.12]}}
    return {
        "objectives": ["simclr", "vicreg"],
        "dynamics": {"simclr": copy.deepcopy(history), "vicreg": copy.deepcopy(history)},
        "fewshot": {k: copy.deepcopy(table) for k in ("raw pixels", "simclr", "vicreg")},
        "mean |cos|": {"raw input": 0.7, "random encoder": 0.7, "simclr": 0.1, "vicreg": 0.1},
        "collapse_factor": 2.0,
        "track_factor": 3.0,
        "orthogonal_cos": 0.2,
    }


def _break(r: dict, row: str, objectives=("simclr", "vicreg")) -> dict:
    """Make one claim fail (for the given objectives where the claim is per objective)."""
    for obj in objectives:
        if row == "collapse":
            r["dynamics"][obj][-1]["V~"] = 0.06  # falls 1.33x: below 2x
        elif row == "tracks":
            r["fewshot"][obj]["2-way"]["bound"][1] = 0.5  # 10x the error at m = 5
        elif row == "orthogonal":
            r["mean |cos|"][obj] = 0.3
    if row == "holds":
        r["fewshot"]["raw pixels"]["2-way"]["bound"][0] = 0.05  # below the error 0.1 at m = 1
    return r


def test_every_row_reproduced():
    claims, summary = verdict(_passing())
    assert [c["claim"] for c in claims] == [CLAIMS[k] for k in ROWS]
    assert [c["verdict"] for c in claims] == ["reproduced"] * 4
    assert summary == "reproduced"
    assert "V~ 0.0800 -> 0.0200 (4.00x)" in claims[0]["evidence"]
    assert "6/6" in claims[1]["evidence"]
    assert "2.4x" in claims[2]["evidence"]
    assert "simclr 0.100" in claims[3]["evidence"]


@pytest.mark.parametrize("failing", ROWS)
def test_only_one_row_fails(failing):
    claims, summary = verdict(_break(_passing(), failing))
    expected = ["not reproduced" if k == failing else "reproduced" for k in ROWS]
    assert [c["verdict"] for c in claims] == expected
    assert summary == summarise(expected) == "partly"


@pytest.mark.parametrize("row", ["collapse", "tracks", "orthogonal"])
def test_one_objective_failing_is_partly(row):
    claims, summary = verdict(_break(_passing(), row, objectives=("vicreg",)))
    assert claims[ROWS.index(row)]["verdict"] == "partly"
    assert "1/2" in claims[ROWS.index(row)]["evidence"]
    assert summary == "partly"


def test_collapse_needs_v_tilde_to_fall_more_than_v():
    r = _passing()
    for obj in r["objectives"]:
        r["dynamics"][obj][-1]["V"] = 0.3  # V falls 5.3x, more than V~'s 4x
    assert verdict(r)[0][0]["verdict"] == "not reproduced"


def test_orthogonal_needs_to_beat_the_random_encoder():
    r = _passing()
    r["mean |cos|"]["random encoder"] = 0.05
    assert verdict(r)[0][3]["verdict"] == "not reproduced"


def test_every_row_failing_is_not_reproduced():
    r = _passing()
    for row in ROWS:
        _break(r, row)
    claims, summary = verdict(r)
    assert [c["verdict"] for c in claims] == ["not reproduced"] * 4
    assert summary == "not reproduced"


def test_verdict_is_pure():
    r = _passing()
    assert verdict(r) == verdict(r)
    assert r == _passing()
