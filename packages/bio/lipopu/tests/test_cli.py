"""The command line, the way a user runs it."""

import json
from pathlib import Path

import pytest
import torch

from icml26.lipopu.cli import main
from icml26.lipopu.study import DemoConfig
from icml26.lipopu.verdict import claims, verdict
from icml26.testing import run_cli, validate_results
from icml26.testing.results import demo_command


@pytest.fixture
def no_slipp(tmp_path, monkeypatch):
    """A working folder with no SLiPP table above it: the synthetic cohort is used."""
    monkeypatch.delenv("LIPOPU_SLIPP", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_quick_demo_writes_valid_results(no_slipp):
    out = no_slipp / "run"
    printed = run_cli("icml26.lipopu", ["demo", "--quick", "--device", "cpu", "--out", str(out)])
    results = validate_results(out / "results.json")
    assert results["package"] == "icml26-lipopu"
    assert results["quick"] is True and results["verdict"] == "smoke"
    assert [c["claim"] for c in results["claims"]] == list(claims([0.5]).values())
    assert results["config"]["command"] == "icml26-lipopu demo --quick --device cpu"
    assert results["data"]["source"] == "synthetic cohort"
    assert "verdict: smoke" in printed.stdout
    assert (out / "study.png").stat().st_size > 10_000
    rows = verdict(results)["claims"]  # the file holds what the verdict reads
    assert [r["evidence"] for r in rows] == [r["evidence"] for r in results["claims"]]
    arms = {r["arm"] for r in results["runs"]}
    assert {
        "bce",
        "nnpu",
        "pu_auc",
        "lipopu",
        "slipp_forest",
        "gradient_boosting",
        "lipopu (true prior x2)",
        "lipopu (descriptors only)",
        "lipopu (no correction)",
    } <= arms
    assert "synthetic" in results["case_study"]["skipped"]


def test_default_command_is_the_bare_demo():
    assert demo_command("icml26-lipopu", DemoConfig()) == "icml26-lipopu demo"


def test_train_evaluate_predict(no_slipp, capsys):
    mda = pytest.importorskip("MDAnalysisTests")
    ckpt = no_slipp / "ckpt"
    args = ["train", "--synthetic", "--out", str(ckpt), "--epochs", "2", "--device", "cpu"]
    assert main(args) == 0
    assert {"model.safetensors", "config.json"} <= {p.name for p in ckpt.iterdir()}
    # the split is saved with the model, so evaluate rebuilds the proteins it held out
    assert json.loads((ckpt / "config.json").read_text())["split_fractions"] == [0.8, 0.1, 0.1]
    assert main([*args, "--epochs", "3", "--resume"]) == 0
    capsys.readouterr()
    assert main(["evaluate", str(ckpt), "--synthetic", "--device", "cpu"]) == 0
    assert '"auroc"' in capsys.readouterr().out
    structure = Path(mda.__file__).parent / "data" / "1a28.pdb.gz"
    assert main(["predict", str(structure), "--checkpoint", str(ckpt), "--top", "2"]) == 0
    text = capsys.readouterr().out
    assert "1a28.pdb.gz: 3" in text and "most attended" in text


@pytest.mark.parametrize(
    "args, message",
    [
        (["demo", "--label-fractions", "0"], "--label-fractions"),
        (["demo", "--prior-factors", "1"], "--prior-factors"),
        (["demo", "--seeds", "1"], "--seeds must be >= 2"),
        (["train", "--out", "{tmp}/o"], "no SLiPP table given"),
        (["train", "--slipp", "{tmp}/missing.csv", "--out", "{tmp}/o"], "missing.csv"),
        (["evaluate", "{tmp}", "--synthetic"], "no config.json"),
        (["predict", "{tmp}/x.pdb", "--checkpoint", "{tmp}"], "no config.json"),
        (["bench", "--pockets", "5"], "--pockets"),
    ],
)
def test_bad_input_is_a_clear_error(no_slipp, capsys, args, message):
    assert main([a.format(tmp=no_slipp) for a in args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("icml26-lipopu: error:") and message in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error when CUDA is absent")
def test_cuda_without_cuda_is_a_clear_error(no_slipp, capsys):
    assert main(["demo", "--device", "cuda", "--out", str(no_slipp / "r")]) == 2
    assert "--device cuda" in capsys.readouterr().err
    assert not (no_slipp / "r" / "results.json").exists()
