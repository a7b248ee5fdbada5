"""The README's Python snippets run, so they cannot rot."""

from pathlib import Path

import pytest

from icml26.testing import run_readme_snippets

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_snippets_run(tmp_path):
    pytest.importorskip("MDAnalysisTests")
    ns = run_readme_snippets(README, cwd=tmp_path)
    assert len(ns["history"]) == 2
    assert ns["out"].reward.shape == (16,)
    assert ns["w"].shape == (1, 8) and ns["advantages"].shape == (1, 8)
    assert (tmp_path / "my_fidia" / "policy.safetensors").is_file()
