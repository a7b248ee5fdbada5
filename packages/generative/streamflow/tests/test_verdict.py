"""verdict(): one row per claim, each able to fail on its own; the package verdict summarises."""

import copy

import pytest

from icml26.streamflow.demo import CLAIMS, verdict
from icml26.testing import summarise

ROWS = ["exact", "paper speedup", "faster"]


def _results(diff=1e-6, speedups=(6.5, 6.2, 6.8), device="cuda:0"):
    """Every claim holds with the defaults (a GPU run that reaches the paper's 6.1x)."""
    names = ["digits UNet 8x8 (trained)", "random UNet tiny 16x16", "random UNet small 16x16"]
    return {
        "device": device,
        "threads": 1,
        "num_steps": 4,
        "images": 32,
        "max |stream - sequential|": diff,
        "stream speedups": dict(zip(names, speedups, strict=True)),
        "bulk speedups": dict.fromkeys(names, 3.0),
        "tables": {},
        "final training loss": 0.1,
    }


def _verdicts(claims: list[dict]) -> dict[str, str]:
    by_claim = {r["claim"]: r["verdict"] for r in claims}
    assert list(by_claim) == [CLAIMS[k] for k in ROWS]  # one row per claim, in order
    return {k: by_claim[CLAIMS[k]] for k in ROWS}


def test_every_claim_holds_on_a_gpu():
    claims, v = verdict(_results())
    assert set(_verdicts(claims).values()) == {"reproduced"}
    assert v == "reproduced" == summarise([r["verdict"] for r in claims])
    assert "1.0e-06" in claims[0]["evidence"] and "6.80x" in claims[1]["evidence"]


@pytest.mark.parametrize(
    ("row", "change"),
    [
        ("exact", {"diff": 2e-5}),
        ("paper speedup", {"speedups": (6.0, 2.0, 5.9)}),  # the best model is what counts
        ("faster", {"speedups": (7.0, 6.5, 0.9)}),  # one model slower than the loop
    ],
)
def test_each_row_fails_on_its_own(row, change):
    claims, v = verdict(_results(**change))
    got = _verdicts(claims)
    assert got[row] == "not reproduced"
    assert all(got[k] == "reproduced" for k in ROWS if k != row)
    assert v == "partly" == summarise([r["verdict"] for r in claims])


def test_the_gpu_speed_claim_is_untestable_on_a_cpu():
    # CPU-like numbers: exact and faster, far from 6.1x - not a refutation on a CPU
    claims, v = verdict(_results(speedups=(1.76, 1.75, 1.57), device="cpu"))
    assert _verdicts(claims) == {
        "exact": "reproduced",
        "paper speedup": "untestable here",
        "faster": "reproduced",
    }
    assert v == "reproduced"
    assert "measured on cpu" in claims[1]["evidence"] and "1.76x" in claims[1]["evidence"]
    claims, v = verdict(_results(diff=1.0, speedups=(0.8, 0.9, 0.9), device="cpu"))
    assert v == "not reproduced" and _verdicts(claims)["paper speedup"] == "untestable here"


def test_verdict_is_pure():
    results = _results()
    before = copy.deepcopy(results)
    assert verdict(results) == verdict(results)
    assert results == before
