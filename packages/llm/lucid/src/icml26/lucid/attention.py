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
- Diagnostic variants of the preconditioner for training studies (not the published method):
  its strength ``L = tril(exp(beta sqrt(d) (c_ij - 1)))`` (``beta = 1`` is LUCID; as ``beta``
  grows L tends to I and LUCID to softmax) and L built from detached keys (no gradient reaches
  the keys through L). ``preconditioner_statistics`` summarises L for a batch of keys.
"""

import itertools
import math
from dataclasses import dataclass, field
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from icml26.kernels.attention import check_attention_inputs, check_tensor
from icml26.kernels.lucid import (
    compute_dtype,
    lucid_attention,
    lucid_decode,
    lucid_preconditioner,
    lucid_solve,
)


def masked_preconditioner(k: torch.Tensor, allowed: torch.Tensor | None) -> torch.Tensor:
    """L of keys (B, H_kv, T, D) restricted to the pairs the attention mask allows:
    ``L_ij = exp(sqrt(d) (c_ij - 1))`` for ``j < i`` only where ``allowed[..., i, j]``, unit
    diagonal. ``allowed`` (B, 1 or H_kv, T, T) bool, True where query i may attend to key j (None:
    every earlier key). A padded key then enters no row of L, and packed sequences (a
    block-diagonal mask) get one L per sequence, exactly as the softmax sees them."""
    L = lucid_preconditioner(k)
    if allowed is None:
        return L
    eye = torch.eye(k.shape[-2], dtype=torch.bool, device=k.device)
    return L * (allowed.to(torch.bool) | eye)


def lucid_append(
    k_cache: torch.Tensor,
    vp_cache: torch.Tensor,
    k_new: torch.Tensor,
    v_new: torch.Tensor,
    allowed: torch.Tensor | None = None,
) -> torch.Tensor:
    """``V'`` rows of ``n`` new tokens given the cached keys and ``V'`` of the ``N`` earlier ones.

    k_cache, vp_cache (B, H_kv, N, D) (N may be 0), k_new, v_new (B, H_kv, n, D). ``allowed``
    (B, 1 or H_kv, n, N + n) bool, the new tokens' rows of the attention mask (None: each new
    token sees every cached key and the new ones up to itself). Returns (B, H_kv, n, D) in the
    solve's precision (fp32, or fp64 for fp64 inputs).
    """
    _check_append(k_cache, vp_cache, k_new, v_new, allowed)
    ct = compute_dtype(k_new.dtype)
    d = k_new.shape[-1]
    N = k_cache.shape[2]
    rhs = v_new.to(ct)
    if N:
        u_new = F.normalize(k_new.to(ct), dim=-1)
        u_old = F.normalize(k_cache.to(ct), dim=-1)
        l_new_old = torch.exp(math.sqrt(d) * (u_new @ u_old.transpose(-1, -2) - 1.0))  # (.., n, N)
        if allowed is not None:
            l_new_old = l_new_old * allowed[..., :N].to(torch.bool)
        rhs = rhs - l_new_old @ vp_cache.to(ct)
    # D: the new tokens' own unit lower-triangular block
    D = masked_preconditioner(k_new, None if allowed is None else allowed[..., N:])
    return torch.linalg.solve_triangular(D, rhs, upper=False, unitriangular=True)


def _check_append(k_cache, vp_cache, k_new, v_new, allowed) -> None:
    """Shapes of :func:`lucid_append`'s arguments (NaN scans on the CPU only, as the kernels
    do: a GPU decode step stays free of host syncs)."""
    for name, t in (("k_new", k_new), ("v_new", v_new), ("k_cache", k_cache)):
        check_tensor(name, t, 4)
    if k_new.shape[:3] != v_new.shape[:3] or k_new.shape[2] == 0:
        raise ValueError(f"k_new {tuple(k_new.shape)} and v_new {tuple(v_new.shape)} must share "
                         f"(B, H_kv, n), n >= 1")  # fmt: skip
    check_tensor("vp_cache", vp_cache, 4)
    (B, H, n, D), N = k_new.shape, k_cache.shape[2]
    if k_cache.shape != (B, H, N, D):
        raise ValueError(f"k_cache must be (B, H_kv, N, D) = ({B}, {H}, N, {D}) to match k_new, "
                         f"got {tuple(k_cache.shape)}")  # fmt: skip
    if vp_cache.shape != (B, H, N, v_new.shape[3]):
        raise ValueError(f"vp_cache must be ({B}, {H}, {N}, {v_new.shape[3]}): one V' row per "
                         f"cached key, got {tuple(vp_cache.shape)}")  # fmt: skip
    if allowed is not None and (
        not isinstance(allowed, torch.Tensor)
        or allowed.dim() != 4
        or allowed.shape[-2:] != (n, N + n)
        or allowed.shape[1] not in (1, H)
    ):
        got = tuple(allowed.shape) if isinstance(allowed, torch.Tensor) else type(allowed).__name__
        raise ValueError(f"allowed must be (B, 1 or {H}, {n}, {N + n}): the new tokens' rows of "
                         f"the mask, got {got}")  # fmt: skip


def masked_lucid_solve(
    k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor | None
) -> torch.Tensor:
    """``V' = L^{-1} V`` with L restricted by the attention mask (``masked_preconditioner``);
    (B, H_kv, T, D) in the solve's precision. Materialises the (T, T) L: for masked attention,
    which materialises a (T, T) mask anyway; unmasked causal attention uses ``lucid_solve``."""
    check_attention_inputs(None, k, v)
    L = masked_preconditioner(k, allowed)
    return torch.linalg.solve_triangular(L, v.to(L.dtype), upper=False, unitriangular=True)


def segment_mask(cu_seqlens: torch.Tensor, total: int) -> torch.Tensor:
    """(total, total) bool causal mask of packed sequences: token i may attend to token j iff
    ``j <= i`` and both lie in the same sequence ``cu_seqlens[s] <= i, j < cu_seqlens[s + 1]``."""
    check_cu_seqlens(cu_seqlens, total)
    pos = torch.arange(total, device=cu_seqlens.device)
    seg = torch.bucketize(pos, cu_seqlens[1:], right=True)
    return (seg[:, None] == seg[None, :]) & (pos[None, :] <= pos[:, None])


def check_cu_seqlens(cu_seqlens: torch.Tensor, total: int) -> None:
    """``cu_seqlens``: 1-D integer offsets, 0 first, ``total`` last, non-decreasing."""
    if (
        not isinstance(cu_seqlens, torch.Tensor)
        or cu_seqlens.dim() != 1
        or cu_seqlens.dtype.is_floating_point
        or len(cu_seqlens) < 2
    ):
        raise ValueError("cu_seqlens must be a 1-D integer tensor of sequence offsets")
    offsets = cu_seqlens.tolist()
    if (
        offsets[0] != 0
        or offsets[-1] != total
        or any(b < a for a, b in itertools.pairwise(offsets))
    ):
        raise ValueError(
            f"cu_seqlens must start at 0, end at the packed length {total} and never decrease; "
            f"got {offsets}"
        )


def segment_positions(cu_seqlens: torch.Tensor, total: int) -> torch.Tensor:
    """Position of every packed token within its own sequence (0, 1, ... per sequence)."""
    pos = torch.arange(total, device=cu_seqlens.device)
    seg = torch.bucketize(pos, cu_seqlens[1:], right=True)
    return pos - cu_seqlens[seg]


def variant_preconditioner(k: torch.Tensor, beta: float = 1.0) -> torch.Tensor:
    """``tril(exp(beta sqrt(d) (u_i . u_j - 1)))`` for keys (..., T, D), unit diagonal, in the
    solve's precision; ``beta = 1`` is ``lucid_preconditioner``."""
    d = k.shape[-1]
    u = F.normalize(k.to(compute_dtype(k.dtype)), dim=-1)
    s = beta * math.sqrt(d) * (u @ u.transpose(-1, -2) - 1.0)
    eye = torch.eye(k.shape[-2], dtype=s.dtype, device=s.device)
    return torch.tril(torch.exp(s), diagonal=-1) + eye


