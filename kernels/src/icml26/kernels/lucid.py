"""LUCID attention (arXiv 2602.10410): softmax attention preconditioned by key-key similarities.

Our reading of the published formulation (the paper's text was not available to us):

- keys RMS-normalised for the preconditioner, ``k_rn = sqrt(d) k / ||k||``, i.e. unit keys
  ``u = k / ||k||`` and cosines ``c_ij = u_i . u_j``;
- ``L = tril(exp(k_rn k_rn^T / sqrt(d) - sqrt(d))) = tril(exp(sqrt(d) (c_ij - 1)))``: unit lower
  triangular (``exp(0) = 1`` on the diagonal), off-diagonal entries in (0, 1];
- ``LUCID(Q, K, V) = softmax(Q K^T / sqrt(d) + causal mask) L^{-1} V``: one forward substitution
  ``V' = L^{-1} V`` per KV head, then ordinary causal attention on ``V'``; O(T^2 d) like attention;
- decode: cache ``V'`` instead of ``V``; a new token gets ``v'_t = v_t - sum_{j<t} L_tj v'_j`` and
  then the usual softmax over the cache;
- grouped-query attention: ``L`` and ``V'`` are per KV head;
- the solve runs in fp32 (fp64 for fp64 inputs) whatever the input dtype: ``L`` is
  ill-conditioned for long sequences of similar keys.

Ops here:

- ``lucid_solve(k, v)``: ``V' = L^{-1} V`` for (B, H_kv, T, D) keys and values, differentiable.
  The reference is ``torch.linalg.solve_triangular`` on the materialised ``L`` (autograd through
  it); the Triton path is a blockwise forward substitution (off-diagonal blocks of ``L`` built on
  the fly from the unit keys and applied with ``tl.dot``, diagonal blocks inverted up front) with
  an analytic backward (``dV = L^{-T} dV'`` by the same kernel run backwards, and the gradient
  through ``L`` to the keys).
- ``lucid_attention(q, k, v)``: ``V'`` from ``lucid_solve``, then ``softmax_attention`` (module
  ``icml26.kernels.attention``: a flash-style Triton kernel, forward and backward, on CUDA;
  PyTorch's ``scaled_dot_product_attention`` on the reference path) on ``(Q, K, V')``.
  ``lucid_attention_reference`` spells the whole thing out with an explicit softmax.
- ``lucid_decode_reference``: one decode step against a (K, V') cache; ``lucid_decode`` the op
  (Triton: split over the cache, one pass over each chunk for both sums, then a merge).
"""

import math

import torch
import torch.nn.functional as F

from icml26.kernels.attention import (
    check_attention_inputs,
    check_decode_inputs,
    check_scale,
    check_tensor,
    compute_dtype,
    expand_kv,
    softmax_attention,
)
from icml26.kernels.dispatch import Backend, register_op, select_backend

# -- validation ----------------------------------------------------------------------------------
# LUCID takes the same (q, k, v) as softmax attention: one validator for both.
check_lucid_inputs = check_attention_inputs


# -- the reference -------------------------------------------------------------------------------
def lucid_preconditioner(k: torch.Tensor) -> torch.Tensor:
    """``L = tril(exp(sqrt(d) (u_i . u_j - 1)))`` for keys (..., T, D); shape (..., T, T), in the
    solve's precision."""
    if not isinstance(k, torch.Tensor) or k.dim() < 2:
        got = tuple(k.shape) if isinstance(k, torch.Tensor) else type(k).__name__
        raise ValueError(f"k must be a tensor of keys (..., T, D), got {got}")
    check_tensor("k", k, k.dim())
    d = k.shape[-1]
    u = F.normalize(k.to(compute_dtype(k.dtype)), dim=-1)  # k_rn / sqrt(d)
    s = math.sqrt(d) * (u @ u.transpose(-1, -2) - 1.0)  # k_rn k_rn^T / sqrt(d) - sqrt(d)
    # The diagonal is exp(0) = 1 by definition; set it exactly rather than through rounding.
    eye = torch.eye(k.shape[-2], dtype=s.dtype, device=s.device)
    return torch.tril(torch.exp(s), diagonal=-1) + eye


