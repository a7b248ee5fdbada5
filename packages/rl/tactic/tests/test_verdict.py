from icml26.tactic.demo import claims, sumo_claims, sumo_verdict, verdict


def raw(after: dict, seeds: int = 5, ari: float = 0.6, acc: float = 0.8, noise: float = 0.01):
    runs = []
    for s in range(seeds):
        for arm, v in after.items():
            row = {"arm": arm, "seed": s, "success_after": v + noise * ((s % 3) - 1)}
            if arm.startswith("TACTIC"):
                row |= {
                    "class_ari": ari + noise * ((s % 3) - 1),
                    "predictor_acc": acc + noise * ((s % 3) - 1),
                    "predictor_majority": 0.4,
                }
            runs.append(row)
    return {"runs": runs, "n_classes": 3}


ORDER = {"TACTIC": 0.9, "CASEC": 0.7, "DCG": 0.5, "QMIX": 0.3, "VDN": 0.2,
         "TACTIC, predictor trained": 0.6, "TACTIC, random pruning": 0.4,
         "TACTIC, no pruning": 0.8}  # fmt: skip


def test_one_row_per_claim_and_the_expected_order_reproduces():
    rows, summary = verdict(raw(ORDER))
    assert [r["claim"] for r in rows] == list(claims().values())
    assert all(r["verdict"] == "reproduced" for r in rows) and summary == "reproduced"


def test_ties_and_losses():
    tie = dict(ORDER, CASEC=0.9, **{"TACTIC, predictor trained": 0.9})
    rows = {r["claim"]: r for r in verdict(raw(tie, noise=0.05))[0]}
    c = claims()
    assert rows[c["vs_casec"]]["verdict"] == "partly"  # >= claim, tie
    assert rows[c["best"]]["verdict"] == "not reproduced"  # strict claim, tie
    assert "a tie" in rows[c["best"]]["evidence"]
    assert rows[c["frozen"]]["verdict"] == "partly"
    assert rows[c["sparse"]]["verdict"] == "reproduced"  # 0.9 vs 0.8
    worse = dict(ORDER, TACTIC=0.1)
    rows = {r["claim"]: r for r in verdict(raw(worse))[0]}
    assert rows[c["vs_casec"]]["verdict"] == "not reproduced"
    assert "worse" in rows[c["vs_casec"]]["evidence"]
    chance = {r["claim"]: r for r in verdict(raw(ORDER, ari=0.0, acc=0.40, noise=0.02))[0]}
    assert chance[c["abstraction"]]["verdict"] == "not reproduced"
    assert chance[c["predictor"]]["verdict"] == "not reproduced"


def test_one_seed_is_untestable_and_a_missing_arm_too():
    rows, _ = verdict(raw(ORDER, seeds=1))
    assert all(r["verdict"] == "untestable here" for r in rows)
    partial = verdict(raw({"TACTIC": 0.9, "CASEC": 0.5}))[0]
    assert partial[2]["verdict"] == "untestable here"  # no DCG, no QMIX


def test_sumo_rows_read_lower_waiting_time_as_better():
    runs = [{"arm": a, "seed": s, "mean_waiting_time": v + 0.1 * s}
            for s in range(3) for a, v in {"TACTIC": 10.0, "QMIX": 20.0, "CASEC": 10.0,
                                           "fixed-time": 8.0}.items()]  # fmt: skip
    rows, _ = sumo_verdict({"runs": runs})
    assert [r["claim"] for r in rows] == list(sumo_claims().values())
    assert rows[0]["verdict"] == "not reproduced" and "worse" in rows[0]["evidence"]
    assert rows[1]["verdict"] == "reproduced"
    assert rows[2]["verdict"] == "partly"
