from icml26.varsr.demo import claims, verdict


def raw(psnr: dict, x2: dict | None = None, seeds: int = 3):
    runs = []
    for s in range(seeds):
        for arm, v in psnr.items():
            row = {"arm": arm, "seed": s, "psnr_x4": v + 0.01 * s}
            if x2 and arm in x2:
                row["psnr_x2"] = x2[arm] + 0.01 * s
            runs.append(row)
    return {"runs": runs}


def test_every_claim_gets_its_row_and_clear_wins_reproduce():
    r = raw({"bicubic": 27.0, "ESPCN": 27.5, "VAR-RQ": 27.6, "VAR-HIT": 27.8, "VAR-HIT+DPO": 28.0},
            {"bicubic": 30.0, "ESPCN": 30.5, "VAR-HIT+DPO": 31.0})  # fmt: skip
    rows, summary = verdict(r)
    assert [x["claim"] for x in rows] == list(claims().values())
    assert summary == "reproduced"


def test_losing_to_bicubic_is_not_reproduced_and_one_seed_is_untestable():
    r = raw({"bicubic": 27.0, "ESPCN": 27.5, "VAR-RQ": 20.0, "VAR-HIT": 21.0, "VAR-HIT+DPO": 21.0})
    rows, _ = verdict(r)
    assert rows[0]["verdict"] == "not reproduced" and "worse" in rows[0]["evidence"]
    assert rows[4]["verdict"] == "untestable here"  # no x2 numbers
    one = raw({"bicubic": 27.0, "ESPCN": 27.5, "VAR-RQ": 27, "VAR-HIT": 28, "VAR-HIT+DPO": 29},
              seeds=1)  # fmt: skip
    assert all(x["verdict"] == "untestable here" for x in verdict(one)[0])
