"""The dispatch machinery, exercised with a small kernel defined here (y = x * w + b, rowwise)."""

import os
import subprocess
import sys

import pytest
import torch

from icml26.kernels import Backend, KernelOp, kernel_mode, register_op, select_backend
from icml26.kernels import triton_available as _triton_available
from icml26.testing import assert_close

needs_triton = pytest.mark.skipif(not _triton_available(), reason="Triton is not installed")


def scale_shift_reference(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(M, N) * (N,) + (N,): the definition."""
    return x * w + b


def _scale_shift_triton(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    # Imported here, never at module level: Triton must be imported after the interpreter flag.
    import triton
    import triton.language as tl

    @triton.jit
    def kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, stride_xm, stride_xn, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < N
        xv = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=mask, other=0.0)
        wv = tl.load(w_ptr + cols, mask=mask, other=0.0)
        bv = tl.load(b_ptr + cols, mask=mask, other=0.0)
        tl.store(y_ptr + row * N + cols, xv * wv + bv, mask=mask)

    M, N = x.shape
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    kernel[(M,)](
        x,
        w.contiguous(),
        b.contiguous(),
        y,
        M,
        N,
        x.stride(0),
        x.stride(1),
        BLOCK=triton.next_power_of_2(N),
    )
    return y


scale_shift = register_op("test_scale_shift", scale_shift_reference, _scale_shift_triton)


def test_mode_parsing(monkeypatch):
    monkeypatch.delenv("ICML26_KERNELS", raising=False)
    assert kernel_mode() == "auto"
    monkeypatch.setenv("ICML26_KERNELS", " Reference ")
    assert kernel_mode() == "reference"
    monkeypatch.setenv("ICML26_KERNELS", "cuda")
    with pytest.raises(ValueError, match="ICML26_KERNELS='cuda' is not one of"):
        kernel_mode()


def test_auto_uses_reference_on_cpu(monkeypatch):
    monkeypatch.delenv("ICML26_KERNELS", raising=False)
    assert select_backend(torch.zeros(2)) is Backend.REFERENCE
    x, w, b = torch.randn(3, 5), torch.randn(5), torch.randn(5)
    assert_close(scale_shift(x, w, b), scale_shift_reference(x.double(), w.double(), b.double()))
    assert scale_shift.last_backend is Backend.REFERENCE


def test_reference_mode_is_forced(monkeypatch):
    monkeypatch.setenv("ICML26_KERNELS", "reference")
    assert select_backend(torch.zeros(2)) is Backend.REFERENCE


@needs_triton
def test_triton_mode_on_cpu_explains_itself(monkeypatch):
    monkeypatch.setenv("ICML26_KERNELS", "triton")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(RuntimeError, match=r"needs CUDA tensors.*ICML26_KERNELS=interpret"):
        select_backend(torch.zeros(2), op="test")


def test_missing_triton_explains_itself(monkeypatch):
    import icml26.kernels.dispatch as d

    monkeypatch.setenv("ICML26_KERNELS", "interpret")
    monkeypatch.setattr(d, "triton_available", lambda: False)
    with pytest.raises(RuntimeError, match="needs Triton, which is not installed"):
        d.select_backend(torch.zeros(2), op="x")


def test_triton_impl_is_imported_lazily():
    op = KernelOp("lazy", scale_shift_reference, "json:dumps")
    assert op.triton_impl == "json:dumps"
    import json

    assert op.triton() is json.dumps


@needs_triton
@pytest.mark.parametrize("shape", [(1, 1), (7, 13), (33, 64)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_interpret_mode_runs_the_kernel(monkeypatch, shape, dtype):
    monkeypatch.setenv("ICML26_KERNELS", "interpret")
    monkeypatch.setenv("TRITON_INTERPRET", "0")  # so teardown restores the original value
    x = torch.randn(shape[1], shape[0], dtype=dtype).t()  # non-contiguous input
    w, b = torch.randn(shape[1], dtype=dtype), torch.randn(shape[1], dtype=dtype)
    y = scale_shift(x, w, b)
    assert scale_shift.last_backend is Backend.TRITON
    assert os.environ["TRITON_INTERPRET"] == "1"
    atol, rtol = scale_shift.tolerance(dtype)
    assert_close(y, scale_shift_reference(x.double(), w.double(), b.double()), atol=atol, rtol=rtol)


@needs_triton
def test_interpret_sets_flag_before_triton_import():
    code = (
        "import sys, os; import icml26.kernels; "
        "assert 'triton' not in sys.modules, 'imported triton eagerly'; "
        "print(os.environ.get('TRITON_INTERPRET'))"
    )
    env = {**os.environ, "ICML26_KERNELS": "interpret"}
    env.pop("TRITON_INTERPRET", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"


@pytest.mark.gpu
def test_auto_uses_triton_on_cuda(monkeypatch):
    monkeypatch.delenv("ICML26_KERNELS", raising=False)
    x = torch.randn(9, 31, device="cuda")
    w, b = torch.randn(31, device="cuda"), torch.randn(31, device="cuda")
    y = scale_shift(x, w, b)
    assert scale_shift.last_backend is Backend.TRITON
    assert_close(y, scale_shift_reference(x.double(), w.double(), b.double()))
