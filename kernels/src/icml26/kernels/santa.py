"""SANTA / S²ANTA: sampled value aggregation for decode attention (arXiv 2605.01910).

For one decode query per head, ``p = softmax(q K^T * scale)`` and dense attention returns
``o = p^T V``. SANTA keeps the exact scores (all of K is read) but replaces the weighted sum over
V by an estimator that reads only a few value rows: draw S row indices and aggregate their rows.

Modes (``mode=``):

- ``iid``: S i.i.d. draws from p; ``o^ = mean of the drawn rows`` (the textbook estimator).
- ``systematic``: systematic sampling over the whole row: one uniform offset a0, expected counts
  ``x_r = p_r S``, counts ``c_r = floor(a0 + sum_{<=r} x) - floor(a0 + sum_{<r} x)`` (they sum to
  S exactly and E c_r = x_r); ``o^ = sum_r c_r v_r / S``.
- ``tile_fixed``: the published kernels' tiling. Keys in tiles of ``block_n``; per tile the max
  ``m_t``, ``u_r = exp(s_r - m_t)``, ``l_t = sum u``; every tile gets ``S_t = max(1, floor(S /
  n_tiles))`` draws by systematic sampling of ``x_r = u_r S_t / l_t`` with its own offset;
  ``out_t = sum_r c_r v_r``; merged with the exact tile weights ``W_t = exp(m_t - m*) l_t``:
  ``o^ = sum_t W_t out_t / (Z S_t)``, ``Z = sum_t W_t`` (unbiased).
- ``tile_prop``: ``S_t`` proportional to ``W_t``, rounded by largest remainder so they sum to S;
  ``o^ = sum_t out_t / S``: unbiased up to the rounding of S_t (measured by the demo).

``bernoulli_scores=True`` is the paper's experimental stochastic ternary query:
``q~_i = sign(q_i) c Bernoulli(|q_i| / c)`` with ``c = max_i |q_i|`` per head: the scores are
unbiased, but the softmax of an unbiased score is not, so the output is biased (measured).

GQA: queries (B, H_q, D) against caches (B, H_kv, N, D) with H_q a multiple of H_kv; the row
count reports, per KV head, the union of the rows its query heads sampled (each row is read
once per group).

Randomness: with an integer ``seed`` every uniform comes from
``torch.Generator().manual_seed(seed)`` in a fixed order, so the reference and the Triton kernel
see the same offsets and a call is deterministic. A ``seed`` given as an int64 tensor on the
device (e.g. a step counter the caller increments in place) makes the Triton kernel draw its
systematic offsets itself (Philox, keyed by the tile), with no host draw or copy: what a
captured CUDA graph needs. Its draws differ from the integer seed's; the reference reads such a
seed as ``int(seed)``.
"""

import math
from typing import Literal, NamedTuple

import torch

from icml26.kernels.dispatch import register_op

Mode = Literal["iid", "systematic", "tile_fixed", "tile_prop"]
MODES = ("iid", "systematic", "tile_fixed", "tile_prop")


class SantaOutput(NamedTuple):
    """``out`` (B, H_q, D) in the query's dtype; ``rows_read`` (B, H_kv): distinct value rows
    read per KV head (its query heads' union)."""

    out: torch.Tensor
    rows_read: torch.Tensor


