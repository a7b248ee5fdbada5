import hashlib
import json
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist
from torch import nn

from icml26.testing import (
    apply_controls,
    as_smoke,
    assemble_results,
    assert_close,
    assert_unbiased,
    assert_variance_order,
    check_gradients,
    claim_row,
    compare,
    control,
    count_verdicts,
    demo_command,
    format_counts,
    judge,
    provenance,
    results,
    run_cli,
    run_distributed,
    summarise,
    validate_results,
    write_results,
)
from icml26.testing.plugin import available_devices


def test_seed_fixture_makes_draws_repeatable(seed):
    a = torch.randn(3)
    torch.manual_seed(seed)
    assert torch.equal(a, torch.randn(3))


def test_device_parametrization(device):
    assert device in available_devices()
    assert torch.zeros(1, device=device).device.type == device


def test_assert_close_passes_and_reports():
    ref = torch.linspace(0, 1, 10, dtype=torch.float64)
    assert_close(ref.float(), ref)
    bad = ref.clone()
    bad[7] += 0.5
    with pytest.raises(AssertionError, match=r"index \(7,\).*max abs error 5\.000e-01"):
        assert_close(bad, ref)
    with pytest.raises(AssertionError, match="shape"):
        assert_close(ref[:3], ref)
    nan = ref.clone()
    nan[2] = float("nan")
    with pytest.raises(AssertionError, match="non-finite"):
        assert_close(nan, ref)
    with pytest.raises(AssertionError, match="rel_norm_tol"):
        assert_close(ref + 1e-3, ref, atol=1, rel_norm_tol=1e-6)


INF, NAN = float("inf"), float("nan")


@pytest.mark.parametrize(
    ("actual", "reference"),
    [
        ([5.0], [INF]),  # finite against inf
        ([INF], [-INF]),  # opposite infinities
        ([-INF], [INF]),
        ([5.0], [NAN]),  # finite against a NaN reference
        ([NAN], [5.0]),  # NaN against a finite reference
        ([INF], [NAN]),
        ([NAN], [NAN]),  # NaN == NaN only with equal_nan=True
        ([INF], [5.0]),
        ([1.0, INF], [1.0, 1e300]),
    ],
)
def test_assert_close_fails_on_every_non_finite_mismatch(actual, reference):
    with pytest.raises(AssertionError, match="non-finite mismatch"):
        assert_close(torch.tensor(actual), torch.tensor(reference, dtype=torch.float64))
    # no tolerance, however loose, makes them close
    with pytest.raises(AssertionError):
        reference = torch.tensor(reference, dtype=torch.float64)
        assert_close(torch.tensor(actual), reference, atol=1e308, rtol=1e308)


def test_assert_close_accepts_matching_non_finite_values():
    x = torch.tensor([1.0, INF, -INF, NAN])
    assert_close(x[:3], x[:3].double())
    assert_close(x, x.clone(), equal_nan=True)
    with pytest.raises(AssertionError, match="equal_nan=True"):
        assert_close(x, x.clone())


def test_assert_close_tolerance_is_tight_at_its_edge():
    ref = torch.zeros(3, dtype=torch.float64)
    assert_close(ref + 1e-6, ref, atol=1e-6, rtol=0)
    with pytest.raises(AssertionError):
        assert_close(ref + 2e-6, ref, atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="atol and rtol"):
        assert_close(ref, ref, atol=-1.0)


def test_assert_close_uses_its_dtype_default_tolerances():
    ref = torch.ones(4, dtype=torch.float64)
    assert_close((ref + 5e-3).half(), ref)  # fp16: atol 1e-3 + rtol 1e-2
    with pytest.raises(AssertionError):
        assert_close(ref + 5e-3, ref)  # fp64: 1e-10 + 1e-8


