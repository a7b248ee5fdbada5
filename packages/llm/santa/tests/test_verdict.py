"""verdict(): one row per mode and claim plus the speed row, each rule on hand-built
measurements, and the summary."""

import copy

import pytest

from icml26.santa.verdict import NOISE_FLOOR, verdict

MODES = ["iid", "systematic", "tile_fixed", "tile_prop"]
CELLS = [(2048, 0.1), (2048, 0.9), (8192, 0.5)]


def ci(mean: float, half: float = 0.005) -> dict:
    return {"mean": mean, "lo": mean - half, "hi": mean + half}


def measured() -> dict:
    """Measurements in which every claim holds."""
    decode = {}
    for L in ("2048", "4096"):
        decode[L] = {"S": 1024, "block_n": 32, "prompts": 20, "free tokens": 128}
        decode[L]["dense"] = {"perplexity": ci(1.5)}
        decode[L]["noise floor"] = {"agreement": ci(0.9995, 0.0005)}
        for m in MODES:
            decode[L][m] = {
                "agreement": ci(0.996),
                "kl": ci(0.001),
                "perplexity": ci(1.5),
                "perplexity ratio": ci(1.0),
                "tokens equal to dense greedy": ci(100.0),
                "read fraction": 0.2,
            }
    perplexity = {
        L: {"S": 1024, "block_n": 32, "prompts": 20, "tokens": 64, "dense": {"perplexity": ci(3.0)}}
        | {m: {"perplexity": ci(3.0), "perplexity ratio": ci(1.0), "kl": ci(0.001),
               "agreement": ci(0.99)} for m in MODES}
        for L in ("2048", "4096")
    }  # fmt: skip
    needle = {
        f"L={L} depth={d}": {
            "length": L,
            "depth": d,
            "trials": 20,
            **{n: {"found": 18, "answers": []} for n in ["dense", *MODES]},
        }
        for L, d in CELLS
    }
    estimator = {
        f"L=2048 {m} d={d}": {
            "context": 2048,
            "mode": m,
            "draws per tile": d,
            "S": 64 * d,
            "block_n": 32,
            "error": 0.1,
            "read fraction": 0.1,
            "max |z| of the mean": 2.0,
            "exact bias": 1e-15,
        }
        for m in MODES
        for d in (1, 16)
    }
    return {
        "modes": list(MODES),
        "estimator": estimator,
        "decode": decode,
        "perplexity": perplexity,
        "needle": needle,
        "device": "cpu",
    }


def verdicts(results: dict) -> list[str]:
    return [row["verdict"] for row in verdict(results)["claims"]]


ALL_HELD = ["reproduced"] * 10 + ["untestable here"]  # decode x4, needle x4, bias x2, speed


def test_every_claim_holds_and_speed_is_untestable_on_a_cpu():
    judged = verdict(measured())
    claims, summary = judged["claims"], judged["verdict"]
    assert verdicts(measured()) == ALL_HELD and summary == "reproduced"
    assert [c["claim"].split(",")[0] for c in claims[:4]] == [f"SANTA ({m}" for m in MODES]
    assert "needle" in claims[4]["claim"]
    assert ["(systematic)" in claims[8]["claim"], "(tile_fixed)" in claims[9]["claim"]] == [1, 1]
    assert "99.6%" in claims[0]["evidence"] and "1.3x" in claims[10]["claim"]


@pytest.mark.parametrize(
    ("agreement", "ratio", "expected"),
    [
        (ci(0.98), ci(1.0), "not reproduced"),  # agreement interval wholly below 99%
        (ci(0.99, 0.01), ci(1.0), "partly"),  # straddles 99% at one context, holds at the other
        (ci(0.996), ci(1.03, 0.005), "not reproduced"),  # perplexity wholly above x1.02
        (ci(0.996), ci(1.015, 0.01), "partly"),  # perplexity straddles x1.02 at one context
    ],
)
@pytest.mark.parametrize("i", [0, 2])
def test_decode_rule_at_one_context_fails_that_mode_alone(i, agreement, ratio, expected):
    results = measured()
    results["decode"]["4096"][MODES[i]]["agreement"] = agreement
    results["perplexity"]["4096"][MODES[i]]["perplexity ratio"] = ratio
    want = list(ALL_HELD)
    want[i] = expected
    judged = verdict(results)
    claims, summary = judged["claims"], judged["verdict"]
    assert [c["verdict"] for c in claims] == want and summary == "partly"
    assert f"{agreement['mean']:.1%}" in claims[i]["evidence"]


