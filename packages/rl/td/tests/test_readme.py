"""The README's Python snippets run, so they cannot rot."""

from pathlib import Path

from icml26.testing import run_readme_snippets

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_snippets_run(tmp_path):
    namespace = run_readme_snippets(README, cwd=tmp_path)
    assert namespace["theta"].shape == (10, 8)
    assert namespace["theta_m"].shape == (10, 8)
    assert namespace["out"].shape == (3, 1, 5, 5, 8)
    assert (
        -2.0
        < namespace["loglog_slope"](namespace["horizons"], namespace["exp_at_T"].numpy()).slope
        < 0
    )
    assert namespace["values"].shape == (16,) and namespace["td"].t == 2_000
    assert namespace["sched"].last_epoch == 300
