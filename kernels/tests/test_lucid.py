"""LUCID: the reference's defining properties, and the Triton solve (through the interpreter)
against the reference, forward and backward."""

import math

import pytest
import torch

from icml26.kernels import Backend, triton_available
from icml26.kernels.attention import softmax_attention
from icml26.kernels.lucid import (
    lucid_attention,
    lucid_attention_reference,
    lucid_decode,
    lucid_decode_reference,
    lucid_preconditioner,
    lucid_solve,
    lucid_solve_backward_reference,
    lucid_solve_reference,
)
from icml26.testing import assert_close


def qkv(B=2, H=4, Hkv=2, T=19, D=16, dtype=torch.float64, seed=0, similar=0.0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, T, D, generator=g, dtype=torch.float64)
    k = torch.randn(B, Hkv, T, D, generator=g, dtype=torch.float64)
    if similar:  # keys clustered around one direction: L far from the identity
        k = k * (1 - similar) + similar * torch.randn(1, 1, 1, D, generator=g, dtype=torch.float64)
    v = torch.randn(B, Hkv, T, D, generator=g, dtype=torch.float64)
    return q.to(dtype), k.to(dtype), v.to(dtype)


def test_preconditioner_is_unit_lower_triangular():
    _, k, _ = qkv(similar=0.7)
    L = lucid_preconditioner(k)
    assert torch.equal(L, L.tril())
    assert (L.diagonal(dim1=-2, dim2=-1) == 1).all()
    lower = L[..., torch.ones(19, 19, dtype=torch.bool).tril(-1)]
    assert (lower > 0).all() and (lower <= 1 + 1e-12).all()
    vp = lucid_solve_reference(k, qkv()[2])
    assert_close(L @ vp, qkv()[2], atol=1e-10, rtol=1e-10)


def test_exact_retrieval_identity():
    # Keys of norm sqrt(d), query = key t: LUCID returns v_t / sum_{j<=t} L_tj exactly, where
    # softmax attention returns a blend of every similar key's value.
    B, Hkv, T, D = 1, 1, 12, 16
    _, k, v = qkv(B=B, H=1, Hkv=Hkv, T=T, D=D, similar=0.8)
    k = k / k.norm(dim=-1, keepdim=True) * math.sqrt(D)
    q = k.clone()  # query t equals key t
    out = lucid_attention_reference(q, k, v)
    L = lucid_preconditioner(k)
    expected = v / L.sum(-1, keepdim=True)
    assert_close(out, expected, atol=1e-9, rtol=1e-9)
    softmax_out = (
        torch.softmax(
            (q @ k.transpose(-1, -2) / math.sqrt(D)).tril()
            + torch.full((T, T), float("-inf")).triu(1),
            -1,
        )
        @ v
    )
    assert (softmax_out - v).norm() > 10 * (out * L.sum(-1, keepdim=True) - v).norm()


@pytest.mark.parametrize("fn", [lucid_attention_reference, lucid_attention])
def test_causality(fn):
    q, k, v = qkv()
    out = fn(q, k, v)
    q2, k2, v2 = q.clone(), k.clone(), v.clone()
    q2[:, :, 10:] += 3.0
    k2[:, :, 10:] -= 2.0
    v2[:, :, 10:] *= -5.0
    out2 = fn(q2, k2, v2)
    assert_close(out2[:, :, :10], out[:, :, :10], atol=1e-12, rtol=1e-12)
    assert not torch.allclose(out2[:, :, 10:], out[:, :, 10:])


def test_sdpa_path_matches_the_explicit_reference_with_gqa():
    q, k, v = qkv(H=6, Hkv=2, T=23, D=8, similar=0.5)
    assert_close(
        lucid_attention(q, k, v), lucid_attention_reference(q, k, v), atol=1e-10, rtol=1e-10
    )
    assert_close(
        lucid_attention(q, k, v, scale=0.3),
        lucid_attention_reference(q, k, v, scale=0.3),
        atol=1e-10,
        rtol=1e-10,
    )


@pytest.mark.parametrize("fn", [lucid_attention, lucid_attention_reference])
def test_non_causal_attention_is_refused(fn):
    q, k, v = qkv(H=2, Hkv=1, T=6, D=4)
    with pytest.raises(ValueError, match="causal attention only"):
        fn(q, k, v, causal=False)


