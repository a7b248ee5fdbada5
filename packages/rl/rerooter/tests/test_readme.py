"""The README's Python snippets run, so they cannot rot."""

from pathlib import Path

from icml26.testing import run_readme_snippets

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_snippets_run(tmp_path):
    namespace = run_readme_snippets(README, cwd=tmp_path)
    assert namespace["rerooted"].solved
    assert namespace["history"].iteration == 2
    assert (tmp_path / "ckpt" / "model.safetensors").is_file()
