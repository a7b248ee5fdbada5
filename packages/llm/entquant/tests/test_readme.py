"""The README's Python snippets run, so they cannot rot."""

from pathlib import Path

from icml26.testing import run_readme_snippets

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_snippets_run(tmp_path):
    ns = run_readme_snippets(README, cwd=tmp_path)
    assert ns["qw"].codes.shape == (256, 1024) and ns["W_hat"].shape == (256, 1024)
    assert ns["logits"].shape == (1, 16, 256)
    assert (tmp_path / "tiny-entquant" / "model.safetensors").is_file()