def test_gradcheck_fp64():
    q, k, v = qkv(B=1, H=2, Hkv=1, T=5, D=4, similar=0.5)
    args = tuple(t.clone().requires_grad_() for t in (q, k, v))
    assert torch.autograd.gradcheck(lucid_attention_reference, args)
    assert torch.autograd.gradcheck(lucid_attention, args)


def test_decode_step_equals_the_last_row():
    q, k, v = qkv(H=4, Hkv=2, T=14, D=16, similar=0.4)
    full = lucid_attention_reference(q, k, v)
    vp = lucid_solve_reference(k, v)
    for t in (0, 1, 13):
        out, vp_t = lucid_decode_reference(
            q[:, :, t], k[:, :, :t], vp[:, :, :t], k[:, :, t], v[:, :, t]
        )
        assert_close(out, full[:, :, t], atol=1e-10, rtol=1e-10)
        assert_close(vp_t, vp[:, :, t], atol=1e-10, rtol=1e-10)


def clustered_keys(T, D, clusters, noise, seed=0):
    # runs of near-identical keys (repeated tokens): L close to all-ones blocks
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(1, 2, clusters, D, generator=g, dtype=torch.float64)
    idx = torch.randint(0, clusters, (T,), generator=g)
    return centers[:, :, idx] + noise * torch.randn(1, 2, T, D, generator=g, dtype=torch.float64)


@pytest.mark.parametrize("dtype,u", [(torch.bfloat16, 2.0**-8), (torch.float16, 2.0**-11)])
@pytest.mark.parametrize("keys", ["random", "similar", "clustered"])
def test_half_precision_attention_on_vp_within_the_error_analysis(dtype, u, keys):
    # lucid_attention's docstring: <= 3u max|V'| against exact LUCID on the same rounded inputs
    q, k, v = qkv(B=1, H=2, Hkv=2, T=96, D=32, similar=0.9 if keys == "similar" else 0.0)
    if keys == "clustered":
        k = clustered_keys(96, 32, clusters=2, noise=0.05)
    q, k, v = (t.to(dtype) for t in (q, k, v))
    exact = lucid_attention_reference(q.double(), k.double(), v.double())
    vp_max = float(lucid_solve_reference(k.double(), v.double()).abs().max())
    got = lucid_attention(q, k, v)
    assert got.dtype == dtype
    err = float((got.double() - exact).abs().max())
    assert err <= 3 * u * vp_max, (err, vp_max)
    # attention_dtype=float32 keeps the attention in fp32: only the output's rounding is left
    full = lucid_attention(q, k, v, attention_dtype=torch.float32)
    assert float((full.double() - exact).abs().max()) <= u * float(exact.abs().max())


def test_attention_dtype_is_checked():
    q, k, v = qkv(T=8)
    with pytest.raises(ValueError, match="attention_dtype must be"):
        lucid_attention(q, k, v, attention_dtype=torch.int8)
    with pytest.raises(ValueError, match="attention_dtype must be"):
        lucid_attention(q, k, v, attention_dtype="bf16")


@pytest.mark.parametrize(
    "change,error,match",
    [
        (dict(q=torch.zeros(2, 3, 19, 16, dtype=torch.float64)), ValueError, "multiple"),
        (dict(v=torch.zeros(2, 2, 18, 16, dtype=torch.float64)), ValueError, "share"),
        (dict(q=torch.full((2, 4, 19, 16), float("nan"), dtype=torch.float64)), ValueError, "NaN"),
        (dict(v=torch.full((2, 2, 19, 16), float("inf"), dtype=torch.float64)), ValueError, "NaN"),
        (dict(q=torch.zeros(2, 4, 19, 16, dtype=torch.float32)), TypeError, "share a dtype"),
        (dict(k=torch.zeros(2, 2, 19, 16, dtype=torch.int64)), TypeError, "floating"),
        (dict(q=torch.zeros(4, 19, 16, dtype=torch.float64)), ValueError, "4 dimensions"),
    ],
)
def test_bad_inputs(change, error, match):
    q, k, v = qkv()
    args = dict(q=q, k=k, v=v)
    args.update(change)
    with pytest.raises(error, match=match):
        lucid_attention_reference(**args)
    with pytest.raises(error, match=match):
        lucid_attention(**args)


