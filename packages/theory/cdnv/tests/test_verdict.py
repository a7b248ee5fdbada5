"""verdict() on hand-built measurements: one row per claim, each able to fail on its own."""

import copy

import pytest

from icml26.cdnv.demo import _headline as verdict_headline
from icml26.cdnv.verdict import (
    CLAIMS,
    ORACLE,
    ORACLE_TRACKS,
    RANDOM_AXES,
    RATIO,
    TRANSFER,
    WHITENED_PASSES,
    interval,
    random_direction_cos,
    slack_left,
    spearman_gap,
    verdict,
)
from icml26.testing.results import summarise

ROWS = list(CLAIMS)  # collapse, holds, tracks, explains, orthogonal
OBJ = ("simclr", "vicreg")
SEEDS = (0, 1, 2)
PAIRS = {"pairs within bound": 30, "pairs": 30}


def _fewshot(error: float, bound: float) -> dict:
    t = {"shots": [1, 5], "error": [2 * error, error], "bound (authors)": [0.9, bound]}
    t["bound (ours)"] = [0.95, 0.9]
    return {"2-way": copy.deepcopy(t), "all-way": copy.deepcopy(t)}


def _entry(dataset, encoder, seed, V, ratio, error, bound, start=None) -> dict:
    x = {
        "dataset": dataset,
        "encoder": encoder,
        "seed": seed,
        "V": V,
        "V~": ratio * V / 64,
        "V~ d / V": 40 * ratio,  # the nominal-d ratio, reported only
        RATIO: ratio,
        "fewshot": _fewshot(error, bound),
    }
    if start is not None:  # V~ / V falls from 0.1 to 0.05, d_eff stays
        x["dynamics"] = [
            {"epoch": 0, RATIO: start, "V": 3.0, "V~": 0.3, "d_eff": 8.0},
            {"epoch": 10, RATIO: ratio, "V": V, "V~": 0.05 * V, "d_eff": 8.0},
        ]
    return x


def _passing() -> dict:
    """Every claim holds: V~ d / V falls from 1.5 to ~0.5 (raw pixels 2.0), the bound is 2x the
    error at m = 5, error ranks with V~ (not with V), decision axes |cos| ~0.07 against 0.7 at
    random and 0.16 for random directions."""
    runs, nulls = [], []
    for d in ("digits", "mnist"):
        for s in SEEDS:
            jitter = 0.01 * s
            # error grows with V~ (ratio) while V runs the other way
            for k, o in enumerate(OBJ):
                ratio = 0.4 + 0.1 * k + jitter
                runs.append(
                    _entry(d, o, s, 2.0 - 0.2 * k, ratio, 0.1 + 0.05 * k, 0.2 + 0.1 * k, 1.5)
                )
            runs.append(_entry(d, "supervised", s, 2.5, 0.2 + jitter, 0.08, 0.16, 1.5))
            nulls.append(_entry(d, "random encoder", s, 1.0, 1.5 + jitter, 0.3, 0.6))
            nulls.append(_entry(d, "raw pixels", s, 0.8, 2.0 + jitter, 0.4, 0.8))
            nulls.append(_entry(d, ORACLE, s, 0.1, 1.1 + jitter, 0.01, 0.05))
    mt = [
        {
            "seed": s,
            "raw input": {"mean |cos|": 0.72, "mean bound": 1.0, **PAIRS},
            "whitened input": {"mean |cos|": 0.04 + 0.005 * s, "mean bound": 0.4, **PAIRS},
            "random directions": {"mean |cos|": 0.15 + 0.01 * s},
            "random encoder": {"mean |cos|": 0.70 + 0.01 * s, "mean bound": 1.0, **PAIRS},
            **{o: {"mean |cos|": 0.06 + 0.01 * s, "mean bound": 0.5, **PAIRS} for o in OBJ},
        }
        for s in SEEDS
    ]
    return {
        "datasets": ["digits", "mnist"],
        "objectives": list(OBJ),
        "references": ["supervised"],
        "seeds": list(SEEDS),
        "runs": runs,
        "nulls": nulls,
        "multitask": mt,
        "track_factor": 3.0,
        "feature_dim": 64,
        "axes_dim": 32,  # random directions in R^32: E|cos| 0.142
    }


