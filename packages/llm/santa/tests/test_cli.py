import pytest
import torch

from icml26.santa.cli import main
from icml26.santa.verdict import verdict
from icml26.testing import run_cli, validate_results


def test_help():
    out = run_cli("icml26.santa", ["--help"])
    assert "demo" in out.stdout and "bench" in out.stdout


def test_quick_demo_on_the_tiny_model_writes_valid_smoke_results(tmp_path):
    out = run_cli(
        "icml26.santa",
        ["demo", "--quick", "--model", "tiny", "--device", "cpu", "--out", str(tmp_path)],
    )
    results = validate_results(tmp_path / "results.json")
    assert results["package"] == "icml26-santa" and "verdict: smoke" in out.stdout
    assert results["quick"] is True and results["verdict"] == "smoke"
    assert results["config"]["command"] == "icml26-santa demo --quick --model tiny --device cpu"
    assert results["device"] == "cpu"
    assert (tmp_path / "santa.png").stat().st_size > 10_000
    for row in results["estimator"].values():
        assert 0 < row["read fraction"] <= 1
        if row["mode"] != "top-k":  # the deterministic baseline has no sampling bias to report
            assert row["exact bias"] < 1e-9
    for r in results["decode"].values():
        for mode in results["modes"]:
            assert 0 < r[mode]["read fraction"] < 1 and r[mode]["kl"]["mean"] >= 0
    # The tiny model has no needle: decode and bias rows per mode, and the speed row, with the
    # evidence verdict() gives.
    rows = verdict(results)["claims"]
    assert len(rows) == 2 * len(results["config"]["modes"]) + 1 == len(results["claims"])
    assert [c["evidence"] for c in results["claims"]] == [r["evidence"] for r in rows]
    assert {c["verdict"] for c in results["claims"]} == {"smoke"}


def test_bench_prints_the_roofline_bound():
    out = run_cli(
        "icml26.santa",
        ["bench", "--contexts", "256", "--samples", "16", "--repeats", "1", "--device", "cpu"],
    )
    assert "bound 2/(1+f)" in out.stdout and out.stdout.startswith("device cpu;")


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
@pytest.mark.parametrize("command", ["demo", "bench"])
def test_unavailable_device_is_a_clear_error(command, tmp_path, capsys):
    args = ["--model", "tiny", "--out", str(tmp_path)] if command == "demo" else []
    assert main([command, "--device", "cuda", *args]) == 2
    err = capsys.readouterr().err
    assert "icml26-santa: error: --device cuda" in err and "no CUDA device" in err
    assert not (tmp_path / "results.json").exists()


def test_demo_rejects_bad_samples(tmp_path):
    out = run_cli(
        "icml26.santa",
        ["demo", "--quick", "--model", "tiny", "--sweep-draws", "0", "--out", str(tmp_path)],
        check=False,
    )
    assert out.returncode == 2 and "icml26-santa: error: sweep_draws must hold" in out.stderr
