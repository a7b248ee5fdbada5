"""The verdict rules on made-up numbers: each claim's row can come out every way."""

from icml26.lipopu.baselines import BASELINES
from icml26.lipopu.study import ABLATIONS, OBJECTIVES
from icml26.lipopu.verdict import LEARNABLE, claims, verdict

FRACTIONS = [1.0, 0.5, 0.25]
PRIOR_ARMS = [f"{a} (true prior x{f:g})" for a in ("nnpu", "lipopu") for f in (1, 0.5, 2)]


def _results(auprc, val=None, multilabel=None, case=None, seeds=3):
    """auprc(arm, c, seed) -> test AUPRC; val(arm, c) -> validation PU-AUROC."""
    val = val or (lambda arm, c: 0.9)
    runs = [
        {
            "seed": s,
            "c": c,
            "arm": a,
            "val_pu_auroc": val(a, c),
            "metrics": {"auprc": auprc(a, c, s), "auroc": 0.9},
        }
        for s in range(seeds)
        for c in FRACTIONS
        for a in [*OBJECTIVES, *BASELINES] + ([*ABLATIONS, *PRIOR_ARMS] if c == 0.5 else [])
    ]
    ml = multilabel or (lambda arm, cat, s: 0.5)
    return {
        "data": {"source": "synthetic cohort", "lipid_share": 0.127},
        "fractions": FRACTIONS,
        "ablation_c": 0.5,
        "prior_factors": [0.5, 2.0],
        "seeds": seeds,
        "runs": runs,
        "multilabel": [
            {"seed": s, "arm": a, **{k: {"auprc": ml(a, k, s)} for k in ("sterol", "fatty_acyl")}}
            for s in range(seeds)
            for a in ("bce", "lipopu")
        ],
        "case_study": case
        or {
            "structure": "1a28.pdb.gz",
            "ligand": "STR",
            "pockets": 36,
            "site_rank": {
                "lipopu": 1,
                "bce": 2,
                "fpocket score": 3,
                "slipp_forest": 2,
                "best descriptor (mean_loc_hyd_dens)": 1,
            },
        },
    }


def _verdicts(results):
    judged = verdict(results)
    rows, summary = judged["claims"], judged["verdict"]
    assert [r["claim"] for r in rows] == list(claims(FRACTIONS).values())
    return {k: r["verdict"] for k, r in zip(claims(FRACTIONS), rows, strict=True)}, summary


def _good(arm, c, s):
    jitter = 0.003 * s
    if arm == "lipopu" or arm.startswith("lipopu (true prior"):
        return 0.80 + jitter
    return 0.70 + jitter * 0.5


def _good_ml(arm, cat, s):
    return 0.6 + (0.1 if arm == "lipopu" else 0) + 0.01 * s


def test_everything_reproduced():
    v, summary = _verdicts(_results(_good, multilabel=_good_ml))
    assert set(v.values()) == {"reproduced"} and summary == "reproduced"


def test_everything_not_reproduced():
    def bad(arm, c, s):
        if arm == "lipopu (true prior x1)":
            return 0.85 + 0.01 * s
        if arm.startswith("lipopu (true prior"):
            return 0.60 + 0.01 * s  # the x0.5 / x2 priors lose 0.25
        if arm.startswith("lipopu ("):  # every ablation wins
            return 0.90 + 0.01 * s
        return {"lipopu": 0.80}.get(arm, 0.85) + 0.01 * s

    case = {"structure": "1a28.pdb.gz", "ligand": "STR", "pockets": 36,
            "site_rank": {"lipopu": 9, "fpocket score": 1}}  # fmt: skip
    ml = lambda a, cat, s: 0.5 - (0.1 if a == "lipopu" else 0) + 0.02 * s  # noqa: E731
    v, summary = _verdicts(_results(bad, multilabel=ml, case=case))
    assert set(v.values()) == {"not reproduced"} and summary == "not reproduced"


def test_comparators_are_chosen_on_validation_not_test():
    # gradient boosting wins on test, logistic on validation: the row compares with logistic
    def auprc(arm, c, s):
        return {"lipopu": 0.80, "gradient_boosting": 0.95, "logistic": 0.70}.get(arm, 0.5) + (
            0.01 * s
        )

    def val(arm, c):
        return 0.99 if arm == "logistic" else 0.9

    rows = verdict(_results(auprc, val=val))["claims"]
    row = dict(zip(claims(FRACTIONS), rows, strict=True))["vs_baselines@1"]
    assert "LipoPU - logistic" in row["evidence"] and row["verdict"] == "reproduced"


