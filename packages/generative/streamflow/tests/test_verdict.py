"""verdict(): one row per claim, each able to fail on its own; the package verdict summarises."""

import copy

import pytest

from icml26.streamflow.bench import LOOP
from icml26.streamflow.verdict import STEADY_EAGER, claims_for, verdict
from icml26.testing import summarise

CLAIMS = claims_for((4, 8, 16))
ROWS = list(CLAIMS)
MODELS = ["digits UNet 8x8 (trained)", "random UNet tiny 16x16"]


def _table(model, N, loop=10.0, batch=60.0, steady=65.0, spread=1.02, bulk=None):
    bulk = 1.1 * batch if bulk is None else bulk
    rows = {
        LOOP: {"images/s": loop},
        f"(b) batch of N={N}": {"images/s": batch},
        "(c) batch of M=32": {"images/s": bulk, "speedup vs (a)": bulk / loop},
        "(d) stream end to end, eager": {"images/s": 0.8 * steady},
        STEADY_EAGER: {"images/s": steady},
    }
    for r in rows.values():
        r["spread"] = spread
    return {"model": model, "N": N, "rows": rows}


def _results(diff=1e-6, perflow=1e-6, device="cuda:0", cells=None):
    """Every claim holds with the defaults (a GPU run that reaches the paper's 6.1x)."""
    tables = {}
    for m in MODELS:
        for N in (4, 8, 16):
            tables[f"{m}, N={N}"] = _table(m, N, **(cells or {}).get((m, N), {}))
    exact = {
        "flow matching": {"max |stream - sequential|": diff, "max |sequential|": 1.0,
                          "num_steps": 16, "images": 36},
        "PeRFlow windows": {"max |stream - sequential|": perflow, "max |sequential|": 1.0,
                            "num_steps": 8, "images": 36},
    }  # fmt: skip
    return {"device": device, "threads": 1, "images": 32, "repeats": 3, "exact": exact,
            "tables": tables}  # fmt: skip


def _verdicts(claims: list[dict]) -> dict[str, str]:
    by_claim = {r["claim"]: r["verdict"] for r in claims}
    assert list(by_claim) == [CLAIMS[k] for k in ROWS]  # one row per claim, in order
    return {k: by_claim[CLAIMS[k]] for k in ROWS}


def test_every_claim_holds_on_a_gpu():
    judged = verdict(_results())
    claims, v = judged["claims"], judged["verdict"]
    assert set(_verdicts(claims).values()) == {"reproduced"}
    assert v == "reproduced" == summarise([r["verdict"] for r in claims])
    assert ROWS == ["exact", "exact perflow", "batch cost N=4", "batch cost N=8",
                    "batch cost N=16", "bulk N=4", "bulk N=8", "bulk N=16", "faster N=4",
                    "faster N=8", "faster N=16", "paper speedup"]  # fmt: skip
    assert "1.0e-06" in claims[0]["evidence"] and "6.50x" in claims[-1]["evidence"]


ALL = [(m, n) for m in MODELS for n in (4, 8, 16)]
SLOW_ONE_N16 = {(MODELS[0], 16): {"steady": 45.0}}  # 0.75 of the batch at one N=16 cell
ALL_N16_SLOW = {(m, 16): {"steady": 48.0, "loop": 5.0} for m in MODELS}  # 0.8 at N=16
ONE_SLOW = {(MODELS[1], 8): {"steady": 8.0}}  # slower than the loop at one N=8 cell
BULK_FAST = {(MODELS[0], 4): {"bulk": 100.0}}  # a big batch is far more efficient than N=4
BATCHING_HURTS = {(MODELS[1], 8): {"loop": 100.0}}  # the stream keeps the (slower) batch rate
BELOW_PAPER = {c: {"steady": 60.0, "batch": 60.0} for c in ALL}  # 6.0x everywhere


