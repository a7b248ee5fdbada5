"""verdict(): one row per claim, each rule on hand-built measurements, the summary of the rows."""

import copy
import statistics

import pytest

from icml26.lucid.demo import verdict

BUDGET = 600


def _mqar_runs(steps: list[int | None]) -> dict:
    return {
        "solved": sum(s is not None for s in steps),
        "median steps to solve (unsolved = budget)": statistics.median(
            BUDGET if s is None else s for s in steps
        ),
        "steps per seed": steps,
        "final accuracy per seed": [0.95 if s is not None else 0.5 for s in steps],
    }


def measured(
    lucid_probe: float = 0.95,
    lucid_steps: tuple = (150, 200, 175),
    softmax_steps: tuple = (250, None, 300),
    lucid_loss: float = 2.0,
    settings: int = 1,
) -> dict:
    """Measurements in which every claim holds, unless an argument says otherwise."""
    runs = {"softmax": _mqar_runs(list(softmax_steps)), "lucid": _mqar_runs(list(lucid_steps))}
    return {
        "probe": {
            "cluster sizes": [1, 4, 32],
            "trials": 64,
            "softmax (T=1)": [1.0, 0.55, 0.21],
            "softmax (T=0.5)": [1.0, 0.62, 0.25],
            "LUCID": [1.0, 0.99, lucid_probe],
        },
        "mqar": {f"T={24 * (i + 1)} pairs=2": copy.deepcopy(runs) for i in range(settings)},
        "mqar budget": BUDGET,
        "char LM": {
            "softmax": [{"held-out loss": 2.1, "train loss": 2.0}],
            "lucid": [{"held-out loss": lucid_loss, "train loss": 1.9}],
        },
        "device": "cpu",
    }


def verdicts(results: dict) -> list[str]:
    return [row["verdict"] for row in verdict(results)[0]]


def test_every_claim_holds():
    claims, summary = verdict(measured())
    assert [c["verdict"] for c in claims] == ["reproduced"] * 3
    assert summary == "reproduced"
    assert "probe" in claims[0]["claim"] and "MQAR T=24 pairs=2" in claims[1]["claim"]
    assert "0.950" in claims[0]["evidence"] and "3/3" in claims[1]["evidence"]


def test_probe_fails_alone():
    # LUCID beats T=1 by 0.1 but T=0.5 (0.25) by only 0.09 at the largest cluster.
    claims, summary = verdict(measured(lucid_probe=0.34))
    assert [c["verdict"] for c in claims] == ["not reproduced", "reproduced", "reproduced"]
    assert summary == "partly"
    assert verdicts(measured(lucid_probe=0.35)) == ["reproduced"] * 3


@pytest.mark.parametrize(
    "lucid_steps, softmax_steps",
    [
        ((None, None, 300), (250, None, 300)),  # fewer seeds solved
        ((300, 320, 340), (250, 260, 270)),  # as many, but more median steps
        ((None, None, None), (None, None, None)),  # neither solves: nothing shown
    ],
)
def test_mqar_fails_alone(lucid_steps, softmax_steps):
    claims, summary = verdict(measured(lucid_steps=lucid_steps, softmax_steps=softmax_steps))
    assert [c["verdict"] for c in claims] == ["reproduced", "not reproduced", "reproduced"]
    assert summary == "partly"


def test_mqar_more_seeds_solved_is_enough():
    # LUCID solves 2 seeds, softmax 1: reproduced even with a later median.
    results = measured(lucid_steps=(500, 550, None), softmax_steps=(100, None, None))
    assert verdicts(results)[1] == "reproduced"


def test_each_mqar_setting_is_its_own_row():
    results = measured(settings=2)
    results["mqar"]["T=48 pairs=2"]["lucid"] = _mqar_runs([None, None, None])
    claims, summary = verdict(results)
    assert [c["verdict"] for c in claims] == [
        "reproduced",
        "reproduced",
        "not reproduced",
        "reproduced",
    ]
    assert "T=48" in claims[2]["claim"] and summary == "partly"


def test_lm_fails_alone():
    # 2.15 > 1.02 x 2.1 = 2.142; 2.14 is within.
    claims, summary = verdict(measured(lucid_loss=2.15))
    assert [c["verdict"] for c in claims] == ["reproduced", "reproduced", "not reproduced"]
    assert summary == "partly"
    assert verdicts(measured(lucid_loss=2.14)) == ["reproduced"] * 3


def test_nothing_holds():
    results = measured(lucid_probe=0.3, lucid_steps=(None,) * 3, lucid_loss=3.0)
    assert verdict(results)[1] == "not reproduced"


def test_lm_seeds_give_mean_and_std():
    results = measured()
    results["char LM"]["lucid"].append({"held-out loss": 2.2, "train loss": 2.0})
    claims, _ = verdict(results)
    assert "2.1000 ± 0.1414" in claims[2]["evidence"] and "2 seed(s)" in claims[2]["evidence"]


def test_verdict_is_pure():
    results = measured()
    before = copy.deepcopy(results)
    assert verdict(results) == verdict(results)
    assert results == before
