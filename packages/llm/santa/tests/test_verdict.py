"""verdict(): one row per mode and claim, each rule on hand-built measurements, the summary."""

import copy

import pytest

from icml26.santa.demo import verdict

MODES = ["iid", "systematic", "tile_fixed", "tile_prop"]


def measured(samples=(16, 64, 256), lengths=("2048", "4096")) -> dict:
    """Measurements in which every claim holds (every mode agrees and finds the needle)."""
    decode = {
        f"{m} S={S}": {"greedy agreement": 1.0, "mean KL": 0.01, "read fraction": 0.04}
        for m in MODES
        for S in samples
    }
    needle = {
        L: {name: {"answer": "48213", "found": True} for name in ["dense", *MODES]} for L in lengths
    }
    return {
        "modes": list(MODES),
        "samples": list(samples),
        "decode tokens": 32,
        "needle samples": 64,
        "estimator": {},
        "decode": decode,
        "needle": needle,
        "device": "cpu",
    }


def verdicts(results: dict) -> list[str]:
    return [row["verdict"] for row in verdict(results)[0]]


def test_every_claim_holds():
    claims, summary = verdict(measured())
    assert verdicts(measured()) == ["reproduced"] * 8 and summary == "reproduced"
    assert [c["claim"].split(",")[0] for c in claims[:4]] == [f"SANTA ({m}" for m in MODES]
    assert "S=64" in claims[0]["claim"] and "100.0%" in claims[0]["evidence"]
    assert "needle" in claims[4]["claim"]


@pytest.mark.parametrize("i", range(len(MODES)))
def test_agreement_fails_alone(i):
    results = measured()
    results["decode"][f"{MODES[i]} S=64"]["greedy agreement"] = 0.98
    results["decode"][f"{MODES[i]} S=256"]["greedy agreement"] = 1.0  # only S = 64 is judged
    expected = ["reproduced"] * 8
    expected[i] = "not reproduced"
    claims, summary = verdict(results)
    assert [c["verdict"] for c in claims] == expected and summary == "partly"
    assert "98.0%" in claims[i]["evidence"]


@pytest.mark.parametrize("i", range(len(MODES)))
def test_needle_fails_alone(i):
    results = measured()
    results["needle"]["4096"][MODES[i]]["found"] = False
    expected = ["reproduced"] * 8
    expected[4 + i] = "not reproduced"
    claims, summary = verdict(results)
    assert [c["verdict"] for c in claims] == expected and summary == "partly"
    assert "found at 2048 of 2048, 4096" in claims[4 + i]["evidence"]


def test_a_needle_dense_decode_misses_does_not_count():
    results = measured()
    results["needle"]["4096"]["dense"]["found"] = False
    results["needle"]["4096"]["tile_fixed"]["found"] = False
    assert verdicts(results) == ["reproduced"] * 8


def test_needle_that_dense_decode_never_finds_is_untestable():
    results = measured()
    for r in results["needle"].values():
        r["dense"]["found"] = False
    claims, summary = verdict(results)
    assert [c["verdict"] for c in claims[4:]] == ["untestable here"] * 4
    assert summary == "reproduced"  # the agreement rows still decide


def test_no_needle_no_needle_rows():
    results = measured()
    results["needle"] = {}
    assert verdicts(results) == ["reproduced"] * 4


def test_largest_samples_when_64_is_not_run():
    results = measured(samples=(16, 256))
    results["decode"]["systematic S=16"]["greedy agreement"] = 0.5
    claims, _ = verdict(results)
    assert all("S=256" in c["claim"] for c in claims[:4])
    assert verdicts(results) == ["reproduced"] * 8


def test_nothing_holds():
    results = measured()
    for m in MODES:
        results["decode"][f"{m} S=64"]["greedy agreement"] = 0.5
        results["needle"]["2048"][m]["found"] = False
    assert verdict(results)[1] == "not reproduced"


def test_verdict_is_pure():
    results = measured()
    before = copy.deepcopy(results)
    assert verdict(results) == verdict(results)
    assert results == before