def _break(r: dict, row: str, objectives=OBJ) -> dict:
    """Make one claim fail (for the given objectives where the claim is per objective)."""
    for x in r["runs"]:
        if x["encoder"] not in objectives:
            continue
        if row == "collapse":
            x["dynamics"][0][RATIO] = 3.0
            x["dynamics"][-1][RATIO] = 2.5  # falls, but ends above 1
        elif row == "tracks":
            for t in x["fewshot"].values():
                t["bound (authors)"][1] = 10 * t["error"][1]
    if row == "holds":
        r["runs"][0]["fewshot"]["2-way"]["bound (authors)"][0] = 0.05  # below the error
    if row == "explains":  # error now ranks with V, against V~
        for x in r["nulls"]:
            if x["encoder"] == "raw pixels":
                x["V"] = 3.0  # raw pixels keep transferring worst (V~ stays as it was)
        for x in r["runs"] + r["nulls"]:
            for t in x["fewshot"].values():
                t["error"][1] = x["V"] / 10
                t["bound (authors)"][1] = 2 * t["error"][1]  # still tracks
    if row == "orthogonal":
        for m in r["multitask"]:
            for o in objectives:
                m[o]["mean |cos|"] = 0.3
    return r


def test_every_row_reproduced():
    judged = verdict(_passing())
    claims, summary = judged["claims"], judged["verdict"]
    assert [c["claim"] for c in claims] == [CLAIMS[k] for k in ROWS]
    assert [c["verdict"] for c in claims] == ["reproduced"] * 5, [c["evidence"] for c in claims]
    assert summary == "reproduced"
    assert "digits/simclr 1.500 -> 0.410 [" in claims[0]["evidence"]
    assert "4/4" in claims[0]["evidence"]
    # 2 datasets x 3 seeds x 3 trained encoders x 2 ways x 2 shots, of 6 encoders
    assert "for a trained encoder at 72/144" in claims[1]["evidence"]
    assert "mnist: 36 (simclr, supervised, vicreg)" in claims[1]["evidence"]
    assert "whitened input 0.045" in claims[4]["evidence"] and "90/90" in claims[4]["evidence"]
    assert "random directions 0.160" in claims[4]["evidence"]
    assert all(c["passed"] for c in judged["controls"]), judged["controls"]
    assert "digits: 5-shot error SSL" in verdict_headline(_passing())


@pytest.mark.parametrize("failing", ROWS)
def test_only_one_row_fails(failing):
    judged = verdict(_break(_passing(), failing))
    claims, summary = judged["claims"], judged["verdict"]
    expected = ["not reproduced" if k == failing else "reproduced" for k in ROWS]
    assert [c["verdict"] for c in claims] == expected, [c["evidence"] for c in claims]
    assert summary == summarise(expected) == "partly"


@pytest.mark.parametrize("row", ["collapse", "tracks", "orthogonal"])
def test_one_objective_failing_is_partly(row):
    judged = verdict(_break(_passing(), row, objectives=("vicreg",)))
    claims, summary = judged["claims"], judged["verdict"]
    assert claims[ROWS.index(row)]["verdict"] == "partly"
    assert summary == "partly"


def test_collapse_needs_a_fall_from_initialisation_not_only_a_low_level():
    r = _passing()
    for x in r["runs"]:
        x["dynamics"][0][RATIO] = 0.3  # already lower at initialisation: it rose
    assert verdict(r)["claims"][0]["verdict"] == "not reproduced"


def test_collapse_inside_the_noise_is_not_a_fall():
    r = _passing()
    for x in r["runs"]:  # falls in seeds 0 and 2, rises in seed 1: a tie, not a fall
        x["dynamics"][0][RATIO] = x[RATIO] * (1 + 0.5 * [1, -1, 1][x["seed"]])
    assert verdict(r)["claims"][0]["verdict"] == "inconclusive"


def test_holds_is_judged_only_where_the_bound_is_below_one():
    r = _passing()
    for x in r["runs"] + r["nulls"]:
        for t in x["fewshot"].values():
            t["bound (authors)"] = [max(b, 1.5) for b in t["bound (authors)"]]
    row = verdict(r)["claims"][1]
    assert row["verdict"] == "untestable here"
    assert "for a trained encoder at 0/144" in row["evidence"]
    r = _passing()  # one informative point below its error is a violation
    r["runs"][0]["fewshot"]["2-way"]["bound (authors)"][1] = 0.01
    assert verdict(r)["claims"][1]["verdict"] == "not reproduced"


def test_orthogonal_needs_to_beat_the_random_encoder_in_every_seed():
    r = _passing()
    r["multitask"][1]["random encoder"]["mean |cos|"] = 0.05
    assert verdict(r)["claims"][4]["verdict"] == "not reproduced"


def test_interval_and_spearman_gap():
    m, lo, hi = interval([1.0, 2.0, 3.0])
    assert m == 2.0 and lo == pytest.approx(2 - 4.3027 / 3**0.5, rel=1e-4) and hi > 3
    assert interval([5.0]) == (5.0, 5.0, 5.0)
    err = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    gap, lo, hi = spearman_gap(err, err, err[::-1])
    assert gap == pytest.approx(2.0) and lo > 0
    gap, lo, hi = spearman_gap(err, err, err)
    assert gap == 0.0 and lo <= 0 <= hi


