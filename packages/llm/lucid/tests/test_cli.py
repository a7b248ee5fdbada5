import pytest
import torch

from icml26.lucid.cli import main
from icml26.lucid.verdict import verdict
from icml26.testing import run_cli, validate_results


def test_quick_demo_writes_valid_smoke_results(tmp_path):
    out = run_cli("icml26.lucid", ["demo", "--quick", "--device", "cpu", "--out", str(tmp_path)])
    results = validate_results(tmp_path / "results.json")
    assert results["package"] == "icml26-lucid" and "verdict: smoke" in out.stdout
    assert results["quick"] is True and results["verdict"] == "smoke"
    assert results["config"]["command"] == "icml26-lucid demo --quick --device cpu"
    assert results["device"] == "cpu"
    assert (tmp_path / "lucid.png").stat().st_size > 10_000
    # One smoke row per claim: the probe, each MQAR cell, each needle length, the character LM;
    # the evidence is what verdict() makes of the measurements in the file.
    rows = verdict(results)["claims"]
    assert [c["claim"] for c in results["claims"]] == [r["claim"] for r in rows]
    assert [c["evidence"] for c in results["claims"]] == [r["evidence"] for r in rows]
    assert {c["verdict"] for c in results["claims"]} == {"smoke"} and len(rows) == 4


def test_bad_config_is_a_clear_error(tmp_path, capsys):
    assert (
        main(
            [
                "demo",
                "--quick",
                "--mqar-seq-lens",
                "8",
                "--mqar-pairs",
                "4",
                "--mqar-steps",
                "10",
                "--out",
                str(tmp_path),
            ]
        )
        == 2
    )
    assert "3 * pairs <= seq_len" in capsys.readouterr().err
    assert not (tmp_path / "results.json").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
@pytest.mark.parametrize("command", ["demo", "bench"])
def test_unavailable_device_is_a_clear_error(command, tmp_path, capsys):
    args = ["--out", str(tmp_path)] if command == "demo" else []
    assert main([command, "--device", "cuda", *args]) == 2
    err = capsys.readouterr().err
    assert "icml26-lucid: error: --device cuda" in err and "no CUDA device" in err
    assert not (tmp_path / "results.json").exists()


def test_bench_reports_ratios(capsys):
    assert (
        main(
            [
                "bench",
                "--seq-lens",
                "16",
                "32",
                "--heads",
                "2",
                "--kv-heads",
                "1",
                "--repeats",
                "1",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "fwd+bwd LUCID/SDPA" in out and "decode LUCID/SDPA" in out
    assert out.startswith("device cpu,")
