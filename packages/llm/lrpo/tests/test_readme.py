"""The README's Python snippets run, so they cannot rot."""

from pathlib import Path

from icml26.testing import run_readme_snippets

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_snippets_run(tmp_path):
    ns = run_readme_snippets(README, cwd=tmp_path)
    assert len(ns["targets"]) == 8 and ns["advantages"].shape == (8,)
    assert (tmp_path / "router.json").is_file()
    assert len(ns["result"].history) == 2
    assert (tmp_path / "my_lrpo" / "policy" / "model.safetensors").is_file()