@pytest.mark.parametrize(
    ("row", "change", "expected", "also"),
    [
        ("exact", {"diff": 2e-5}, "not reproduced", ()),
        ("exact perflow", {"perflow": 2e-5}, "not reproduced", ()),
        ("batch cost N=16", SLOW_ONE_N16, "partly", ("bulk N=16",)),
        ("batch cost N=16", ALL_N16_SLOW, "not reproduced", ("bulk N=16",)),
        ("bulk N=4", BULK_FAST, "partly", ()),
        ("faster N=8", BATCHING_HURTS, "partly", ()),
        # the slow cell is also below the batch-cost and bulk rules there
        ("faster N=8", ONE_SLOW, "partly", ("batch cost N=8", "bulk N=8")),
        ("paper speedup", BELOW_PAPER, "not reproduced", ()),
    ],
)
def test_each_row_fails_on_its_own(row, change, expected, also):
    kw = {k: v for k, v in change.items() if isinstance(k, str)}
    cells = {k: v for k, v in change.items() if isinstance(k, tuple)}
    judged = verdict(_results(**kw, cells=cells))
    claims, v = judged["claims"], judged["verdict"]
    got = _verdicts(claims)
    assert got[row] == expected
    assert {got[k] for k in ROWS if k != row and k not in also} == {"reproduced"}
    assert v == summarise([r["verdict"] for r in claims]) == "partly"


def test_the_gpu_speed_claim_is_untestable_on_a_cpu():
    # CPU-like numbers: exact and faster, far from 6.1x - not a refutation on a CPU
    cpu = {(m, n): {"steady": 20.0, "batch": 20.5} for m in MODELS for n in (4, 8, 16)}
    judged = verdict(_results(device="cpu", cells=cpu))
    claims, v = judged["claims"], judged["verdict"]
    got = _verdicts(claims)
    assert got["paper speedup"] == "untestable here"
    assert {got[k] for k in ROWS if k != "paper speedup"} == {"reproduced"}
    assert v == "reproduced"
    assert "measured on cpu" in claims[-1]["evidence"] and "2.00x" in claims[-1]["evidence"]


def test_exactness_is_relative_to_the_samples_scale():
    res = _results(diff=5e-5)
    res["exact"]["flow matching"]["max |sequential|"] = 10.0  # 5e-6 of the scale
    assert _verdicts(verdict(res)["claims"])["exact"] == "reproduced"


def test_verdict_is_pure():
    results = _results()
    before = copy.deepcopy(results)
    assert verdict(results) == verdict(results)
    assert results == before


def test_speed_rows_rest_on_the_timing_noise_control():
    res = _results()
    for t in res["tables"].values():
        for r in t["rows"].values():
            del r["spread"]  # a file from before spreads were recorded
    got = _verdicts(verdict(res)["claims"])
    assert got["exact"] == got["exact perflow"] == "reproduced"
    assert {got[k] for k in ROWS[2:]} == {"untestable here"}
    noisy = verdict(_results(cells={(MODELS[0], 4): {"spread": 1.6}}))
    assert not noisy["controls"][0]["passed"] and "1.600x" in noisy["controls"][0]["evidence"]


def test_a_ratio_within_the_spread_is_inconclusive():
    # batching gains nothing here (the bar is 1x); 1.05x the loop with a 1.1x spread: neither
    # faster nor slower beyond the noise
    cells = {c: {"steady": 10.5, "batch": 10.0, "spread": 1.1} for c in ALL}
    got = _verdicts(verdict(_results(device="cpu", cells=cells))["claims"])
    assert {got[f"faster N={n}"] for n in (4, 8, 16)} == {"inconclusive"}


def test_null_world_does_not_reproduce():
    """The stream no faster than the loop (same throughput, realistic timing noise): no speed
    row may read reproduced."""
    import random

    rng = random.Random(0)
    for _ in range(20):
        cells = {
            c: {"steady": 10.0 * rng.uniform(0.97, 1.03), "batch": 10.0, "spread": 1.05}
            for c in ALL
        }
        got = _verdicts(verdict(_results(device="cuda:0", cells=cells))["claims"])
        assert all(got[k] != "reproduced" for k in ROWS if k.startswith(("faster", "paper")))