def lucid_solve_reference(k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``V' = L^{-1} V`` per (batch, KV head); (B, H_kv, T, D) in the solve's precision."""
    check_lucid_inputs(None, k, v)
    L = lucid_preconditioner(k)
    return torch.linalg.solve_triangular(L, v.to(L.dtype), upper=False, unitriangular=True)


def _require_causal(causal: bool) -> None:
    # L = tril(exp(sqrt(d) (k^ k^T - 1)), -1) + I is lower-triangular: the preconditioner only
    # exists for causal attention. Attending to later keys through a causal L^-1 V is not LUCID.
    if not causal:
        raise ValueError(
            "LUCID is defined for causal attention only (its preconditioner L is "
            "lower-triangular); causal=False has no LUCID counterpart here"
        )


def lucid_attention_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool = True,
    scale: float | None = None,
) -> torch.Tensor:
    """``softmax(Q K^T scale + causal mask) L^{-1} V``, explicit, in the solve's precision.

    q (B, H, T, D), k and v (B, H_kv, T, D); returns (B, H, T, D) in q's dtype.
    """
    check_lucid_inputs(q, k, v, scan_kv=False)  # the solve scans k and v
    _require_causal(causal)
    scale = check_scale(scale)
    ct = compute_dtype(q.dtype)
    vp = lucid_solve_reference(k, v)  # (B, H_kv, T, D)
    heads, T = q.shape[1], q.shape[2]
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q.to(ct) @ expand_kv(k, heads).to(ct).transpose(-1, -2) * scale  # (B, H, T, T)
    if causal:
        mask = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return (torch.softmax(scores, dim=-1) @ expand_kv(vp, heads)).to(q.dtype)


def lucid_decode_reference(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    vp_cache: torch.Tensor,
    k_new: torch.Tensor,
    v_new: torch.Tensor,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One decode step: ``v'_t = v_t - sum_{j<t} L_tj v'_j``, then softmax over the cache.

    q (B, H, D) for the new token; k_cache, vp_cache (B, H_kv, N, D) for the N earlier tokens
    (N may be 0); k_new, v_new (B, H_kv, D). Returns (out (B, H, D) in q's dtype,
    v'_t (B, H_kv, D) in the solve's precision, to append to the cache).
    """
    check_decode_inputs(q, k_cache, vp_cache, k_new, v_new)
    scale = check_scale(scale)
    ct = compute_dtype(q.dtype)
    B, H, d = q.shape
    H_kv, N = k_cache.shape[1], k_cache.shape[2]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    kc, vc = k_cache.to(ct), vp_cache.to(ct)
    # Both sums of the decode rule read the same cached rows, so each matmul serves both: the
    # new token's unit key u_t and the G = H / H_kv query heads of the group (sharing their KV
    # head, no copy of the cache) meet the cached keys in one product, and the preconditioner row
    # L_t,<t and the attention weights meet V' in another.
    u_new = F.normalize(k_new.to(ct), dim=-1)  # (B, H_kv, D)
    qg = q.to(ct).view(B, H_kv, H // H_kv, d) * scale  # (B, H_kv, G, D)
    rows = torch.cat([u_new[:, :, None], qg], 2) @ kc.transpose(-1, -2)  # (B, H_kv, 1 + G, N)
    # cos(k_t, k_j) = u_t . k_j / ||k_j|| (F.normalize's 1e-12 floor): no normalised copy of K
    cos = rows[:, :, 0] / kc.norm(dim=-1).clamp_min(1e-12)
    l_row = torch.exp(math.sqrt(d) * (cos - 1.0))  # L_tj, j < t
    s_new = (qg @ k_new.to(ct)[..., None])[..., 0]  # (B, H_kv, G)
    p = torch.softmax(torch.cat([rows[:, :, 1:], s_new[..., None]], -1), -1)  # over N + 1 keys
    sums = torch.cat([l_row[:, :, None], p[..., :N]], 2) @ vc  # (B, H_kv, 1 + G, D)
    vp_new = v_new.to(ct) - sums[:, :, 0]  # v'_t = v_t - sum_{j<t} L_tj v'_j
    out = (sums[:, :, 1:] + p[..., N:] * vp_new[:, :, None]).reshape(B, H, d)
    return out.to(q.dtype), vp_new


# -- the public ops ------------------------------------------------------------------------------
lucid_decode = register_op(
    "lucid_decode",
    lucid_decode_reference,
    "icml26.kernels._triton_lucid:lucid_decode_triton",
    tolerances={torch.float32: (1e-4, 1e-4), torch.float16: (2e-3, 2e-3)},
)
"""One decode step against a (K, V') cache; on CUDA the Triton kernels: the cache split into
chunks, a single pass over each feeding both the V' update and the online softmax, then a merge."""

lucid_solve = register_op(
    "lucid_solve",
    lucid_solve_reference,
    "icml26.kernels._triton_lucid:lucid_solve_triton",
    tolerances={torch.float32: (1e-4, 1e-4), torch.float16: (1e-3, 1e-3)},
)


# -- torch.library registration: the ops as graph nodes for torch.compile --------------------------
# Each custom op runs the eager op inside (Triton on CUDA, the reference elsewhere), so a compiled
# model keeps the Triton solve with no graph break. Autograd cannot run inside a custom op: the
# solve's backward is a second op in closed form (the Triton backward's kernels on CUDA,
# ``lucid_solve_backward_reference`` elsewhere), from the saved keys and V'. No double backward.
@torch.library.custom_op("icml26::lucid_solve", mutates_args=())
def _lucid_solve_op(k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return lucid_solve(k, v).contiguous()  # the strides the fake promises


@_lucid_solve_op.register_fake
def _(k, v):
    return v.new_empty(v.shape, dtype=compute_dtype(v.dtype))


def lucid_solve_backward_reference(
    k: torch.Tensor, vp: torch.Tensor, grad: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(dK, dV) of ``V' = L^{-1} V`` from the forward's output ``vp`` and ``grad = dLoss/dV'``,
    in closed form: ``dV = L^{-T} grad``; ``dL = -dV V'^T`` on the strict lower triangle; through
    ``L_ij = exp(sqrt(d) (u_i . u_j - 1))`` to the unit keys, ``dS = sqrt(d) L * dL``,
    ``dU = (dS + dS^T) U``; through ``u = k / ||k||``, the tangential part over ``||k||``.
    dK in k's dtype, dV in the solve's precision."""
    d = k.shape[-1]
    L = lucid_preconditioner(k)
    ct = L.dtype
    kk = k.to(ct)
    norm = kk.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    u = kk / norm
    dv = torch.linalg.solve_triangular(
        L.transpose(-1, -2), grad.to(ct), upper=True, unitriangular=True
    )
    dS = math.sqrt(d) * L * torch.tril(-(dv @ vp.to(ct).transpose(-1, -2)), diagonal=-1)
    du = dS @ u + dS.transpose(-1, -2) @ u
    dk = (du - (du * u).sum(-1, keepdim=True) * u) / norm
    return dk.to(k.dtype), dv


@torch.library.custom_op("icml26::lucid_solve_backward", mutates_args=())
def _lucid_solve_backward_op(
    k: torch.Tensor, vp: torch.Tensor, grad: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    # no autograd inside a custom op: the closed form, by the backend the forward would take
    if select_backend(k, vp, op="lucid_solve") is Backend.TRITON and k.dtype != torch.float64:
        from icml26.kernels._triton_lucid import lucid_solve_backward_triton

        dk, dv = lucid_solve_backward_triton(k, vp, grad)
    else:
        dk, dv = lucid_solve_backward_reference(k, vp, grad)
    return dk.contiguous(), dv.contiguous()


@_lucid_solve_backward_op.register_fake
def _(k, vp, grad):
    return k.new_empty(k.shape), vp.new_empty(vp.shape)


def _solve_setup_context(ctx, inputs, output) -> None:
    ctx.save_for_backward(inputs[0], output)
    ctx.v_dtype = inputs[1].dtype


def _solve_backward(ctx, grad):
    k, vp = ctx.saved_tensors
    dk, dv = _lucid_solve_backward_op(k, vp, grad)
    return dk, dv.to(ctx.v_dtype)


_lucid_solve_op.register_autograd(_solve_backward, setup_context=_solve_setup_context)


def _compiled_lucid_solve(k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    # Contiguous inputs: with a strided key from the graph (rotary embeddings of a transposed
    # projection), inductor's single-threaded CPU code gave wrong key gradients through the op
    # (torch 2.15; measured 4e-2 max error against eager, 1e-7 with contiguous inputs).
    return _lucid_solve_op(k.contiguous(), v.contiguous())


lucid_solve.compiled = _compiled_lucid_solve


@torch.library.custom_op("icml26::lucid_decode", mutates_args=())
def _lucid_decode_op(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    vp_cache: torch.Tensor,
    k_new: torch.Tensor,
    v_new: torch.Tensor,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    out, vp_t = lucid_decode(q, k_cache, vp_cache, k_new, v_new, scale)
    return out.contiguous(), vp_t.contiguous()


@_lucid_decode_op.register_fake
def _(q, k_cache, vp_cache, k_new, v_new, scale=None):
    return q.new_empty(q.shape), v_new.new_empty(v_new.shape, dtype=compute_dtype(q.dtype))


lucid_decode.compiled = _lucid_decode_op


ATTENTION_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
"""What ``lucid_attention``'s attention on V' may run in."""


def lucid_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool = True,
    scale: float | None = None,
    attention_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """LUCID attention: ``softmax_attention(Q, K, L^{-1} V)``; q (B, H, T, D), k and v
    (B, H_kv, T, D); (B, H, T, D) in q's dtype. Differentiable in q, k and v.

    Two ops, each Triton on CUDA and the reference otherwise (see ``ICML26_KERNELS``):
    ``lucid_solve`` gives ``V'`` in fp32 (fp64 for fp64 inputs): L is ill-conditioned for
    long runs of similar keys, so the solve never runs in half precision. ``softmax_attention``
    (the flash-style kernel on CUDA, fp32 accumulation; PyTorch's SDPA on the reference path)
    then runs on ``(Q, K, V')`` in ``attention_dtype``: by default q's dtype, so a bf16 model
    gets bf16 operands at the tensor cores' full rate; ``torch.float32`` keeps the attention in
    fp32 as well (q and k upcast).

    Error analysis (the tests hold it): an output row is a convex combination of V' rows, so
    rounding V' to a format with unit roundoff u moves it by at most ``u max|V'|``; rounding the
    attention weights before the product with V' (as every half-precision flash kernel does) adds
    at most as much, and rounding the output at most ``u |out| <= u max|V'|``: in all
    ``3u max|V'|`` against exact LUCID on the same half-precision q, k, v (bf16: u = 2^-8), to
    first order, with the logits formed in fp32 (the Triton kernel; an SDPA path that rounds the
    logits to bf16 adds about 2u |logit| max|V'|), plus the fp32 accumulation (at most about
    T 2^-24 max|V'|) and the fp32 solve's own error (which grows with ||L^{-1}||). "q's dtype"
    is also what autocast hands in: under bf16 autocast an fp32 model attends in bf16.
    Measured on bf16 inputs, T = 256 and 1024, D = 64 (random, near-identical and clustered keys):
    V' stays within about 2x max|V|, the error is at most 0.2 of that bound, and 0.8-2.1x the
    error of bf16 softmax attention on V itself. Relative to a row's own size it can be larger:
    where the output cancels (queries close to keys clustered round one direction, output rows
    about 0.02 of V's), the median row's relative error was 1.2% in bf16, against 0.22% for
    bf16 softmax attention on V and 0.17% with ``attention_dtype=torch.float32`` (what is left
    is the bf16 output's own rounding).
    Autograd adds the two gradients to the keys (through the logits and through L).
    """
    check_lucid_inputs(q, k, v, scan_kv=False)  # the solve scans k and v
    _require_causal(causal)
    check_scale(scale)  # before the solve, not after it
    if attention_dtype is not None and attention_dtype not in ATTENTION_DTYPES:
        raise ValueError(
            f"attention_dtype must be None (q's dtype) or one of {ATTENTION_DTYPES}, "
            f"got {attention_dtype!r}"
        )
    vp = lucid_solve(k, v)
    dt = q.dtype if attention_dtype is None else attention_dtype
    out = softmax_attention(q.to(dt), k.to(dt), vp.to(dt), causal=causal, scale=scale)
    return out.to(q.dtype)