def test_ssl_features_worse_than_raw_pixels_leave_the_transfer_rows_untestable():
    r = _passing()
    for x in r["nulls"]:
        if x["encoder"] == "raw pixels":
            x["fewshot"] = _fewshot(0.05, 0.1)  # raw pixels transfer better than every SSL
    judged = verdict(r)
    got = [c["verdict"] for c in judged["claims"]]
    # (c) is synthetic and rests on its own controls, not on image transfer
    assert got == ["untestable here", "reproduced", "untestable here", "untestable here",
                   "reproduced"]  # fmt: skip
    assert judged["claims"][0]["evidence"].startswith(f"control failed: {TRANSFER}")


def test_cells_that_transfer_worse_than_pixels_are_left_out_of_the_rows():
    r = _passing()
    for x in r["runs"]:
        if (x["dataset"], x["encoder"]) == ("mnist", "vicreg"):
            x["fewshot"] = _fewshot(0.5, 1.0)  # worse than raw pixels' 0.4
            x["dynamics"][-1][RATIO] = 3.0  # and would fail the collapse rule
    judged = verdict(r)
    collapse, tracks = judged["claims"][0], judged["claims"][2]
    assert collapse["verdict"] == "reproduced" and "3/3" in collapse["evidence"]
    assert "Not judged (transfer not better than raw pixels): mnist/vicreg" in collapse["evidence"]
    assert "mnist/vicreg" in tracks["evidence"] and judged["controls"][0]["passed"]
    assert "vicreg 0.500 (gain -0.100) no" in judged["controls"][0]["evidence"]


def test_a_mean_gain_inside_the_seed_noise_does_not_transfer():
    r = _passing()
    for x in r["runs"]:  # better than pixels (0.4) in two seeds, much worse in the third
        x["fewshot"] = _fewshot([0.2, 0.2, 0.7][x["seed"]] if x["encoder"] in OBJ else 0.08, 0.9)
    judged = verdict(r)
    assert not judged["controls"][0]["passed"]
    assert "simclr 0.367 (gain +0.033 [" in judged["controls"][0]["evidence"]


def test_explains_ranks_the_trained_encoders_not_the_references():
    """Trained encoders whose error follows V and not V~; the references alone (raw pixels far
    worse, with the highest V~ and the lowest V) would order error with V~."""
    r = _passing()
    for x in r["runs"]:
        for t in x["fewshot"].values():
            t["error"][1] = x["V"] / 10  # follows V, against V~
    for x in r["nulls"]:
        if x["encoder"] == "raw pixels":
            x["V~"], x["V"] = 10.0, 0.01
    assert verdict(r)["claims"][3]["verdict"] == "not reproduced"


def test_the_collapse_rule_ends_below_one_whatever_the_references_read():
    r = _passing()
    for x in r["nulls"]:
        x[RATIO] = 0.1  # pixels and the oracle far below: they are reported, they do not gate
    judged = verdict(r)
    assert judged["claims"][0]["verdict"] == "reproduced"
    assert f"{ORACLE} 0.100" in judged["claims"][0]["evidence"]
    for x in r["runs"]:
        x["dynamics"][0][RATIO], x["dynamics"][-1][RATIO] = 1.6, 1.1  # falls, ends above 1
    assert verdict(r)["claims"][0]["verdict"] == "not reproduced"


def test_the_orthogonality_rule_is_set_by_random_directions_and_checked_both_ways():
    assert random_direction_cos(64) == pytest.approx(0.0997, abs=1e-3)
    assert random_direction_cos(2) == pytest.approx(2 / 3.141592653589793, rel=1e-9)
    r = _passing()  # SSL at 0.07, random directions at 0.16: 0.07 passes, the null does not
    for m in r["multitask"]:
        m["random directions"]["mean |cos|"] = 0.05  # a draw the rule would call orthogonal
    judged = verdict(r)
    assert judged["claims"][4]["verdict"] == "untestable here"
    assert RANDOM_AXES in judged["claims"][4]["evidence"]
    assert "limit 0.142: passes" in judged["controls"][2]["evidence"]
    r = _passing()
    for m in r["multitask"]:
        m["whitened input"]["mean |cos|"] = 0.3  # the rule refuses axes known to be untangled
    judged = verdict(r)
    assert judged["claims"][4]["verdict"] == "untestable here"
    assert WHITENED_PASSES in judged["claims"][4]["evidence"]


