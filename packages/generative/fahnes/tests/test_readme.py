"""The README's Python snippets run, so they cannot rot."""

from pathlib import Path

from icml26.testing import run_readme_snippets

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_snippets_run(tmp_path):
    ns = run_readme_snippets(README, cwd=tmp_path)
    assert [g.num_nodes for g in ns["graphs"]] == [30, 30]
