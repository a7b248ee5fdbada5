"""The README's Python snippets run, so they cannot rot."""

from pathlib import Path

from icml26.testing import run_readme_snippets

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_snippets_run(tmp_path):
    ns = run_readme_snippets(README, cwd=tmp_path)
    assert ns["Z"].shape == ns["Z_std"].shape == (891, 13 * 32)
    assert 0.5 < ns["clf"].score(ns["X"].iloc[ns["split"].test], ns["y"][ns["split"].test]) <= 1
    assert ns["terms"].kl_target >= 0
