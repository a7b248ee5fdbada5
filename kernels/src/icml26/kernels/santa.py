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

from icml26.kernels.attention import check_scale
from icml26.kernels.dispatch import register_op

Mode = Literal["iid", "systematic", "tile_fixed", "tile_prop"]
MODES = ("iid", "systematic", "tile_fixed", "tile_prop")


class SantaOutput(NamedTuple):
    """``out`` (B, H_q, D) in the query's dtype; ``rows_read`` (B, H_kv): distinct value rows
    read per KV head (its query heads' union)."""

    out: torch.Tensor
    rows_read: torch.Tensor


MAX_SAMPLES = 2**31 - 1
"""The most draws per head: counts are int32 on the device."""


def check_seed(seed) -> None:
    """An int (not a bool) or a device tensor holding one (see the module docstring)."""
    if isinstance(seed, torch.Tensor):
        if seed.numel() != 1 or seed.is_floating_point() or seed.is_complex():
            raise ValueError(f"seed must be an int or a one-element integer tensor, got {seed!r}")
    elif isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {seed!r}")


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
    if q.numel() == 0:
        raise ValueError(f"q must be a non-empty (B, H_q, D) tensor, got {tuple(q.shape)}")
    if k.shape != v.shape:
        raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)} must have the same shape")
    if k.shape[0] != B or k.shape[3] != D:
        raise ValueError(f"k must be (B={B}, H_kv, N, D={D}), got {tuple(k.shape)}")
    Hkv, N = k.shape[1], k.shape[2]
    if Hkv == 0 or Hq % Hkv:
        raise ValueError(f"query heads ({Hq}) must be a multiple of KV heads ({Hkv})")
    if N == 0:
        raise ValueError("the KV cache is empty (N = 0)")
    if (
        isinstance(num_samples, bool)
        or not isinstance(num_samples, int)
        or not 1 <= num_samples <= MAX_SAMPLES
    ):
        raise ValueError(f"num_samples must be an integer in [1, 2^31 - 1], got {num_samples!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if isinstance(block_n, bool) or not isinstance(block_n, int) or block_n < 1:
        raise ValueError(f"block_n must be a positive integer, got {block_n!r}")
    # Only the query is scanned here, and only on the CPU: on a GPU a scan synchronises, and a
    # scan of K and V would read all of V, the tensor SANTA exists not to read. The reference
    # checks K through the scores it computes anyway and V on the rows it reads; on a GPU, NaN
    # in q or K gives NaN out (every score is computed) and a NaN in a value row that is never
    # drawn is never read.
    if q.device.type == "cpu" and not torch.isfinite(q).all():
        raise ValueError("q contains NaN or inf")


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
    """Per (B, H_q, tile): the max score ``m`` and ``l = sum exp(s - m)`` (``m = -inf``, ``l = 0``
    for a tile with no valid key)."""

    m: torch.Tensor
    l: torch.Tensor


def key_ranges(key_start, key_end, B: int, N: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """The valid keys ``[key_start[b], key_end[b])`` of each sequence as int64 (B,) tensors on
    ``device``; None means 0 / N. CPU tensors are checked (0 <= start < end <= N); on a GPU the
    check would synchronise, so the values are clamped into [0, N] instead (an empty range has
    no defined output: the tile modes give zeros, ``iid`` NaN)."""
    out = []
    for name, t, default in (("key_start", key_start, 0), ("key_end", key_end, N)):
        if t is None:
            out.append(torch.full((B,), default, dtype=torch.int64, device=device))
            continue
        if not isinstance(t, torch.Tensor) or t.dtype.is_floating_point or t.dtype == torch.bool:
            raise TypeError(f"{name} must be an integer tensor of shape (B={B},), got {t!r}")
        if t.shape != (B,):
            raise ValueError(f"{name} must have shape (B={B},), got {tuple(t.shape)}")
        out.append(t.to(device=device, dtype=torch.int64))
    start, end = out
    given = key_start is not None or key_end is not None
    if (
        given
        and start.device.type == "cpu"
        and not ((start >= 0) & (start < end) & (end <= N)).all()
    ):
        raise ValueError(
            f"key ranges must satisfy 0 <= key_start < key_end <= N={N}, got "
            f"key_start={start.tolist()}, key_end={end.tolist()}"
        )
    start = start.clamp(0, N)
    return start, torch.maximum(end.clamp(max=N), start)


def _scores(q, k, scale) -> torch.Tensor:
    """(B, H_q, N) float64 scores; each KV head serves its group of query heads (no copy of K
    per query head)."""
    B, Hq, D = q.shape
    Hkv = k.shape[1]
    s = torch.einsum("bkgd,bknd->bkgn", q.double().view(B, Hkv, Hq // Hkv, D), k.double())
    return s.reshape(B, Hq, -1) * scale


def _tiles(s: torch.Tensor, start, end, block_n: int, full: bool = False):
    """Scores laid out in tiles aligned at each sequence's first valid key: (scores (B, H, T,
    block_n) with -inf off the range, valid mask, absolute key index (B, 1, T * block_n))."""
    B, H, N = s.shape
    T = math.ceil(N / block_n)
    pos = start[:, None] + torch.arange(T * block_n, device=s.device)  # (B, T * block_n)
    valid = pos < end[:, None]
    pos = pos.clamp(max=N - 1)[:, None]  # (B, 1, L)
    if full:  # every sequence spans the cache: the tiles are the padded rows, no gather
        st = torch.nn.functional.pad(s, (0, T * block_n - N), value=-torch.inf)
    else:
        st = s.gather(-1, pos.expand(B, H, -1)).masked_fill(~valid[:, None], -torch.inf)
    return st.view(B, H, T, block_n), valid.view(B, 1, T, block_n), pos


def _tile_stats(st: torch.Tensor, valid: torch.Tensor) -> TileStats:
    m = st.amax(-1)
    u = torch.where(valid, torch.exp(st - m.nan_to_num(neginf=0.0)[..., None]), 0.0)
    return TileStats(m, u.sum(-1))


def sampling_plan(s: torch.Tensor, num_samples: int, mode: str, block_n: int):
    """The plan of ``plan_from_tile_stats`` for full score rows s (B, H, N)."""
    B, _, N = s.shape
    start, end = key_ranges(None, None, B, N, s.device)
    st, valid, _ = _tiles(s, start, end, block_n)
    return plan_from_tile_stats(_tile_stats(st, valid), num_samples, mode)


def fixed_budget(num_samples: int, n_tiles: torch.Tensor) -> torch.Tensor:
    """``tile_fixed``'s draws per tile, ``S_t = max(1, floor(S / n_tiles))``, per sequence."""
    return (num_samples // n_tiles).clamp_min(1)


def plan_from_tile_stats(stats: TileStats, num_samples: int, mode: str, n_tiles=None):
    """Per-tile systematic-sampling parameters shared by the reference and the kernel.

    Returns (alpha, base_shift, budget, W, Z), each (B, H, T) but Z (B, H, 1): inside tile t the
    expected count of row r is ``x_r = exp(s_r - m_t) * alpha_t``; the tile's systematic grid
    starts at ``a0_t + base_shift_t``; ``budget`` is S_t (the global S for ``systematic``); W and
    Z are the exact tile weights and their sum, for the merge. ``n_tiles`` (B,): the tiles each
    sequence's key range spans (default all T); tiles past them have no valid key and get
    nothing.
    """
    m_star = stats.m.amax(-1, keepdim=True)
    W = torch.exp(stats.m - m_star) * stats.l  # (B, H, T) exact tile weights; 0 off the range
    Z = W.sum(-1, keepdim=True)
    T = W.shape[-1]
    filled = stats.l > 0
    if mode == "systematic":
        # One systematic grid over the whole row: tile t continues where tile t-1 stopped.
        alpha = num_samples * torch.exp(stats.m - m_star) / Z
        mass = W / Z * num_samples
        base_shift = torch.cumsum(mass, -1) - mass
        budget = torch.full_like(W, float(num_samples))
    elif mode == "tile_fixed":
        if n_tiles is None:
            n_tiles = torch.full(W.shape[:1], T, dtype=torch.int64, device=W.device)
        budget = fixed_budget(num_samples, n_tiles).to(W.dtype)[:, None, None].expand_as(W)
        alpha = budget / stats.l
        base_shift = torch.zeros_like(W)
    else:  # tile_prop
        budget = largest_remainder(W, num_samples).to(W.dtype)
        alpha = budget / stats.l
        base_shift = torch.zeros_like(W)
    return torch.where(filled, alpha, 0.0), base_shift, budget, W, Z


def offsets(B: int, H: int, T: int, mode: str, seed: int) -> torch.Tensor:
    """The systematic offsets a0, (B, H, T) float64: one per tile, or one per row (shared by its
    tiles) for ``systematic``, whose tiles continue a single grid."""
    gen = torch.Generator().manual_seed(seed)
    if mode == "systematic":
        return torch.rand(B, H, 1, generator=gen, dtype=torch.float64).expand(B, H, T).contiguous()
    return torch.rand(B, H, T, generator=gen, dtype=torch.float64)


def _expected_counts(s, num_samples, mode, block_n, key_start, key_end):
    """The tiled plan of score rows ``s``: (valid (B, 1, T, block_n), key index (B, 1, T *
    block_n), expected counts x (B, H, T, block_n), plan_from_tile_stats' tuple)."""
    B, _, N = s.shape
    start, end = key_ranges(key_start, key_end, B, N, s.device)
    st, valid, pos = _tiles(s, start, end, block_n, key_start is None and key_end is None)
    stats = _tile_stats(st, valid)
    n_tiles = (end - start + block_n - 1) // block_n
    plan = plan_from_tile_stats(stats, num_samples, mode, n_tiles)
    u = torch.where(valid, torch.exp(st - stats.m.nan_to_num(neginf=0.0)[..., None]), 0.0)
    return valid, pos, u * plan[0][..., None], plan


def counts_at_offsets(s, a0, num_samples, mode, block_n, key_start=None, key_end=None):
    """The systematic-sampling counts (B, H, N) of score rows ``s`` (B, H, N) for given offsets
    ``a0`` (B, H, T) in [0, 1), and the per-row merge weights (B, H, N): the estimate is
    ``sum_r weight_r v_r``. The tile modes' whole randomness is a0, so this is the estimator as a
    deterministic function of it (what an exact expectation integrates over)."""
    B, H, N = s.shape
    full = key_start is None and key_end is None
    valid, pos, x, (_, shift, budget, W, Z) = _expected_counts(
        s, num_samples, mode, block_n, key_start, key_end
    )
    base = (a0 + shift)[..., None]
    hi = torch.cumsum(x, -1)
    c = torch.where(valid, torch.floor(base + hi) - torch.floor(base + hi - x), 0.0)
    if mode == "tile_fixed":  # merge with the exact tile weights
        w = torch.where(W > 0, W / (Z * budget), 0.0)[..., None] * c
    else:  # systematic and tile_prop: every draw weighs 1/S
        w = c / num_samples
    if full:
        return c.flatten(-2)[..., :N], w.flatten(-2)[..., :N]
    where = pos.expand(B, H, -1)
    counts = s.new_zeros(B, H, N).scatter_add_(-1, where, c.flatten(-2))
    weight = s.new_zeros(B, H, N).scatter_add_(-1, where, w.flatten(-2))
    return counts, weight


def expected_weights(s, num_samples, mode, block_n, key_start=None, key_end=None):
    """The exact expectation of the estimator's row weights (B, H, N) over its randomness, for
    score rows ``s`` (B, H, N): ``E[o^] = sum_r E[weight_r] v_r``. An unbiased mode gives
    ``softmax(s)``; ``tile_prop`` gives its rounding bias.

    ``iid``: ``E[counts] = S p``. The tile modes: a tile's counts are a step function of its
    offset a0, jumping where ``a0 + shift_t + sum_{<=r} x`` crosses an integer; tiles are
    independent given their offsets (``systematic`` shares one offset, which does not change
    any tile's own expectation), so integrating each tile over [0, 1) between its jumps - the
    estimator evaluated at each interval's midpoint, weighted by the interval's length - is
    exact, with no Monte Carlo noise."""
    B, H, N = s.shape
    start, end = key_ranges(key_start, key_end, B, N, s.device)
    if mode == "iid":
        keys = torch.arange(N, device=s.device)
        valid = (keys >= start[:, None]) & (keys < end[:, None])
        return torch.softmax(s.masked_fill(~valid[:, None], -torch.inf), -1)
    _, _, x, (_, shift, _, _, _) = _expected_counts(
        s, num_samples, mode, block_n, key_start, key_end
    )
    T = x.shape[2]
    hi = torch.cumsum(x, -1)
    # the jumps of every floor in the counts, as offsets in [0, 1), sorted per tile
    jumps = torch.cat([-(shift[..., None] + hi), -(shift[..., None] + hi - x)], -1) % 1.0
    edges = torch.cat([torch.zeros_like(hi[..., :1]), jumps.sort(-1).values], -1)
    edges = torch.cat([edges, torch.ones_like(edges[..., :1])], -1)  # (B, H, T, 2 block_n + 2)
    lengths, mids = edges.diff(dim=-1), (edges[..., 1:] + edges[..., :-1]) / 2
    tile_of = ((torch.arange(N, device=s.device) - start[:, None]) // block_n).clamp(0, T - 1)
    tile_of = tile_of[:, None].expand(B, H, N)
    expected = torch.zeros_like(s)
    for j in range(lengths.shape[-1]):
        _, w = counts_at_offsets(s, mids[..., j], num_samples, mode, block_n, key_start, key_end)
        expected += w * lengths[..., j].gather(-1, tile_of)
    return expected


def expected_output(q, k, v, num_samples, mode, block_n=64, scale=None, key_start=None,
                    key_end=None) -> torch.Tensor:  # fmt: skip
    """``E[o^]`` (B, H_q, D) float64, exactly (see ``expected_weights``): compare it with the
    dense output to measure the estimator's bias without sampling noise."""
    check_santa_inputs(q, k, v, num_samples, mode, block_n)
    scale = check_scale(scale)
    B, Hq, D = q.shape
    Hkv, N = k.shape[1], k.shape[2]
    s = _scores(q, k, 1.0 / math.sqrt(D) if scale is None else scale)
    w = expected_weights(s, num_samples, mode, block_n, key_start, key_end)
    out = torch.einsum("bkgn,bknd->bkgd", w.view(B, Hkv, Hq // Hkv, N), v.double())
    return out.reshape(B, Hq, D)


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
    key_start: torch.Tensor | None = None,
    key_end: torch.Tensor | None = None,
):
    """The definition of SANTA decode (module docstring), in float64 torch.

    Args:
        q: (B, H_q, D) decode queries. k, v: (B, H_kv, N, D) caches.
        num_samples: S. mode: iid | systematic | tile_fixed | tile_prop. block_n: tile size.
        seed: all randomness: an int, or an int64 tensor (device-drawn offsets on the Triton
            path). scale: score scale (default 1/sqrt(D)).
        return_counts: also return the (B, H_q, N) counts of each value row.
        key_start, key_end: (B,) integer tensors: sequence b attends to keys
            ``[key_start[b], key_end[b])`` only (left padding, a static cache's unused tail, a
            sliding window); its tiles start at key_start[b], so it is sampled exactly as the
            same keys would be without the rest. Default: the whole cache.
    Returns:
        SantaOutput(out (B, H_q, D), rows_read (B, H_kv)) [, counts].
    """
    check_santa_inputs(q, k, v, num_samples, mode, block_n)
    check_seed(seed)
    scale = check_scale(scale)
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
    if s.device.type == "cpu" and not torch.isfinite(s).all():
        raise ValueError("k contains NaN or inf (a score is not finite)")
    if mode == "iid":
        start, end = key_ranges(key_start, key_end, B, N, s.device)
        keys = torch.arange(N, device=s.device)
        valid = (keys >= start[:, None]) & (keys < end[:, None])
        p = torch.softmax(s.masked_fill(~valid[:, None], -torch.inf), -1)
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
        weight = counts / num_samples
    else:
        a0 = offsets(B, Hq, math.ceil(N / block_n), mode, seed).to(s.device)
        counts, weight = counts_at_offsets(s, a0, num_samples, mode, block_n, key_start, key_end)
    sampled = (counts > 0).view(B, Hkv, Hq // Hkv, N).any(2)  # (B, Hkv, N): the rows read
    weight = weight.view(B, Hkv, Hq // Hkv, N)
    out = torch.einsum("bkgn,bknd->bkgd", weight, v.double())
    if not torch.isfinite(out).all():  # one row-sized check; the cause is looked for only now
        if not torch.isfinite(v[sampled]).all():
            raise ValueError("v contains NaN or inf in a value row that was drawn")
        # a row never drawn holds NaN or inf: it must not be read, not even times 0
        out = torch.einsum(
            "bkgn,bknd->bkgd", weight, torch.where(sampled[..., None], v, 0).double()
        )
    result = SantaOutput(out.reshape(B, Hq, D).to(q.dtype), sampled.sum(-1))
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
    key_start: torch.Tensor | None = None,
    key_end: torch.Tensor | None = None,
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
        key_start=key_start,
        key_end=key_end,
    )
    (out, rows_read), counts = res if return_counts else (res, q.new_empty(0, dtype=torch.float64))
    return out.contiguous(), rows_read.contiguous(), counts.contiguous()


@_santa_decode_op.register_fake
def _(
    q, k, v, num_samples, mode, block_n, seed, scale, bernoulli_scores, seed_tensor=None,
    return_counts=True, key_start=None, key_end=None,
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
    bernoulli_scores=False, return_counts=False, key_start=None, key_end=None,
):  # fmt: skip
    # The counts are only computed and written when asked for (the kernel skips them).
    seed_tensor = seed if isinstance(seed, torch.Tensor) else None
    out, rows_read, counts = _santa_decode_op(
        q, k, v, num_samples, mode, block_n, 0 if seed_tensor is not None else seed, scale,
        bernoulli_scores, seed_tensor, return_counts, key_start, key_end,
    )  # fmt: skip
    result = SantaOutput(out, rows_read)
    return (result, counts) if return_counts else result


santa_decode.compiled = _compiled_santa_decode
