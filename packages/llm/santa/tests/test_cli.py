from icml26.testing import run_cli, validate_results


def test_help():
    out = run_cli("icml26.santa", ["--help"])
    assert "demo" in out.stdout and "bench" in out.stdout


def test_quick_demo_on_the_tiny_model_writes_valid_results(tmp_path):
    run_cli("icml26.santa", ["demo", "--quick", "--model", "tiny", "--out", str(tmp_path)])
    results = validate_results(tmp_path / "results.json")
    assert results["package"] == "icml26-santa"
    assert (tmp_path / "santa.png").stat().st_size > 10_000
    for row in results["estimator"].values():
        assert 0 < row["read fraction"] <= 1


def test_bench_prints_the_roofline_bound():
    out = run_cli(
        "icml26.santa", ["bench", "--contexts", "256", "--samples", "16", "--repeats", "1"]
    )
    assert "bound 2/(1+f)" in out.stdout


def test_demo_rejects_bad_samples(tmp_path):
    out = run_cli(
        "icml26.santa",
        ["demo", "--quick", "--model", "tiny", "--samples", "0", "--out", str(tmp_path)],
        check=False,
    )
    assert out.returncode == 2 and "samples" in out.stderr