def test_check_gradients_against_reference_and_finite_differences():
    x = torch.randn(4, 5, requires_grad=True)
    check_gradients(lambda t: t.sin() * t, [x], lambda t: t.sin() * t, atol=1e-5, rtol=1e-4)
    check_gradients(lambda t: (t.exp() * t).sum(-1), [x])
    with pytest.raises(AssertionError, match="grad of input 0"):
        # Same forward (x^2), but a detach() drops half the gradient: a real bug to be caught.
        check_gradients(lambda t: t * t.detach(), [x], lambda t: t * t)
    with pytest.raises(AssertionError, match="forward"):
        check_gradients(lambda t: t * t + 1e-3, [x], lambda t: t * t)
    with pytest.raises(AssertionError, match="no gradient"):
        check_gradients(lambda t: t.detach() * 2, [x], lambda t: t * 2)
    with pytest.raises(AssertionError, match="reference has none"):
        y = torch.randn(4, 5, requires_grad=True)
        check_gradients(lambda a, b: a + b, [x, y], lambda a, b: a + b.detach())
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        # A custom backward that is wrong by a factor of 2: finite differences catch it.
        check_gradients(_WrongGrad.apply, [x])
    with pytest.raises(ValueError, match="no input requires grad"):
        check_gradients(lambda t: t, [torch.randn(3)])


class _WrongGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        ctx.save_for_backward(t)
        return t * t

    @staticmethod
    def backward(ctx, g):
        (t,) = ctx.saved_tensors
        return g * t  # the true gradient is 2 * g * t


def test_assert_unbiased_detects_bias():
    g = torch.Generator().manual_seed(1)
    samples = torch.randn(4000, 3, generator=g, dtype=torch.float64) + 2.0
    assert_unbiased(samples, torch.full((3,), 2.0))
    with pytest.raises(AssertionError, match="looks biased"):
        assert_unbiased(samples, torch.full((3,), 2.2))
    broken = samples.clone()
    broken[5, 1] = float("nan")
    with pytest.raises(AssertionError, match="not finite"):
        assert_unbiased(broken, torch.full((3,), 2.0))
    with pytest.raises(ValueError, match="at least 2"):
        assert_unbiased(samples[:1], torch.full((3,), 2.0))
    with pytest.raises(ValueError, match="do not match"):
        assert_unbiased(samples, torch.full((4,), 2.0))


def test_assert_variance_order():
    g = torch.Generator().manual_seed(2)
    low = 0.5 * torch.randn(2000, 4, generator=g)
    high = 1.0 * torch.randn(2000, 4, generator=g)
    assert_variance_order(low, high)
    with pytest.raises(AssertionError, match="smaller variance"):
        assert_variance_order(high, low)
    with pytest.raises(AssertionError, match="smaller variance"):
        assert_variance_order(low, low.clone())  # a tie is not an ordering
    with pytest.raises(AssertionError, match="non-finite"):
        assert_variance_order(torch.full_like(low, float("nan")), high)


def _results(**overrides):
    r = {
        "package": "icml26-x",
        "version": "0.1.0",
        "experiment": "e",
        "claim": "c",
        "headline": "error 0.1 vs 0.2",
        "controls": [
            {"name": "trained beats untrained", "kind": "positive", "passed": True,
             "evidence": "0.1 vs 0.5"},
            {"name": "random labels", "kind": "null", "passed": True, "evidence": "0.49 vs 0.5"},
        ],
        "claims": [
            {"claim": "a", "verdict": "reproduced", "evidence": "0.1 vs 0.2",
             "controls": ["trained beats untrained", "random labels"]},
            {"claim": "b", "verdict": "untestable here", "evidence": "needs a GPU",
             "controls": []},
        ],
        "counts": {"reproduced": 1, "partly": 0, "not reproduced": 0, "inconclusive": 0,
                   "untestable here": 1},
        "metrics": {"method": {"err": 0.1}, "baseline": {"err": 0.2}},
        "verdict": "reproduced",
        "quick": False,
        "seconds": 1.0,
        "config": {"command": "icml26-x demo"},
        "seed": 0,
        "device": "cpu",
        "torch": torch.__version__,
        "provenance": {"commit": "abc1234", "data": {"a.csv": "sha256:" + "0" * 64},
                       "parts": []},
    }  # fmt: skip
    r.update(overrides)
    return r


