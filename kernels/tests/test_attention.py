"""Softmax attention with GQA: the reference against an explicit softmax, and the flash-style
Triton kernel (through the interpreter) against the reference, forward and backward."""

import math

import pytest
import torch

from icml26.kernels import Backend, triton_available
from icml26.kernels.attention import softmax_attention, softmax_attention_reference
from icml26.testing import assert_close


def qkv(B, H, Hkv, T, D, seed):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(B, H, T, D, generator=g, dtype=torch.float64),
        torch.randn(B, Hkv, T, D, generator=g, dtype=torch.float64),
        torch.randn(B, Hkv, T, D, generator=g, dtype=torch.float64),
    )


def explicit_softmax_attention(q, k, v, causal, scale):
    G = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(G, 1), v.repeat_interleave(G, 1)
    s = q @ k.transpose(-1, -2) * scale
    if causal:
        T = q.shape[2]
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ v


@pytest.mark.parametrize("causal", [True, False])
def test_reference_is_softmax_attention_with_grouped_heads(causal):
    q, k, v = qkv(2, 6, 2, 13, 8, seed=0)
    assert_close(
        softmax_attention_reference(q, k, v, causal=causal),
        explicit_softmax_attention(q, k, v, causal, 1 / math.sqrt(8)),
        atol=1e-12,
        rtol=1e-12,
    )


def test_bad_inputs():
    q, k, v = qkv(1, 4, 2, 5, 8, seed=0)
    with pytest.raises(ValueError, match="multiple"):
        softmax_attention(q[:, :3], k, v)
    with pytest.raises(ValueError, match="NaN"):
        softmax_attention(q, k, v.clone().fill_(float("nan")))
    with pytest.raises(TypeError, match="share a dtype"):
        softmax_attention(q.float(), k, v)


needs_triton = pytest.mark.skipif(not triton_available(), reason="Triton is not installed")


@needs_triton
@pytest.mark.parametrize(
    "B,H,Hkv,T,D,causal,scale",
    [
        (2, 4, 2, 17, 16, True, None),  # GQA, T not a multiple of the 16-row block
        (1, 3, 1, 40, 12, True, 0.3),  # D not a power of two, three blocks, custom scale
        (1, 2, 2, 33, 24, False, None),  # full (non-causal) attention
        (1, 2, 1, 1, 8, True, None),  # a single token
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_triton_matches_the_reference_forward_and_backward(
    monkeypatch, B, H, Hkv, T, D, causal, scale, dtype
):
    monkeypatch.setenv("ICML26_KERNELS", "interpret")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    q, k, v = (t.to(dtype) for t in qkv(B, H, Hkv, T, D, seed=T))
    q = q.transpose(2, 3).contiguous().transpose(2, 3)  # non-contiguous: strides are honoured
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    out = softmax_attention(*leaves, causal=causal, scale=scale)
    assert softmax_attention.last_backend is Backend.TRITON
    assert out.dtype == dtype
    ref_leaves = [t.double().requires_grad_() for t in (q, k, v)]
    ref = softmax_attention_reference(*ref_leaves, causal=causal, scale=scale)
    atol, rtol = softmax_attention.tolerance(dtype)
    assert_close(out, ref, atol=atol, rtol=rtol)
    w = torch.randn(ref.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    (out.double() * w).sum().backward()
    (ref * w).sum().backward()
    for name, got, want in zip("qkv", leaves, ref_leaves, strict=True):
        assert got.grad.dtype == dtype, name
        assert_close(got.grad, want.grad, atol=2 * atol, rtol=2 * rtol)


@needs_triton
@pytest.mark.parametrize("block_m,block_n", [(32, 16), (64, 16)])
@pytest.mark.parametrize("causal", [True, False])
def test_triton_unequal_tiles_split_the_diagonal_right(monkeypatch, block_m, block_n, causal):
    # The GPU's tiles can be taller than wide (BLOCK_M = 2 or 4 x BLOCK_N): the diagonal then
    # spans several key blocks in the forward and dQ, several query blocks in dK / dV.
    monkeypatch.setenv("ICML26_KERNELS", "interpret")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    softmax_attention.triton()  # the kernels' module, imported with the interpreter on
    import icml26.kernels._triton_attention as kernels

    monkeypatch.setattr(kernels, "_launch_config", lambda D: dict(BLOCK_M=block_m, BLOCK_N=block_n))
    q, k, v = (t.float() for t in qkv(1, 4, 2, 70, 16, seed=block_m))
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    out = softmax_attention(*leaves, causal=causal)
    ref_leaves = [t.double().requires_grad_() for t in (q, k, v)]
    ref = softmax_attention_reference(*ref_leaves, causal=causal)
    atol, rtol = softmax_attention.tolerance(torch.float32)
    assert_close(out, ref, atol=atol, rtol=rtol)
    w = torch.randn(ref.shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    (out.double() * w).sum().backward()
    (ref * w).sum().backward()
    for got, want in zip(leaves, ref_leaves, strict=True):
        assert_close(got.grad, want.grad, atol=2 * atol, rtol=2 * rtol)


@needs_triton
def test_triton_causal_mask_is_exact(monkeypatch):
    # Changing future tokens leaves earlier outputs and the gradients they send bit-identical.
    monkeypatch.setenv("ICML26_KERNELS", "interpret")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    q, k, v = (t.float() for t in qkv(1, 2, 1, 35, 16, seed=3))
    out = softmax_attention(q, k, v)
    k2, v2 = k.clone(), v.clone()
    k2[:, :, 20:] += 5.0
    v2[:, :, 20:] *= -3.0
    out2 = softmax_attention(q, k2, v2)
    assert torch.equal(out[:, :, :20], out2[:, :, :20])
    assert not torch.allclose(out[:, :, 20:], out2[:, :, 20:])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_cuda_matches_the_reference(monkeypatch, dtype):
    monkeypatch.delenv("ICML26_KERNELS", raising=False)
    q, k, v = (t.to("cuda", dtype) for t in qkv(2, 8, 2, 1000, 64, seed=0))
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    out = softmax_attention(*leaves)
    assert softmax_attention.last_backend is Backend.TRITON
    ref_leaves = [t.detach().cpu().double().requires_grad_() for t in (q, k, v)]
    ref = softmax_attention_reference(*ref_leaves)
    atol, rtol = softmax_attention.tolerance(dtype)
    assert_close(out.cpu(), ref, atol=atol, rtol=rtol)
    w = torch.randn(ref.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    (out.double() * w.cuda()).sum().backward()
    (ref * w).sum().backward()
    for got, want in zip(leaves, ref_leaves, strict=True):
        assert_close(got.grad.cpu(), want.grad, atol=4 * atol, rtol=4 * rtol)
