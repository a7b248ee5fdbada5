"""The light runtime part: stdlib only, and what demos, CLIs and benches call from it."""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from icml26.testing import (
    best_time,
    claim_row,
    control,
    demo_config,
    dispatch,
    finish_demo,
    integer,
    judge,
    median_time,
    number,
    print_verdicts,
    run_folder,
    torch_threads,
    validate_results,
)


def test_the_runtime_part_imports_neither_torch_nor_pytest():
    code = (
        "import sys; import icml26.testing as t; "
        "from icml26.testing import results, report, command, files, timing, checks; "
        "t.judge; t.finish_demo; t.dispatch; t.best_time; t.atomic_write; t.DemoOptions; "
        "print(sorted(m for m in ('torch', 'pytest', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().replace("'", '"')) == []


def test_installing_the_toolkit_does_not_plug_into_other_projects_tests(pytester):
    # a user's own test suite keeps its `device` fixture and --runslow: the plugin is opt-in
    pytester.makeconftest(
        """
        import pytest

        def pytest_addoption(parser):
            parser.addoption("--runslow", action="store_true")

        @pytest.fixture
        def device():
            return "theirs"
        """
    )
    pytester.makepyfile("def test_mine(device):\n    assert device == 'theirs'\n")
    pytester.runpytest().assert_outcomes(passed=1)


@dataclasses.dataclass(frozen=True)
class Cfg:
    quick: bool = False
    seed: int = 0
    steps: int = 10
    out: str | None = None


def test_demo_config_records_fields_and_the_command_that_reruns_them():
    config = demo_config("icml26-x", Cfg(steps=3, out="here"))
    assert config == {
        "quick": False,
        "seed": 0,
        "steps": 3,
        "out": "here",
        "command": "icml26-x demo --steps 3",
    }
    with pytest.raises(TypeError, match="dataclass"):
        demo_config("icml26-x", {"steps": 3})


def test_run_folder_defaults_under_runs():
    assert str(run_folder("given", "x")) == "given"
    assert run_folder(None, "td").parts[:2] == ("runs", "td")


def _judged(passed: bool = True) -> dict:
    ctrl = control("baseline learns", "positive", passed, "loss 0.1")
    return judge(
        [claim_row("it works", "reproduced", "0.9 > 0.5", controls=[ctrl["name"]])], [ctrl]
    )


def test_finish_demo_writes_a_valid_results_file(tmp_path, capsys):
    results = finish_demo(
        tmp_path,
        package="icml26-testing",
        module_file=__file__,
        cfg=Cfg(),
        experiment="a toy",
        claim="it works",
        headline="0.9 vs 0.5",
        judged=_judged(),
        metrics={"method": {"acc": 0.9}, "baseline": {"acc": 0.5}},
        seconds=1.234,
        device="cpu",
        measurements={"acc": [0.9, 0.5]},
    )
    on_disk = validate_results(tmp_path / "results.json")
    assert on_disk == results and results["acc"] == [0.9, 0.5]
    assert results["config"]["command"] == "icml26-testing demo"
    print_verdicts(results, tmp_path)
    printed = capsys.readouterr().out
    assert "[reproduced] it works" in printed and "1 reproduced" in printed


def test_print_verdicts_names_failed_controls(capsys):
    judged = _judged(passed=False)
    print_verdicts({**judged, "seconds": 2.0})
    printed = capsys.readouterr().out
    assert "[untestable here] it works" in printed
    assert "positive control FAILED: baseline learns (loss 0.1)" in printed


@dataclasses.dataclass(frozen=True)
class Other:
    n: int = 1


def test_dispatch_runs_the_chosen_subcommand_and_turns_value_errors_into_exit_2(capsys):
    seen = []

    def run(cfg):
        if cfg.n < 0:
            raise ValueError("--n must be >= 0")
        seen.append(cfg)

    commands = {"demo": (Cfg, seen.append), "other": (Other, run)}
    assert dispatch("icml26-x", "a test", commands, ["other", "--n", "4"]) == 0
    assert dispatch("icml26-x", "a test", commands, ["demo", "--steps", "2"]) == 0
    assert seen == [Other(4), Cfg(steps=2)]
    assert dispatch("icml26-x", "a test", commands, ["other", "--n", "-1"]) == 2
    assert "icml26-x: error: --n must be >= 0" in capsys.readouterr().err
    assert dispatch("icml26-x", "one", {"demo": (Other, seen.append)}, ["--n", "7"]) == 0
    assert seen[-1] == Other(7)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--n", "abc"], "Error parsing --n: invalid literal for int() with base 10: 'abc'"),
        (["--bogus"], "Unrecognized options: --bogus"),
    ],
)
def test_dispatch_prints_a_parse_error_in_one_line_and_exits_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        dispatch("icml26-x", "one", {"demo": (Other, print)}, argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"icml26-x: error: {message} (see icml26-x --help)"]  # was a 5-9 line box


def test_dispatch_help_still_prints_in_full(capsys):
    with pytest.raises(SystemExit) as exit_:
        dispatch("icml26-x", "one", {"demo": (Other, print)}, ["--help"])
    assert exit_.value.code == 0 and "--n INT" in capsys.readouterr().out