def _failed_control_results(**row_overrides):
    """The first control failed; the row resting on it says ``row_overrides``."""
    r = _results()
    r["controls"][0] = {**r["controls"][0], "passed": False, "evidence": "0.5 vs 0.5"}
    r["claims"][0] = {**r["claims"][0], **row_overrides}
    return r


def _without(field):
    r = _results()
    del r[field]
    return r


def test_validate_results_accepts_a_good_file(tmp_path):
    validate_results(_results())
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_results()))
    assert validate_results(path)["package"] == "icml26-x"
    smoke, verdict = as_smoke(_results()["claims"])
    counts = count_verdicts([c["verdict"] for c in smoke])
    validate_results(
        _results(quick=True, claims=smoke, verdict=verdict, counts=counts, device="cuda:1")
    )


_SMOKE_ROWS = [{"claim": "a", "verdict": "smoke", "evidence": "x", "controls": []}]
_ROW = {"claim": "a", "verdict": "reproduced", "evidence": "e", "controls": []}


@pytest.mark.parametrize(
    ("results", "message"),
    [
        (_results(verdict="great"), "verdict 'great'"),
        (_without("claim"), "missing field 'claim'"),
        (_without("headline"), "missing field 'headline'"),
        (_without("claims"), "missing field 'claims'"),
        (_without("quick"), "missing field 'quick'"),
        (_results(headline="  "), "'headline' is empty"),
        (_results(quick="no"), "'quick' must be bool"),
        (_results(seed=True), "'seed' must be int"),
        (_results(seconds=-1.0), "negative"),
        (_results(device="cuda | cpu"), "device"),
        (_results(claims=[]), "claims is empty"),
        (_results(claims=[{"claim": "a", "verdict": "reproduced", "controls": []}]), "'evidence'"),
        (_results(claims=[{**_ROW, "verdict": "yes"}]), "verdict 'yes'"),
        (_results(claims=["a"]), r"claims\[0\] must be an object"),
        (
            _results(claims=[{"claim": "a", "verdict": "reproduced", "evidence": "e"}]),
            "'controls'\\] must be a list",
        ),
        # the package verdict must summarise the rows, not hide one
        (
            _results(claims=[_ROW, {**_ROW, "claim": "b", "verdict": "not reproduced"}]),
            "does not summarise",
        ),
        # the counts must count the rows
        (_results(counts={"reproduced": 2}), "do not count"),
        (_without("counts"), "missing field 'counts'"),
        # controls: run before a row rests on them, well formed, unique
        (_without("controls"), "missing field 'controls'"),
        (
            _results(claims=[{**_ROW, "controls": ["never run"]}, _results()["claims"][1]]),
            "not in controls",
        ),
        (
            _results(controls=[{"name": "c", "kind": "sideways", "passed": True, "evidence": "e"}]),
            "'kind'\\] 'sideways'",
        ),
        (
            _results(controls=[{"name": "c", "kind": "null", "passed": "yes", "evidence": "e"}]),
            "true or false",
        ),
        (_results(controls=[{"name": "c", "kind": "null", "passed": True}]), "must be an object"),
        (
            _results(controls=2 * [{"name": "c", "kind": "null", "passed": True, "evidence": "e"}]),
            "used twice",
        ),
        # a row resting on a failed control cannot carry a verdict, and must say why
        (_failed_control_results(), "failed control 'trained beats untrained'"),
        (_failed_control_results(verdict="inconclusive"), "failed control"),
        (
            _failed_control_results(verdict="untestable here", evidence="no reason given"),
            "must say 'control failed: trained beats untrained'",
        ),
        # provenance: commit, sha256 per data file, parts
        (_without("provenance"), "missing field 'provenance'"),
        (_results(provenance={"commit": "", "data": {}, "parts": []}), "commit"),
        (_results(provenance={"commit": "a", "data": {"f": "md5:00"}, "parts": []}), "sha256"),
        (_results(provenance={"commit": "a", "data": {}, "parts": [{"cmd": "x"}]}), "parts"),
        (_results(config={}), "config\\['command'\\]"),
        (_results(claims=_SMOKE_ROWS, verdict="smoke"), "not one of"),  # smoke in a full run
        (_results(quick=True), "quick run's verdict must be 'smoke'"),
        (_results(quick=True, verdict="smoke"), "a --quick run is a smoke test"),
        (_results(metrics={"method": {"a": float("nan")}, "baseline": {}}), "not finite"),
        (_results(metrics={"method": {"a": "1"}, "baseline": {}}), "not a number"),
        (_results(metrics={"method": {}}), "no 'baseline'"),
        (_results(details={"curve": [1.0, float("inf")]}), r"\['curve'\]\[1\].*not finite"),
    ],
)
def test_validate_results_rejects(results, message):
    with pytest.raises(ValueError, match=message):
        validate_results(results)