def check_santa_inputs(q, k, v, num_samples, mode, block_n) -> None:
    """Shapes, dtypes, finiteness and arguments; a ValueError that names the culprit."""
    for name, t, nd in (("q", q, 3), ("k", k, 4), ("v", v, 4)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != nd:
            raise ValueError(f"{name} must have {nd} dimensions, got shape {tuple(t.shape)}")
        if not t.is_floating_point():
            raise TypeError(f"{name} must be floating point, got {t.dtype}")
    B, Hq, D = q.shape
    if k.shape != v.shape:
        raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)} must have the same shape")
    if k.shape[0] != B or k.shape[3] != D:
        raise ValueError(f"k must be (B={B}, H_kv, N, D={D}), got {tuple(k.shape)}")
    Hkv, N = k.shape[1], k.shape[2]
    if Hkv == 0 or Hq % Hkv:
        raise ValueError(f"query heads ({Hq}) must be a multiple of KV heads ({Hkv})")
    if N == 0:
        raise ValueError("the KV cache is empty (N = 0)")
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
        raise ValueError(f"num_samples must be an integer >= 1, got {num_samples!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if not isinstance(block_n, int) or block_n < 1:
        raise ValueError(f"block_n must be a positive integer, got {block_n!r}")
    # Only CPU tensors are scanned: on a GPU the scan would synchronise and read all of V, the
    # tensor SANTA exists not to read. There, NaN in q or K gives NaN out (every score is
    # computed); a NaN in a value row that is never drawn is never read.
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.device.type == "cpu" and not torch.isfinite(t).all():
            raise ValueError(f"{name} contains NaN or inf")


def ternary_queries(q: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """``sign(q) c Bernoulli(|q| / c)``, ``c = max |q|`` per (batch, head): unbiased for q."""
    c = q.abs().amax(-1, keepdim=True).clamp_min(torch.finfo(torch.float32).tiny)
    keep = (
        torch.rand(q.shape, generator=gen, dtype=torch.float64).to(q.device)
        < (q.abs() / c).double()
    )
    return torch.sign(q) * c * keep.to(q.dtype)


def largest_remainder(weights: torch.Tensor, total: int) -> torch.Tensor:
    """Integers proportional to ``weights`` (..., T) that sum to ``total`` (largest remainder)."""
    share = weights / weights.sum(-1, keepdim=True) * total
    base = share.floor()
    missing = (total - base.sum(-1)).long()  # (...,)
    order = torch.argsort(share - base, dim=-1, descending=True)
    rank = torch.argsort(order, dim=-1)
    return (base + (rank < missing[..., None]).to(base.dtype)).long()


class TileStats(NamedTuple):
    """Per (B, H_q, tile): the max score ``m`` and ``l = sum exp(s - m)``."""

    m: torch.Tensor
    l: torch.Tensor


def _scores(q, k, scale) -> torch.Tensor:
    Hq, Hkv = q.shape[1], k.shape[1]
    kk = k.repeat_interleave(Hq // Hkv, dim=1)  # (B, Hq, N, D)
    return torch.einsum("bhd,bhnd->bhn", q.double(), kk.double()) * scale


def _tile_stats(s: torch.Tensor, block_n: int) -> tuple[torch.Tensor, TileStats]:
    B, H, N = s.shape
    T = math.ceil(N / block_n)
    pad = torch.full((B, H, T * block_n - N), -torch.inf, dtype=s.dtype, device=s.device)
    st = torch.cat([s, pad], -1).view(B, H, T, block_n)
    m = st.amax(-1)
    l = torch.exp(st - m[..., None]).sum(-1)
    return st, TileStats(m, l)


def sampling_plan(s: torch.Tensor, num_samples: int, mode: str, block_n: int):
    """The plan of ``plan_from_tile_stats`` for full score rows s (B, H, N)."""
    _, stats = _tile_stats(s, block_n)
    return plan_from_tile_stats(stats, num_samples, mode)


def plan_from_tile_stats(stats: TileStats, num_samples: int, mode: str):
    """Per-tile systematic-sampling parameters shared by the reference and the kernel.

    Returns (alpha, base_shift, budget, W, Z), each (B, H, T) but Z (B, H, 1): inside tile t the
    expected count of row r is ``x_r = exp(s_r - m_t) * alpha_t``; the tile's systematic grid
    starts at ``a0_t + base_shift_t``; ``budget`` is S_t (the global S for ``systematic``); W and
    Z are the exact tile weights and their sum, for the merge.
    """
    m_star = stats.m.amax(-1, keepdim=True)
    W = torch.exp(stats.m - m_star) * stats.l  # (B, H, T) exact tile weights
    Z = W.sum(-1, keepdim=True)
    T = W.shape[-1]
    if mode == "systematic":
        # One systematic grid over the whole row: tile t continues where tile t-1 stopped.
        alpha = num_samples * torch.exp(stats.m - m_star) / Z
        mass = W / Z * num_samples
        base_shift = torch.cumsum(mass, -1) - mass
        budget = torch.full_like(W, float(num_samples))
    elif mode == "tile_fixed":
        s_t = max(1, num_samples // T)
        budget = torch.full_like(W, float(s_t))
        alpha = s_t / stats.l
        base_shift = torch.zeros_like(W)
    else:  # tile_prop
        budget = largest_remainder(W, num_samples).to(W.dtype)
        alpha = budget / stats.l
        base_shift = torch.zeros_like(W)
    return alpha, base_shift, budget, W, Z


def offsets(B: int, H: int, T: int, mode: str, seed: int) -> torch.Tensor:
    """The systematic offsets a0, (B, H, T) float64: one per tile, or one per row (shared by its
    tiles) for ``systematic``, whose tiles continue a single grid."""
    gen = torch.Generator().manual_seed(seed)
    if mode == "systematic":
        return torch.rand(B, H, 1, generator=gen, dtype=torch.float64).expand(B, H, T).contiguous()
    return torch.rand(B, H, T, generator=gen, dtype=torch.float64)


def santa_decode_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    num_samples: int,
    mode: Mode = "tile_fixed",
    block_n: int = 64,
    seed: int = 0,
    scale: float | None = None,
    bernoulli_scores: bool = False,
    return_counts: bool = False,
):
    """The definition of SANTA decode (module docstring), in float64 torch.

    Args:
        q: (B, H_q, D) decode queries. k, v: (B, H_kv, N, D) caches.
        num_samples: S. mode: iid | systematic | tile_fixed | tile_prop. block_n: tile size.
        seed: all randomness: an int, or an int64 tensor (device-drawn offsets on the Triton
            path). scale: score scale (default 1/sqrt(D)).
        return_counts: also return the (B, H_q, N) counts of each value row.
    Returns:
        SantaOutput(out (B, H_q, D), rows_read (B, H_kv)) [, counts].
    """
    check_santa_inputs(q, k, v, num_samples, mode, block_n)
    B, Hq, D = q.shape
    Hkv, N = k.shape[1], k.shape[2]
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    if isinstance(seed, torch.Tensor):  # a device seed (see the module docstring)
        seed = int(seed)
    gen = torch.Generator().manual_seed(seed)
    if bernoulli_scores:
        q = ternary_queries(q, gen)
        seed = seed + 1  # the offsets below must not reuse the ternary draws
    s = _scores(q, k, scale)  # (B, Hq, N) float64
    vv = v.repeat_interleave(Hq // Hkv, dim=1).double()  # (B, Hq, N, D)
    if mode == "iid":
        p = torch.softmax(s, -1)
        idx = torch.multinomial(
            p.view(-1, N).cpu(),
            num_samples,
            replacement=True,
            generator=torch.Generator().manual_seed(seed),
        ).view(B, Hq, -1)
        counts = (
            torch.zeros(B, Hq, N, dtype=torch.float64)
            .scatter_add_(-1, idx, torch.ones_like(idx, dtype=torch.float64))
            .to(s.device)
        )
        out = torch.einsum("bhn,bhnd->bhd", counts, vv) / num_samples
    else:
        st, stats = _tile_stats(s, block_n)
        alpha, shift, budget, W, Z = plan_from_tile_stats(stats, num_samples, mode)
        T = W.shape[-1]
        a0 = offsets(B, Hq, T, mode, seed).to(s.device)
        x = torch.exp(st - stats.m[..., None]) * alpha[..., None]  # (B, H, T, block_n)
        base = (a0 + shift)[..., None]
        hi = torch.cumsum(x, -1)
        c = torch.floor(base + hi) - torch.floor(base + hi - x)
        counts = c.flatten(-2)[..., :N]
        vt = torch.cat([vv, vv.new_zeros(B, Hq, T * block_n - N, D)], 2).view(B, Hq, T, block_n, D)
        out_t = torch.einsum("bhtn,bhtnd->bhtd", c, vt)  # sum_r c_r v_r per tile
        if mode == "tile_fixed":
            out = (W[..., None] * out_t / (Z[..., None] * budget[..., None])).sum(-2)
        else:  # systematic and tile_prop: every draw weighs 1/S
            out = out_t.sum(-2) / num_samples
    sampled = (counts > 0).view(B, Hkv, Hq // Hkv, N).any(2)
    result = SantaOutput(out.to(q.dtype), sampled.sum(-1))
    return (result, counts) if return_counts else result


santa_decode = register_op(
    "santa_decode",
    santa_decode_reference,
    # Imported on first use, after the interpreter flag is set (see icml26.kernels.dispatch).
    "icml26.kernels._triton_santa:santa_decode_triton",
    # Same counts as the reference; the kernel's scores accumulate in float32 even for float64
    # inputs, which moves the tile weights of tile_fixed by ~1e-7.
    tolerances={
        torch.float64: (1e-6, 1e-6),
        torch.float32: (1e-5, 1e-5),
        torch.float16: (2e-3, 2e-3),
        torch.bfloat16: (2e-2, 2e-2),
    },
)
santa_decode.__doc__ = santa_decode_reference.__doc__


# -- torch.library registration: one graph node for torch.compile -------------------------------
# The sampled counts make the reference data-dependent (no traceable graph); the custom op hides
# that and dispatches at run time (Triton on CUDA). Counts are computed only when asked for
# (otherwise an empty tensor stands in their place in the op's outputs).
@torch.library.custom_op("icml26::santa_decode", mutates_args=())
def _santa_decode_op(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    num_samples: int,
    mode: str,
    block_n: int,
    seed: int,
    scale: float | None,
    bernoulli_scores: bool,
    seed_tensor: torch.Tensor | None = None,
    return_counts: bool = True,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    res = santa_decode(
        q,
        k,
        v,
        num_samples,
        mode,
        block_n,
        seed if seed_tensor is None else seed_tensor,
        scale,
        bernoulli_scores,
        return_counts=return_counts,
    )
    (out, rows_read), counts = res if return_counts else (res, q.new_empty(0, dtype=torch.float64))
    return out.contiguous(), rows_read.contiguous(), counts.contiguous()


@_santa_decode_op.register_fake
def _(
    q, k, v, num_samples, mode, block_n, seed, scale, bernoulli_scores, seed_tensor=None,
    return_counts=True,
):  # fmt: skip
    B, Hq, D = q.shape
    counts_shape = (B, Hq, k.shape[2]) if return_counts else (0,)
    return (
        q.new_empty(B, Hq, D),
        q.new_empty(B, k.shape[1], dtype=torch.int64),
        q.new_empty(counts_shape, dtype=torch.float64),
    )


def _compiled_santa_decode(
    q, k, v, num_samples, mode="tile_fixed", block_n=64, seed=0, scale=None,
    bernoulli_scores=False, return_counts=False,
):  # fmt: skip
    # The counts are only computed and written when asked for (the kernel skips them).
    seed_tensor = seed if isinstance(seed, torch.Tensor) else None
    out, rows_read, counts = _santa_decode_op(
        q, k, v, num_samples, mode, block_n, 0 if seed_tensor is not None else seed, scale,
        bernoulli_scores, seed_tensor, return_counts,
    )  # fmt: skip
    result = SantaOutput(out, rows_read)
    return (result, counts) if return_counts else result


santa_decode.compiled = _compiled_santa_decode
