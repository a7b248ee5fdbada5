import json

import pytest
import torch

from icml26.hist.cli import main
from icml26.hist.data import load_her2st_subset
from icml26.hist.genes import highly_variable_genes
from icml26.hist.study import HER2ST_MODELS, DemoConfig
from icml26.hist.verdict import CLAIMS, verdict
from icml26.testing import run_cli, validate_results
from icml26.testing.results import demo_command


def test_quick_demo_writes_valid_results(tmp_path):
    out = run_cli("icml26.hist", ["demo", "--quick", "--device", "cpu", "--out", str(tmp_path)])
    results = validate_results(tmp_path / "results.json")
    assert results["package"] == "icml26-hist" and "verdict: smoke" in out.stdout
    assert results["quick"] is True and results["verdict"] == "smoke"
    assert [r["claim"] for r in results["claims"]] == list(CLAIMS.values())
    assert all(r["verdict"] == "smoke" for r in results["claims"])
    assert results["config"]["command"] == "icml26-hist demo --quick --device cpu"
    assert results["device"] == "cpu"
    assert (tmp_path / "hist.png").stat().st_size > 10_000
    # the rows are verdict() of the numbers in the file (smoke only hides the verdicts)
    claims = verdict(results)["claims"]
    assert [r["evidence"] for r in claims] == [r["evidence"] for r in results["claims"]]
    rows = results["cost"]["fixed spots"]
    assert [r["side"] for r in rows] == [24, 32]
    assert all(r["HiST"]["seconds"] > 0 for r in rows)
    h = results["her2st"]
    assert list(h["models"]) == list(HER2ST_MODELS)
    assert h["folds"] == ["C2"] and h["panels"]["C2"]["validation"] == "C3"
    # the panels were chosen without the held-out section (with it, the panel differs)
    sections = load_her2st_subset()
    rest = [sections[n] for n in ("C3", "C4", "C5", "C6")]
    assert h["panels"]["C2"]["hvg"] == highly_variable_genes(rest, 50)
    assert h["panels"]["C2"]["hvg"] != highly_variable_genes(list(sections.values()), 50)
    assert len(h["panels"]["C2"]["hvg"]) == 50 and len(h["per_fold"]["HiST"]["C2"][0]["hvg"]) == 50
    assert "example" not in results["synthetic"]


def test_bad_demo_config_is_a_clear_error(tmp_path, capsys):
    assert main(["demo", "--quick", "--parts", "everything", "--out", str(tmp_path)]) == 2
    assert "parts must be" in capsys.readouterr().err
    assert not (tmp_path / "results.json").exists()


def test_default_device_keeps_the_recorded_command():
    assert DemoConfig().device == "auto"
    assert demo_command("icml26-hist", DemoConfig()) == "icml26-hist demo"


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_cuda_is_a_clear_error(tmp_path, capsys):
    assert main(["demo", "--quick", "--device", "cuda", "--out", str(tmp_path)]) == 2
    assert "--device cuda: no CUDA device" in capsys.readouterr().err
    assert not (tmp_path / "results.json").exists()
    for sub in (["train", "--out", str(tmp_path)], ["bench"]):
        assert main([*sub, "--device", "cuda"]) == 2
        assert "--device cuda" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
    assert main(["demo", "--device", "gpu0", "--out", str(tmp_path)]) == 2
    assert "--device must be" in capsys.readouterr().err


def test_train_evaluate_predict(tmp_path, capsys):
    ckpt = tmp_path / "ckpt"
    args = ["--data", "synthetic:40", "--dim", "16", "--steps", "3", "--checkpoint-every", "2"]
    assert main(["train", "--out", str(ckpt), *args]) == 0
    assert (ckpt / "latest.json").is_file()
    capsys.readouterr()
    assert main(["evaluate", "--checkpoint", str(ckpt), "--data", "synthetic:40"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert len(res["slides"]) == 4 and "pearson" in res["mean"]
    assert (
        main(
            [
                "predict",
                "--checkpoint",
                str(ckpt),
                "--out",
                str(tmp_path / "pred"),
                "--data",
                "synthetic:40",
            ]
        )
        == 0
    )
    assert len(list((tmp_path / "pred").glob("*.h5ad"))) == 4
    # resuming a finished run is a no-op that still reports
    assert main(["train", "--out", str(ckpt), "--resume", *args]) == 0


def test_bad_data_argument_is_a_clear_error(tmp_path, capsys):
    assert main(["train", "--out", str(tmp_path), "--data", "slides.csv"]) == 2
    assert "expected synthetic" in capsys.readouterr().err
    assert main(["train", "--out", str(tmp_path), "--data", "missing.h5ad"]) == 2
    assert "missing.h5ad not found" in capsys.readouterr().err
    assert main(["train", "--out", str(tmp_path), "--model", "unet", "--data", "synthetic:40"]) == 2
    assert "--model must be" in capsys.readouterr().err


def test_bench_reports_ratios(capsys):
    args = ["bench", "--spots", "60", "200", "--side", "16", "--sides", "16", "24", "--dim", "16"]
    assert main([*args, "--tissue", "150"]) == 0
    out = capsys.readouterr().out
    assert "fixed area" in out and "fixed spots" in out and "x," in out
    assert "synthetic hexagonal tissue" in out and "     150" in out


def test_train_runs_under_torchrun_with_two_gloo_processes(tmp_path):
    import subprocess
    import sys

    from safetensors.torch import load_file

    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        "-m",
        "icml26.hist",
        "train",
        "--out",
        str(tmp_path),
        "--data",
        "synthetic:40",
        "--dim",
        "16",
        "--steps",
        "2",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("trained hist for 2 steps") == 2  # both ranks finished
    weights = load_file(tmp_path / "step-0000002" / "model.safetensors")
    assert all(v.isfinite().all() for v in weights.values())