@torch.no_grad()
def preconditioner_statistics(k: torch.Tensor, v: torch.Tensor, beta: float = 1.0) -> dict:
    """How active the preconditioner is for keys and values (B, H_kv, T, D): the mean row sum of
    L (1 = identity, the row's key unlike every earlier one), the median condition number of L
    (2-norm), and ||V'|| / ||V|| (Frobenius, per head, averaged)."""
    L = variant_preconditioner(k, beta).double()
    vp = torch.linalg.solve_triangular(L, v.double(), upper=False, unitriangular=True)
    return {
        "L row sum": L.sum(-1).mean().item(),
        "median cond(L)": torch.linalg.cond(L.flatten(0, 1)).median().item(),
        "|V'| / |V|": (vp.norm(dim=(-2, -1)) / v.double().norm(dim=(-2, -1))).mean().item(),
    }


def apply_rope(
    x: torch.Tensor, start: int, base: float, positions: torch.Tensor | None = None
) -> torch.Tensor:
    """Rotary position embedding (Su et al., 2021; Llama's half-split layout) of (B, H, T, D)
    queries or keys at positions ``start .. start + T - 1`` (or at ``positions``, (T,))."""
    T, D = x.shape[-2], x.shape[-1]
    if D % 2:
        raise ValueError(f"rotary embeddings need an even head dimension, got {D}")
    # a tuple, not int | float: torch.compile (dynamo) of older torch cannot trace a UnionType
    if not (isinstance(base, (int, float)) and math.isfinite(base) and base > 1):
        raise ValueError(f"rope base must be a finite number > 1 (Llama: 10000), got {base!r}")
    ct = compute_dtype(x.dtype)  # angles in fp32 (fp64 for fp64 inputs), as the solve
    inv_freq = base ** (-torch.arange(0, D, 2, device=x.device, dtype=ct) / D)
    if positions is None:
        positions = torch.arange(start, start + T, device=x.device)
    angles = positions.to(ct)[:, None] * inv_freq
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
    """(B, H_kv, N, D) V' (LUCID, in the solve's precision) or V (softmax)."""
    valid: torch.Tensor | None = field(default=None, repr=False)
    """(B, N) bool, False for padding (None: no padding so far)."""

    def __post_init__(self) -> None:
        if (self.k is None) != (self.v is None):
            raise ValueError("a LucidCache holds both k and v, or neither (an empty cache)")
        if self.k is None:
            if self.valid is not None:
                raise ValueError("valid needs cached keys: an empty cache has no padding")
            return
        check_tensor("k", self.k, 4)
        check_tensor("v", self.v, 4)
        if self.k.shape[:3] != self.v.shape[:3]:
            raise ValueError(f"k {tuple(self.k.shape)} and v {tuple(self.v.shape)} must share "
                             f"(B, H_kv, N)")  # fmt: skip
        B, N = self.k.shape[0], self.k.shape[2]
        if self.valid is not None and (
            not isinstance(self.valid, torch.Tensor)
            or self.valid.dtype != torch.bool
            or self.valid.shape != (B, N)
        ):
            raise ValueError(f"valid must be a ({B}, {N}) bool tensor, False for padding")

    @property
    def length(self) -> int:
        return 0 if self.k is None else self.k.shape[2]


