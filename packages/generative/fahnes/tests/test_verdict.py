"""The verdict rules, on made-up measurements."""

import math

from icml26.fahnes.demo import claims, verdict, welch_interval

PLANAR = ("degree MMD", "clustering MMD", "spectral MMD", "orbit MMD", "V.U.N.", "edge-length MMD")


def raw(f: dict, b: dict, seeds=3, cost=None):
    runs = []
    for s in range(seeds):
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


def test_one_row_per_claim_and_clear_wins_reproduce():
    rows, summary = verdict(raw(GOOD, BAD))
    assert [r["claim"] for r in rows] == list(claims().values())
    assert all(r["verdict"] == "reproduced" for r in rows), rows
    assert summary == "reproduced"


def test_losses_ties_and_missing_seeds():
    rows, summary = verdict(raw(BAD, GOOD))
    assert rows[0]["verdict"] == "not reproduced" and "reversed" in rows[0]["evidence"]
    assert rows[6]["verdict"] == "reproduced"  # the node count, whatever the quality
    assert summary == "partly"
    tie = raw(GOOD, GOOD)
    assert (
        verdict(tie)[0][0]["verdict"] == "not reproduced"
        and "tie" in verdict(tie)[0][0]["evidence"]
    )
    one = verdict(raw(GOOD, BAD, seeds=1))[0]
    assert one[0]["verdict"] == "untestable here"
    ns = (64, 256, 1024, 2048)
    quad = [{"n": n, "largest tensor": n * n} for n in ns]
    assert (
        verdict(raw(GOOD, BAD, cost={"fahnes": quad, "flat": quad}))[0][-1]["verdict"]
        == "not reproduced"
    )
    assert verdict(raw(GOOD, BAD, cost={}))[0][-1]["verdict"] == "untestable here"


def test_the_welch_interval():
    d, lo, hi = welch_interval([1.0, 2.0, 3.0], [0.0, 0.0, 0.0])
    assert d == 2.0 and math.isclose(hi - d, 4.303 * 1.0 / math.sqrt(3), rel_tol=1e-3)
    assert lo < 0 < d  # a wide interval: noise, not a win
    assert welch_interval([1.0, 1.0], [0.0, 0.0])[1:] == (1.0, 1.0)
