"""verdict() on hand-built measurements of the official-recipe study: one row per data set and
step count in 1 ... 100 and one for the distilled generator, against every baseline including
score matching, each resting on the two controls, each able to fail."""

import copy
import random

from icml26.asbm.verdict import (
    BASELINES,
    CONTROL_ARM,
    DATA_FLOOR,
    TRIVIAL_ARM,
    VERDICT_STEPS,
    prior_match_name,
    stage2_name,
    trivial_name,
    verdict,
)

STEPS = [str(k) for k in VERDICT_STEPS]


def _seed(asbm, best, distilled, control=0.1, matched=3, gaussian=2.0) -> dict:
    """One seed: ASBM at ``asbm`` at every step count, OT-CFM at ``best``, CFM and the control
    arm at ``control``, the other baselines far behind, a Gaussian fit at ``gaussian``; stage 1
    passed its rule at round ``matched`` (None: never)."""
    metrics = {"ASBM": {k: {"mmd": asbm, "sw2": 0.1} for k in STEPS}}
    metrics["ASBM distilled (1 step)"] = {"1": {"mmd": distilled, "sw2": 0.1}}
    for b in (*BASELINES, CONTROL_ARM):
        value = {"OT-CFM": best, "CFM": 0.1, CONTROL_ARM: control}.get(b, 1.0)
        metrics[b] = {k: {"mmd": value, "sw2": 0.2} for k in STEPS}
    metrics[TRIVIAL_ARM] = {"1": {"mmd": gaussian, "sw2": 0.5}}
    metrics[DATA_FLOOR] = {"1": {"mmd": 0.001, "sw2": 0.01}}
    rule = {"top_eigenvalue": 1.0, "prior_top_eigenvalue": 1.01, "radial_mean_error": 0.01,
            "radial_var_error": 0.02, "passed": matched is not None}  # fmt: skip
    return {"metrics": metrics, "stage 1 rounds": [{"round": 3, "prior_match": rule}],
            "compute": {"ASBM": {"matched round": matched}}}  # fmt: skip


def _problem(asbm=(0.05, 0.06, 0.04), best=(0.10, 0.11, 0.12), distilled=(0.05, 0.06, 0.04),
             **kw) -> dict:  # fmt: skip
    seeds = [_seed(a, b, d, **kw) for a, b, d in zip(asbm, best, distilled, strict=True)]
    mean = {m: {k: {key: sum(s["metrics"][m][k][key] for s in seeds) / len(seeds)
                    for key in ("mmd", "sw2")} for k in seeds[0]["metrics"][m]}
            for m in seeds[0]["metrics"]}  # fmt: skip
    return {"metric": "mmd", "metrics": mean, "seeds": seeds}


def _results(**kw) -> dict:
    return {"protocol": "official", "problems": {"moons": _problem(**kw), "faces": _problem()}}


def test_rows_per_problem_and_step_rest_on_both_controls():
    judged = verdict(_results())
    claims = judged["claims"]
    assert len(claims) == 2 * (len(VERDICT_STEPS) + 1)
    assert claims[0]["claim"] == ("moons: ASBM (Euler-Maruyama) at 1 step(s) better than every "
                                  "baseline at equal gradient steps")  # fmt: skip
    assert claims[len(VERDICT_STEPS)]["claim"].startswith("moons: distilled 1-step ASBM")
    assert {c["verdict"] for c in claims} == {"reproduced"} and judged["verdict"] == "reproduced"
    assert "Score matching 1 (diff" in claims[0]["evidence"]
    names = [c["name"] for c in judged["controls"]]
    assert names == [f(p) for p in ("moons", "faces")
                     for f in (prior_match_name, stage2_name, trivial_name)]  # fmt: skip
    assert all(c["passed"] for c in judged["controls"])
    assert "the metric's floor here) 0.001" in judged["controls"][2]["evidence"]


