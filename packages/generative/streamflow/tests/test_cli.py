from icml26.testing import run_cli, validate_results


def test_help():
    out = run_cli("icml26.streamflow", ["--help"])
    assert "demo" in out.stdout and "bench" in out.stdout


def test_quick_demo_writes_valid_results(tmp_path):
    run_cli("icml26.streamflow", ["demo", "--quick", "--out", str(tmp_path)])
    results = validate_results(tmp_path / "results.json")
    assert results["package"] == "icml26-streamflow"
    assert results["claims"]["stream reproduces the sequential images (max |diff| <= 1e-5)"]
    assert (tmp_path / "streamflow.png").stat().st_size > 10_000


def test_bench_runs():
    out = run_cli(
        "icml26.streamflow",
        ["bench", "--sizes", "tiny", "--sample-size", "8", "--images", "4", "--num-steps", "2"],
    )
    assert "(d) stream, eager" in out.stdout


def test_bad_demo_argument(tmp_path):
    out = run_cli(
        "icml26.streamflow", ["demo", "--num-steps", "0", "--out", str(tmp_path)], check=False
    )
    assert out.returncode == 2 and "num_steps" in out.stderr
