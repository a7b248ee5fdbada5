from icml26.entquant.cli import main
from icml26.testing import run_cli, validate_results


def test_quick_demo_writes_valid_results(tmp_path):
    out = run_cli("icml26.entquant", ["demo", "--quick", "--out", str(tmp_path)])
    results = validate_results(tmp_path / "results.json")
    assert results["package"] == "icml26-entquant" and "verdict:" in out.stdout
    assert (tmp_path / "entquant.png").stat().st_size > 10_000
    assert not (tmp_path / "checkpoints").exists()
    # The verdict follows from the numbers in the file.
    rows = results["models"]["tiny-gpt"]["rows"]
    ent = [v for k, v in rows.items() if k.startswith("EntQuant")]
    rtn = rows["RTN-3"]
    cheaper = [v["KL"] for v in ent if v["bits/param"] <= rtn["bits/param"]]
    a = bool(cheaper) and min(cheaper) < rtn["KL"]
    b = results["extrapolated 70B minutes"] < 10
    parts = results["verdict parts"]
    assert parts == {"(a) rate-distortion": a, "(b) 70B in < 10 min": b}
    assert results["verdict"] == (
        "reproduced" if a and b else "partly" if a or b else "not reproduced"
    )
    # lambda = 0 is the plain 8-bit grid: entropy-coded it costs between 5 and 8 bits
    assert 5 < rows["EntQuant lambda=0"]["bits/param"] < 8.5


def test_rate_distortion_part_needs_a_baseline_to_compare_with():
    from icml26.entquant.demo import _verdict

    rows = {"EntQuant lambda=58": {"bits/param": 2.2, "KL": 1.0}}
    run = {"m": {"rows": rows, "distortion": "KL"}}
    assert _verdict(run, None)[2]["(a) rate-distortion"] is False
    rows["RTN-2"] = {"bits/param": 2.5, "KL": 3.0}
    assert _verdict(run, None)[2]["(a) rate-distortion"] is True
    rows["RTN-2"]["KL"] = 0.5
    assert _verdict(run, None)[2]["(a) rate-distortion"] is False


def test_bad_config_is_a_clear_error(tmp_path, capsys):
    assert main(["demo", "--quick", "--models", "gpt5", "--out", str(tmp_path)]) == 2
    assert "models must be" in capsys.readouterr().err
    assert not (tmp_path / "results.json").exists()


def test_bench_reports_ratios(capsys):
    args = ["bench", "--rows", "64", "--cols", "256", "--lambdas", "14.5", "--repeats", "1"]
    args += ["--gpt-dim", "32", "--gpt-layers", "1"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "M params/s" in out and "MB/s" in out and "x dense" in out


def test_compress_a_saved_checkpoint(tmp_path, capsys):
    import torch

    from icml26.entquant import load_compressed
    from icml26.entquant.models import tiny_gpt

    model = tiny_gpt(seed=0, dim=32, layers=2, heads=2).eval()
    model.save_pretrained(tmp_path / "hf")  # safetensors + config.json, as users have them
    args = ["compress", "--model", str(tmp_path / "hf"), "--out", str(tmp_path / "eq")]
    assert main([*args, "--lam", "14.5", "--max-iter", "10"]) == 0
    assert "bits/param" in capsys.readouterr().out
    restored = load_compressed(tmp_path / "eq")
    x = torch.randint(0, 256, (1, 8))
    with torch.no_grad():
        diff = (restored(input_ids=x).logits - model(input_ids=x).logits).abs().max()
    assert 0 < diff < 1  # quantised, not garbage
    assert main(["compress", "--model", str(tmp_path / "nope"), "--out", str(tmp_path / "x")]) == 2
    assert "does not exist" in capsys.readouterr().err
