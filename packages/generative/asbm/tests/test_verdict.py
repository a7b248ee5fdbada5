"""verdict() on hand-built measurements of the earlier study (the committed file's rules): one
row per data set and step count (and one for the distilled generator), paired over seeds against
every baseline, each row able to fail. The official-recipe rules: test_verdict_official.py."""

import copy

from icml26.asbm.verdict import EARLIER_BASELINES as BASELINES
from icml26.asbm.verdict import EARLIER_STEPS as VERDICT_STEPS
from icml26.asbm.verdict import stage1_name, verdict
from icml26.testing.results import summarise

STEPS = [str(k) for k in VERDICT_STEPS]


def _seed(asbm: float, best: float, distilled: float, terminal_std: float = 0.99) -> dict:
    """One seed's metrics: ASBM at ``asbm`` at every step count, OT-CFM at ``best``, the other
    baselines far behind; stage 1 ends at ``terminal_std`` (the prior's is 1)."""
    metrics = {"ASBM": {k: {"mmd": asbm, "sw2": 0.1} for k in STEPS}}
    metrics["ASBM distilled (1 step)"] = {"1": {"mmd": distilled, "sw2": 0.1}}
    for b in BASELINES:
        metrics[b] = {k: {"mmd": best if b == "OT-CFM" else 1.0, "sw2": 0.2} for k in STEPS}
    rounds = [{"round": 3, "terminal_std": terminal_std, "gaussian_reference_std": 1.0}]
    return {"metrics": metrics, "stage 1 rounds": rounds}


def _problem(asbm=(0.05, 0.06, 0.04), best=(0.10, 0.11, 0.12), distilled=(0.05, 0.06, 0.04)):
    seeds = [_seed(a, b, d) for a, b, d in zip(asbm, best, distilled, strict=True)]
    mean = {}
    for method in seeds[0]["metrics"]:
        mean[method] = {
            k: {
                key: sum(s["metrics"][method][k][key] for s in seeds) / len(seeds)
                for key in ("mmd", "sw2")
            }
            for k in seeds[0]["metrics"][method]
        }
    return {"metric": "mmd", "metrics": mean, "seeds": seeds}


def _results(**kw) -> dict:
    return {"steps": [1, 2, 4, 8, 32], "problems": {"moons": _problem(**kw), "digits": _problem()}}


def test_rows_per_problem_and_step():
    judged = verdict(_results())
    claims, summary = judged["claims"], judged["verdict"]
    names = [c["claim"] for c in claims]
    assert len(claims) == 2 * (len(VERDICT_STEPS) + 1)
    assert names[0] == "moons: ASBM at 1 step(s) better than every equal-compute baseline"
    assert names[4].startswith("moons: distilled 1-step ASBM")
    assert [c["verdict"] for c in claims] == ["reproduced"] * len(claims)
    assert summary == "reproduced"
    assert "OT-CFM 0.11 (diff -0.06 [" in claims[0]["evidence"]
    assert "3 seeds" in claims[0]["evidence"] and "Sliced W2: ASBM 0.1" in claims[0]["evidence"]


def test_worse_on_every_seed_is_not_reproduced():
    judged = verdict(_results(asbm=(0.2, 0.21, 0.22)))
    claims, summary = judged["claims"], judged["verdict"]
    moons = [c["verdict"] for c in claims if c["claim"].startswith("moons")]
    assert moons == ["not reproduced"] * 4 + ["reproduced"]  # the distilled row still wins
    assert summary == "partly"


def test_a_difference_inside_the_noise_is_a_tie():
    # ASBM ahead on two seeds, behind on one: the paired interval spans 0
    claims = verdict(_results(asbm=(0.05, 0.06, 0.30)))["claims"]
    assert claims[0]["verdict"] == "partly" and "a tie" in claims[0]["evidence"]


def _set(results, method, k, values):
    p = results["problems"]["moons"]
    for s, v in zip(p["seeds"], values, strict=True):
        s["metrics"][method][k]["mmd"] = v
    finite = [v for v in values if v is not None and v == v]
    p["metrics"][method][k]["mmd"] = (
        sum(finite) / len(finite) if len(finite) == len(values) else None
    )


def test_every_baseline_is_tested_not_only_the_best_by_mean():
    results = _results()
    # reflow: worse than OT-CFM on average, but not significantly worse than ASBM at 2 steps
    _set(results, "Reflow", "2", [0.04, 0.07, 0.60])
    claims = verdict(results)["claims"]
    assert claims[1]["verdict"] == "partly" and "a tie" in claims[1]["evidence"]
    # reflow significantly better than ASBM at 4 steps: not reproduced there, and only there
    _set(results, "Reflow", "4", [0.01, 0.02, 0.01])
    claims = verdict(results)["claims"]
    assert [c["verdict"] for c in claims[:4]] == ["reproduced", "partly", "not reproduced",
                                                  "reproduced"]  # fmt: skip


def test_a_failed_run_counts_against_whoever_failed():
    results = _results()
    _set(results, "CFM", "8", [None, 1.0, 1.0])  # a baseline diverged on one seed: ASBM better
    assert verdict(results)["claims"][3]["verdict"] == "reproduced"
    _set(results, "ASBM", "1", [float("nan"), 0.06, 0.04])
    assert verdict(results)["claims"][0]["verdict"] == "not reproduced"


def test_one_seed_gives_no_verdict():
    results = _results()
    p = results["problems"]["moons"]
    p["seeds"] = p["seeds"][:1]
    claims = verdict(results)["claims"]
    assert claims[0]["verdict"] == "untestable here" and "one seed" in claims[0]["evidence"]


def test_verdict_is_pure():
    results = _results()
    before = copy.deepcopy(results)
    assert verdict(results) == verdict(results)
    assert results == before
    assert summarise(["reproduced", "partly"]) == "partly"


def test_every_baseline_tied_is_inconclusive():
    results = _results()
    for b in BASELINES:
        for k in STEPS:
            _set(results, b, k, [0.05, 0.07, 0.03])  # within the noise of ASBM's
    assert verdict(results)["claims"][0]["verdict"] == "inconclusive"


def test_an_unfinished_stage_1_leaves_its_problem_untestable():
    results = _results()
    for s in results["problems"]["digits"]["seeds"]:
        s["stage 1 rounds"][-1]["terminal_std"] = 0.83  # 17% short of the prior
    judged = verdict(results)
    by = {c["name"]: c["passed"] for c in judged["controls"]}
    assert by == {stage1_name("moons"): True, stage1_name("digits"): False}
    digits = [c for c in judged["claims"] if c["claim"].startswith("digits")]
    assert {c["verdict"] for c in digits} == {"untestable here"}
    assert "0.830" in digits[0]["evidence"]
    assert judged["verdict"] == "partly"  # moons reproduced; digits could not be tested


def test_null_world_does_not_reproduce():
    """ASBM drawn like its best baseline (same mean, seed noise): no row may read reproduced
    beyond the intervals' error rate."""
    import random

    rng = random.Random(0)
    hits = 0
    for _ in range(20):
        draws = [tuple(0.1 + rng.gauss(0, 0.01) for _ in range(3)) for _ in range(3)]
        claims = verdict(_results(asbm=draws[0], best=draws[1], distilled=draws[2]))["claims"]
        hits += sum(c["verdict"] == "reproduced" for c in claims[:5])
    assert hits / (20 * 5) < 0.05
