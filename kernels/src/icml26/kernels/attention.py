"""Softmax attention with grouped-query heads: the attention LUCID runs on ``V' = L^{-1} V``.

``softmax_attention(q, k, v, causal, scale)`` over (B, H, T, D) queries and (B, H_kv, T, D) keys
and values, ``H % H_kv == 0``:

    out = softmax(Q K^T scale + causal mask) V

- the reference is PyTorch's ``scaled_dot_product_attention`` with each KV head repeated for its
  ``H / H_kv`` query heads (in fp64 on the CPU it runs PyTorch's explicit math path, so it is the
  definition, and on CPU tensors it is also the fastest path PyTorch has);
- the Triton path (``_triton_attention``) is a flash-style kernel: one program per (query block,
  batch x head) streams the key/value blocks with an online softmax and keeps only the row
  log-sum-exp for the backward; the backward recomputes the probabilities block by block (one
  kernel for dK and dV per KV head, summing over the group's query heads, one for dQ), so no
  (T, T) matrix is stored in either direction. Half-precision inputs accumulate in fp32.
"""

import math
import numbers

import torch
import torch.nn.functional as F

from icml26.kernels.dispatch import register_op


def check_tensor(name: str, t, ndim: int, scan: bool = True) -> None:
    """``t`` is a floating-point tensor of ``ndim`` dimensions (finite, when ``scan`` and on the
    CPU)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {tuple(t.shape)}")
    if not t.is_floating_point():
        raise TypeError(f"{name} must be floating point, got {t.dtype}")
    # The NaN/inf scan reads every value on the host: free for a CPU tensor, a device sync (and
    # a full read of the tensor) for a GPU one, so only CPU tensors are scanned; a device op
    # gives NaN out for NaN in. Under torch.compile a graph cannot branch on data: no scan.
    if (
        scan
        and t.device.type == "cpu"
        and not torch.compiler.is_compiling()
        and not torch.isfinite(t).all()
    ):
        raise ValueError(f"{name} contains NaN or infinite values")


def check_scale(scale) -> float | None:
    """``scale`` as a float: ``None`` (the default ``1 / sqrt(D)``) or a finite number > 0. NaN,
    inf, 0 or a negative scale would run and give silent nonsense (uniform or reversed
    attention); ``True`` would run as 1."""
    if scale is None:
        return None
    if (
        isinstance(scale, bool)
        or not isinstance(scale, numbers.Real)
        or not (math.isfinite(scale) and scale > 0)
    ):
        raise ValueError(f"scale must be None (1 / sqrt(D)) or a finite number > 0, got {scale!r}")
    return float(scale)


def check_attention_inputs(
    q: torch.Tensor | None, k: torch.Tensor, v: torch.Tensor, scan_kv: bool = True
) -> None:
    """(B, H, T, D) queries (optional), (B, H_kv, T, D) keys and values with H % H_kv == 0.

    ``scan_kv=False`` skips the NaN/inf scan of k and v, for callers whose next step scans them:
    one pass over the keys and values, not two."""
    if q is not None:
        check_tensor("q", q, 4)
    check_tensor("k", k, 4, scan_kv)
    check_tensor("v", v, 4, scan_kv)
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


def expand_kv(t: torch.Tensor, heads: int) -> torch.Tensor:
    """(B, H_kv, T, D) -> (B, H, T, D): each KV head serves H / H_kv query heads."""
    return t.repeat_interleave(heads // t.shape[1], dim=1) if t.shape[1] != heads else t


def softmax_attention_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool = True,
    scale: float | None = None,
) -> torch.Tensor:
    """``softmax(Q K^T scale + causal mask) V``; q (B, H, T, D), k and v (B, H_kv, T, D);
    (B, H, T, D) in q's dtype. ``scale`` defaults to ``1 / sqrt(D)``."""
    check_attention_inputs(q, k, v)
    scale = check_scale(scale)
    heads = q.shape[1]
    return F.scaled_dot_product_attention(
        q, expand_kv(k, heads), expand_kv(v, heads), is_causal=causal, scale=scale
    )


softmax_attention = register_op(
    "softmax_attention",
    softmax_attention_reference,
    "icml26.kernels._triton_attention:softmax_attention_triton",
)
"""Causal (or full) softmax attention with GQA; on CUDA the flash-style Triton kernel,
differentiable in q, k and v."""


# -- LUCID's checks (here so the reference and the Triton path share them) --
def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """The solve's precision: fp64 for fp64 inputs, fp32 for everything else."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def check_decode_inputs(q, k_cache, vp_cache, k_new, v_new) -> None:
    """Shapes and dtypes of one decode step's inputs. Nothing is scanned for NaN: a scan is a
    host synchronisation on every generated token (of every layer), which a decode step must not
    have; a NaN in the new token's tensors comes out as NaN in the output and in v'_t."""
    for name, t, nd in (("q", q, 3), ("k_new", k_new, 3), ("v_new", v_new, 3)):
        check_tensor(name, t, nd, scan=False)
    for name, t in (("k_cache", k_cache), ("vp_cache", vp_cache)):
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
