"""LUCID attention (arXiv 2602.10410): softmax attention preconditioned by key-key similarities.

Our reading of the published formulation (issue 3; the paper's text was not available here):

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
- ``lucid_attention(q, k, v)``: ``V'`` from ``lucid_solve``, then PyTorch's
  ``scaled_dot_product_attention`` (FlashAttention / memory-efficient kernels on CUDA) on
  ``(Q, K, V')``. ``lucid_attention_reference`` spells the whole thing out with an explicit softmax.
- ``lucid_decode_reference``: one decode step against a (K, V') cache; ``lucid_decode`` the op
  (fused Triton kernel: one pass over the cache for both sums).
"""

import math

import torch
import torch.nn.functional as F

from icml26.kernels.dispatch import register_op


# -- validation ----------------------------------------------------------------------------------
def _check_tensor(name: str, t, ndim: int, scan: bool = True) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {tuple(t.shape)}")
    if not t.is_floating_point():
        raise TypeError(f"{name} must be floating point, got {t.dtype}")
    if scan and not torch.isfinite(t).all():
        raise ValueError(f"{name} contains NaN or infinite values")


def check_lucid_inputs(
    q: torch.Tensor | None, k: torch.Tensor, v: torch.Tensor, scan_kv: bool = True
) -> None:
    """(B, H, T, D) queries (optional), (B, H_kv, T, D) keys and values with H % H_kv == 0.

    ``scan_kv=False`` skips the NaN/inf scan of k and v, for callers that pass them on to
    ``lucid_solve`` (which scans them): one pass over the keys and values, not two."""
    if q is not None:
        _check_tensor("q", q, 4)
    _check_tensor("k", k, 4, scan_kv)
    _check_tensor("v", v, 4, scan_kv)
    if k.shape[:3] != v.shape[:3]:
        raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)} must share (B, H_kv, T)")
    if k.shape[2] == 0:
        raise ValueError("sequence length T must be >= 1")
    if q is not None:
        if q.shape[0] != k.shape[0] or q.shape[2] != k.shape[2] or q.shape[3] != k.shape[3]:
            raise ValueError(
                f"q {tuple(q.shape)} must match k {tuple(k.shape)} in batch, length and head dim"
            )
        if q.shape[1] % k.shape[1]:
            raise ValueError(
                f"query heads ({q.shape[1]}) must be a multiple of KV heads ({k.shape[1]})"
            )
        if not (q.dtype == k.dtype == v.dtype):
            raise TypeError(f"q, k, v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    elif k.dtype != v.dtype:
        raise TypeError(f"k and v must share a dtype, got {k.dtype} and {v.dtype}")


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """The solve's precision: fp64 for fp64 inputs, fp32 for everything else."""
    return torch.float64 if dtype == torch.float64 else torch.float32


# -- the reference -------------------------------------------------------------------------------
def lucid_preconditioner(k: torch.Tensor) -> torch.Tensor:
    """``L = tril(exp(sqrt(d) (u_i . u_j - 1)))`` for keys (..., T, D); shape (..., T, T), in the
    solve's precision."""
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


def _expand_kv(t: torch.Tensor, heads: int) -> torch.Tensor:
    # (B, H_kv, T, D) -> (B, H, T, D): each KV head serves H / H_kv query heads.
    return t.repeat_interleave(heads // t.shape[1], dim=1) if t.shape[1] != heads else t


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
    ct = compute_dtype(q.dtype)
    vp = lucid_solve_reference(k, v)  # (B, H_kv, T, D)
    heads, T = q.shape[1], q.shape[2]
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q.to(ct) @ _expand_kv(k, heads).to(ct).transpose(-1, -2) * scale  # (B, H, T, T)
    if causal:
        mask = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return (torch.softmax(scores, dim=-1) @ _expand_kv(vp, heads)).to(q.dtype)


def check_decode_inputs(q, k_cache, vp_cache, k_new, v_new) -> None:
    """Shapes and dtypes of one decode step's inputs, finiteness of the new token's tensors."""
    for name, t, nd in (("q", q, 3), ("k_new", k_new, 3), ("v_new", v_new, 3)):
        _check_tensor(name, t, nd)
    for name, t in (("k_cache", k_cache), ("vp_cache", vp_cache)):
        # The caches are not scanned for NaN: they hold what earlier (checked) steps wrote, and a
        # full scan per generated token would cost as much as the step itself.
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            raise ValueError(f"{name} must be a (B, H_kv, N, D) tensor")
    if k_cache.shape[:3] != vp_cache.shape[:3] or k_cache.shape[:2] != k_new.shape[:2]:
        raise ValueError(
            f"k_cache {tuple(k_cache.shape)}, vp_cache {tuple(vp_cache.shape)} and k_new "
            f"{tuple(k_new.shape)} must share (B, H_kv) (and N for the caches)"
        )
    if q.shape[1] % k_new.shape[1]:
        raise ValueError(f"query heads ({q.shape[1]}) must be a multiple of KV heads")
    D = q.shape[-1]
    if v_new.shape != k_new.shape or q.shape[0] != k_new.shape[0] or k_new.shape[-1] != D:
        raise ValueError(
            f"q {tuple(q.shape)}, k_new {tuple(k_new.shape)} and v_new {tuple(v_new.shape)} must "
            "share the batch and head dimension (and k_new, v_new their shape)"
        )
    if k_cache.shape[-1] != D or vp_cache.shape[-1] != D:
        raise ValueError(f"the caches' last dimension must be the head dimension {D}")


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
    ct = compute_dtype(q.dtype)
    d = k_new.shape[-1]
    u_new = F.normalize(k_new.to(ct), dim=-1)  # (B, H_kv, D)
    # cos(k_t, k_j) = u_t . k_j / ||k_j|| (F.normalize's 1e-12 floor): no normalised copy of K
    k_norm = k_cache.to(ct).norm(dim=-1).clamp_min(1e-12)  # (B, H_kv, N)
    cos = torch.einsum("bhd,bhnd->bhn", u_new, k_cache.to(ct)) / k_norm
    l_row = torch.exp(math.sqrt(d) * (cos - 1.0))
    vp_new = v_new.to(ct) - torch.einsum("bhn,bhnd->bhd", l_row, vp_cache.to(ct))
    # Softmax over the N cached keys and the new one; the G = H / H_kv query heads of a group
    # share their KV head (no copy of the cache).
    B, H, _ = q.shape
    H_kv, N = k_cache.shape[1], k_cache.shape[2]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    qg = q.to(ct).view(B, H_kv, H // H_kv, d)  # (B, H_kv, G, D)
    s_cache = torch.einsum("bhgd,bhnd->bhgn", qg, k_cache.to(ct)) * scale
    s_new = torch.einsum("bhgd,bhd->bhg", qg, k_new.to(ct)) * scale
    p = torch.softmax(torch.cat([s_cache, s_new[..., None]], -1), -1)  # (B, H_kv, G, N + 1)
    out = torch.einsum("bhgn,bhnd->bhgd", p[..., :N], vp_cache.to(ct))
    out = (out + p[..., N:] * vp_new[:, :, None]).reshape(B, H, d)
    return out.to(q.dtype), vp_new


# -- the public ops ------------------------------------------------------------------------------
lucid_decode = register_op(
    "lucid_decode",
    lucid_decode_reference,
    "icml26.kernels._triton_lucid:lucid_decode_triton",
    tolerances={torch.float32: (1e-4, 1e-4), torch.float16: (2e-3, 2e-3)},
)
"""One decode step against a (K, V') cache; on CUDA the fused Triton kernel: a single pass over
the cache feeds both the V' update and the online softmax."""

lucid_solve = register_op(
    "lucid_solve",
    lucid_solve_reference,
    "icml26.kernels._triton_lucid:lucid_solve_triton",
    tolerances={torch.float32: (1e-4, 1e-4), torch.float16: (1e-3, 1e-3)},
)


def lucid_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool = True,
    scale: float | None = None,
) -> torch.Tensor:
    """LUCID attention: ``SDPA(Q, K, L^{-1} V)``; q (B, H, T, D), k and v (B, H_kv, T, D).

    ``V'`` comes from ``lucid_solve`` (Triton on CUDA, else the reference; see
    ``ICML26_KERNELS``) in fp32/fp64 and is cast to q's dtype for PyTorch's
    ``scaled_dot_product_attention``. Differentiable in q, k and v.
    """
    check_lucid_inputs(q, k, v, scan_kv=False)  # the solve scans k and v
    vp = lucid_solve(k, v).to(q.dtype)
    heads = q.shape[1]
    return F.scaled_dot_product_attention(
        q, _expand_kv(k, heads), _expand_kv(vp, heads), is_causal=causal, scale=scale
    )
