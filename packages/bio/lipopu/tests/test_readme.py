"""The README's Python snippets run, so they cannot rot."""

from pathlib import Path

import pytest

from icml26.testing import run_readme_snippets

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_snippets_run(tmp_path):
    pytest.importorskip("MDAnalysisTests")
    ns = run_readme_snippets(README, cwd=tmp_path)
    assert ns["risk"].risk >= 0
    assert len(ns["ranked"]) > 10 and ns["best"].score.shape == (1,)
    assert abs(sum(ns["best"].attention) - 1) < 1e-5
    assert (tmp_path / "my_model" / "model.safetensors").is_file()