class LucidAttention(nn.Module):
    """Causal self-attention whose attention is LUCID: ``x (B, T, dim) -> (B, T, dim)``.

    ``num_kv_heads`` < ``num_heads`` gives grouped-query attention (L and V' per KV head).
    ``kind="softmax"`` swaps in standard attention at temperature ``temperature``
    (``softmax(q k^T / (temperature sqrt(d)))``) with the same parameters, for baselines.
    Pass a ``LucidCache`` to generate token by token (or chunk by chunk).

    ``beta`` and ``detach_preconditioner`` select the diagnostic variants of the module docstring
    (training only; a cache needs the published preconditioner). ``record = True`` keeps the last
    forward's keys and values (detached) in ``recorded`` for ``preconditioner_statistics``.

    V' stays in the solve's precision (fp32, fp64 for fp64 inputs) through the attention on every
    path, so masked, cached and plain calls give the same outputs; for bf16 speed use the
    transformers integration (``hf.py``), whose attention on V' runs in the model's dtype.
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
        beta: float = 1.0,
        detach_preconditioner: bool = False,
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
        if not beta > 0:
            raise ValueError(f"beta (preconditioner strength) must be > 0, got {beta}")
        if kind == "softmax" and (beta != 1.0 or detach_preconditioner):
            raise ValueError("beta and detach_preconditioner are LUCID variants; kind is 'softmax'")
        self.rope_base = rope_base
        self.beta, self.detach_preconditioner = beta, detach_preconditioner
        self.record = False
        self.recorded: tuple[torch.Tensor, torch.Tensor] | None = None
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

    def forward(
        self,
        x: torch.Tensor,
        cache: LucidCache | None = None,
        *,
        attention_mask: torch.Tensor | None = None,
        cu_seqlens: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """x (B, T, dim); with ``cache``, the T tokens follow the N cached ones (positions N..).

        ``attention_mask`` (B, T) bool (or 0/1), False at padding: a padded token enters neither
        the softmax nor L of any other token, so a left-padded sequence gives the outputs of the
        unpadded one at its real tokens. ``cu_seqlens`` (S + 1,) offsets of S sequences packed
        into x (B = 1, no cache): each gets its own causal attention and its own L, with rotary
        positions restarting at 0."""
        if not x.is_floating_point():
            raise TypeError(f"x must be a floating-point tensor of hidden states, got {x.dtype}")
        weight = self.q_proj.weight
        if x.dtype != weight.dtype and not torch.is_autocast_enabled(x.device.type):
            raise TypeError(f"x is {x.dtype} but the layer's weights are {weight.dtype}: "
                            f"use x.to({weight.dtype}) or layer.to({x.dtype})")  # fmt: skip
        if x.dim() != 3 or x.shape[-1] != self.dim or x.shape[0] == 0 or x.shape[1] == 0:
            raise ValueError(f"x must have shape (B, T, {self.dim}) with B, T >= 1, got "
                             f"{tuple(x.shape)}")  # fmt: skip
        # the scan reads x on the host: free on the CPU, a device sync on a GPU (and no branch
        # under torch.compile), so as in icml26.kernels only CPU tensors are scanned
        scan = x.device.type == "cpu" and not torch.compiler.is_compiling()
        if scan and not bool(torch.isfinite(x).all()):
            raise ValueError("x (hidden states) holds NaN or inf")
        B, T, _ = x.shape
        allowed, positions = self._allowed(x, cache, attention_mask, cu_seqlens)
        q = self._heads(x, self.q_proj, self.num_heads)
        k = self._heads(x, self.k_proj, self.num_kv_heads)
        v = self._heads(x, self.v_proj, self.num_kv_heads)
        if self.rope_base is not None:  # as in Llama: L is built from the rotated keys
            start = 0 if cache is None else cache.length
            q = apply_rope(q, start, self.rope_base, positions)
            k = apply_rope(k, start, self.rope_base, positions)
        scale = 1.0 / (self.temperature * math.sqrt(self.head_dim))
        group = self.num_heads // self.num_kv_heads
        if self.record:
            self.recorded = (k.detach(), v.detach())
        variant = self.beta != 1.0 or self.detach_preconditioner
        if variant and cache is not None:
            raise ValueError("the preconditioner variants are for training; decode with beta=1")
        if cache is None and allowed is not None:
            out = self._masked(q, k, v, allowed, scale, group)
        elif cache is None:
            out = self._causal(q, k, v, scale, group, variant)
        elif self.kind == "lucid" and T == 1 and cache.k is not None and allowed is None:
            # One generated token: the fused decode op (a single pass over the cache computes
            # v'_t and the attention output; the Triton kernel on CUDA).
            out_t, vp_t = lucid_decode(q[:, :, 0], cache.k, cache.v, k[:, :, 0], v[:, :, 0], scale)
            cache.k = torch.cat([cache.k, k], dim=2)
            cache.v = torch.cat([cache.v, vp_t[:, :, None]], dim=2)
            out = out_t[:, :, None]
        else:
            out = self._cached(q, k, v, cache, allowed, scale, group)
        return self.o_proj(out.transpose(1, 2).reshape(B, T, self.dim))

    def _masked(self, q, k, v, allowed, scale: float, group: int) -> torch.Tensor:
        """No cache, an explicit (B, 1, T, T) mask (padding or packed sequences)."""
        if self.kind == "lucid":  # V' in fp32 through the attention (q, k upcast)
            vp = masked_lucid_solve(k, v, allowed)
            q_, k_, v_ = q.to(vp.dtype), k.to(vp.dtype), vp
        else:
            q_, k_, v_ = q, k, v
        return F.scaled_dot_product_attention(
            q_,
            k_.repeat_interleave(group, 1),
            v_.repeat_interleave(group, 1),
            attn_mask=allowed,
            scale=scale,
        ).to(q.dtype)

    def _causal(self, q, k, v, scale: float, group: int, variant: bool) -> torch.Tensor:
        """No cache, plain causal attention: LUCID (or a preconditioner variant) or softmax."""
        if self.kind == "lucid" and variant:
            L = variant_preconditioner(k.detach() if self.detach_preconditioner else k, self.beta)
            vp = torch.linalg.solve_triangular(L, v.to(L.dtype), upper=False, unitriangular=True)
            return F.scaled_dot_product_attention(
                q.to(vp.dtype),
                k.to(vp.dtype).repeat_interleave(group, 1),
                vp.repeat_interleave(group, 1),
                is_causal=True,
                scale=scale,
            ).to(q.dtype)
        if self.kind == "lucid":
            # this module keeps V' in the solve's precision on every path (masked, cached,
            # variants), so they agree exactly; the transformers integration runs in q's dtype
            return lucid_attention(
                q, k, v, causal=True, scale=scale, attention_dtype=compute_dtype(q.dtype)
            )
        return F.scaled_dot_product_attention(
            q,
            k.repeat_interleave(group, 1),
            v.repeat_interleave(group, 1),
            is_causal=True,
            scale=scale,
        )

    def _cached(self, q, k, v, cache, allowed, scale: float, group: int) -> torch.Tensor:
        """T new tokens after the cache's N: append k and v' (LUCID: the new rows of the solve)
        to the cache and attend over all N + T keys."""
        N, T = cache.length, q.shape[2]
        if self.kind == "lucid":
            k_old = k[:, :, :0] if cache.k is None else cache.k
            vp_old = v[:, :, :0].to(compute_dtype(v.dtype)) if cache.v is None else cache.v
            if N == 0 and allowed is None:  # a prompt: the blockwise solve, no (T, T) L
                v_new = lucid_solve(k, v)
            else:
                v_new = lucid_append(k_old, vp_old, k, v, allowed)  # kept in fp32
        else:
            v_new = v
        cache.k = k if cache.k is None else torch.cat([cache.k, k], dim=2)
        cache.v = v_new if cache.v is None else torch.cat([cache.v, v_new], dim=2)
        if N == 0 and allowed is None:
            return F.scaled_dot_product_attention(
                q.to(cache.v.dtype),
                k.to(cache.v.dtype).repeat_interleave(group, 1),
                cache.v.repeat_interleave(group, 1),
                is_causal=True,
                scale=scale,
            ).to(q.dtype)
        if allowed is None:  # new token i (position N + i) sees keys up to its own
            allowed = torch.ones(T, N + T, dtype=torch.bool, device=q.device).tril(N)
        return F.scaled_dot_product_attention(
            q.to(cache.v.dtype),
            cache.k.to(cache.v.dtype).repeat_interleave(group, 1),
            cache.v.repeat_interleave(group, 1),
            attn_mask=allowed,
            scale=scale,
        ).to(q.dtype)

    def _allowed(
        self,
        x: torch.Tensor,
        cache: LucidCache | None,
        attention_mask: torch.Tensor | None,
        cu_seqlens: torch.Tensor | None,
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """(the (B, 1, T, N + T) bool mask of which key each new token may see, or None for
        plain causal attention; rotary positions of packed tokens, or None). Records the new
        tokens' padding in ``cache``."""
        B, T, _ = x.shape
        if cu_seqlens is not None:
            if B != 1 or cache is not None or attention_mask is not None:
                raise ValueError(
                    "cu_seqlens packs sequences into one row: x must be (1, T, dim), with no "
                    "cache and no attention_mask"
                )
            mask = segment_mask(cu_seqlens.to(x.device), T)
            return mask[None, None], segment_positions(cu_seqlens.to(x.device), T)
        N = 0 if cache is None else cache.length
        if attention_mask is None:
            if cache is not None and cache.valid is not None:
                cache.valid = torch.cat(
                    [cache.valid, torch.ones(B, T, dtype=torch.bool, device=x.device)], 1
                )
            if cache is None or cache.valid is None:
                return None, None
            keys = cache.valid
        else:
            if attention_mask.shape != (B, T):
                raise ValueError(
                    f"attention_mask must be (B, T) = {(B, T)} for the new tokens, got "
                    f"{tuple(attention_mask.shape)}"
                )
            new = _padding_mask(attention_mask, x.device, prefill=cache is None or N == 0)
            old = torch.ones(B, N, dtype=torch.bool, device=x.device)
            if cache is not None and cache.valid is not None:
                old = cache.valid
            keys = torch.cat([old, new], 1)
            if cache is not None:
                cache.valid = keys
        causal = torch.ones(T, N + T, dtype=torch.bool, device=x.device).tril(N)
        self_ = torch.zeros(T, N + T, dtype=torch.bool, device=x.device)
        self_[:, N:] = torch.eye(T, dtype=torch.bool, device=x.device)
        # a padded token attends to itself only: its (ignored) output stays finite
        return ((causal & keys[:, None, :]) | self_)[:, None], None


def _padding_mask(attention_mask: torch.Tensor, device, prefill: bool) -> torch.Tensor:
    """``attention_mask`` as bool (True = a real token). A float or integer mask must hold only
    0 and 1 (0.5 is not a padding flag); a prompt must have a real token in every row."""
    if not isinstance(attention_mask, torch.Tensor):
        raise TypeError(f"attention_mask must be a tensor, got {type(attention_mask).__name__}")
    zero_one = (attention_mask == 0) | (attention_mask == 1)
    if attention_mask.dtype != torch.bool and not zero_one.all():
        raise ValueError(
            "attention_mask must be bool or hold only 0 and 1 (1 = a real token, 0 = "
            f"padding), got values {attention_mask.unique()[:6].tolist()}"
        )
    mask = attention_mask.to(device=device, dtype=torch.bool)
    if prefill and not mask.any(1).all():
        rows = (~mask.any(1)).nonzero().flatten().tolist()
        raise ValueError(f"attention_mask rows {rows} mask every token: a sequence needs one")
    return mask
