import json

from icml26.tactic.cli import main
from icml26.testing import validate_results


def test_demo_quick_writes_valid_results(tmp_path):
    assert main(["demo", "--quick", "--out", str(tmp_path)]) == 0
    res = validate_results(tmp_path / "results.json")
    assert res["quick"] and res["verdict"] == "smoke"
    assert len(res["claims"]) == 9
    # the file records the game and the trainer it was measured with
    assert {"game", "train", "command"} <= set(res["config"])
    assert (tmp_path / "curves.png").is_file() and (tmp_path / "edges.png").is_file()


def test_train_evaluate_and_resume(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["train", "--arm", "CASEC", "--steps", "192", "--out", str(out), "--device", "cpu"]
    assert main(args) == 0
    assert (out / "state.safetensors").is_file()
    assert main(args) == 2  # refuses to overwrite
    assert "already holds a run" in capsys.readouterr().err
    assert main([*args[:-4], "--steps", "288", "--out", str(out), "--resume"]) == 0
    capsys.readouterr()
    assert main(["evaluate", "--checkpoint", str(out), "--episodes", "16"]) == 0
    m = json.loads(capsys.readouterr().out)
    assert {"success_before", "success_after", "return"} <= set(m)


def test_bad_arguments_are_reported(tmp_path, capsys):
    assert main(["train", "--arm", "MAPPO", "--out", str(tmp_path / "x")]) == 2
    assert "unknown --arm" in capsys.readouterr().err
    assert main(["evaluate", "--checkpoint", str(tmp_path / "none")]) == 2
    assert "no checkpoint" in capsys.readouterr().err
    assert main(["demo", "--seeds", "1"]) == 2
    assert "--seeds must be >= 2" in capsys.readouterr().err
    assert main(["demo", "--quick", "--arms", "MAPPO"]) == 2
    assert "unknown arms" in capsys.readouterr().err


def test_bench_reports_ratios():
    from icml26.tactic.bench import BenchConfig, run_bench

    out = run_bench(BenchConfig(num_envs=4, batch=4, repeats=1, device="cpu"))
    assert out["VDN time_vs_vdn"] == 1.0 and out["TACTIC time_vs_vdn"] > 0