needs_triton = pytest.mark.skipif(not triton_available(), reason="Triton is not installed")


def test_closed_form_backward_equals_autograd():
    # the torch.library op's backward cannot call autograd: its closed form must be autograd's
    _, k, v = qkv(T=13, D=8, similar=0.5)
    k, v = k.requires_grad_(), v.requires_grad_()
    vp = lucid_solve_reference(k, v)
    g = torch.randn(vp.shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    dk, dv = torch.autograd.grad(vp, (k, v), g)
    dk2, dv2 = lucid_solve_backward_reference(k.detach(), vp.detach(), g)
    assert_close(dv2, dv, atol=1e-12, rtol=1e-10)
    assert_close(dk2, dk, atol=1e-12, rtol=1e-10)


def test_the_torch_library_ops_pass_opcheck():
    _, k, v = qkv(B=1, Hkv=2, T=7, D=8, dtype=torch.float32)
    torch.library.opcheck(torch.ops.icml26.lucid_solve, (k.requires_grad_(), v.requires_grad_()))
    q, kc, vc = qkv(B=1, H=4, Hkv=2, T=5, D=8, dtype=torch.float32)
    args = (q[:, :, 0], kc[:, :, :4], vc[:, :, :4], kc[:, :, 4], vc[:, :, 4], 0.3)
    torch.library.opcheck(torch.ops.icml26.lucid_decode, args)


def test_compiled_lucid_attention_equals_eager_without_graph_breaks():
    q, k, v = (t.requires_grad_() for t in qkv(T=11, D=8, dtype=torch.float32, similar=0.5))
    compiled = torch.compile(lucid_attention, fullgraph=True)  # a graph break is an error
    w = torch.randn(q.shape, generator=torch.Generator().manual_seed(3))
    outs, grads = [], []
    for fn in (lucid_attention, compiled):
        out = fn(q, k, v)
        outs.append(out)
        grads.append(torch.autograd.grad((out * w).sum(), (q, k, v)))
    assert_close(outs[1], outs[0], atol=1e-5, rtol=1e-5)
    for g_compiled, g_eager in zip(grads[1], grads[0], strict=True):
        assert_close(g_compiled, g_eager, atol=1e-5, rtol=1e-5)


def _solve_matches_the_reference(k, v, dtype):
    """lucid_solve (Triton) against the float64 reference: output, dk and dv."""
    k1, v1 = k.detach().clone().requires_grad_(), v.detach().clone().requires_grad_()
    got = lucid_solve(k1, v1)
    assert lucid_solve.last_backend is Backend.TRITON
    k2, v2 = k.double().requires_grad_(), v.double().requires_grad_()
    ref = lucid_solve_reference(k2, v2)
    atol, rtol = lucid_solve.tolerance(dtype)
    assert_close(got, ref, atol=atol, rtol=rtol)
    w = torch.randn(ref.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    (got.double() * w).sum().backward()
    (ref * w).sum().backward()
    assert_close(v1.grad.double(), v2.grad, atol=10 * atol, rtol=10 * rtol)
    assert_close(k1.grad.double(), k2.grad, atol=10 * atol, rtol=10 * rtol)


@needs_triton
@pytest.mark.parametrize("panel_blocks", [4, 8])  # 2 and 3 doubling levels
def test_triton_solve_with_wide_panels(monkeypatch, panel_blocks):
    # The GPU's panels hold 8 to 32 blocks: the panel inverses then come from several levels of
    # recursive doubling (the other tests use the interpreter's 2-block panels, one level).
    monkeypatch.setenv("ICML26_KERNELS", "interpret")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    lucid_solve.triton()  # the kernels' module, imported with the interpreter on
    import icml26.kernels._triton_lucid as kernels

    monkeypatch.setattr(kernels, "_panel_blocks", lambda block, bh, T: panel_blocks)
    _, k, v = qkv(B=1, Hkv=2, T=150, D=16, similar=0.6, seed=panel_blocks)  # 10 blocks of 16
    _solve_matches_the_reference(k.float(), v.float(), torch.float32)


@needs_triton
@pytest.mark.parametrize("T", [1, 17, 40, 70])  # 1 to 5 blocks of 16, 1 to 3 panels
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_triton_solve_matches_the_reference_forward_and_backward(monkeypatch, T, dtype):
    monkeypatch.setenv("ICML26_KERNELS", "interpret")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    _, k, v = qkv(B=2, Hkv=2, T=T, D=12, similar=0.5, seed=T)
    k = k.to(dtype).transpose(2, 3).contiguous().transpose(2, 3)  # non-contiguous
    _solve_matches_the_reference(k, v.to(dtype), dtype)


@needs_triton
def test_triton_closed_form_backward_matches_the_reference(monkeypatch):
    # what the torch.library op's backward runs on CUDA
    monkeypatch.setenv("ICML26_KERNELS", "interpret")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    lucid_solve.triton()  # turns the interpreter on before the kernels' module is imported
    from icml26.kernels._triton_lucid import lucid_solve_backward_triton

    _, k, v = qkv(B=1, Hkv=2, T=21, D=8, similar=0.5, seed=4)
    vp = lucid_solve_reference(k, v)
    g = torch.randn(vp.shape, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    dk_ref, dv_ref = lucid_solve_backward_reference(k, vp, g)
    dk, dv = lucid_solve_backward_triton(k.float(), vp.float(), g.float())
    assert_close(dv.double(), dv_ref, atol=1e-4, rtol=1e-4)
    assert_close(dk.double(), dk_ref, atol=1e-4, rtol=1e-4)


@needs_triton
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_triton_lucid_attention_with_gqa_matches_the_reference(monkeypatch, dtype):
    # Both Triton kernels in one graph (the solve, then flash attention on V'); autograd adds
    # the two gradients to the keys (through the logits and through L).
    monkeypatch.setenv("ICML26_KERNELS", "interpret")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    q, k, v = qkv(B=1, H=4, Hkv=2, T=21, D=16, similar=0.3, dtype=dtype)
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    got = lucid_attention(*leaves)
    assert lucid_solve.last_backend is Backend.TRITON
    assert softmax_attention.last_backend is Backend.TRITON
    ref_leaves = [t.double().requires_grad_() for t in (q, k, v)]
    ref = lucid_attention_reference(*ref_leaves)
    # half precision: the attention on V' runs in q's dtype, held to lucid_attention's bound
    atol, rtol = 1e-4, 1e-4
    if dtype != torch.float32:
        u = 2.0**-11 if dtype == torch.float16 else 2.0**-8
        atol, rtol = 3 * u * lucid_solve_reference(k.double(), v.double()).abs().max().item(), 0.0
    assert_close(got, ref, atol=atol, rtol=rtol)
    w = torch.randn(ref.shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    (got.double() * w).sum().backward()
    (ref * w).sum().backward()
    gtol = (4e-4, 4e-4) if dtype == torch.float32 else (2e-2, 4e-2)
    for got_leaf, ref_leaf in zip(leaves, ref_leaves, strict=True):
        assert_close(got_leaf.grad, ref_leaf.grad, atol=gtol[0], rtol=gtol[1])


@needs_triton
@pytest.mark.parametrize(
    "B,H,Hkv,N,D,dtype",
    [
        (2, 4, 2, 37, 16, torch.float32),  # GQA, N not a multiple of the block
        (1, 3, 1, 0, 8, torch.float32),  # empty cache: the output is v_t
        (1, 2, 2, 70, 12, torch.float16),  # D not a power of two, several blocks
        (2, 6, 2, 5, 32, torch.float32),
        (2, 4, 2, 70, 16, torch.bfloat16),  # a bf16 model's decode: bf16 q and V' cache
    ],
)
def test_triton_fused_decode_matches_the_reference(monkeypatch, B, H, Hkv, N, D, dtype):
    monkeypatch.setenv("ICML26_KERNELS", "interpret")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    g = torch.Generator().manual_seed(N)
    q, k_new, v_new = (torch.randn(B, h, D, generator=g) for h in (H, Hkv, Hkv))
    # a preallocated cache filled up to N: non-contiguous along the head dimension
    k_buf, v_buf = (torch.randn(B, Hkv, N + 9, D, generator=g) for _ in range(2))
    k_cache, vp_cache = k_buf[:, :, :N], v_buf[:, :, :N]
    args = [t.to(dtype) for t in (q, k_cache, vp_cache, k_new, v_new)]
    out, vp_t = lucid_decode(*args, scale=0.3)
    assert lucid_decode.last_backend is Backend.TRITON
    ref_out, ref_vp = lucid_decode_reference(*(t.double() for t in args), scale=0.3)
    atol, rtol = lucid_decode.tolerance(dtype)
    if dtype == torch.bfloat16:  # fp32 arithmetic on bf16 loads: only the output's rounding
        atol, rtol = 1e-4, 2.0**-8
    assert out.dtype == dtype and vp_t.dtype == torch.float32
    assert_close(out, ref_out, atol=atol, rtol=rtol)
    assert_close(vp_t, ref_vp, atol=atol, rtol=rtol)


@needs_triton
@pytest.mark.parametrize(
    "N,splits",
    [(70, 1), (70, 2), (70, 3), (200, 4), (37, 8), (0, 2)],  # 8 and 2: more splits than blocks
)
def test_triton_decode_split_over_the_cache_matches_the_reference(monkeypatch, N, splits):
    monkeypatch.setenv("ICML26_KERNELS", "interpret")
    lucid_decode_triton = lucid_decode.triton()  # imported with the interpreter set

    g = torch.Generator().manual_seed(N + splits)
    B, H, Hkv, D = 2, 6, 2, 16
    q, k_new, v_new = (torch.randn(B, h, D, generator=g) for h in (H, Hkv, Hkv))
    k_cache, vp_cache = (torch.randn(B, Hkv, N, D, generator=g) for _ in range(2))
    # peaked scores: the chunks' partial maxima differ, so the merge's rescaling matters
    q = 3 * q
    out, vp_t = lucid_decode_triton(q, k_cache, vp_cache, k_new, v_new, num_splits=splits)
    ref_out, ref_vp = lucid_decode_reference(*(t.double() for t in (q, k_cache, vp_cache,
                                                                    k_new, v_new)))  # fmt: skip
    atol, rtol = lucid_decode.tolerance(torch.float32)
    assert_close(out, ref_out, atol=atol, rtol=rtol)
    assert_close(vp_t, ref_vp, atol=atol, rtol=rtol)
    with pytest.raises(ValueError, match="num_splits"):
        lucid_decode_triton(q, k_cache, vp_cache, k_new, v_new, num_splits=-1)


def test_decode_bad_inputs():
    q, k, v = torch.zeros(1, 2, 8), torch.zeros(1, 1, 3, 8), torch.zeros(1, 1, 8)
    with pytest.raises(ValueError, match="head dimension"):
        lucid_decode(q, k[..., :4], k, v, v)
    with pytest.raises(ValueError, match="share"):
        lucid_decode(q, k, k, torch.zeros(1, 1, 4), v)
    # no NaN scan in a decode step (a host sync per token): NaN in, NaN out, never hidden
    out, vp_t = lucid_decode(q, k, k, v.clone().fill_(float("nan")), v)
    assert out.isnan().all() and vp_t.isnan().all()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cuda_solve_matches_the_reference(monkeypatch, dtype):
    monkeypatch.delenv("ICML26_KERNELS", raising=False)
    _, k, v = qkv(B=2, Hkv=4, T=1000, D=64, similar=0.3)
    got = lucid_solve(k.to("cuda", dtype), v.to("cuda", dtype))
    assert lucid_solve.last_backend is Backend.TRITON
    assert_close(
        got.cpu().double(),
        lucid_solve_reference(k.to(dtype).double(), v.to(dtype).double()),
        atol=1e-3,
        rtol=1e-3,
    )


@pytest.mark.gpu
def test_cuda_fused_decode_matches_the_reference(monkeypatch):
    monkeypatch.delenv("ICML26_KERNELS", raising=False)
    g = torch.Generator().manual_seed(0)
    q, k_new, v_new = (torch.randn(2, h, 64, generator=g) for h in (8, 2, 2))
    k_cache, vp_cache = (torch.randn(2, 2, 3000, 64, generator=g) for _ in range(2))
    args = (q, k_cache, vp_cache, k_new, v_new)
    out, vp_t = lucid_decode(*(t.cuda() for t in args))
    assert lucid_decode.last_backend is Backend.TRITON
    ref_out, ref_vp = lucid_decode_reference(*(t.double() for t in args))
    assert_close(out.cpu().double(), ref_out, atol=1e-4, rtol=1e-4)
    assert_close(vp_t.cpu().double(), ref_vp, atol=1e-4, rtol=1e-4)
