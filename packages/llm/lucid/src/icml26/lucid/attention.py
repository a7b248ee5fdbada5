"""LUCID attention as a PyTorch module with a (K, V') cache for generation.

LUCID (arXiv 2602.10410) preconditions causal softmax attention with exponentiated key-key
similarities: ``LUCID(Q, K, V) = softmax(Q K^T / sqrt(d) + causal mask) L^{-1} V`` with
``L = tril(exp(k_rn k_rn^T / sqrt(d) - sqrt(d)))``, ``k_rn = sqrt(d) k / ||k||`` (unit lower
triangular). The op itself (reference and Triton solve) lives in ``icml26.kernels.lucid``; this
module adds what a model needs around it:

- ``lucid_append``: extend a ``V'`` cache by a chunk of new tokens. With the cache's rows fixed,
  the new rows solve ``D V'_new = V_new - L_new,old V'_old``, D the new tokens' own unit
  lower-triangular block: one token at a time this is the published decode rule
  ``v'_t = v_t - sum_{j<t} L_tj v'_j``.
- ``LucidAttention``: a causal self-attention layer (q, k, v, o projections, grouped-query heads)
  whose attention is LUCID, or plain softmax (``kind="softmax"``, with a temperature) for
  baselines with the same parameters.
"""

import math
from dataclasses import dataclass, field
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from icml26.kernels.lucid import (
    compute_dtype,
    lucid_attention,
    lucid_decode,
    lucid_preconditioner,
)


def lucid_append(
    k_cache: torch.Tensor, vp_cache: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor
) -> torch.Tensor:
    """``V'`` rows of ``n`` new tokens given the cached keys and ``V'`` of the ``N`` earlier ones.

    k_cache, vp_cache (B, H_kv, N, D) (N may be 0), k_new, v_new (B, H_kv, n, D). Returns
    (B, H_kv, n, D) in the solve's precision (fp32, or fp64 for fp64 inputs).
    """
    ct = compute_dtype(k_new.dtype)
    d = k_new.shape[-1]
    rhs = v_new.to(ct)
    if k_cache.shape[2]:
        u_new = F.normalize(k_new.to(ct), dim=-1)
        u_old = F.normalize(k_cache.to(ct), dim=-1)
        l_new_old = torch.exp(math.sqrt(d) * (u_new @ u_old.transpose(-1, -2) - 1.0))  # (.., n, N)
        rhs = rhs - l_new_old @ vp_cache.to(ct)
    D = lucid_preconditioner(k_new)  # (B, H_kv, n, n)
    return torch.linalg.solve_triangular(D, rhs, upper=False, unitriangular=True)