def test_results_files_are_strict_json(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_results(seconds=float("nan"))))  # python's json writes NaN
    with pytest.raises(ValueError, match="NaN is not JSON"):
        validate_results(path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        validate_results(path)
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="JSON object"):
        validate_results(path)
    with pytest.raises(ValueError, match="does not exist"):
        validate_results(tmp_path / "missing.json")


def test_write_results_is_atomic_and_validating(tmp_path):
    path = tmp_path / "run" / "results.json"
    write_results(path, _results())
    assert validate_results(path) == _results()
    good = path.read_text()
    with pytest.raises(ValueError, match="does not summarise"):
        write_results(path, _results(verdict="partly"))
    with pytest.raises(ValueError, match="not finite"):
        write_results(path, _results(details=float("inf")))
    assert path.read_text() == good  # a refused write leaves the old file whole
    assert [p.name for p in path.parent.iterdir()] == ["results.json"]  # no temp files left


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        (["reproduced", "reproduced"], "reproduced"),
        (["reproduced", "untestable here"], "reproduced"),
        (["reproduced", "partly"], "partly"),
        (["reproduced", "not reproduced"], "partly"),
        (["reproduced", "inconclusive"], "partly"),
        (["not reproduced", "untestable here"], "not reproduced"),
        (["not reproduced", "not reproduced"], "not reproduced"),
        # never "partly" with nothing reproduced
        (["partly"], "inconclusive"),
        (["partly", "not reproduced"], "inconclusive"),
        (["inconclusive", "inconclusive"], "inconclusive"),
        (["inconclusive", "not reproduced", "untestable here"], "inconclusive"),
        (["untestable here"], "untestable here"),
    ],
)
def test_summarise(rows, expected):
    assert summarise(rows) == expected


def test_summarise_and_claim_row_reject_bad_verdicts():
    with pytest.raises(ValueError, match="at least one"):
        summarise([])
    with pytest.raises(ValueError, match="not claim verdicts"):
        summarise(["reproduced", "smoke"])
    with pytest.raises(ValueError, match="verdict 'ok'"):
        claim_row("c", "ok", "e")
    assert claim_row("c", "partly", "e") == {
        "claim": "c", "verdict": "partly", "evidence": "e", "controls": []
    }  # fmt: skip
    with pytest.raises(ValueError, match="control names"):
        claim_row("c", "partly", "e", controls=[""])


def test_counts_are_in_a_fixed_order_and_name_every_verdict():
    counts = count_verdicts(["inconclusive", "reproduced", "untestable here", "reproduced"])
    assert list(counts) == ["reproduced", "partly", "not reproduced", "inconclusive",
                            "untestable here"]  # fmt: skip
    assert format_counts(counts) == "2 reproduced · 1 inconclusive · 1 untestable here"
    assert format_counts(count_verdicts(["smoke", "smoke"])) == "2 smoke"
    with pytest.raises(ValueError, match="not verdicts"):
        count_verdicts(["fine"])


