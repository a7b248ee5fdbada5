"""verdict() on hand-built measurements: one row per claim, each able to fail on its own."""

import pytest

from icml26.td._results import summarise
from icml26.td.demo import CLAIMS, verdict

ROWS = list(CLAIMS)  # (sampling, reference) in row order
OMEGAS = (0.02, 0.005)


def _summary(mean: float | None, se: float = 1e-5) -> dict:
    return {"mean": mean, "se": None if mean is None else se, "diverged": float(mean is None)}


def _setting(sampling: str, omega: float, exp=1e-3, oracle=1e-3, const=1e-3) -> dict:
    return {
        "sampling": sampling,
        "omega": omega,
        "exponential": _summary(exp),
        "oracle": _summary(oracle),
        "best constant": {"name": "constant 0.1", **_summary(const)},
        "best 1/sqrt(t)": {"name": "1/sqrt(t) 1", **_summary(1e-3)},
        "best tail-avg": {"name": "tail-avg constant 0.1", **_summary(1e-3)},
        "exp slope (last 3 T)": -1.0,
    }


def _results(overrides: dict | None = None) -> dict:
    """All settings matched; ``overrides[(sampling, omega)]`` replaces one setting's errors."""
    overrides = overrides or {}
    settings = [
        _setting(s, o, **overrides.get((s, o), {})) for s in ("iid", "markov") for o in OMEGAS
    ]
    return {"horizons": [1000, 10_000], "runs": 10, "match_factor": 2.0, "settings": settings}


def _key(ref: str) -> str:
    return {"oracle": "oracle", "best constant": "const"}[ref]


def test_every_row_reproduced():
    claims, summary = verdict(_results())
    assert [c["claim"] for c in claims] == [CLAIMS[r] for r in ROWS]
    assert [c["verdict"] for c in claims] == ["reproduced"] * 4
    assert summary == "reproduced"
    assert "1.00e-03 ± 1.0e-05" in claims[0]["evidence"]
    assert "2/2" in claims[0]["evidence"]


@pytest.mark.parametrize("failing", ROWS)
def test_only_one_row_fails(failing):
    sampling, ref = failing
    # exponential 3x worse than this reference at every omega: beyond the 2x tolerance
    overrides = {(sampling, o): {_key(ref): 1e-3 / 3} for o in OMEGAS}
    claims, summary = verdict(_results(overrides))
    expected = ["not reproduced" if r == failing else "reproduced" for r in ROWS]
    assert [c["verdict"] for c in claims] == expected
    assert summary == summarise(expected) == "partly"
    assert "0/2" in claims[ROWS.index(failing)]["evidence"]


def test_half_the_omegas_is_partly_and_the_tolerance_is_inclusive():
    overrides = {
        ("iid", 0.02): {"oracle": 0.5e-3},  # exactly 2x: matched
        ("iid", 0.005): {"oracle": 0.49e-3},  # just above 2x: not matched
    }
    claims, summary = verdict(_results(overrides))
    assert claims[0]["verdict"] == "partly"
    assert "1/2" in claims[0]["evidence"]
    assert summary == "partly"


def test_divergence():
    # a diverged exponential run never matches; a diverged reference is matched by a finite one
    overrides = {(s, o): {"exp": None} for s in ("iid", "markov") for o in OMEGAS}
    claims, summary = verdict(_results(overrides))
    assert [c["verdict"] for c in claims] == ["not reproduced"] * 4
    assert summary == "not reproduced"
    assert "diverged" in claims[0]["evidence"]
    claims, _ = verdict(_results({("iid", 0.02): {"oracle": None}}))
    assert claims[0]["verdict"] == "reproduced"


def test_verdict_is_pure():
    results = _results({("markov", 0.02): {"const": 1e-4}})
    assert verdict(results) == verdict(results)
    assert results == _results({("markov", 0.02): {"const": 1e-4}})