def apply_rope(x: torch.Tensor, start: int, base: float) -> torch.Tensor:
    """Rotary position embedding (Su et al., 2021; Llama's half-split layout) of (B, H, T, D)
    queries or keys at positions ``start .. start + T - 1``."""
    T, D = x.shape[-2], x.shape[-1]
    if D % 2:
        raise ValueError(f"rotary embeddings need an even head dimension, got {D}")
    ct = compute_dtype(x.dtype)  # angles in fp32 (fp64 for fp64 inputs), as the solve
    inv_freq = base ** (-torch.arange(0, D, 2, device=x.device, dtype=ct) / D)
    angles = torch.arange(start, start + T, device=x.device, dtype=ct)[:, None] * inv_freq
    cos = torch.cat([angles.cos(), angles.cos()], -1).to(x.dtype)
    sin = torch.cat([angles.sin(), angles.sin()], -1).to(x.dtype)
    x1, x2 = x[..., : D // 2], x[..., D // 2 :]
    return x * cos + torch.cat([-x2, x1], -1) * sin


@dataclass
class LucidCache:
    """Keys and preconditioned values ``V'`` of the tokens seen so far, for one layer.

    ``LucidAttention`` fills it when passed as ``cache=``; softmax layers store plain V in it.
    """

    k: torch.Tensor | None = field(default=None, repr=False)
    """(B, H_kv, N, D) keys."""
    v: torch.Tensor | None = field(default=None, repr=False)
    """(B, H_kv, N, D) V' (LUCID) or V (softmax)."""

    @property
    def length(self) -> int:
        return 0 if self.k is None else self.k.shape[2]


class LucidAttention(nn.Module):
    """Causal self-attention whose attention is LUCID: ``x (B, T, dim) -> (B, T, dim)``.

    ``num_kv_heads`` < ``num_heads`` gives grouped-query attention (L and V' per KV head).
    ``kind="softmax"`` swaps in standard attention at temperature ``temperature``
    (``softmax(q k^T / (temperature sqrt(d)))``) with the same parameters, for baselines.
    Pass a ``LucidCache`` to generate token by token (or chunk by chunk).
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        num_kv_heads: int | None = None,
        bias: bool = False,
        kind: Literal["lucid", "softmax"] = "lucid",
        temperature: float = 1.0,
        rope_base: float | None = None,
    ) -> None:
        super().__init__()
        num_kv_heads = num_kv_heads or num_heads
        if dim % num_heads or num_heads % num_kv_heads:
            raise ValueError(
                f"dim ({dim}) must divide into num_heads ({num_heads}), which must be a multiple "
                f"of num_kv_heads ({num_kv_heads})"
            )
        if kind not in ("lucid", "softmax"):
            raise ValueError(f"kind must be 'lucid' or 'softmax', got {kind!r}")
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        if rope_base is not None and (not rope_base > 1 or (dim // num_heads) % 2):
            raise ValueError(
                f"rope_base must be > 1 with an even head dimension, got {rope_base} and "
                f"head dimension {dim // num_heads}"
            )
        self.rope_base = rope_base
        self.dim, self.num_heads, self.num_kv_heads = dim, num_heads, num_kv_heads
        self.head_dim = dim // num_heads
        self.kind, self.temperature = kind, temperature
        self.q_proj = nn.Linear(dim, dim, bias=bias)
        self.k_proj = nn.Linear(dim, num_kv_heads * self.head_dim, bias=bias)
        self.v_proj = nn.Linear(dim, num_kv_heads * self.head_dim, bias=bias)
        self.o_proj = nn.Linear(dim, dim, bias=bias)

    def _heads(self, x: torch.Tensor, proj: nn.Linear, heads: int) -> torch.Tensor:
        B, T, _ = x.shape
        return proj(x).view(B, T, heads, self.head_dim).transpose(1, 2)  # (B, heads, T, D)

    def forward(self, x: torch.Tensor, cache: LucidCache | None = None) -> torch.Tensor:
        """x (B, T, dim); with ``cache``, the T tokens follow the N cached ones (positions N..)."""
        if x.dim() != 3 or x.shape[-1] != self.dim:
            raise ValueError(f"x must have shape (B, T, {self.dim}), got {tuple(x.shape)}")
        B, T, _ = x.shape
        q = self._heads(x, self.q_proj, self.num_heads)
        k = self._heads(x, self.k_proj, self.num_kv_heads)
        v = self._heads(x, self.v_proj, self.num_kv_heads)
        if self.rope_base is not None:  # as in Llama: L is built from the rotated keys
            start = 0 if cache is None else cache.length
            q, k = apply_rope(q, start, self.rope_base), apply_rope(k, start, self.rope_base)
        scale = 1.0 / (self.temperature * math.sqrt(self.head_dim))
        group = self.num_heads // self.num_kv_heads
        if cache is None:
            if self.kind == "lucid":
                out = lucid_attention(q, k, v, causal=True, scale=scale)
            else:
                out = F.scaled_dot_product_attention(
                    q,
                    k.repeat_interleave(group, 1),
                    v.repeat_interleave(group, 1),
                    is_causal=True,
                    scale=scale,
                )
        elif self.kind == "lucid" and T == 1 and cache.k is not None:
            # One generated token: the fused decode op (a single pass over the cache computes
            # v'_t and the attention output; the Triton kernel on CUDA).
            out_t, vp_t = lucid_decode(q[:, :, 0], cache.k, cache.v, k[:, :, 0], v[:, :, 0], scale)
            cache.k = torch.cat([cache.k, k], dim=2)
            cache.v = torch.cat([cache.v, vp_t.to(v.dtype)[:, :, None]], dim=2)
            out = out_t[:, :, None]
        else:
            N = cache.length
            if self.kind == "lucid":
                k_old = k[:, :, :0] if cache.k is None else cache.k
                vp_old = v[:, :, :0] if cache.v is None else cache.v
                v_new = lucid_append(k_old, vp_old, k, v).to(v.dtype)
            else:
                v_new = v
            cache.k = k if cache.k is None else torch.cat([cache.k, k], dim=2)
            cache.v = v_new if cache.v is None else torch.cat([cache.v, v_new], dim=2)
            # New token i (position N + i) sees cached and new keys up to its own position.
            allowed = torch.ones(T, N + T, dtype=torch.bool, device=x.device).tril(N)
            out = F.scaled_dot_product_attention(
                q,
                cache.k.repeat_interleave(group, 1),
                cache.v.repeat_interleave(group, 1),
                attn_mask=allowed,
                scale=scale,
            )
        return self.o_proj(out.transpose(1, 2).reshape(B, T, self.dim))
