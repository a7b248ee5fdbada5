from pathlib import Path

import pytest
import torch

from icml26.entquant.cli import main
from icml26.entquant.verdict import verdict
from icml26.testing import run_cli, validate_results


def test_quick_demo_writes_valid_smoke_results(tmp_path):
    out = run_cli("icml26.entquant", ["demo", "--quick", "--device", "cpu", "--out", str(tmp_path)])
    results = validate_results(tmp_path / "results.json")
    assert results["package"] == "icml26-entquant" and "verdict: smoke" in out.stdout
    assert results["quick"] is True and results["verdict"] == "smoke"
    assert results["config"]["command"] == "icml26-entquant demo --quick --device cpu"
    assert results["device"] == "cpu"
    assert (tmp_path / "entquant.png").stat().st_size > 10_000
    assert not (tmp_path / "checkpoints").exists()
    # One smoke row per claim (RTN-3's rate on the tiny GPT, speed, GPTQ-3 on the tiny GPT), with
    # the evidence verdict() makes of the numbers in the file.
    rows = verdict(results)["claims"]
    assert [c["evidence"] for c in results["claims"]] == [r["evidence"] for r in rows]
    assert rows[1]["verdict"] == "untestable here"  # speed on a CPU
    assert "GPTQ-3" in rows[2]["claim"]
    assert "bootstrap" in rows[2]["evidence"] or "outside EntQuant's sweep" in rows[2]["evidence"]
    assert {c["verdict"] for c in results["claims"]} == {"smoke"} and len(rows) == 3
    assert len(results["models"]["tiny-gpt"]["per window"]["GPTQ-3"]) == 4
    # lambda = 0 is the plain 8-bit grid: entropy-coded it costs between 5 and 8 bits
    rows = results["models"]["tiny-gpt"]["rows"]
    assert 5 < rows["EntQuant lambda=0"]["bits/param"] < 8.5


def test_the_command_records_the_flags():
    from icml26.entquant.study import DemoConfig
    from icml26.testing.results import demo_command

    cfg = DemoConfig(models=("minilm", "smollm2"), out=Path("x"))
    assert demo_command("icml26-entquant", cfg) == "icml26-entquant demo --models minilm smollm2"


def test_bad_config_is_a_clear_error(tmp_path, capsys):
    assert main(["demo", "--quick", "--models", "gpt5", "--out", str(tmp_path)]) == 2
    assert "models must be" in capsys.readouterr().err
    assert not (tmp_path / "results.json").exists()


def test_bench_reports_ratios(capsys):
    args = ["bench", "--rows", "64", "--cols", "256", "--lambdas", "14.5", "--repeats", "1"]
    args += ["--gpt-dim", "32", "--gpt-layers", "1", "--device", "cpu"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "M params/s" in out and "MB/s" in out and "x dense" in out and "device cpu" in out
    for variant in (
        "dense bf16",
        "EntQuant lazy",
        "EntQuant cached",
        "EntQuant, decode cache",
        "NF4",
        "HQQ-4",
    ):
        assert f"forward, {variant}" in out
    assert "EntQuant cached: " in out and "kB resident" in out


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
@pytest.mark.parametrize("command", ["demo", "bench", "compress"])
def test_unavailable_device_is_a_clear_error(command, tmp_path, capsys):
    args = {
        "demo": ["--out", str(tmp_path)],
        "bench": [],
        "compress": ["--model", str(tmp_path), "--out", str(tmp_path / "eq")],
    }[command]
    assert main([command, "--device", "cuda", *args]) == 2
    err = capsys.readouterr().err
    assert "icml26-entquant: error: --device cuda" in err and "no CUDA device" in err
    assert not (tmp_path / "results.json").exists() and not (tmp_path / "eq").exists()


def test_compress_a_saved_checkpoint(tmp_path, capsys):
    import torch

    from icml26.entquant import load_compressed
    from icml26.entquant.models import tiny_gpt

    model = tiny_gpt(seed=0, dim=32, layers=2, heads=2).eval()
    model.save_pretrained(tmp_path / "hf")  # safetensors + config.json, as users have them
    args = ["compress", "--model", str(tmp_path / "hf"), "--out", str(tmp_path / "eq")]
    assert main([*args, "--lam", "14.5", "--max-iter", "10", "--device", "cpu"]) == 0
    assert "bits/param" in capsys.readouterr().out
    restored = load_compressed(tmp_path / "eq")
    x = torch.randint(0, 256, (1, 8))
    with torch.no_grad():
        diff = (restored(input_ids=x).logits - model(input_ids=x).logits).abs().max()
    assert 0 < diff < 1  # quantised, not garbage
    assert main(["compress", "--model", str(tmp_path / "nope"), "--out", str(tmp_path / "x")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_baselines_whose_extra_is_missing_are_skipped_with_a_note(monkeypatch, capsys):
    import importlib.util
    from dataclasses import replace

    from icml26.entquant.study import DemoConfig, experiment

    real = importlib.util.find_spec
    absent = {"bitsandbytes", "hqq"}
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in absent else real(name, *a)
    )
    cfg = DemoConfig(quick=True, device="cpu").resolved()
    cfg = replace(cfg, lambdas=(14.5,), baselines=("RTN-3", "NF4", "HQQ-2"), gptq=())
    results = experiment(cfg)
    out = capsys.readouterr().out
    assert "baseline NF4 skipped: bitsandbytes is not installed" in out
    assert "baseline HQQ-2 skipped: hqq is not installed" in out
    assert set(results["models"]["tiny-gpt"]["rows"]) == {
        "original",
        "EntQuant lambda=14.5",
        "RTN-3",
    }
    assert results["skipped baselines"] == ["HQQ-2", "NF4"]
    rows = verdict(results)["claims"]
    assert "not run (extra missing): HQQ-2, NF4" in rows[0]["evidence"]
    assert rows[0]["verdict"] != "reproduced"  # never a full reproduction