def test_judge_makes_rows_on_failed_controls_untestable_and_cannot_be_bypassed():
    controls = [
        control("generator beats Erdos-Renyi", "positive", False, "MMD 0.105 vs 0.057"),
        control("random direction", "null", True, "|cos| 0.14 < 0.2"),
    ]
    rows = [
        claim_row("beats flat", "reproduced", "0.1 vs 0.2", ["generator beats Erdos-Renyi"]),
        claim_row("axis", "reproduced", "0.7 vs 0.14", ["random direction"]),
        claim_row("exact size", "not reproduced", "by construction"),
    ]
    judged = judge(rows, controls)
    assert [c["verdict"] for c in judged["claims"]] == [
        "untestable here", "reproduced", "not reproduced"
    ]  # fmt: skip
    assert judged["claims"][0]["evidence"].startswith(
        "control failed: generator beats Erdos-Renyi (MMD 0.105 vs 0.057). 0.1 vs 0.2"
    )
    assert judged["verdict"] == "partly"
    assert judged["counts"]["untestable here"] == 1 and judged["counts"]["reproduced"] == 1
    assert rows[0]["verdict"] == "reproduced"  # the caller's rows are not changed in place
    quick = judge(rows, controls, quick=True)
    assert quick["verdict"] == "smoke" and quick["counts"]["smoke"] == 3
    with pytest.raises(ValueError, match="not run"):
        apply_controls([claim_row("x", "reproduced", "e", ["missing"])], controls)
    with pytest.raises(ValueError, match="unique"):
        apply_controls([], controls + controls[:1])
    with pytest.raises(ValueError, match="kind"):
        control("c", "negative", True, "e")
    with pytest.raises(TypeError, match="bool"):
        control("c", "null", 1, "e")


def test_a_package_with_a_row_blocked_by_a_failed_control_is_never_reproduced():
    controls = [control("learns", "positive", False, "0.5 vs 0.5")]
    rows = [claim_row("a", "reproduced", "e"), claim_row("b", "reproduced", "e", ["learns"])]
    judged = judge(rows, controls)
    assert judged["verdict"] == "partly"  # one reproduced, one the setting could not test
    validate_results(_results(**judged))
    gpu = [claim_row("a", "reproduced", "e"), claim_row("speed", "untestable here", "no GPU")]
    assert judge(gpu, [])["verdict"] == "reproduced"  # a row no setting here could test


def test_evidence_cannot_claim_a_control_failed_that_passed():
    r = _results()
    r["claims"][0] = {**r["claims"][0],
                      "evidence": "control failed: random labels (0.49). 0.1 vs 0.2"}  # fmt: skip
    with pytest.raises(ValueError, match="says control 'random labels' failed"):
        validate_results(r)


def test_malformed_controls_are_reported_not_raised():
    r = _results(controls=[{"name": "c", "kind": "null", "passed": True, "extra": 1}])
    with pytest.raises(ValueError, match="must be an object with"):
        validate_results(r)
    r = _results()
    r["claims"][0] = {**r["claims"][0], "controls": [["not", "a", "name"]]}
    with pytest.raises(ValueError, match="list of control names"):
        validate_results(r)


def test_a_file_whose_rows_hide_a_failed_control_is_refused(tmp_path):
    """Mutation check: flip one passed control to failed and the stored rows no longer hold."""
    r = _results()
    validate_results(r)
    r["controls"][1]["passed"] = False
    with pytest.raises(ValueError, match="failed control 'random labels'"):
        validate_results(r)
    with pytest.raises(ValueError, match="failed control"):
        write_results(tmp_path / "results.json", r)
    assert not (tmp_path / "results.json").exists()


@pytest.mark.parametrize(
    ("low", "high", "margin", "expected"),
    [
        (0.2, 0.5, 0.1, "reproduced"),
        (0.05, 0.5, 0.1, "inconclusive"),  # straddles the margin
        (-0.1, 0.1, 0.0, "inconclusive"),  # a tie
        (-0.05, 0.05, 0.1, "not reproduced"),  # a tight tie: short of the margin throughout
        (-0.5, -0.2, 0.0, "not reproduced"),
        (None, None, 0.0, "untestable here"),
    ],
)
def test_compare(low, high, margin, expected):
    assert compare(low, high, margin) == expected


