import pytest
import torch

from icml26.streamflow.cli import main
from icml26.streamflow.study import DemoConfig
from icml26.streamflow.verdict import claims_for
from icml26.testing import run_cli, validate_results
from icml26.testing.results import demo_command


def test_help():
    out = run_cli("icml26.streamflow", ["--help"])
    assert "demo" in out.stdout and "bench" in out.stdout


def test_quick_demo_writes_valid_results(tmp_path):
    out = run_cli(
        "icml26.streamflow", ["demo", "--quick", "--device", "cpu", "--out", str(tmp_path)]
    )
    results = validate_results(tmp_path / "results.json")
    assert results["package"] == "icml26-streamflow" and "verdict: smoke" in out.stdout
    assert results["quick"] is True and results["verdict"] == "smoke"
    assert [r["claim"] for r in results["claims"]] == list(claims_for((2, 4)).values())
    assert all(r["verdict"] == "smoke" for r in results["claims"])
    assert results["config"]["command"] == "icml26-streamflow demo --quick --device cpu"
    assert results["device"] == "cpu"
    # the stream reproduces the sequential images even in a smoke run
    for kind in ("flow matching", "PeRFlow windows"):
        assert results["metrics"]["method"][f"max |stream - sequential|, {kind}"] <= 1e-5
    assert (tmp_path / "streamflow.png").stat().st_size > 10_000


def test_bench_runs():
    out = run_cli(
        "icml26.streamflow",
        ["bench", "--models", "tiny", "--sample-size", "8", "--images", "4", "--num-steps", "2",
         "--repeats", "1"],
    )  # fmt: skip
    assert "(e) stream steady, eager" in out.stdout and "(d) stream end to end" in out.stdout
    bad = run_cli("icml26.streamflow", ["bench", "--models", "huge"], check=False)
    assert bad.returncode == 2 and "--models" in bad.stderr


def test_bad_demo_argument(tmp_path):
    out = run_cli(
        "icml26.streamflow", ["demo", "--num-steps", "0", "--out", str(tmp_path)], check=False
    )
    assert out.returncode == 2 and "num_steps" in out.stderr


def test_default_device_keeps_the_recorded_command():
    assert DemoConfig().device == "auto"
    assert demo_command("icml26-streamflow", DemoConfig()) == "icml26-streamflow demo"


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_cuda_is_a_clear_error(tmp_path, capsys):
    for args in (["demo", "--out", str(tmp_path)], ["bench"]):
        assert main([*args, "--device", "cuda"]) == 2
        err = capsys.readouterr().err
        assert "--device cuda" in err and "no CUDA device" in err
    assert not any(tmp_path.iterdir())
