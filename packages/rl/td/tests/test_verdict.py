"""verdict() on hand-built measurements: one row per claim, each able to fail on its own."""

import pytest

from icml26.td.verdict import CLAIMS, verdict
from icml26.testing.results import summarise

PROBLEMS = ("gamma=0.9 omega=0.02 chain=0", "gamma=0.99 omega=0.001 chain=0")
LAZY = "gamma=0.9 omega=0.02 chain=0 lazy=0.01"


def _slope(s: float | None, half: float = 0.1) -> dict | None:
    return None if s is None else {"slope": s, "low": s - half, "high": s + half}


def _err(mean: float | None) -> list[dict]:
    return [{"mean": mean, "se": None if mean is None else 1e-6}]


def _pair(ratio: float) -> dict:
    return {"ratio": ratio, "low": ratio / 1.5, "high": ratio * 1.5}


def _problem(sampling: str, slope=-1.0, prior=-1.0, floor_from=1e4, lazy=None) -> dict:
    rec = {
        "tau_mix": 5 if lazy is None else 500,
        "lazy eps": lazy,
        "method": _err(1e-4),
        "method slope": _slope(slope),
        "best last-iterate": [{"name": "constant 0.01", **_err(1e-4)[0]}],
        "best last-iterate slope": _slope(-1.0),
        "method vs best last-iterate at T_max": _pair(1.0),
    }
    if sampling == "markov":
        rec |= {
            "method slope": _slope(-0.6),  # the error's own slope is not what the rule reads
            "optimisation error slope": _slope(slope),
            "floor": {"slope at T_max": -0.7, "rate from T": floor_from},
            "best prior work": [{"name": "mixing-time 1", **_err(1e-4)[0]}],
            "best prior work slope": _slope(prior),
            "bias floor": [1e-5],
            "method vs best prior work at T_max": _pair(30.0),
            "tuned method vs best prior work at T_max": _pair(2.0),
        }
    return rec


def _results(overrides: dict | None = None, lazy: bool = False) -> dict:
    """Every problem meets both rules; ``overrides[(sampling, problem)]`` changes one."""
    overrides = overrides or {}
    studies = {
        s: {k: _problem(s, **overrides.get((s, k), {})) for k in PROBLEMS}
        for s in ("iid", "markov")
    }
    if lazy:
        studies["markov"][LAZY] = _problem("markov", **{"lazy": 0.01, **overrides.get(LAZY, {})})
    return {
        "horizons": [1000, 10_000, 100_000],
        "fit horizons": [10_000, 100_000],
        "runs": 10,
        "rate_slack": 0.2,
        "reg_scale": 1.0,
        "floor_horizon": 1e12,
        "studies": studies,
    }


def test_every_row_reproduced():
    judged = verdict(_results())
    claims, summary = judged["claims"], judged["verdict"]
    assert [c["claim"] for c in claims] == [CLAIMS["iid"], CLAIMS["markov"]]
    assert [c["verdict"] for c in claims] == ["reproduced"] * 2
    assert summary == "reproduced"
    assert "-1.00 [-1.10, -0.90]" in claims[0]["evidence"]
    assert "2/2" in claims[0]["evidence"] and "met on 2/2" in claims[1]["evidence"]
    assert "30x (worse on 2, better on 0)" in claims[1]["evidence"]  # constants are reported


def test_iid_rule_is_on_the_interval_and_inclusive():
    # interval [-0.9, -0.7]: ends above -0.8, not matched; [-1.0, -0.8]: exactly -0.8, matched
    claims = verdict(_results({("iid", PROBLEMS[0]): {"slope": -0.8}}))["claims"]
    assert claims[0]["verdict"] == "partly" and "1/2" in claims[0]["evidence"]
    claims = verdict(_results({("iid", PROBLEMS[0]): {"slope": -0.9}}))["claims"]
    assert claims[0]["verdict"] == "reproduced"
    assert claims[1]["verdict"] == "reproduced"  # the rows do not pool


def test_markov_rule_reads_the_optimisation_error_and_the_closed_form_floor():
    # optimisation error [-0.6, -0.4] while prior work shows the rate: not matched
    judged = verdict(_results({("markov", k): {"slope": -0.5} for k in PROBLEMS}))
    claims, summary = judged["claims"], judged["verdict"]
    assert [c["verdict"] for c in claims] == ["reproduced", "not reproduced"]
    assert summary == summarise(["reproduced", "not reproduced"]) == "partly"
    assert "Met on 0/2" in claims[1]["evidence"]
    # a floor that never reaches the rate fails the row, whatever the optimisation error does
    claims = verdict(_results({("markov", k): {"floor_from": None} for k in PROBLEMS}))["claims"]
    assert claims[1]["verdict"] == "not reproduced"
    # the same miss where the floor reaches the rate only past the first fitted horizon: the
    # horizons are pre-asymptotic, inconclusive
    late = {"slope": -0.5, "floor_from": 1e7}
    claims = verdict(_results({("markov", k): late for k in PROBLEMS}))["claims"]
    assert claims[1]["verdict"] == "inconclusive" and "inconclusive on 2" in claims[1]["evidence"]
    # one problem straddling -0.8, the other met: partly
    claims = verdict(_results({("markov", PROBLEMS[0]): {"slope": -0.8}}))["claims"]
    assert claims[1]["verdict"] == "partly"


