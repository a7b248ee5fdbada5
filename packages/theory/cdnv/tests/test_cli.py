import json

import numpy as np
import pytest
import torch

from icml26.cdnv.cli import main
from icml26.cdnv.study import DemoConfig
from icml26.cdnv.verdict import CLAIMS, ORACLE, verdict
from icml26.testing import run_cli, validate_results
from icml26.testing.results import demo_command


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
    claims = verdict(results)["claims"]
    assert [c["evidence"] for c in claims] == [c["evidence"] for c in results["claims"]]
    # Every encoder was measured on the held-out classes only, with both bounds.
    # one seed: one set of 4 held-out digit classes, shared by every encoder and null
    (held,) = {tuple(x["heldout"]) for x in results["runs"] + results["nulls"]}
    assert len(set(held)) == 4 and set(held) <= set(range(10))
    for x in results["runs"] + results["nulls"]:
        for t in x["fewshot"].values():
            assert all(b >= e for e, b in zip(t["error"], t["bound (authors)"], strict=True))
            assert all(0 <= b <= 1 for b in t["bound (ours)"])
    assert {x["encoder"] for x in results["nulls"]} == {"random encoder", "raw pixels", ORACLE}
    assert {x["encoder"] for x in results["runs"]} == {*results["objectives"], "supervised"}


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


def test_measure_saved_features(tmp_path, capsys):
    g = np.random.default_rng(0)
    feats = np.concatenate([g.normal(3 * c, 1.0, (50, 4)) for c in range(3)])
    labels = np.repeat(np.arange(3), 50)
    path = tmp_path / "f.npz"
    np.savez(path, features=feats, labels=labels)
    assert main(["measure", str(path), "--shots", "1", "5", "--episodes", "10"]) == 0
    values = json.loads(capsys.readouterr().out)
    assert values["classes"] == 3 and 0 < values["V~"] < values["V"]
    assert 0 < values["V~ d / V"] < 10
    assert len(values["bound (authors)"]) == len(values["bound"]) == 2
    assert values["device"] == ("cuda:0" if torch.cuda.is_available() else "cpu")


def test_measure_rejects_bad_files(tmp_path, capsys):
    assert main(["measure", str(tmp_path / "nope.npz")]) == 2
    assert "does not exist" in capsys.readouterr().err
    path = tmp_path / "bad.npz"
    np.savez(path, features=np.zeros((4, 2)))
    assert main(["measure", str(path)]) == 2
    assert "labels" in capsys.readouterr().err
    torch.save({"x": 1}, tmp_path / "pickle.npz")
    assert main(["measure", str(tmp_path / "pickle.npz")]) == 2
    assert "pickle.npz" in capsys.readouterr().err  # refused, never unpickled


def test_bench_quick_reports_both_methods_with_equal_values(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(["bench", "--quick", "--no-isolate", "--device", "cpu", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    (case,) = report["cases"]
    assert case["C"] == 10 and case["d"] == 64
    streamed, baseline = case["streamed"], case["per-class covariance"]
    assert streamed["mean V~"] == pytest.approx(baseline["mean V~"], rel=1e-9)
    assert streamed["state_mb"] < baseline["state_mb"]
    assert "streamed" in capsys.readouterr().out
