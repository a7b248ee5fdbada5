"""verdict(): one row per model and baseline rate, the speed row, one per model and GPTQ rate."""

import copy
import math

import pytest

from icml26.entquant.verdict import interpolated_ratio, predicts, verdict


def _rows(ent_2: float = 0.001, ent_3: float = 0.0005) -> dict:
    """A rate-distortion table in which EntQuant wins at 3.5 and at 2.5 bits/param."""
    return {
        "original": {"bits/param": 32.0, "KL": 0.0, "perplexity": 3.3},
        "EntQuant lambda=0": {"bits/param": 6.8, "KL": 0.00001},
        "EntQuant lambda=3.9": {"bits/param": 4.3, "KL": 0.0002},
        "EntQuant lambda=14.5": {"bits/param": 3.36, "KL": ent_3},
        "EntQuant lambda=58": {"bits/param": 2.45, "KL": ent_2},
        "NF4": {"bits/param": 4.5, "KL": 0.0003},
        "RTN-3": {"bits/param": 3.5, "KL": 0.0006},
        "HQQ-3": {"bits/param": 3.5, "KL": 0.001},
        "RTN-2": {"bits/param": 2.5, "KL": 0.0056},
        "HQQ-2": {"bits/param": 2.5, "KL": 0.0048},
        "GPTQ-3": {"bits/param": 3.5, "KL": 0.0006},
        "GPTQ-2": {"bits/param": 2.5, "KL": 0.004},
    }


def _per_window(rows: dict, spread: float = 0.1, n: int = 16) -> dict:
    """Per-window distortions around each row's value (times 1 +- spread), in a pattern that
    differs between rows (so a paired bootstrap has something to resample)."""
    return {
        k: [v["KL"] * (1 + spread * math.sin(1.7 * i + len(k))) for i in range(n)]
        for k, v in rows.items()
        if "KL" in v
    }


def _set_rows(results: dict, model: str, rows: dict, spread: float = 0.1) -> dict:
    results["models"][model]["rows"] = rows
    results["models"][model]["per window"] = _per_window(rows, spread)
    return results


def measured(models=("tiny-gpt", "smollm2"), device="cuda:0", minutes=5.0) -> dict:
    """Measurements in which every testable claim holds (on a GPU, 70B in 5 minutes)."""
    rate = 70e9 / minutes / 60
    return {
        "models": {
            m: {
                "distortion": "KL",
                "rows": _rows(),
                "per window": _per_window(_rows()),
                "vocab": 256,
            }
            for m in models
        },
        "compression params/s": rate,
        "extrapolated 70B minutes": minutes,
        "threads": 2,
        "device": device,
    }


def verdicts(results: dict) -> list[str]:
    return [row["verdict"] for row in verdict(results)["claims"]]


ALL_HOLD = ["reproduced"] * 9  # 2 models x 2 rates, speed, 2 models x 2 GPTQ rates


def test_every_claim_holds():
    judged = verdict(measured())
    claims, summary = judged["claims"], judged["verdict"]
    assert [c["verdict"] for c in claims] == ALL_HOLD and summary == "reproduced"
    assert "at 3.50 bits/param on tiny-gpt" in claims[0]["claim"]
    assert "at 2.50 bits/param on smollm2" in claims[3]["claim"]
    assert "70B model" in claims[4]["claim"]
    assert "matches GPTQ-3 at 3.50 bits/param on tiny-gpt" in claims[5]["claim"]
    assert "matches GPTQ-2 at 2.50 bits/param on smollm2" in claims[8]["claim"]
    assert "interpolated between its 3.36- and 4.30-bit points" in claims[5]["evidence"]
    assert (
        "EntQuant lambda=14.5 (3.36 bits) KL 0.0005 vs RTN-3 0.0006, HQQ-3 0.001"
        in (claims[0]["evidence"])
    )