# scipy.stats.t.ppf, to 9 decimals (the toolkit's own environment has no scipy)
T_PPF = {
    0.975: {1: 12.706204736, 2: 4.30265273, 3: 3.182446305, 4: 2.776445105, 9: 2.262157163,
            10: 2.228138852, 11: 2.20098516, 30: 2.042272456, 200: 1.971896224},
    0.9: {1: 3.077683537, 2: 1.885618083, 3: 1.637744354, 4: 1.533206274, 9: 1.383028738,
          10: 1.372183641, 11: 1.363430318, 30: 1.310415025, 200: 1.285798794},
}  # fmt: skip


@pytest.mark.parametrize("p", sorted(T_PPF))
def test_t_quantile_matches_scipy(p):
    for df, want in T_PPF[p].items():
        assert results.t_quantile(p, df) == pytest.approx(want, abs=2e-9), df
        assert results.t_quantile(1 - p, df) == pytest.approx(-want, abs=2e-9), df
    assert results.t_quantile(0.5, 7) == pytest.approx(0.0, abs=1e-12)


def test_t_quantile_rejects_bad_arguments():
    for p, df in ((0.0, 3), (1.0, 3), (0.975, 0), (0.975, 2.5), (0.975, True)):
        with pytest.raises(ValueError, match="t_quantile"):
            results.t_quantile(p, df)


def test_paired_interval():
    mean, lo, hi = results.paired_interval([0.1, 0.2, 0.3])
    assert mean == pytest.approx(0.2) and lo == pytest.approx(0.2 - 4.30265273 * 0.1 / 3**0.5)
    assert hi == pytest.approx(0.4 - lo)
    assert results.paired_interval([0.5]) == (0.5, None, None)
    # any number of seeds: the interval narrows towards the normal one
    mean, lo, hi = results.paired_interval([float(i % 2) for i in range(40)])
    assert hi - lo == pytest.approx(2 * 2.02269092 * statistics.stdev([i % 2 for i in range(40)])
                                    / 40**0.5)  # fmt: skip
    with pytest.raises(ValueError, match="no differences"):
        results.paired_interval([])


def test_compare_rejects_bad_intervals():
    with pytest.raises(ValueError, match="margin"):
        compare(0.0, 1.0, -0.1)
    with pytest.raises(ValueError, match="not an interval"):
        compare(1.0, 0.0)
    with pytest.raises(ValueError, match="not an interval"):
        compare(float("nan"), 0.0)


def test_null_world_never_reproduces():
    """Method and baseline drawn from one distribution: ``compare`` on a 95% interval of the
    difference must not call it reproduced more often than the interval's error rate."""
    rng = np.random.default_rng(0)
    wins = 0
    for _ in range(400):
        a, b = rng.normal(1.0, 0.1, 5), rng.normal(1.0, 0.1, 5)
        d, se = a.mean() - b.mean(), np.sqrt(a.var(ddof=1) / 5 + b.var(ddof=1) / 5)
        wins += compare(d - 2.31 * se, d + 2.31 * se, 0.0) == "reproduced"
    assert wins / 400 < 0.05
    # and it has power: a real effect of three noise widths reproduces almost always
    hits = 0
    for _ in range(400):
        a, b = rng.normal(1.3, 0.1, 5), rng.normal(1.0, 0.1, 5)
        d, se = a.mean() - b.mean(), np.sqrt(a.var(ddof=1) / 5 + b.var(ddof=1) / 5)
        hits += compare(d - 2.31 * se, d + 2.31 * se, 0.0) == "reproduced"
    assert hits / 400 > 0.9


def test_provenance_records_the_commit_and_fingerprints(tmp_path):
    data = tmp_path / "d.csv"
    data.write_bytes(b"a,b\n1,2\n")
    prov = provenance(__file__, {"d.csv": data}, [{"command": "x demo --part 1"}])
    assert prov["data"]["d.csv"] == "sha256:" + hashlib.sha256(b"a,b\n1,2\n").hexdigest()
    # this file lives in the repository's checkout: a real 40-hex commit, maybe +dirty
    assert re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", prov["commit"]), prov["commit"]
    assert prov["parts"] == [{"command": "x demo --part 1"}]
    assert provenance(None)["commit"] == "unknown"
    assert provenance(tmp_path / "x.py")["commit"] == "unknown"  # not a git checkout


