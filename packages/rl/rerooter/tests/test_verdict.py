"""verdict(): one row per claim, each able to fail on its own; the package verdict summarises."""

import copy

import pytest

from icml26.rerooter.demo import CLAIMS, verdict
from icml26.testing import summarise

ROWS = ["search", "online", "trained"]
METHODS = ("lts", "phs_star", "sqrt_lts_h", "sqrt_lts_l", "sqrt_lts_lh")


def _results(search=None, train=None, test=None, methods=METHODS, training=True):
    """Every claim holds with the defaults (counts shaped like the README's larger run)."""
    search = {"lts": 6, "phs_star": 14, "sqrt_lts_h": 20, "sqrt_lts_l": 12, "sqrt_lts_lh": 20} | (
        search or {}
    )
    train = {"lts": 10, "phs_star": 13, "sqrt_lts_h": 15, "sqrt_lts_l": 16, "sqrt_lts_lh": 16} | (
        train or {}
    )
    test = {"lts": 4, "phs_star": 6, "sqrt_lts_h": 6, "sqrt_lts_l": 4, "sqrt_lts_lh": 8} | (
        test or {}
    )
    boot = {
        m: {
            "train solved": train[m],
            "train expansions": 270_000,
            "train seconds": 1.0,
            "test solved": test[m],
            "test expansions": 50_000,
        }
        for m in methods
    }
    return {
        "n_test": 20,
        "n_train": 100,
        "search_only": {
            m: {"solved": search[m], "expansions": 1000, "expansions/s": 1e4} for m in methods
        },
        "bootstrap": boot if training else {},
        "curves": {},
        "device": "cpu",
    }


def _verdicts(claims: list[dict]) -> dict[str, str]:
    by_claim = {r["claim"]: r["verdict"] for r in claims}
    assert list(by_claim) == [CLAIMS[k] for k in ROWS]  # one row per claim, in order
    return {k: by_claim[CLAIMS[k]] for k in ROWS}


def test_every_claim_holds():
    claims, v = verdict(_results())
    assert set(_verdicts(claims).values()) == {"reproduced"}
    assert v == "reproduced" == summarise([r["verdict"] for r in claims])
    assert "√LTS-LH 20/20 vs LTS 6/20, PHS* 14/20" in claims[0]["evidence"]
    assert "√LTS-LH 16/100" in claims[1]["evidence"]
    assert "cumulative expansions" in claims[1]["evidence"]


@pytest.mark.parametrize(
    ("row", "change"),
    [
        ("search", {"search": {"phs_star": 20}}),  # a tie with one baseline is not "more"
        ("search", {"search": {"sqrt_lts_lh": 10}}),  # beats LTS, not PHS*
        ("online", {"train": {"lts": 16}}),  # the README's default run: a tie with LTS
        ("online", {"train": {"phs_star": 17}}),
        ("trained", {"test": {"phs_star": 9}}),
        ("trained", {"test": {"lts": 9}}),
    ],
)
def test_each_row_fails_on_its_own(row, change):
    claims, v = verdict(_results(**change))
    got = _verdicts(claims)
    assert got[row] == "not reproduced"
    assert all(got[k] == "reproduced" for k in ROWS if k != row)
    assert v == "partly" == summarise([r["verdict"] for r in claims])


def test_the_trained_row_accepts_a_tie():
    claims, _ = verdict(_results(test={"phs_star": 8}))
    assert _verdicts(claims)["trained"] == "reproduced"


def test_nothing_holds_is_not_reproduced():
    change = {"search": {"lts": 20}, "train": {"lts": 16}, "test": {"lts": 9}}
    claims, v = verdict(_results(**change))
    assert set(_verdicts(claims).values()) == {"not reproduced"} and v == "not reproduced"


def test_parts_not_run_are_untestable_rows():
    claims, v = verdict(_results(training=False))
    got = _verdicts(claims)
    assert got == {
        "search": "reproduced",
        "online": "untestable here",
        "trained": "untestable here",
    }
    assert v == "reproduced" and "--skip-training" in claims[1]["evidence"]
    claims, v = verdict(_results(methods=("lts", "sqrt_lts_h")))
    assert set(_verdicts(claims).values()) == {"untestable here"} and v == "untestable here"
    assert "--methods" in claims[0]["evidence"]


def test_verdict_is_pure():
    results = _results()
    before = copy.deepcopy(results)
    assert verdict(results) == verdict(results)
    assert results == before
