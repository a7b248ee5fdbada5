import json
import math

import pytest
import torch

from icml26.rerooter.cli import main
from icml26.rerooter.study import DemoConfig
from icml26.rerooter.verdict import CLAIMS, verdict
from icml26.testing import run_cli, validate_results
from icml26.testing.results import demo_command

# Every subprocess pays ~10 s of imports (torch, igraph) on the CI machine: the entry point is
# exercised through a subprocess by the help and demo tests, the other commands run in-process.


def test_help_lists_the_subcommands():
    out = run_cli("icml26.rerooter", ["--help"])
    for sub in ("demo", "train", "evaluate", "bench", "bound"):
        assert sub in out.stdout


def test_quick_demo_writes_valid_results(tmp_path):
    out = run_cli("icml26.rerooter", ["demo", "--quick", "--device", "cpu", "--out", str(tmp_path)])
    results = validate_results(tmp_path / "results.json")
    assert results["package"] == "icml26-rerooter"
    assert "verdict: smoke" in out.stdout
    assert results["quick"] is True and results["verdict"] == "smoke"
    assert [r["claim"] for r in results["claims"]] == list(CLAIMS.values())
    assert all(r["verdict"] == "smoke" for r in results["claims"])
    assert results["config"]["command"] == "icml26-rerooter demo --quick --device cpu"
    assert results["device"] == "cpu"
    assert (tmp_path / "solved.png").stat().st_size > 10_000
    m = results["metrics"]
    assert set(m) >= {"method", "baseline", "LTS", "PHS*", "√LTS-H", "√LTS-L", "√LTS-LH"}
    assert m["method"] == m["√LTS-LH"] and m["baseline"] == m["LTS"]
    # The rows are verdict() of the numbers in the file (smoke only hides the verdicts).
    cfg = results["config"]
    assert cfg["seeds"] == 2 and len(results["runs"]) == 2 * 5
    claims = verdict(results)["claims"]
    assert [r["evidence"] for r in claims] == [r["evidence"] for r in results["claims"]]
    # every run reached the equal expansion cap and went past it by less than one chunk
    for r in results["runs"]:
        over = r["train expansions"] - cfg["expansion_cap"]
        assert 0 <= over < 24 * r["final budget"]
    curves = results["curves"]["sqrt_lts_lh"]
    assert curves["expansions"][-1] == cfg["expansion_cap"] and set(curves["solved"]) == {"0", "1"}
    assert not list(tmp_path.glob(".results.json*"))


def test_default_device_keeps_the_default_command():
    assert demo_command("icml26-rerooter", DemoConfig()) == "icml26-rerooter demo"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error when CUDA is absent")
@pytest.mark.parametrize(
    "args",
    [
        ["demo", "--quick"],
        ["train", "--levels", "1"],
        ["evaluate", "--checkpoint", "none"],
        ["bench", "--levels", "1"],
    ],
)
def test_cuda_without_cuda_is_a_clear_error(tmp_path, capsys, args):
    where = ["--out", str(tmp_path / "run")] if args[0] in ("demo", "train") else []
    assert main([*args, *where, "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert "icml26-rerooter: error: --device cuda" in err and "no CUDA device" in err
    assert not (tmp_path / "run").exists()


def test_demo_bad_config_is_a_clear_error(tmp_path, capsys):
    code = main(["demo", "--quick", "--methods", "lts", "bfs", "--out", str(tmp_path)])
    assert code == 2
    assert "methods must be a non-empty subset" in capsys.readouterr().err
    assert not (tmp_path / "results.json").exists()


def test_bench_reports_ratios_to_lts(capsys):
    assert main(["bench", "--levels", "1", "--budget", "300", "--naive-budget", "100"]) == 0
    out = capsys.readouterr().out
    assert "rate / LTS" in out and "√LTS-H naive O(d^2)" in out
    assert "network" in out


def test_train_evaluate_and_resume(tmp_path, capsys):
    ckpt = tmp_path / "ckpt"
    common = ["--out", str(ckpt), "--levels", "3", "--initial-budget", "200", "--train-steps", "5"]
    assert main(["train", *common, "--iterations", "1"]) == 0
    state = json.loads((ckpt / "bootstrap_state.json").read_text())
    assert state["history"]["iteration"] == 1
    assert main(["train", *common, "--iterations", "2", "--resume"]) == 0
    state = json.loads((ckpt / "bootstrap_state.json").read_text())
    assert state["history"]["iteration"] == 2 and len(state["history"]["rows"]) == 2
    out = run_cli(
        "icml26.rerooter",
        [
            "evaluate",
            "--checkpoint",
            str(ckpt),
            "--levels",
            "2",
            "--budget",
            "200",
            "--method",
            "lts",
        ],
    )
    assert "LTS: solved" in out.stdout
    bad = run_cli(
        "icml26.rerooter", ["evaluate", "--checkpoint", str(tmp_path / "none")], check=False
    )
    assert bad.returncode == 2 and "no config.json" in bad.stderr


def test_bound_command_writes_the_terms_of_solved_searches(tmp_path, capsys):
    assert main(["bound", "--levels", "3", "--budget", "3000", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "bound.json").read_text())
    assert set(report["solved"]) == {"√LTS-H", "√LTS-L", "√LTS-LH"}
    rows = [r for rs in report["solved"].values() for r in rs]
    assert rows, "nothing solved: the bound is never checked"
    for r in rows:
        assert math.log(r["expansions"]) <= r["log_bound_simplified"]
    assert (tmp_path / "bound.png").stat().st_size > 10_000
    assert "above (simplified)" in capsys.readouterr().out