def test_assemble_results_writes_a_valid_file_and_smokes_quick_runs(tmp_path):
    judged = judge(_results()["claims"], _results()["controls"])
    parts = dict(
        package="icml26-x", version="0.1.0", experiment="e", claim="c", headline="h",
        judged=judged, metrics={"method": {}, "baseline": {}}, seconds=1.234,
        config={"command": "icml26-x demo"}, seed=0, device="cpu", torch_version="2",
        provenance=provenance(None), measurements={"curve": [1, 2]},
    )  # fmt: skip
    full = assemble_results(quick=False, **parts)
    assert full["verdict"] == "reproduced" and full["curve"] == [1, 2] and full["seconds"] == 1.23
    write_results(tmp_path / "r.json", full)
    quick = assemble_results(quick=True, **parts)
    assert quick["verdict"] == "smoke" and {c["verdict"] for c in quick["claims"]} == {"smoke"}
    # a failed control's note is written once, the same as a full run's evidence
    failed = [{**c, "passed": False} for c in _results()["controls"]]
    once = assemble_results(quick=True, **{**parts, "judged": judge(_results()["claims"], failed)})
    assert once["claims"][0]["evidence"].count("control failed: trained beats untrained") == 1
    validate_results(quick)
    with pytest.raises(ValueError, match="overwrite"):
        assemble_results(quick=False, **{**parts, "measurements": {"verdict": "x"}})


def test_demo_command_lists_non_default_fields():
    @dataclass(frozen=True)
    class Cfg:
        quick: bool = False
        plot: bool = True
        out: Path | None = None
        models: tuple[str, ...] = ("tiny",)
        lr: float = 1e-3

    assert demo_command("icml26-x", Cfg()) == "icml26-x demo"
    cfg = Cfg(quick=True, plot=False, out=Path("somewhere"), models=("a", "b c"), lr=0.5)
    assert (
        demo_command("icml26-x", cfg) == "icml26-x demo --quick --no-plot --models a 'b c' --lr 0.5"
    )
    with pytest.raises(TypeError, match="dataclass"):
        demo_command("icml26-x", {"quick": True})


def test_run_cli_reports_failures():
    out = run_cli("json.tool", ["--help"])
    assert "usage" in out.stdout
    with pytest.raises(AssertionError, match="exit code"):
        run_cli("json.tool", ["/definitely/not/here.json"])
    assert run_cli("json.tool", ["/definitely/not/here.json"], check=False).returncode != 0


# the plugin is opted into (a conftest's pytest_plugins, or -p), never loaded by installing
PLUGIN = ("-p", "icml26.testing.plugin")


def test_device_parametrization_matches_argnames_exactly(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.parametrize("devices", [1, 2])
        def test_plural(device, devices):
            assert device in ("cpu", "cuda")

        @pytest.mark.parametrize("x, device", [(1, "meta")])
        def test_own(x, device):
            assert device == "meta"
        """
    )
    result = pytester.runpytest(*PLUGIN)
    # test_plural: a parameter named "devices" does not stop the device parametrization
    cuda = len(available_devices()) == 2
    result.assert_outcomes(passed=(4 if cuda else 2) + 1, skipped=0 if cuda else 2)


def test_cuda_device_cases_are_gpu_marked_so_they_can_run_apart(pytester):
    pytester.makepyfile(
        """
        def test_on(device):
            assert device in ("cpu", "cuda")
        """
    )
    cuda = len(available_devices()) == 2
    pytester.runpytest(*PLUGIN, "-m", "not gpu").assert_outcomes(passed=1, deselected=1)
    pytester.runpytest(*PLUGIN, "-m", "gpu").assert_outcomes(
        passed=int(cuda), skipped=int(not cuda), deselected=1
    )


def test_a_gpu_test_after_the_triton_interpreter_fails_loudly(pytester):
    # a subprocess: the conftest pretends CUDA is there and Triton was imported to interpret
    pytester.makeconftest(
        """
        import os, sys, types
        import torch
        torch.cuda.is_available = lambda: True
        sys.modules["triton"] = types.ModuleType("triton")
        os.environ["TRITON_INTERPRET"] = "1"
        """
    )
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.gpu
        def test_kernel():
            pass

        def test_cpu():
            pass
        """
    )
    result = pytester.runpytest_subprocess(*PLUGIN)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*own process*pytest -m gpu*"])


