"""kernels/gpu_check.py, the script a GPU machine runs first: its no-CUDA path exits cleanly,
and its correctness section runs through Triton's interpreter at tiny sizes (so the script
cannot rot where no GPU is) and refuses to pass checks of the reference against itself."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from icml26.kernels import triton_available

SCRIPT = Path(__file__).resolve().parents[1] / "gpu_check.py"


def _run(*args, env=None, tmp_path):
    env = {**os.environ, **(env or {})}
    env.pop("TRITON_INTERPRET", None)
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path / "table.md"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


@pytest.mark.skipif(torch.cuda.is_available(), reason="the no-CUDA path")
def test_without_cuda_it_says_so_and_exits_cleanly(tmp_path):
    out = _run(tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "no CUDA device" in out.stdout
    assert not (tmp_path / "table.md").exists()


@pytest.mark.skipif(not triton_available(), reason="needs Triton")
def test_self_test_runs_every_check_through_the_interpreter(tmp_path):
    out = _run("--self-test", tmp_path=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    table = (tmp_path / "table.md").read_text()
    for op in ("softmax_attention", "lucid_solve", "lucid_attention", "lucid_decode",
               "santa_decode", "rans_decode"):  # fmt: skip
        assert f"| {op}" in table
    assert "**NO**" not in table and "0 failed" in out.stdout
    assert "## Timings (interpreter: not a speed" in table  # the timing code ran too
    for row in ("LUCID attention fwd+bwd", "SANTA decode", "LUCID decode step", "rANS decode"):
        assert row in table


def test_checks_of_the_reference_fail(tmp_path):
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import gpu_check
    finally:
        sys.path.pop(0)
    import icml26.kernels.attention
    import icml26.kernels.entropy  # noqa: F401  (both register their ops on import)
    from icml26.kernels.dispatch import _REGISTRY, Backend

    checks = gpu_check.Checks()
    _REGISTRY["rans_decode"].last_backend = Backend.REFERENCE
    checks.exact("rans_decode", "int", True, "3 symbols")
    x = torch.zeros(3)
    _REGISTRY["softmax_attention"].last_backend = Backend.REFERENCE
    checks.close("softmax_attention fwd", torch.float32, x, x, (1e-3, 1e-3))
    assert [r[4] for r in checks.rows] == [False, False]