@pytest.mark.parametrize(("missed", "held"), [(2, True), (3, False)])
def test_needle_slack_is_two_trials_per_cell(missed, held):
    results = measured()
    results["needle"]["L=8192 depth=0.5"]["tile_fixed"]["found"] = 18 - missed
    expected = list(ALL_HELD)
    expected[4 + 2] = "reproduced" if held else "not reproduced"
    assert verdicts(results) == expected


def test_needle_is_untestable_when_dense_finds_under_half_everywhere():
    results = measured()
    for c in results["needle"].values():
        c["dense"]["found"] = 9
    claims = verdict(results)["claims"]
    assert [c["verdict"] for c in claims[4:8]] == ["untestable here"] * 4


def test_a_cell_dense_decode_fails_does_not_count():
    results = measured()
    cell = results["needle"]["L=8192 depth=0.5"]
    cell["dense"]["found"], cell["tile_fixed"]["found"] = 3, 0
    assert verdicts(results) == ALL_HELD


def test_no_needle_no_needle_rows():
    results = measured()
    results["needle"] = {}
    assert verdicts(results) == ["reproduced"] * 6 + ["untestable here"]


def test_an_exact_bias_above_the_rule_fails_unbiasedness():
    results = measured()
    results["estimator"]["L=2048 tile_fixed d=16"]["exact bias"] = 3e-4
    expected = list(ALL_HELD)
    expected[9] = "not reproduced"
    claims = verdict(results)["claims"]
    assert [c["verdict"] for c in claims] == expected and "0.0003" in claims[9]["evidence"]


def test_only_the_estimators_the_paper_calls_unbiased_get_a_bias_row():
    results = measured()
    results["estimator"]["L=2048 tile_prop d=16"]["exact bias"] = 3e-2  # rounding: no row
    assert verdicts(results) == ALL_HELD


def test_nothing_holds():
    results = measured()
    for m in MODES:
        for L in results["decode"]:
            results["decode"][L][m]["agreement"] = ci(0.5)
            results["perplexity"][L][m]["perplexity ratio"] = ci(1.5)
        for c in results["needle"].values():
            c[m]["found"] = 0
        for r in results["estimator"].values():
            r["exact bias"] = 1.0
    assert verdict(results)["verdict"] == "not reproduced"


def test_verdict_is_pure():
    results = measured()
    before = copy.deepcopy(results)
    assert verdict(results) == verdict(results)
    assert results == before


def test_decode_rows_rest_on_a_measured_noise_floor():
    results = measured()
    for r in results["decode"].values():
        del r["noise floor"]
    judged = verdict(results)
    assert [c["verdict"] for c in judged["claims"][:4]] == ["untestable here"] * 4
    assert judged["claims"][0]["evidence"].startswith(f"control failed: {NOISE_FLOOR}")
    assert "not measured" in judged["controls"][0]["evidence"]
    # dense against itself below the threshold: a 99% rule would read numerical noise
    results = measured()
    results["decode"]["4096"]["noise floor"] = {"agreement": ci(0.985)}
    assert verdicts(results)[:4] == ["untestable here"] * 4


def test_null_world_does_not_reproduce():
    """SANTA decoding no better than a model whose agreement sits at 97-99% with noise: no
    decode row may read reproduced."""
    import random

    rng = random.Random(0)
    for _ in range(20):
        results = measured()
        for L in results["decode"]:
            for m in MODES:
                a = rng.uniform(0.97, 0.99)
                results["decode"][L][m]["agreement"] = ci(a, 0.004)
        assert "reproduced" not in verdicts(results)[:4]


def test_straddling_at_every_context_is_inconclusive():
    results = measured()
    for L in results["decode"]:
        results["decode"][L]["iid"]["agreement"] = ci(0.99, 0.01)
    assert verdicts(results)[0] == "inconclusive"
