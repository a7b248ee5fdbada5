"""The verdict rules, fixed before the full run, on hand-made measurements."""

from icml26.fidia.study import ARMS, TOY_LANDSCAPES
from icml26.fidia.verdict import (
    BASE_ARMS,
    FIDIA,
    RL_LEARNS,
    claims,
    control_check,
    estimator_check,
    verdict,
)

GOOD_GRAD = {"cosine": 0.99995, "max_z": 1.5, "single_cosine_loo": 0.7, "single_cosine_raw": 0.2,
             "replicates": 20000}  # fmt: skip


def _results(toy_gain, protein_gain, protein=True, additive_gain=0.0, rl_gain=0.1):
    """FIDIA gains ``toy_gain[k]`` optimum@N on two-mode landscape k and ``protein_gain[bb]``
    (one number, or {arm: gain}) on each protein metric; every RL arm sits ``rl_gain`` above the
    tuned base arms (RL can move the policy), and is otherwise flat."""
    lands = [*TOY_LANDSCAPES, "additive L=8 A=4"]
    toys = []
    for li, land in enumerate(lands):
        for arm in ("mean-reward RL", "GRPO", FIDIA):
            for seed in range(3):
                mine = arm == FIDIA
                gain = (toy_gain[li] if li < len(toy_gain) else additive_gain) if mine else 0.0
                toys.append({"landscape": land, "arm": arm, "seed": seed,
                             "max_at_n": 12.0 + 8 * gain + 0.01 * seed, "mean": 11.0,
                             "optimum_at_n": 0.1 + gain + 0.01 * seed})  # fmt: skip
    runs = []
    for bb, gain in protein_gain.items():
        for arm in ARMS:
            for seed in range(3):
                # a number: FIDIA's gain over every arm; a dict: each named arm's own gain
                g = gain.get(arm, 0.0) if isinstance(gain, dict) else gain * (arm == FIDIA)
                g += rl_gain * (arm not in BASE_ARMS.values())
                m = {"success_at_n": 0.5 + g + 0.01 * seed, "precision": 0.2 + g + 0.01 * seed}
                runs.append({"arm": arm, "seed": seed, "backbone": bb, "metrics": m})
    study = ({"backbones": {bb: {} for bb in protein_gain}, "runs": runs} if protein else
             {"skipped": "mdanalysistests is not installed"})  # fmt: skip
    return {"gradient_check": GOOD_GRAD, "toys": toys, "toy_landscapes": lands, "protein": study}


def test_all_wins_reproduce_every_row():
    judged = verdict(_results([0.5, 0.5, 0.5], {"5pti": 0.2, "cobrotoxin": 0.1}))
    rows, summary = judged["claims"], judged["verdict"]
    assert [r["verdict"] for r in rows] == ["reproduced"] * 4 and summary == "reproduced"
    assert [r["claim"] for r in rows] == list(claims().values())
    assert all(c["passed"] for c in judged["controls"])


def test_wins_with_ties_are_partly_and_ties_alone_are_inconclusive():
    judged = verdict(_results([0, 0, 0.7], {"5pti": 0.0, "cobrotoxin": 0.2}))
    rows, summary = judged["claims"], judged["verdict"]
    assert [r["verdict"] for r in rows] == ["partly"] * 3 + ["reproduced"]
    assert summary == "partly"
    assert "(tie)" in rows[0]["evidence"] and "(win)" in rows[0]["evidence"]
    rows = verdict(_results([0, 0, 0], {"5pti": 0.0}))["claims"]
    assert [r["verdict"] for r in rows] == ["inconclusive"] * 3 + ["reproduced"]


def test_a_loss_to_one_arm_is_not_reproduced_even_beside_wins():
    gains = {"5pti": 0.2, "cobrotoxin": {"GRPO": 0.1}}  # GRPO beats FIDIA on cobrotoxin
    rows = verdict(_results([0.5, 0.5, 0.5], gains))["claims"]
    assert rows[1]["verdict"] == "not reproduced" and "(loss)" in rows[1]["evidence"]
    assert rows[3]["verdict"] == "reproduced"  # the base arms, on their own row


def test_without_example_backbones_the_protein_rows_are_untestable():
    judged = verdict(_results([0.5, 0.5, 0.5], {}, protein=False))
    rows, summary = judged["claims"], judged["verdict"]
    assert [r["verdict"] for r in rows[1:]] == ["untestable here"] * 3
    assert summary == "reproduced"  # the one testable row reproduced


def test_rl_that_cannot_move_the_policy_leaves_the_protein_rows_untestable():
    judged = verdict(_results([0.5, 0.5, 0.5], {"5pti": 0.2, "cobrotoxin": 0.1}, rl_gain=0.0))
    rows = judged["claims"]
    assert rows[0]["verdict"] == "reproduced"  # the toy row rests on other controls
    assert [r["verdict"] for r in rows[1:]] == ["untestable here"] * 3
    assert all(f"control failed: {RL_LEARNS}" in r["evidence"] for r in rows[1:])


def test_a_failed_additive_null_makes_the_toy_row_untestable():
    rows = verdict(_results([0.5, 0.5, 0.5], {"5pti": 0.2}, additive_gain=0.5))["claims"]
    assert rows[0]["verdict"] == "untestable here" and "control failed" in rows[0]["evidence"]


def test_null_world_does_not_reproduce():
    """FIDIA equal to every arm up to seed noise: no row may read reproduced."""
    import random

    rng = random.Random(0)
    for _ in range(10):
        res = _results([0, 0, 0], {"5pti": 0.0, "cobrotoxin": 0.0})
        for t in res["toys"]:
            t["optimum_at_n"] += rng.gauss(0, 0.02)
            t["max_at_n"] += rng.gauss(0, 0.02)
        for r in res["protein"]["runs"]:
            r["metrics"] = {k: v + rng.gauss(0, 0.02) for k, v in r["metrics"].items()}
        rows = verdict(res)["claims"]
        assert all(r["verdict"] != "reproduced" for r in rows[:3]), rows


def test_checks_can_fail():
    assert estimator_check(GOOD_GRAD)["passed"]
    assert not estimator_check({**GOOD_GRAD, "max_z": 9.0})["passed"]
    assert not estimator_check({**GOOD_GRAD, "single_cosine_loo": 0.1})["passed"]
    assert control_check(_results([0, 0, 0], {}))["passed"]
    assert not control_check(_results([0, 0, 0], {}, additive_gain=0.5))["passed"]
