from icml26.lucid.cli import main
from icml26.testing import run_cli, validate_results


def test_quick_demo_writes_valid_results(tmp_path):
    out = run_cli("icml26.lucid", ["demo", "--quick", "--out", str(tmp_path)])
    results = validate_results(tmp_path / "results.json")
    assert results["package"] == "icml26-lucid" and "verdict:" in out.stdout
    assert (tmp_path / "lucid.png").stat().st_size > 10_000
    parts = results["verdict parts"]
    held = sum(parts.values())
    assert results["verdict"] == (
        "reproduced" if held == 3 else "partly" if held else "not reproduced"
    )
    # (a) follows from the probe numbers in the file.
    probe = results["probe"]
    a = all(probe["LUCID"][-1] >= probe[n][-1] + 0.1 for n in ("softmax (T=1)", "softmax (T=0.5)"))
    assert parts["(a) probe"] == a


def test_bad_config_is_a_clear_error(tmp_path, capsys):
    assert (
        main(
            ["demo", "--quick", "--mqar-seq-lens", "8", "--mqar-pairs", "4", "--out", str(tmp_path)]
        )
        == 2
    )
    assert "3 * pairs <= seq_len" in capsys.readouterr().err
    assert not (tmp_path / "results.json").exists()


def test_bench_reports_ratios(capsys):
    assert (
        main(
            ["bench", "--seq-lens", "16", "32", "--heads", "2", "--kv-heads", "1", "--repeats", "1"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "fwd+bwd LUCID/SDPA" in out and "decode LUCID/SDPA" in out
