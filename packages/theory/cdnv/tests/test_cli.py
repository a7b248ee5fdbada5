import json

import numpy as np
import pytest
import torch

from icml26.cdnv._results import demo_command
from icml26.cdnv.cli import main
from icml26.cdnv.demo import CLAIMS, DemoConfig, verdict
from icml26.testing import run_cli, validate_results


def test_help():
    out = run_cli("icml26.cdnv", ["--help"])
    assert "demo" in out.stdout and "measure" in out.stdout


def test_quick_demo_writes_valid_results(tmp_path):
    out = run_cli("icml26.cdnv", ["demo", "--quick", "--device", "cpu", "--out", str(tmp_path)])
    results = validate_results(tmp_path / "results.json")
    assert results["package"] == "icml26-cdnv"
    assert results["quick"] is True and results["verdict"] == "smoke"
    assert [c["claim"] for c in results["claims"]] == list(CLAIMS.values())
    assert all(c["verdict"] == "smoke" for c in results["claims"])
    assert results["device"] == "cpu"
    assert results["config"]["command"] == "icml26-cdnv demo --quick --device cpu"
    assert "verdict: smoke" in out.stdout
    for png in ("dynamics.png", "fewshot_bound.png", "decision_axes.png"):
        assert (tmp_path / png).stat().st_size > 10_000
    # The file holds what verdict() reads: the smoke rows are its rows with the verdicts hidden.
    claims, _ = verdict(results)
    assert [c["evidence"] for c in claims] == [c["evidence"] for c in results["claims"]]
    # The bound must hold wherever it was evaluated.
    for table in results["fewshot"].values():
        for t in table.values():
            assert all(b >= e for e, b in zip(t["error"], t["bound"], strict=True))


def test_default_device_keeps_the_default_command():
    assert demo_command("icml26-cdnv", DemoConfig()) == "icml26-cdnv demo"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error when CUDA is absent")
@pytest.mark.parametrize("subcommand", ["demo", "measure"])
def test_cuda_without_cuda_is_a_clear_error(tmp_path, capsys, subcommand):
    # In process: the flag is resolved before any work, so this costs no subprocess start.
    where = ["--out", str(tmp_path)] if subcommand == "demo" else [str(tmp_path / "f.npz")]
    rc = main([subcommand, "--device", "cuda", *where])
    err = capsys.readouterr().err
    assert rc == 2
    assert "icml26-cdnv: error: --device cuda" in err and "no CUDA device" in err
    assert not (tmp_path / "results.json").exists()


def test_measure_saved_features(tmp_path):
    g = np.random.default_rng(0)
    feats = np.concatenate([g.normal(3 * c, 1.0, (50, 4)) for c in range(3)])
    labels = np.repeat(np.arange(3), 50)
    path = tmp_path / "f.npz"
    np.savez(path, features=feats, labels=labels)
    out = run_cli("icml26.cdnv", ["measure", str(path), "--shots", "1", "5", "--episodes", "10"])
    values = json.loads(out.stdout)
    assert values["classes"] == 3 and 0 < values["V~"] < values["V"]
    assert values["device"] == ("cuda:0" if torch.cuda.is_available() else "cpu")


def test_measure_rejects_bad_files(tmp_path):
    missing = run_cli("icml26.cdnv", ["measure", str(tmp_path / "nope.npz")], check=False)
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    path = tmp_path / "bad.npz"
    np.savez(path, features=np.zeros((4, 2)))
    lacking = run_cli("icml26.cdnv", ["measure", str(path)], check=False)
    assert lacking.returncode == 2 and "labels" in lacking.stderr
    torch.save({"x": 1}, tmp_path / "pickle.npz")
    pickled = run_cli("icml26.cdnv", ["measure", str(tmp_path / "pickle.npz")], check=False)
    assert pickled.returncode == 2