@pytest.mark.parametrize(
    "error", [TypeError("x must be a tensor"), FileNotFoundError("no such file: x.pt")]
)
def test_dispatch_turns_type_and_file_errors_into_one_line_and_exit_2(error, capsys):
    def run(cfg):
        raise error

    assert dispatch("icml26-x", "one", {"demo": (Other, run)}, []) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"icml26-x: error: {error}"]


def test_timers_take_the_best_and_the_median_and_refuse_no_repeats():
    calls = []
    assert best_time(lambda: calls.append(1), repeats=3, warmup=2) >= 0
    assert len(calls) == 5
    assert median_time(lambda: None, repeats=3) >= 0
    with pytest.raises(ValueError, match="repeats"):
        best_time(lambda: None, repeats=0)


def test_torch_threads_restores_the_callers_setting():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with torch_threads(1, device="cuda"):  # a GPU bench leaves the CPU threads alone
        assert torch.get_num_threads() == before


def test_assert_rejects_wants_the_argument_named():
    from icml26.testing import assert_rejects

    def check(x):
        if x < 0:
            raise ValueError(f"x must be >= 0, got {x}")

    assert "x must" in str(assert_rejects(lambda: check(-1), "x"))
    with pytest.raises(AssertionError, match="does not name"):
        assert_rejects(lambda: check(-1), "y")
    with pytest.raises(AssertionError, match="returned normally"):
        assert_rejects(lambda: check(1), "x")
    with pytest.raises(AssertionError, match="got KeyError"):
        assert_rejects(lambda: {}["x"], "x")


def test_atomic_write_leaves_the_old_file_when_writing_fails(tmp_path):
    from icml26.testing.files import atomic_write, atomic_write_text

    target = tmp_path / "sub" / "a.txt"
    assert atomic_write_text(target, "old") == target and target.read_text() == "old"

    def broken(tmp):
        Path(tmp).write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, broken)
    assert target.read_text() == "old"
    assert sorted(p.name for p in target.parent.iterdir()) == ["a.txt"]  # no temp file left


def test_save_figure_writes_and_closes(tmp_path):
    plt = pytest.importorskip("matplotlib.pyplot")
    from icml26.testing.files import save_figure

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    path = save_figure(fig, tmp_path / "f.png")
    assert path.read_bytes()[:4] == b"\x89PNG" and not plt.fignum_exists(fig.number)


def test_demo_options_apply_quick_settings_only_under_quick():
    from dataclasses import dataclass

    from icml26.testing.command import DemoOptions

    @dataclass(frozen=True)
    class Cfg(DemoOptions):
        steps: int = 100

        def quick_settings(self):
            return {"steps": 2}

    assert Cfg().resolved().steps == 100 and Cfg(quick=True).resolved().steps == 2
    assert Cfg(quick=True).resolved().quick and Cfg().device == "auto" and Cfg().out is None
    # a setting the user changed is kept: --quick never silently overrides a flag
    assert Cfg(quick=True, steps=7).resolved().steps == 7


def test_quick_settings_must_name_settings():
    from dataclasses import dataclass

    from icml26.testing.command import DemoOptions

    @dataclass(frozen=True)
    class Cfg(DemoOptions):
        def quick_settings(self):
            return {"stepz": 2}

    with pytest.raises(ValueError, match="stepz"):
        Cfg(quick=True).resolved()


def test_demo_command_reads_quick_first_and_device_last():
    from dataclasses import dataclass

    from icml26.testing.command import DemoOptions
    from icml26.testing.results import demo_command

    @dataclass(frozen=True)
    class Cfg(DemoOptions):
        model: str = "big"

    cfg = Cfg(quick=True, device="cpu", model="tiny")
    assert demo_command("icml26-x", cfg) == "icml26-x demo --quick --model tiny --device cpu"


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: integer("steps", -1, low=0), "steps must be an integer >= 0, got -1"),
        (lambda: integer("steps", 2.0, low=0), "steps must be an integer >= 0, got 2.0"),
        (lambda: integer("batch", True, low=1), "batch must be an integer >= 1, got True"),
        (lambda: integer("k", 5, low=1, high=4), "k must be an integer >= 1 and <= 4, got 5"),
        (lambda: integer("seed", "1"), "seed must be an integer, got '1'"),
        (lambda: number("lr", 0.0, above=0), "lr must be a finite number > 0, got 0.0"),
        (lambda: number("lr", float("nan"), above=0), "lr must be a finite number > 0, got nan"),
        (lambda: number("beta", float("inf")), "beta must be a finite number, got inf"),
        (
            lambda: number("gamma", 1.5, low=0, high=1),
            "gamma must be a finite number >= 0 and <= 1",
        ),
        (
            lambda: number("p", 1.0, above=0, below=1),
            "p must be a finite number > 0 and < 1, got 1.0",
        ),
        (lambda: number("lr", "1e-3", above=0), "lr must be a finite number > 0, got '1e-3'"),
        (lambda: number("lr", False, above=0), "lr must be a finite number > 0, got False"),
    ],
)
def test_checks_name_the_one_bad_field_its_rule_and_its_value(call, message):
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value).startswith(message)


def test_checks_return_what_they_accept_at_the_edges():
    import numpy as np

    assert integer("steps", 0, low=0) == 0 and integer("k", np.int64(4), low=1, high=4) == 4
    assert number("lr", 1, above=0) == 1.0 and isinstance(number("lr", 1, above=0), float)
    assert number("gamma", 1.0, low=0, high=1) == 1.0 and number("x", np.float32(-2.5)) == -2.5