def _ddp_train(steps: int):
    # A tiny DDP model: different data on each rank, identical weights at the end.
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Linear(3, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(100 + rank)
    for _ in range(steps):
        x = torch.randn(8, 3, generator=g)
        loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"rank": rank, "weights": [p.detach().clone() for p in model.parameters()]}


def _fail():
    raise ValueError("boom on purpose")


@pytest.mark.distributed
def test_run_distributed_ddp_ranks_agree():
    results = run_distributed(_ddp_train, 5, world_size=2)
    assert [r["rank"] for r in results] == [0, 1]
    for a, b in zip(results[0]["weights"], results[1]["weights"], strict=True):
        assert torch.equal(a, b)
    # ...and training moved them (the ranks agree because DDP synchronised, not by standing still)
    torch.manual_seed(0)
    init = nn.Linear(3, 1)
    assert not torch.equal(init.weight.detach(), results[0]["weights"][0])


@pytest.mark.distributed
def test_run_distributed_surfaces_errors():
    with pytest.raises(RuntimeError, match="boom on purpose"):
        run_distributed(_fail, world_size=2)


def test_numpy_is_seeded_too(seed):
    a = np.random.rand()  # noqa: NPY002 -- checking the legacy global generator on purpose
    np.random.seed(seed)  # noqa: NPY002
    assert a == np.random.rand()  # noqa: NPY002


def test_run_readme_snippets_surfaces_a_failing_snippet(tmp_path):
    from icml26.testing import run_readme_snippets

    readme = tmp_path / "README.md"
    readme.write_text("```python\nassert 1 == 2, 'snippet is wrong'\n```\n")
    with pytest.raises(AssertionError, match="snippet is wrong"):
        run_readme_snippets(readme, cwd=tmp_path)


def test_run_readme_snippets(tmp_path):
    from icml26.testing import run_readme_snippets

    readme = tmp_path / "README.md"
    readme.write_text("# x\n```python\na = 2\n```\ntext\n```python\nb = a * 3\n```\n")
    assert run_readme_snippets(readme, cwd=tmp_path)["b"] == 6
    (tmp_path / "EMPTY.md").write_text("# nothing\n")
    with pytest.raises(AssertionError, match="no ```python"):
        run_readme_snippets(tmp_path / "EMPTY.md")


def test_resolve_device_reads_the_flag_and_refuses_what_is_not_here():
    from icml26.testing import resolve_device

    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device(" CPU ") == "cpu"
    for bad in ("gpu", "cuda:x", "meta", "cpu,cuda", ""):
        with pytest.raises(ValueError, match="--device"):
            resolve_device(bad)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            resolve_device("cuda")
    else:
        with pytest.raises(ValueError, match="only"):
            resolve_device(f"cuda:{torch.cuda.device_count()}")


def test_package_version_reads_metadata_then_the_source_tree(tmp_path):
    from icml26.testing import package_version

    assert package_version("pytest") == pytest.__version__
    tree = tmp_path / "pkg"
    (tree / "src" / "icml26" / "x").mkdir(parents=True)
    (tree / "pyproject.toml").write_text(
        '[project]\nname = "icml26-not-installed"\nversion = "3.1.4"\n'
    )
    module = tree / "src" / "icml26" / "x" / "__init__.py"
    assert package_version("icml26-not-installed", str(module)) == "3.1.4"
    assert package_version("icml26-not-installed") == "0+unknown"
    assert package_version("icml26-other-name", str(module)) == "0+unknown"