def test_null_world_does_not_reproduce():
    """SSL encoders no different from the random encoder (same ratio and axes, with seed
    noise): collapse and orthogonal must not read reproduced. (The explains row is left out:
    this world keeps the encoders' errors and CDNVs; its own null is the test where error
    follows V.)"""
    import random

    rng = random.Random(0)
    for _ in range(10):
        r = _passing()
        for x in r["runs"]:
            x["dynamics"][0][RATIO] = 1.5 * (1 + rng.gauss(0, 0.1))
            x["dynamics"][-1][RATIO] = 1.5 * (1 + rng.gauss(0, 0.1))
        for m in r["multitask"]:
            for o in OBJ:
                m[o]["mean |cos|"] = m["random encoder"]["mean |cos|"] + rng.gauss(0, 0.02)
        rows = verdict(r)["claims"]
        assert rows[0]["verdict"] != "reproduced" and rows[4]["verdict"] != "reproduced"


def test_a_bound_informative_at_a_handful_of_points_is_untestable():
    r = _passing()
    for x in r["runs"] + r["nulls"]:
        for t in x["fewshot"].values():
            t["bound (authors)"] = [max(b, 1.5) for b in t["bound (authors)"]]
    for x in r["runs"][:2]:  # 4 informative points, all holding
        x["fewshot"]["2-way"]["bound (authors)"] = [0.9, 0.5]
    row = verdict(r)["claims"][1]
    assert row["verdict"] == "untestable here" and "at 4/144" in row["evidence"]


def test_holds_counts_only_the_trained_encoders_points():
    r = _passing()
    for x in r["runs"]:  # only the references (nulls, oracle) stay informative
        for t in x["fewshot"].values():
            t["bound (authors)"] = [max(b, 1.5) for b in t["bound (authors)"]]
    row = verdict(r)["claims"][1]
    assert row["verdict"] == "untestable here"
    assert "with the references (nulls and oracle) informative at 72" in row["evidence"]


def test_an_orthogonality_interval_across_the_null_is_a_tie():
    r = _passing()
    for m, c in zip(r["multitask"], (0.08, 0.14, 0.20), strict=True):
        for o in OBJ:
            m[o]["mean |cos|"] = c  # mean 0.14, interval across 0.142
    row = verdict(r)["claims"][4]
    assert row["verdict"] == "inconclusive" and "simclr 0.140 [" in row["evidence"]
    for m in r["multitask"]:
        m["vicreg"]["mean |cos|"] = 0.3  # one clearly above: still no objective reproduces
    assert verdict(r)["claims"][4]["verdict"] == "inconclusive"
    for m in r["multitask"]:
        m["simclr"]["mean |cos|"] = 0.06  # one below, one above
    assert verdict(r)["claims"][4]["verdict"] == "partly"


def test_the_tracking_rule_reads_slack_not_ratio():
    assert slack_left(0.1, 1.0) == pytest.approx(1.0) and slack_left(0.2, 0.2) == 0.0
    # near-perfect features: 0.005 error under a 0.1 bound is 20x as a ratio, 0.095 as slack
    assert slack_left(0.005, 0.1) == pytest.approx(0.0955, abs=1e-4)
    r = _passing()
    for x in r["runs"]:  # errors near 0 under a bound of 0.1: 20-100x, but little slack left
        for t in x["fewshot"].values():
            t["error"][1], t["bound (authors)"][1] = 0.001 * (1 + x["seed"]), 0.1
    for x in r["nulls"]:
        if x["encoder"] == "raw pixels":
            for t in x["fewshot"].values():
                t["error"][1] = 0.4
    row = verdict(r)["claims"][2]
    assert row["verdict"] == "reproduced", row["evidence"]


def test_the_tracking_rule_must_pass_the_oracle():
    r = _passing()
    for x in r["nulls"]:
        if x["encoder"] == ORACLE:  # a bound that leaves half the trivial slack: fails the rule
            for t in x["fewshot"].values():
                t["bound (authors)"][1] = 0.5
    judged = verdict(r)
    assert judged["claims"][2]["verdict"] == "untestable here"
    assert ORACLE_TRACKS in judged["claims"][2]["evidence"]
    assert not judged["controls"][1]["passed"] and "at 0/4" in judged["controls"][1]["evidence"]
    assert [c["verdict"] for c in judged["claims"]].count("reproduced") == 4


def test_collapse_needs_v_tilde_to_fall_relative_to_v_not_only_the_effective_dimension():
    r = _passing()
    for x in r["runs"]:  # d_eff halves while V~ / V doubles: the d_eff ratio falls, V~ does not
        x["dynamics"][0].update({"V~": 0.1, "V": 1.0, "d_eff": 10.0})
        x["dynamics"][-1].update({"V~": 0.2, "V": 1.0, "d_eff": 5.0})
    row = verdict(r)["claims"][0]
    assert row["verdict"] == "not reproduced"
    assert "V~ / V x2.00 [2.00, 2.00], d_eff x0.50): not reproduced" in row["evidence"]
