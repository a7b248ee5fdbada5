"""The command line, the way a user runs it."""

import json

import pytest

from icml26.lrpo.cli import main
from icml26.lrpo.study import ARMS, DemoConfig
from icml26.lrpo.verdict import claims, verdict
from icml26.testing import run_cli, validate_results
from icml26.testing.results import demo_command


def test_quick_demo_writes_valid_results(tmp_path):
    out = tmp_path / "run"
    printed = run_cli("icml26.lrpo", ["demo", "--quick", "--out", str(out)])
    results = validate_results(out / "results.json")
    assert results["package"] == "icml26-lrpo"
    assert results["quick"] is True and results["verdict"] == "smoke"
    assert [c["claim"] for c in results["claims"]] == list(claims().values())
    assert results["config"]["command"] == "icml26-lrpo demo --quick"
    assert "verdict: smoke" in printed.stdout
    assert (out / "study.png").stat().st_size > 10_000
    rows = verdict(results)["claims"]  # the file holds what the verdict reads
    assert [r["evidence"] for r in rows] == [r["evidence"] for r in results["claims"]]
    assert set(results["runs"]) == {"pretrained", *ARMS}
    assert [c["kind"] for c in results["controls"]] == ["positive", "positive"]


def test_default_command_is_the_bare_demo():
    assert demo_command("icml26-lrpo", DemoConfig()) == "icml26-lrpo demo"


def test_pretrain_train_resume_evaluate(tmp_path, capsys):
    init, out = tmp_path / "init", tmp_path / "run"
    assert main(["pretrain", "--out", str(init), "--steps", "2", "--batch", "4"]) == 0
    args = ["train", "--init", str(init), "--out", str(out), "--steps", "1",
            "--questions-per-step", "2", "--G", "4", "--save-every", "1"]  # fmt: skip
    assert main(args) == 0
    assert main([*args[:5], "--steps", "2", *args[7:], "--resume"]) == 0
    folder = json.loads((out / "latest.json").read_text())["folder"]
    state = json.loads((out / folder / "state.json").read_text())
    assert state["step"] == 2 and state["router"]["name"] == "lrpo"
    capsys.readouterr()
    assert main(["evaluate", "--checkpoint", str(out / "policy"), "--test-per-cell", "1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["by_language"]) == 8


@pytest.mark.parametrize(
    "args, message",
    [
        (["demo", "--seeds", "1"], "--seeds must be >= 2"),
        (["demo", "--arms", "original", "uniform"], "--arms must include lrpo"),
        (["demo", "--G", "1"], "G must be >= 2"),
        (["demo", "--orig-min", "9"], "orig_min must be in"),
        (["train", "--init", "{tmp}"], "not a CharGPT folder"),
        (["train", "--out", "{tmp}/none", "--G", "3", "--orig-min", "4"], "orig_min"),
        (["evaluate", "--checkpoint", "{tmp}/missing"], "not a CharGPT folder"),
        (["evaluate", "--test-per-cell", "0"], "--test-per-cell"),
        (["pretrain", "--steps", "0"], "steps must be >= 1, got 0"),
    ],
)
def test_bad_input_is_a_clear_error(tmp_path, capsys, args, message):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_bench_times_the_routers_and_their_ratios(capsys):
    import json

    from icml26.lrpo.cli import main

    args = ["bench", "--steps", "1", "--repeats", "1", "--questions-per-step", "2", "--G", "2"]
    assert main([*args, "--n-embd", "16", "--n-layer", "1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["seconds per step"]) == {"original", "ucb", "lrpo"}
    assert report["LRPO / plain GRPO"] > 0 and report["LRPO / UCB1"] > 0
    assert main(["bench", "--G", "1"]) == 2
