"""The verdict rules, on made-up measurements."""

import math

from icml26.fahnes.verdict import COORDINATES, ER, STRUCTURE, claims, verdict, welch_interval

PLANAR = ("degree MMD", "clustering MMD", "spectral MMD", "orbit MMD", "V.U.N.", "edge-length MMD")


def raw(f: dict, b: dict, seeds=3, cost=None, er=None):
    """FAHNES ``f``, flat ``b`` and the Erdős–Rényi floor ``er`` (default: worse than both)."""
    er = er or ER_FLOOR
    runs = []
    for s in range(seeds):
        runs.append({"problem": "planar", "arm": ER, "seed": s, **{k: er[k] for k in PLANAR}})
        for arm, vals in (("FAHNES", f), ("flat", b)):
            planar = {k: vals[k] * (1 + 0.01 * s) for k in PLANAR}
            runs.append({"problem": "planar", "arm": arm, "seed": s, "node-count error": 0.0,
                         **planar})  # fmt: skip
            mesh = {"Chamfer": vals["Chamfer"] * (1 + 0.01 * s), "manifold": vals["manifold"]}
            runs.append({"problem": "mesh", "arm": arm, "seed": s, **mesh})
    if cost is None:
        ns = [64, 128, 256, 512, 1024, 2048]
        cost = {
            "fahnes": [{"n": n, "largest tensor": 40 * n, "peak MiB": n * 0.01} for n in ns],
            "flat": [{"n": n, "largest tensor": n * n, "peak MiB": n * n * 1e-4} for n in ns],
        }
    return {"runs": runs, "cost": cost}


def _vals(mmd, vun, el, ch, man):
    d = {k: mmd for k in PLANAR[:4]}
    return {**d, "V.U.N.": vun, "edge-length MMD": el, "Chamfer": ch, "manifold": man}


GOOD = _vals(0.01, 0.8, 0.01, 0.01, 0.9)
BAD = _vals(0.05, 0.1, 0.05, 0.05, 0.1)
ER_FLOOR = _vals(0.2, 0.0, 0.2, 0.2, 0.0)


def test_one_row_per_claim_and_clear_wins_reproduce():
    judged = verdict(raw(GOOD, BAD))
    rows, summary = judged["claims"], judged["verdict"]
    assert [r["claim"] for r in rows] == list(claims().values())
    assert all(c["passed"] for c in judged["controls"])
    assert all(r["verdict"] == "reproduced" for r in rows), rows
    assert summary == "reproduced"


def test_losses_ties_and_missing_seeds():
    judged = verdict(raw(BAD, GOOD))
    rows, summary = judged["claims"], judged["verdict"]
    assert rows[0]["verdict"] == "not reproduced" and "reversed" in rows[0]["evidence"]
    assert rows[6]["verdict"] == "reproduced"  # the node count, whatever the quality
    assert summary == "partly"
    tie = raw(GOOD, GOOD)
    first = verdict(tie)["claims"][0]
    assert first["verdict"] == "inconclusive" and "tie" in first["evidence"]
    one = verdict(raw(GOOD, BAD, seeds=1))["claims"]
    assert one[0]["verdict"] == "untestable here"
    ns = (64, 256, 1024, 2048)
    quad = [{"n": n, "largest tensor": n * n} for n in ns]
    assert (
        verdict(raw(GOOD, BAD, cost={"fahnes": quad, "flat": quad}))["claims"][-1]["verdict"]
        == "not reproduced"
    )
    assert verdict(raw(GOOD, BAD, cost={}))["claims"][-1]["verdict"] == "untestable here"


def test_generators_at_the_erdos_renyi_level_leave_the_quality_rows_untestable():
    judged = verdict(raw(GOOD, BAD, er=_vals(0.03, 0.0, 0.005, 0.0, 0.0)))  # flat is worse than ER
    by = {c["name"]: c["passed"] for c in judged["controls"]}
    assert by == {STRUCTURE: False, COORDINATES: False}
    rows = judged["claims"]
    assert [r["verdict"] for r in rows[:6]] == ["untestable here"] * 6
    assert rows[0]["evidence"].startswith(f"control failed: {STRUCTURE}")
    assert rows[6]["verdict"] == "reproduced"  # the node count rests on no control


def test_a_file_without_the_erdos_renyi_arm_cannot_show_competence():
    r = raw(GOOD, BAD)
    r["runs"] = [x for x in r["runs"] if x["arm"] != ER]
    judged = verdict(r)
    assert (
        not judged["controls"][0]["passed"]
        and "not in this run" in judged["controls"][0]["evidence"]
    )


def test_null_world_does_not_reproduce():
    """FAHNES and flat drawn from one distribution (both competent): no comparison row may read
    reproduced beyond the intervals' error rate."""
    import random

    rng = random.Random(0)
    hits = 0
    for _ in range(20):
        r = raw(GOOD, GOOD)
        for x in r["runs"]:
            if x["arm"] in ("FAHNES", "flat"):
                for k in (*PLANAR, "Chamfer"):
                    if k in x:
                        x[k] *= math.exp(rng.gauss(0, 0.1))
        rows = verdict(r)["claims"]
        hits += sum(rows[i]["verdict"] == "reproduced" for i in (0, 1, 2, 3, 4, 5, 7))
    assert hits / (20 * 7) < 0.05


def test_the_welch_interval():
    d, lo, hi = welch_interval([1.0, 2.0, 3.0], [0.0, 0.0, 0.0])
    assert d == 2.0 and math.isclose(hi - d, 4.303 * 1.0 / math.sqrt(3), rel_tol=1e-3)
    assert lo < 0 < d  # a wide interval: noise, not a win
    assert welch_interval([1.0, 1.0], [0.0, 0.0])[1:] == (1.0, 1.0)
