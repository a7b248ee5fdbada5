import random

from icml26.varsr.verdict import CEILING, claims, verdict


def raw(psnr: dict, x2: dict | None = None, seeds: int = 3, ceiling: float = 28.0):
    """Per-seed PSNRs; the VAR-HIT tokenizer rebuilds held-out tiles at ``ceiling`` dB against
    bicubic x4's 26.0 dB on the same tiles (``None``: the ceiling was not measured)."""
    runs = []
    for s in range(seeds):
        for arm, v in psnr.items():
            row = {"arm": arm, "seed": s, "psnr_x4": v + 0.01 * s}
            if x2 and arm in x2:
                row["psnr_x2"] = x2[arm] + 0.01 * s
            if arm.startswith("VAR"):
                row["tokenizer"] = {"reconstruction_psnr": ceiling}
                if ceiling is not None:
                    row["tokenizer"]["bicubic_psnr_x4"] = 26.0
            runs.append(row)
    return {"runs": runs}


GOOD = {"bicubic": 27.0, "ESPCN": 27.5, "VAR-RQ": 27.6, "VAR-HIT": 27.8, "VAR-HIT+DPO": 28.0}
GOOD_X2 = {"bicubic": 30.0, "ESPCN": 30.5, "VAR-HIT+DPO": 31.0}


def test_every_claim_gets_its_row_and_clear_wins_reproduce():
    judged = verdict(raw(GOOD, GOOD_X2))
    assert [x["claim"] for x in judged["claims"]] == list(claims().values())
    assert judged["verdict"] == "reproduced" and judged["controls"][0]["passed"]


def test_losing_to_bicubic_is_not_reproduced_and_one_seed_is_untestable():
    r = raw({"bicubic": 27.0, "ESPCN": 27.5, "VAR-RQ": 20.0, "VAR-HIT": 21.0, "VAR-HIT+DPO": 21.0})
    rows = verdict(r)["claims"]
    assert rows[0]["verdict"] == "not reproduced" and "worse" in rows[0]["evidence"]
    assert rows[4]["verdict"] == "untestable here"  # no x2 numbers
    one = raw({"bicubic": 27.0, "ESPCN": 27.5, "VAR-RQ": 27, "VAR-HIT": 28, "VAR-HIT+DPO": 29},
              seeds=1)  # fmt: skip
    assert all(x["verdict"] == "untestable here" for x in verdict(one)["claims"])


def test_a_tie_is_inconclusive():
    r = raw({**GOOD, "VAR-HIT+DPO": 27.8}, GOOD_X2)  # DPO ties VAR-HIT
    for row in r["runs"]:
        if row["arm"] == "VAR-HIT+DPO":
            row["psnr_x4"] += (-0.1, 0.1, 0.0)[row["seed"]]
    assert verdict(r)["claims"][3]["verdict"] == "inconclusive"


def test_a_tokenizer_below_bicubic_leaves_the_rows_against_baselines_untestable():
    judged = verdict(raw(GOOD, GOOD_X2, ceiling=25.4))
    got = [x["verdict"] for x in judged["claims"]]
    assert got == ["untestable here"] * 5
    assert judged["claims"][0]["evidence"].startswith(f"control failed: {CEILING}")
    assert "25.40 dB vs bicubic x4 26.00 dB" in judged["controls"][0]["evidence"]
    unmeasured = verdict(raw(GOOD, GOOD_X2, ceiling=None))
    assert "not measured" in unmeasured["controls"][0]["evidence"]


def test_null_world_does_not_reproduce():
    """Every VAR arm drawn like bicubic (seed noise only): no row may read reproduced beyond
    the intervals' error rate."""
    rng = random.Random(0)
    hits = 0
    for _ in range(20):
        r = raw({a: 27.0 for a in GOOD}, {a: 30.0 for a in GOOD_X2})
        for row in r["runs"]:
            row["psnr_x4"] += rng.gauss(0, 0.1)
            if "psnr_x2" in row:
                row["psnr_x2"] += rng.gauss(0, 0.1)
        hits += sum(x["verdict"] == "reproduced" for x in verdict(r)["claims"])
    assert hits / (20 * 5) < 0.1  # 95% intervals: ~2.5% per row by chance