def test_a_slow_chain_where_prior_work_shows_no_rate_is_inconclusive_not_a_miss():
    results = _results({LAZY: {"slope": -0.3, "prior": -0.3}}, lazy=True)
    judged = verdict(results)
    markov = judged["claims"][1]
    assert judged["controls"][1]["passed"]  # the control asks the rate on the chains as drawn
    assert (
        markov["verdict"] == "partly"
        and "lazy eps=0.01 (1 chains, tau_mix 500)" in markov["evidence"]
    )
    assert "inconclusive on 1" in markov["evidence"]
    # where prior work shows the rate on the slow chain, the method's miss counts
    judged = verdict(_results({LAZY: {"slope": -0.3}}, lazy=True))
    assert "inconclusive on 0" in judged["claims"][1]["evidence"]


@pytest.mark.parametrize("sampling", ["iid", "markov"])
def test_a_diverged_method_never_matches(sampling):
    claims = verdict(_results({(sampling, k): {"slope": None} for k in PROBLEMS}))["claims"]
    row = claims[0 if sampling == "iid" else 1]
    assert row["verdict"] == "not reproduced" and "diverged" in row["evidence"]


def test_a_diverged_prior_work_leaves_the_markov_row_untestable():
    """Prior work that diverges cannot show the rate the claim compares with: on every problem,
    the row is untestable; on one, the method's miss there is inconclusive."""
    claims = verdict(_results({("markov", k): {"prior": None} for k in PROBLEMS}))["claims"]
    assert claims[1]["verdict"] == "untestable here" and "0/2 problems" in claims[1]["evidence"]
    claims = verdict(_results({("markov", PROBLEMS[0]): {"prior": None, "slope": -0.5}}))["claims"]
    assert claims[1]["verdict"] == "partly" and "inconclusive on 1" in claims[1]["evidence"]


def test_a_miss_counts_only_where_the_tuned_baseline_shows_the_rate():
    """The control reads the claim's own rule (interval end), problem by problem: a baseline
    whose interval only reaches -0.8 with its lower end does not show the rate."""
    straddling = {"slope": -0.5}
    results = _results({("iid", k): straddling for k in PROBLEMS})
    results["studies"]["iid"][PROBLEMS[0]]["best last-iterate slope"] = _slope(-0.8)
    judged = verdict(results)
    assert judged["controls"][0]["passed"] and "1/2 problems" in judged["controls"][0]["evidence"]
    # missed where the baseline shows the rate, inconclusive where it does not
    assert judged["claims"][0]["verdict"] == summarise(["not reproduced", "inconclusive"])
    assert "Met on 0/2 problems, inconclusive on 1" in judged["claims"][0]["evidence"]
    results["studies"]["iid"][PROBLEMS[0]]["best last-iterate slope"] = _slope(-1.0)
    assert verdict(results)["claims"][0]["verdict"] == "not reproduced"  # shown on both
    for r in results["studies"]["iid"].values():
        r["best last-iterate slope"] = _slope(-0.8)
    judged = verdict(results)  # no problem shows the rate: the control fails
    assert judged["claims"][0]["verdict"] == "untestable here"


def test_verdict_is_pure():
    results = _results({("iid", PROBLEMS[1]): {"slope": -0.3}})
    assert verdict(results) == verdict(results)
    assert results == _results({("iid", PROBLEMS[1]): {"slope": -0.3}})


def test_a_straddling_interval_is_inconclusive_not_a_miss():
    straddle = {"slope": -0.8}  # [-0.9, -0.7] straddles -0.8
    claims = verdict(_results({("iid", k): straddle for k in PROBLEMS}))["claims"]
    assert claims[0]["verdict"] == "inconclusive"
    claims = verdict(_results({("iid", k): {"slope": -0.5} for k in PROBLEMS}))["claims"]
    assert claims[0]["verdict"] == "not reproduced"  # [-0.6, -0.4]: short of -0.8 throughout


def test_rows_rest_on_their_rate_controls():
    judged = verdict(_results())
    assert [c["passed"] for c in judged["controls"]] == [True, True]
    assert all(row["controls"] for row in judged["claims"])
    assert judged["counts"]["reproduced"] == 2


def test_horizons_too_short_for_the_tuned_baseline_make_the_iid_row_untestable():
    results = _results()
    for r in results["studies"]["iid"].values():
        r["best last-iterate slope"] = _slope(-0.4)  # even tuned in hindsight, no rate shows
    judged = verdict(results)
    iid = judged["claims"][0]
    assert iid["verdict"] == "untestable here" and iid["evidence"].startswith("control failed")
    assert judged["claims"][1]["verdict"] == "reproduced"


def test_null_world_does_not_reproduce():
    """An error that does not decay (slopes around 0, with bootstrap noise) while prior work
    shows the rate: neither row may read reproduced."""
    import random

    rng = random.Random(0)
    for _ in range(20):
        world = {
            (s, k): {"slope": rng.gauss(0.0, 0.05), "prior": -1.0}
            for s in ("iid", "markov")
            for k in PROBLEMS
        }  # the Markov slope is the optimisation error's: it does not decay either
        judged = verdict(_results(world))
        assert all(c["verdict"] != "reproduced" for c in judged["claims"]), judged["claims"]
        assert judged["verdict"] == "not reproduced"