@pytest.mark.parametrize(
    "model, rate, change, row",
    [
        ("tiny-gpt", "3", {"ent_3": 0.0007}, 0),  # loses to RTN-3 (0.0006) at 3.5 bits
        ("tiny-gpt", "2", {"ent_2": 0.005}, 1),  # loses to HQQ-2 (0.0048) at 2.5 bits
        ("smollm2", "3", {"ent_3": 0.0007}, 2),
        ("smollm2", "2", {"ent_2": 0.005}, 3),
    ],
)
def test_one_rate_on_one_model_fails_alone(model, rate, change, row):
    results = measured()
    results["models"][model]["rows"] = _rows(**change)  # the per-window numbers stay: (c) holds
    expected = list(ALL_HOLD)
    expected[row] = "not reproduced"
    judged = verdict(results)
    claims, summary = judged["claims"], judged["verdict"]
    assert [c["verdict"] for c in claims] == expected and summary == "partly"
    assert f"{rate}.50 bits/param on {model}" in claims[row]["claim"]


def test_the_cheaper_point_counts_at_a_higher_rate():
    # lambda=14.5 loses at 3.5 bits, but lambda=58 (2.45 bits, cheaper) beats RTN-3 there.
    results = measured(models=("m",))
    results["models"]["m"]["rows"] = _rows(ent_3=0.0007, ent_2=0.0005)
    assert verdicts(results)[0] == "reproduced"


def test_no_entquant_point_at_or_below_the_rate_fails():
    results = measured(models=("m",))
    results["models"]["m"]["rows"]["EntQuant lambda=58"]["bits/param"] = 2.98
    judged = verdict(results)
    claims, summary = judged["claims"], judged["verdict"]
    assert [c["verdict"] for c in claims[:2]] == ["reproduced", "not reproduced"]
    assert summary == "partly"
    assert "no EntQuant point at or below 2.50 bits" in claims[1]["evidence"]


def test_rate_distortion_needs_a_baseline_below_4_bits():
    rows = {"EntQuant lambda=58": {"bits/param": 2.2, "KL": 1.0}, "NF4": {"bits/param": 4.5},
            "original": {"bits/param": 32.0, "KL": 0.0, "perplexity": 3.3}}  # fmt: skip
    results = measured(models=("m",))
    results["models"]["m"]["rows"] = rows
    judged = verdict(results)
    claims, summary = judged["claims"], judged["verdict"]
    # nothing to compare with is not evidence against the claim
    assert claims[0]["verdict"] == "untestable here"
    assert "no baseline below 4" in claims[0]["evidence"]
    assert summary == "reproduced"  # the GPU speed row holds; nothing testable failed


def test_speed_fails_alone_on_a_gpu():
    judged = verdict(measured(minutes=23 * 60))
    claims, summary = judged["claims"], judged["verdict"]
    assert [c["verdict"] for c in claims] == ["reproduced"] * 4 + ["not reproduced"] + [
        "reproduced"
    ] * 4
    assert summary == "partly" and "1,380 min" in claims[4]["evidence"]


@pytest.mark.parametrize("minutes", [5.0, 23 * 60])
def test_speed_measured_on_a_cpu_is_untestable(minutes):
    judged = verdict(measured(device="cpu", minutes=minutes))
    claims, summary = judged["claims"], judged["verdict"]
    assert (
        claims[4]["verdict"] == "untestable here"
        and "not measured on a GPU" in claims[4]["evidence"]
    )
    assert summary == "reproduced"


def test_no_timing_is_untestable():
    results = measured()
    results["compression params/s"] = results["extrapolated 70B minutes"] = None
    assert verdicts(results)[4] == "untestable here"


def test_nothing_holds():
    results = _set_rows(measured(models=("m",), minutes=1e4), "m", _rows(ent_3=1.0, ent_2=1.0))
    assert verdict(results)["verdict"] == "not reproduced"


def test_verdict_is_pure():
    results = measured()
    before = copy.deepcopy(results)
    assert verdict(results) == verdict(results)
    assert results == before


def test_a_win_with_rivals_missing_is_only_partly():
    results = {**measured(), "skipped baselines": ["NF4"]}
    claims = verdict(results)["claims"]
    assert [c["verdict"] for c in claims[:4]] == ["partly"] * 4
    assert all("not run (extra missing): NF4" in c["evidence"] for c in claims[:4])