def test_a_stage_1_that_never_meets_the_rule_leaves_its_problem_untestable():
    results = _results()
    results["problems"]["moons"] = _problem(matched=None)
    judged = verdict(results)
    moons = [c for c in judged["claims"] if c["claim"].startswith("moons")]
    assert {c["verdict"] for c in moons} == {"untestable here"}
    assert "round none" in moons[0]["evidence"]
    faces = [c for c in judged["claims"] if c["claim"].startswith("faces")]
    assert {c["verdict"] for c in faces} == {"reproduced"}


def test_a_stage_2_that_trails_cfm_on_the_independent_coupling_fails_its_control():
    results = _results()
    results["problems"]["moons"] = _problem(control=0.2)  # 2x CFM's 0.1
    judged = verdict(results)
    by = {c["name"]: c["passed"] for c in judged["controls"]}
    assert by[stage2_name("moons")] is False and by[stage2_name("faces")] is True
    failed = next(c for c in judged["controls"] if not c["passed"])["evidence"]
    assert "20 steps: 0.2 vs CFM 0.1 (ratio 2.00" in failed and "100 steps" in failed
    moons = [c for c in judged["claims"] if c["claim"].startswith("moons")]
    assert {c["verdict"] for c in moons} == {"untestable here"}


def test_a_tie_with_any_baseline_is_inconclusive_not_partly():
    # ASBM far ahead of three baselines but within the noise of CFM and OT-CFM: the claim
    # "better than every baseline" is neither shown nor refuted
    results = _results(asbm=(0.09, 0.12, 0.10), best=(0.10, 0.11, 0.12))
    row = verdict(results)["claims"][0]
    assert row["verdict"] == "inconclusive" and "a tie with CFM, OT-CFM)" in row["evidence"]


def test_score_matching_is_a_baseline_that_can_win():
    results = _results()
    p = results["problems"]["moons"]
    for s in p["seeds"]:
        s["metrics"]["Score matching"]["50"]["mmd"] = 0.01
    p["metrics"]["Score matching"]["50"]["mmd"] = 0.01
    row = verdict(results)["claims"][STEPS.index("50")]
    assert row["verdict"] == "not reproduced" and "Score matching 0.01" in row["evidence"]


def test_verdict_is_pure_and_the_null_world_does_not_reproduce():
    results = _results()
    before = copy.deepcopy(results)
    assert verdict(results) == verdict(results) and results == before
    rng, hits = random.Random(0), 0
    for _ in range(20):
        draws = [tuple(0.1 + rng.gauss(0, 0.01) for _ in range(3)) for _ in range(3)]
        claims = verdict(_results(asbm=draws[0], best=draws[1], distilled=draws[2]))["claims"]
        verdicts = [c["verdict"] for c in claims[: len(VERDICT_STEPS)]]
        assert "partly" not in verdicts
        hits += verdicts.count("reproduced")
    assert hits / (20 * len(VERDICT_STEPS)) < 0.05


def test_asbm_no_better_than_a_gaussian_fit_fails_the_trivial_control():
    results = _results()
    results["problems"]["moons"] = _problem(gaussian=0.05)  # a Gaussian ties ASBM at 100 steps
    judged = verdict(results)
    by = {c["name"]: c for c in judged["controls"]}
    assert by[trivial_name("moons")]["passed"] is False
    assert by[trivial_name("faces")]["passed"] is True
    assert "ASBM at 100 steps 0.05, Gaussian fit 0.05" in by[trivial_name("moons")]["evidence"]
    moons = [c for c in judged["claims"] if c["claim"].startswith("moons")]
    assert {c["verdict"] for c in moons} == {"untestable here"}
    assert all(trivial_name("moons") in c["controls"] for c in moons)


def test_results_without_a_gaussian_fit_are_judged_without_that_control():
    results = _results()
    for p in results["problems"].values():
        for r in [p, *p["seeds"]]:
            del r["metrics"][TRIVIAL_ARM]
    judged = verdict(results)
    assert trivial_name("moons") not in [c["name"] for c in judged["controls"]]
    assert {c["verdict"] for c in judged["claims"]} == {"reproduced"}
