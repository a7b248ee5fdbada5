import json

import pytest
import torch
from torch import nn

from icml26.td import fit_critic, garnet_mdp
from icml26.td.cli import main
from icml26.td.study import DemoConfig
from icml26.td.verdict import verdict
from icml26.testing import run_cli, run_distributed, validate_results
from icml26.testing.results import demo_command


def test_help_lists_the_subcommands():
    out = run_cli("icml26.td", ["--help"])
    assert "demo" in out.stdout and "bench" in out.stdout


def test_quick_demo_writes_valid_results_and_plots(tmp_path):
    out = run_cli(
        "icml26.td",
        ["demo", "--quick", "--device", "cpu", "--out", str(tmp_path), "--no-extra-problems"],
    )
    results = validate_results(tmp_path / "results.json")
    assert results["package"] == "icml26-td"
    assert results["quick"] is True and results["verdict"] == "smoke"
    assert len(results["claims"]) == 2
    assert all(c["verdict"] == "smoke" for c in results["claims"])
    assert results["device"] == "cpu"
    assert results["config"]["command"] == "icml26-td demo --quick --no-extra-problems --device cpu"
    assert (tmp_path / "error_vs_T.png").stat().st_size > 10_000
    assert (tmp_path / "eta0_sweep.png").stat().st_size > 10_000
    assert "verdict: smoke" in out.stdout
    # The file holds what verdict() reads: the smoke rows are its rows with the verdicts hidden.
    claims = verdict(results)["claims"]
    assert [c["evidence"] for c in claims] == [c["evidence"] for c in results["claims"]]
    assert not list(tmp_path.glob(".results.json*"))  # no temp file left behind


def test_default_device_keeps_the_default_command():
    assert demo_command("icml26-td", DemoConfig()) == "icml26-td demo"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error when CUDA is absent")
@pytest.mark.parametrize("subcommand", ["demo", "bench"])
def test_cuda_without_cuda_is_a_clear_error(tmp_path, capsys, subcommand):
    # In process: the flag is resolved before any work, so this costs no subprocess start.
    out = ["--out", str(tmp_path)] if subcommand == "demo" else []
    rc = main([subcommand, "--device", "cuda", *out])
    err = capsys.readouterr().err
    assert rc == 2
    assert "icml26-td: error: --device cuda" in err and "no CUDA device" in err
    assert not (tmp_path / "results.json").exists()


def test_demo_bad_config_is_a_clear_error(tmp_path):
    out = run_cli(
        "icml26.td", ["demo", "--quick", "--runs", "1", "--out", str(tmp_path)], check=False
    )
    assert out.returncode == 2
    assert "runs must be >= 2" in out.stderr
    assert not (tmp_path / "results.json").exists()


def test_a_bad_state_count_is_named_not_the_start_state(tmp_path, capsys):
    assert main(["demo", "--n-states", "-5", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("n_states must be an integer >= 2, got -5")  # was about start_state


def test_bench_reports_a_ratio():
    out = run_cli(
        "icml26.td",
        [
            "bench",
            "--horizon",
            "200",
            "--loop-steps",
            "200",
            "--runs",
            "4",
            "--schedules",
            "2",
            "--loop-runs",
            "1",
        ],
    )
    assert "speedup (vectorised / loop)" in out.stdout


def _critic_run(horizon: int):
    torch.manual_seed(0)  # same initial weights on every rank, as DDP expects
    problem = garnet_mdp(12, 3, 0.8, seed=0)
    critic = nn.Linear(3, 1, bias=False).double()
    fit_critic(problem, critic, horizon, eta0=0.5, batch_size=16, seed=0)
    err = problem.value_error(critic.weight.detach()[0]).item()
    return {"weight": critic.weight.detach().clone(), "error": err}


@pytest.mark.distributed
def test_critic_training_runs_unchanged_under_two_gloo_ranks():
    results = run_distributed(_critic_run, 400, world_size=2)
    assert torch.equal(results[0]["weight"], results[1]["weight"])
    init = garnet_mdp(12, 3, 0.8, seed=0).value_error(torch.zeros(3, dtype=torch.float64)).item()
    assert results[0]["error"] < 0.05 * init


def test_critic_single_process_learns_the_td_fixed_point():
    res = _critic_run(600)
    problem = garnet_mdp(12, 3, 0.8, seed=0)
    init = problem.value_error(torch.zeros(3, dtype=torch.float64)).item()
    assert res["error"] < 0.05 * init
    json.dumps(res["error"])