def test_interpolation_is_log_linear_between_the_bracketing_points():
    points = [(2.0, [0.04] * 4), (4.0, [0.01] * 4), (6.0, [0.001] * 4)]
    ratio, lo, hi, (b0, b1) = interpolated_ratio(points, [0.02] * 4, 3.0)
    assert (b0, b1) == (2.0, 4.0)
    assert ratio == pytest.approx(math.sqrt(0.04 * 0.01) / 0.02)  # the geometric mean: 1.0
    assert lo == pytest.approx(ratio) and hi == pytest.approx(ratio)  # no spread, no width
    assert interpolated_ratio(points, [0.02] * 4, 1.5) is None  # below the sweep


@pytest.mark.parametrize(
    "gptq_kl, spread, verdict_, note",
    [
        # EntQuant's curve at 3.5 bits: 0.0005^0.851 * 0.0002^0.149 = 0.000437
        (0.0004, 0.05, "reproduced", "x1.09"),  # worse, but within the 1.2 margin
        (0.0002, 0.05, "not reproduced", "(worse)"),  # x2.2
        (0.00036, 0.9, "inconclusive", "(straddles)"),  # x1.2, windows far apart
        (0.001, 0.05, "reproduced", "x0.44"),
    ],
)
def test_a_gptq_row_is_judged_on_the_bootstrap_interval(gptq_kl, spread, verdict_, note):
    rows = _rows()
    rows["GPTQ-3"]["KL"] = gptq_kl
    results = _set_rows(measured(models=("m",)), "m", rows, spread)
    row = verdict(results)["claims"][3]
    assert "GPTQ-3" in row["claim"] and row["verdict"] == verdict_
    assert note in row["evidence"]


def test_gptq_not_run_or_outside_the_sweep_is_untestable():
    rows = {k: v for k, v in _rows().items() if not k.startswith("GPTQ")}
    claims = verdict(_set_rows(measured(models=("m",)), "m", rows))["claims"]
    assert claims[3]["verdict"] == "untestable here"
    assert "no GPTQ rate below 4 bits" in claims[3]["evidence"]
    rows = _rows()
    rows["GPTQ-2"]["bits/param"] = 2.2  # below EntQuant's cheapest point (2.45 bits)
    claims = verdict(_set_rows(measured(models=("m",)), "m", rows))["claims"]
    assert claims[4]["verdict"] == "untestable here" and "outside" in claims[4]["evidence"]


def test_a_model_that_has_not_learned_its_text_leaves_its_rows_untestable():
    results = measured(models=("tiny-gpt", "smollm2"))
    results["models"]["tiny-gpt"]["rows"]["original"]["perplexity"] = 200.0  # ~ uniform (256)
    judged = verdict(results)
    tiny = [c for c in judged["claims"] if "tiny-gpt" in c["claim"]]
    assert tiny and {c["verdict"] for c in tiny} == {"untestable here"}
    assert tiny[0]["evidence"].startswith(f"control failed: {predicts('tiny-gpt')}")
    smol = [c for c in judged["claims"] if "smollm2" in c["claim"]]
    assert {c["verdict"] for c in smol} == {"reproduced"}


def test_null_world_does_not_reproduce():
    """EntQuant's points lie on the baselines' own curve (same distortion at each rate, with
    window noise): neither the rate rows nor the GPTQ rows may read reproduced as wins."""
    rows = _rows(ent_2=0.0056, ent_3=0.0006)  # RTN's distortions at 2.5 / 3.5 bits
    rows["EntQuant lambda=14.5"]["bits/param"] = 3.5
    rows["EntQuant lambda=58"]["bits/param"] = 2.5
    rows["GPTQ-3"]["KL"], rows["GPTQ-2"]["KL"] = 0.0003, 0.0028  # GPTQ twice as good
    results = _set_rows(measured(models=("m",)), "m", rows, spread=0.3)
    got = [c["verdict"] for c in verdict(results)["claims"]]
    assert got[0] != "reproduced" and got[1] != "reproduced"  # ties RTN: no win
    assert all(v != "reproduced" for v in got[3:])  # x2 GPTQ's distortion: no match