def test_a_difference_inside_the_noise_is_a_tie():
    def noisy(arm, c, s):
        return 0.80 + (0.05 if (arm == "lipopu") == (s % 2 == 0) else -0.05)

    rows = verdict(_results(noisy))["claims"]
    assert rows[0]["verdict"] == "inconclusive" and "a tie" in rows[0]["evidence"]


def test_prior_row_is_an_equivalence_test():
    def wobbly(arm, c, s):  # x2 costs 0.01 on average, but its interval reaches far below -0.02
        if arm == "lipopu (true prior x2)":
            return 0.79 + (0.04 if s % 2 else -0.04)
        return _good(arm, c, s)

    v, _ = _verdicts(_results(wobbly, multilabel=_good_ml))
    assert v["prior"] == "partly"  # x0.5 holds, x2's interval straddles the margin

    def both(arm, c, s):
        if arm.startswith("lipopu (true prior x") and not arm.endswith("x1)"):
            return 0.79 + (0.04 if s % 2 else -0.04)
        return _good(arm, c, s)

    v, _ = _verdicts(_results(both, multilabel=_good_ml))
    assert v["prior"] == "inconclusive"  # neither factor shown, neither refuted


def test_case_study_rows():
    def case(lipopu, fpocket):
        return {"structure": "1a28.pdb.gz", "ligand": "STR", "pockets": 36,
                "site_rank": {"lipopu": lipopu, "fpocket score": fpocket}}  # fmt: skip

    v, _ = _verdicts(_results(_good, case=case(3, 2)))
    assert v["case_study"] == "partly"
    v, _ = _verdicts(_results(_good, case=case(5, 2)))
    assert v["case_study"] == "not reproduced"
    # first, but only as good as the references: still reproduced; a reference can't be beaten
    v, _ = _verdicts(_results(_good))
    assert v["case_study"] == "reproduced"
    v, summary = _verdicts(_results(_good, case={"skipped": "no structure"}))
    assert v["case_study"] == "untestable here" and summary != "untestable here"


def test_a_case_study_fpocket_already_solves_is_untestable():
    # fpocket's own score puts the ligand's pocket first: LipoPU ranking it first (or in the top
    # three) says nothing, LipoPU missing it still says something
    for lipopu, expected in ((1, "untestable here"), (3, "untestable here"), (9, "not reproduced")):
        case = {"structure": "1a28.pdb.gz", "ligand": "STR", "pockets": 36,
                "site_rank": {"lipopu": lipopu, "fpocket score": 1}}  # fmt: skip
        judged = verdict(_results(_good, case=case))
        row = dict(zip(claims(FRACTIONS), judged["claims"], strict=True))["case_study"]
        assert row["verdict"] == expected, lipopu
        assert not judged["controls"][1]["passed"]
        assert "fpocket ranks the STR pocket 1 of 36" in judged["controls"][1]["evidence"]
        if expected == "untestable here":
            assert row["evidence"].startswith("uninformative: 1a28.pdb.gz: fpocket ranks the STR")


def test_pockets_without_a_learnable_signal_leave_the_comparisons_untestable():
    def chance(arm, c, s):
        return 0.13 + 0.3 * (arm == "lipopu") + 0.003 * s  # baselines at the lipid share

    judged = verdict(_results(chance, multilabel=_good_ml))
    assert not judged["controls"][0]["passed"]
    rows = dict(zip(claims(FRACTIONS), judged["claims"], strict=True))
    assert rows["vs_bce@1"]["verdict"] == "untestable here"
    assert rows["vs_bce@1"]["evidence"].startswith(f"control failed: {LEARNABLE}")
    # the case study rests on its own (fpocket) control, not on the learnable one
    assert rows["case_study"]["verdict"] == "reproduced"


def test_null_world_does_not_reproduce():
    """LipoPU drawn like every other arm (same mean, seed noise): no comparison row may read
    reproduced beyond the intervals' error rate."""
    import random

    rng = random.Random(0)
    hits = rows = 0
    for _ in range(10):
        draws = {}

        def same(arm, c, s, draws=draws):
            return draws.setdefault((arm, c, s), 0.8 + rng.gauss(0, 0.01))

        judged = verdict(_results(same, multilabel=lambda a, cat, s: 0.6 + rng.gauss(0, 0.01)))
        # the prior row is an equivalence claim (no effect is what it predicts)
        compared = [r for k, r in zip(claims(FRACTIONS), judged["claims"], strict=True)
                    if k not in ("case_study", "prior")]  # fmt: skip
        hits += sum(r["verdict"] == "reproduced" for r in compared)
        rows += len(compared)
    assert hits / rows < 0.05
