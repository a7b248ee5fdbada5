"""The README's Python snippets run, so they cannot rot."""

from pathlib import Path

from icml26.testing import run_readme_snippets

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_snippets_run(tmp_path):
    ns = run_readme_snippets(README, cwd=tmp_path)
    assert ns["pred"].shape == (ns["slide"].features.shape[0], 50)
    assert ns["adata"].n_obs == len(ns["slide"])
    assert (tmp_path / "hist-model" / "model.safetensors").is_file()
