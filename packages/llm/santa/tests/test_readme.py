"""The README's Python snippets run, so they cannot rot."""

from pathlib import Path

from icml26.testing import run_readme_snippets

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_snippets_run(tmp_path):
    namespace = run_readme_snippets(README, cwd=tmp_path)
    assert namespace["res"].out.shape == (1, 9, 64)
    assert namespace["out"].shape == (2, 308) and namespace["S"] == 160
    assert 0 < namespace["state"].read_fraction < 1
