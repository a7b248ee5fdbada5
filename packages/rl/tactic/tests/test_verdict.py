from icml26.tactic.verdict import claims, sumo_claims, sumo_verdict, verdict


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


ORDER = {"TACTIC": 0.9, "CASEC": 0.7, "DCG": 0.55, "QMIX": 0.3, "VDN": 0.2,
         "TACTIC, predictor trained": 0.6, "TACTIC, random pruning": 0.4,
         "TACTIC, no pruning": 0.8}  # fmt: skip


def test_one_row_per_claim_and_the_expected_order_reproduces():
    judged = verdict(raw(ORDER))
    rows, summary = judged["claims"], judged["verdict"]
    assert [r["claim"] for r in rows] == list(claims().values())
    assert judged["controls"][0]["passed"]
    assert all(r["verdict"] == "reproduced" for r in rows) and summary == "reproduced"


def test_ties_and_losses():
    tie = dict(ORDER, CASEC=0.9, **{"TACTIC, predictor trained": 0.9})
    rows = {r["claim"]: r for r in verdict(raw(tie, noise=0.05))["claims"]}
    c = claims()
    assert rows[c["vs_casec"]]["verdict"] == "inconclusive"  # >= claim, tie
    assert rows[c["best"]]["verdict"] == "inconclusive"  # strict claim, tie
    assert "a tie" in rows[c["best"]]["evidence"]
    assert rows[c["frozen"]]["verdict"] == "inconclusive"
    assert rows[c["sparse"]]["verdict"] == "reproduced"  # 0.9 vs 0.8
    worse = dict(ORDER, TACTIC=0.1)
    rows = {r["claim"]: r for r in verdict(raw(worse))["claims"]}
    assert rows[c["vs_casec"]]["verdict"] == "not reproduced"
    assert "worse" in rows[c["vs_casec"]]["evidence"]
    chance = {r["claim"]: r for r in verdict(raw(ORDER, ari=0.0, acc=0.40, noise=0.02))["claims"]}
    # at the null, with noise: the intervals hold it (a tie), never a win
    assert chance[c["abstraction"]]["verdict"] == "inconclusive"
    assert chance[c["predictor"]]["verdict"] == "inconclusive"


def test_one_seed_is_untestable_and_a_missing_arm_too():
    rows = verdict(raw(ORDER, seeds=1))["claims"]
    assert all(r["verdict"] == "untestable here" for r in rows)
    partial = verdict(raw({"TACTIC": 0.9, "CASEC": 0.5}))
    assert partial["claims"][2]["verdict"] == "untestable here"  # no DCG, no QMIX
    assert "control failed" in partial["claims"][0]["evidence"]  # no DCG: learnability unknown


def test_sumo_rows_read_lower_waiting_time_as_better():
    runs = [{"arm": a, "seed": s, "mean_waiting_time": v + 0.1 * s}
            for s in range(3) for a, v in {"TACTIC": 10.0, "QMIX": 20.0, "CASEC": 10.0,
                                           "fixed-time": 8.0}.items()]  # fmt: skip
    judged = sumo_verdict({"runs": runs})
    rows = judged["claims"]
    assert [r["claim"] for r in rows] == list(sumo_claims().values())
    assert rows[0]["verdict"] == "not reproduced" and "worse" in rows[0]["evidence"]
    # no learned arm beats fixed time: the rows comparing learned arms are untestable
    assert not judged["controls"][0]["passed"]
    assert rows[1]["verdict"] == rows[2]["verdict"] == "untestable here"
    runs = [{**r, "mean_waiting_time": r["mean_waiting_time"] + (10.0 if r["arm"] ==
             "fixed-time" else 0.0)} for r in runs]  # fmt: skip
    rows = sumo_verdict({"runs": runs})["claims"]
    assert rows[0]["verdict"] == "reproduced" and rows[1]["verdict"] == "reproduced"
    assert rows[2]["verdict"] == "inconclusive"  # TACTIC ties CASEC


def test_a_game_no_graph_learner_solves_makes_the_graph_rows_untestable():
    judged = verdict(raw(dict(ORDER, DCG=0.1, QMIX=0.05)))
    by = {r["claim"]: r["verdict"] for r in judged["claims"]}
    c = claims()
    assert by[c["vs_casec"]] == by[c["best"]] == by[c["variance"]] == "untestable here"
    assert by[c["dcg_vs_qmix"]] == "untestable here"  # two arms that never learned the game


def test_null_world_does_not_reproduce():
    """Every arm at one success rate with seed noise: no comparison may read reproduced."""
    import random

    rng = random.Random(0)
    false_positives = 0
    for _ in range(20):
        runs = []
        for s in range(5):
            for arm in ORDER:
                row = {"arm": arm, "seed": s, "success_after": 0.7 + rng.gauss(0, 0.05)}
                if arm.startswith("TACTIC"):
                    row |= {"class_ari": rng.gauss(0, 0.02), "predictor_acc":
                            0.4 + rng.gauss(0, 0.02), "predictor_majority": 0.4}  # fmt: skip
                runs.append(row)
        judged = verdict({"runs": runs, "n_classes": 3})
        false_positives += sum(r["verdict"] == "reproduced" for r in judged["claims"])
        assert judged["verdict"] != "reproduced"
    assert false_positives / (20 * len(claims())) < 0.05  # 95% intervals, one side each


def test_a_sumo_file_is_judged_by_the_sumo_rules():
    runs = [{"arm": a, "seed": s, "mean_waiting_time": v + 0.1 * s}
            for s in range(3) for a, v in {"TACTIC": 3.0, "QMIX": 20.0, "CASEC": 10.0,
                                           "fixed-time": 8.0}.items()]  # fmt: skip
    rows = verdict({"runs": runs, "config": {"env": "sumo"}})["claims"]
    assert [r["claim"] for r in rows] == list(sumo_claims().values())


def test_the_sumo_control_does_not_lean_on_tactics_own_numbers():
    runs = [{"arm": a, "seed": s, "mean_waiting_time": v + 0.1 * s}
            for s in range(3) for a, v in {"TACTIC": 2.0, "QMIX": 20.0, "CASEC": 12.0,
                                           "fixed-time": 8.0}.items()]  # fmt: skip
    judged = sumo_verdict({"runs": runs})
    assert not judged["controls"][0]["passed"]  # only TACTIC beats fixed time
    assert judged["claims"][0]["verdict"] == "reproduced"  # TACTIC vs fixed time itself
