"""The command line: the quick demo's results file, train / sample, clear errors."""

import json

from icml26.fahnes.cli import main
from icml26.testing import validate_results


def test_quick_demo_writes_valid_results(tmp_path):
    assert main(["demo", "--quick", "--out", str(tmp_path)]) == 0
    res = validate_results(tmp_path / "results.json")
    assert res["quick"] and res["verdict"] == "smoke" and len(res["claims"]) == 10
    assert (tmp_path / "samples.png").is_file() and (tmp_path / "cost.png").is_file()


def test_train_then_sample(tmp_path, capsys):
    out = tmp_path / "model"
    assert (
        main(
            [
                "train",
                "--out",
                str(out),
                "--data",
                "hypergraph-sbm",
                "--graphs",
                "3",
                "--steps",
                "3",
                "--batch",
                "2",
            ]
        )
        == 0
    )
    assert (
        main(["sample", str(out), str(tmp_path / "s.json"), "--n", "12", "--num-samples", "2"]) == 0
    )
    doc = json.loads((tmp_path / "s.json").read_text())
    assert [d["num_nodes"] for d in doc] == [12, 12] and all(
        len(e) == 3 for e in doc[0]["hyperedges"]
    )
    assert main(["train", "--out", str(out), "--graphs", "3", "--steps", "3"]) == 2  # run exists
    assert "--resume" in capsys.readouterr().err
    assert main(["sample", str(tmp_path / "none"), str(tmp_path / "x.json")]) == 2
    assert main(["train", "--out", str(tmp_path / "new"), "--resume", "--steps", "3"]) == 2
    assert "no checkpoint" in capsys.readouterr().err
