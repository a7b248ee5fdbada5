"""Triton kernels for SANTA decode (see ``icml26.kernels.santa`` for the definition).

One program per (batch, KV head, key tile) serves the G query heads of its GQA group: it reads
the key tile once, scores all G heads against it with one ``tl.dot`` (the group padded to 16
rows), takes each head's tile max ``m_t`` and ``l_t``, makes each head's systematic counts, and
reads each value row that ANY head of the group drew once, for all of them (a second ``tl.dot``
of the counts with the rows; rows no head drew are never read). ``tile_fixed`` needs nothing
global: one sampling pass, then a merge kernel that weighs the tiles (the official two-kernel
structure; a call makes 26 host-side torch ops, was 52 with the merge on the host);
``systematic`` and ``tile_prop`` first run a statistics pass that
also stashes the scores (B, H_q, N) fp32, build the per-tile plan on the host (O(B H T) work),
and sample from the stash without reading K again. All arithmetic is fp32 (inputs are upcast
before any dot); the reference's counts are float64, so a count can differ where ``a0 + sum x``
falls within float32 rounding of an integer (the tests hold the counts equal on their inputs).
Counts are only written when asked for; the rows read come from the kernel per tile.
"""

import math

import torch
import triton
import triton.language as tl

from icml26.kernels._triton_common import INTERPRET as _INTERPRET
from icml26.kernels._triton_common import program_id64, tuned
from icml26.kernels.attention import check_scale
from icml26.kernels.santa import (
    SantaOutput,
    TileStats,
    check_santa_inputs,
    check_seed,
    fixed_budget,
    key_ranges,
    offsets,
    plan_from_tile_stats,
    santa_decode_reference,
    ternary_queries,
)


@triton.jit
def _group_scores(q, k_tile, mask_n, mask_d, scale, UPCAST: tl.constexpr, PRECISION: tl.constexpr):
    """Scores of all the group's heads q (BLOCK_G, BLOCK_D) from ONE read of the key tile (fp32,
    tensor-core friendly: the group is padded to 16 rows for tl.dot)."""
    k = tl.load(k_tile, mask=mask_n[:, None] & mask_d[None, :], other=0.0)
    if UPCAST:  # the interpreter's half-precision dot is wrong; fp32 inputs are fp32 anyway
        q = q.to(tl.float32)
        k = k.to(tl.float32)
    # bf16 / fp16 tiles go to the tensor cores as they are: their products are exact in the
    # fp32 accumulator, so this equals the fp32 dot of the upcast values
    return tl.dot(q.to(k.dtype), tl.trans(k), input_precision=PRECISION) * scale


@triton.jit
def _systematic_counts(x, base):
    """Systematic resampling counts of the masses x (BLOCK_G, BLOCK_N) at offsets base:
    c_r = floor(base + X_r) - floor(base + X_{r-1}), X the running sum."""
    hi = tl.cumsum(x, 1)
    return tl.floor(base[:, None] + hi) - tl.floor(base[:, None] + hi - x)


@triton.jit
def _tile_offsets(
    a0_ptr, seed_ptr, alpha_ptr, shift_ptr, sfix_ptr, b, row, tile, mask_g, l,
    FIXED: tl.constexpr, DEVICE_RNG: tl.constexpr, ROW_OFFSET: tl.constexpr,
):  # fmt: skip
    """(alpha, base) of each head's tile: the count scale and where its systematic grid starts."""
    if DEVICE_RNG:  # Philox from a seed in device memory: no host draw, graph-capturable
        seed = tl.load(seed_ptr)
        a0 = tl.rand(seed, (row if ROW_OFFSET else tile).to(tl.int32))
    else:
        a0 = tl.load(a0_ptr + tile, mask=mask_g, other=0.0)
    if FIXED:
        filled = mask_g & (l > 0)  # a tile past the key range draws nothing
        alpha = tl.where(filled, tl.load(sfix_ptr + b) / tl.where(filled, l, 1.0), 0.0)
        base = a0
    else:
        alpha = tl.load(alpha_ptr + tile, mask=mask_g, other=0.0)
        base = a0 + tl.load(shift_ptr + tile, mask=mask_g, other=0.0)
    return alpha, base


@tuned(key=["D", "G", "BLOCK_N", "PASS", "FIXED"])
@triton.jit
def _santa_group_kernel(
    q_ptr,  # (B, H_q, D)
    k_ptr,  # (B, H_kv, N, D)
    v_ptr,  # (B, H_kv, N, D)
    s_ptr,  # (B, H_q, T * BLOCK_N) fp32: the scores, stashed by the statistics pass
    a0_ptr,  # (B, H_q, T) systematic offsets (host-drawn)
    seed_ptr,  # () int64 device seed (DEVICE_RNG): offsets drawn in the kernel
    alpha_ptr,  # (B, H_q, T) count scale per tile (two-pass modes)
    shift_ptr,  # (B, H_q, T) grid shift per tile (two-pass modes)
    out_ptr,  # (B, H_q, T, D) fp32: sum_r c_r v_r per tile
    m_ptr,  # (B, H_q, T) fp32 tile max
    l_ptr,  # (B, H_q, T) fp32 tile sum exp(s - m)
    read_ptr,  # (B, H_kv, T) int32: value rows read per tile (the group's union)
    cnt_ptr,  # (B, H_q, T * BLOCK_N) fp32 counts (WRITE_COUNTS), by position in the range
    start_ptr,  # (B,) int64 first valid key: tiles are aligned at it
    end_ptr,  # (B,) int64 one past the last valid key
    sfix_ptr,  # (B,) fp32 S_t of tile_fixed (FIXED)
    N, D, T, G,
    scale,
    sq_b, sq_h,  # strides of q, k and v (the last dimension is contiguous)
    sk_b, sk_h, sk_n,
    sv_b, sv_h, sv_n,
    PASS: tl.constexpr,  # 0: statistics only (stash scores); 1: sample from the stash; 2: both
    FIXED: tl.constexpr,  # tile_fixed: the budget S_t from sfix_ptr
    WRITE_COUNTS: tl.constexpr, DEVICE_RNG: tl.constexpr,
    ROW_OFFSET: tl.constexpr,  # systematic: one offset per (batch, head) row, shared by its tiles
    UPCAST: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_G: tl.constexpr,
):  # fmt: skip
    b = program_id64(0)
    kvh = program_id64(1)
    t = tl.program_id(2)
    Hq = tl.num_programs(1) * G
    rel_n = t * BLOCK_N + tl.arange(0, BLOCK_N)  # position inside the sequence's key range
    offs_n = tl.load(start_ptr + b) + rel_n  # key index in the cache
    offs_d, offs_g = tl.arange(0, BLOCK_D), tl.arange(0, BLOCK_G)
    mask_n = (offs_n < tl.load(end_ptr + b)) & (offs_n < N)
    mask_d, mask_g = offs_d < D, offs_g < G
    gn_mask, gd_mask = mask_g[:, None] & mask_n[None, :], mask_g[:, None] & mask_d[None, :]
    heads = kvh * G + offs_g  # the group's query heads
    row = b * Hq + heads  # (BLOCK_G,) index of (batch, query head)
    tile = row * T + t  # (BLOCK_G,) index of (batch, query head, tile)
    stash = s_ptr + row[:, None] * (T * BLOCK_N) + rel_n[None, :]
    if PASS == 1:
        s = tl.load(stash, mask=gn_mask, other=-float("inf"))
    else:
        q = tl.load(q_ptr + b * sq_b + heads[:, None] * sq_h + offs_d[None, :], gd_mask, 0.0)
        k_tile = k_ptr + b * sk_b + kvh * sk_h + offs_n[:, None] * sk_n + offs_d[None, :]
        s = _group_scores(q, k_tile, mask_n, mask_d, scale, UPCAST, PRECISION)
        s = tl.where(gn_mask, s, -float("inf"))
    m = tl.max(s, 1)
    m = tl.where(mask_g, m, 0.0)  # padded heads: keep the arithmetic finite
    # a tile past the key range has m = -inf: its u is 0, not exp(nan)
    u = tl.where(mask_n[None, :], tl.exp(s - tl.where(m > -float("inf"), m, 0.0)[:, None]), 0.0)
    l = tl.sum(u, 1)
    if PASS != 1:
        tl.store(m_ptr + tile, m, mask=mask_g)
        tl.store(l_ptr + tile, l, mask=mask_g)
    if PASS == 0:
        tl.store(stash, s, mask=gn_mask)
    else:
        alpha, base = _tile_offsets(
            a0_ptr, seed_ptr, alpha_ptr, shift_ptr, sfix_ptr, b, row, tile, mask_g, l,
            FIXED, DEVICE_RNG, ROW_OFFSET,
        )  # fmt: skip
        c = tl.where(gn_mask, _systematic_counts(u * alpha[:, None], base), 0.0)
        # Each value row is read once for the whole group: the union of the heads' draws.
        read = mask_n & (tl.max(c, 0) > 0)
        v = tl.load(
            v_ptr + b * sv_b + kvh * sv_h + offs_n[:, None] * sv_n + offs_d[None, :],
            mask=read[:, None] & mask_d[None, :],
            other=0.0,
        )
        # (BLOCK_G, BLOCK_D) in fp32 IEEE whatever V's dtype: a heavy row's count can reach S
        # (thousands), which bf16 rounds in steps of 4-8 and TF32 above 2048; few rows are read
        out = tl.dot(c, v.to(tl.float32), input_precision="ieee")
        tl.store(out_ptr + tile[:, None] * D + offs_d[None, :], out, mask=gd_mask)
        tl.store(read_ptr + (b * tl.num_programs(1) + kvh) * T + t, tl.sum(read.to(tl.int32), 0))
        if WRITE_COUNTS:
            tl.store(cnt_ptr + row[:, None] * (T * BLOCK_N) + rel_n[None, :], c, mask=gn_mask)


@triton.jit
def _tile_fixed_merge_kernel(
    OUT_T,  # (B * H_q, T, D) fp32: each tile's sum of drawn value rows
    M,  # (B * H_q, T) fp32: tile maxima (-inf for a tile without a key in range)
    L,  # (B * H_q, T) fp32: tile sums exp(s - m_t)
    BUDGET,  # (B,) fp32: S_t = max(1, S // n_tiles) of each sequence
    OUT,  # (B * H_q, D) fp32
    T,
    D,
    H_Q,
    BLOCK_T: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    """``tile_fixed``'s finalize, one program per (batch, query head): the tile weights
    W_t = exp(m_t - m*) l_t, Z = sum W_t, and out = sum_t W_t out_t / (Z S_t): the host plan's
    merge (``plan_from_tile_stats``) in one launch, as a flash-decoding merge."""
    row = program_id64(0)
    offs_d = tl.arange(0, BLOCK_D)
    dmask = offs_d < D
    m_star = tl.full([BLOCK_T], float("-inf"), dtype=tl.float32)
    for t0 in range(0, T, BLOCK_T):
        offs_t = t0 + tl.arange(0, BLOCK_T)
        m = tl.load(M + row * T + offs_t, mask=offs_t < T, other=float("-inf"))
        m_star = tl.maximum(m_star, m)
    m_max = tl.max(m_star, 0)
    z = tl.zeros([BLOCK_T], dtype=tl.float32)
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for t0 in range(0, T, BLOCK_T):
        offs_t = t0 + tl.arange(0, BLOCK_T)
        tmask = offs_t < T
        m = tl.load(M + row * T + offs_t, mask=tmask, other=float("-inf"))
        l = tl.load(L + row * T + offs_t, mask=tmask, other=0.0)
        w = tl.where(l > 0, tl.exp(m - m_max) * l, 0.0)  # 0 for tiles past the key range
        z += w
        o = tl.load(
            OUT_T + (row * T + offs_t[:, None]) * D + offs_d[None, :],
            mask=tmask[:, None] & dmask[None, :],
            other=0.0,
        )
        acc += tl.sum(w[:, None] * o, 0)
    budget = tl.load(BUDGET + row // H_Q)
    tl.store(OUT + row * D + offs_d, acc / (tl.sum(z, 0) * budget), mask=dmask)


def _launch(
    q, k, v, stash, a0, alpha, shift, block_n, scale, ranges, s_fixed, pass_, fixed, counts,
    seed=None, row_offset=False,
):  # fmt: skip
    B, Hq, D = q.shape
    Hkv, N = k.shape[1], k.shape[2]
    T = math.ceil(N / block_n)
    dev, f32 = q.device, torch.float32
    m = torch.empty(B, Hq, T, dtype=f32, device=dev)
    l = torch.empty(B, Hq, T, dtype=f32, device=dev)
    out = torch.empty(B, Hq, T, D, dtype=f32, device=dev) if pass_ else m
    read = torch.empty(B, Hkv, T, dtype=torch.int32, device=dev) if pass_ else m
    cnt = torch.zeros(B, Hq, T * block_n, dtype=f32, device=dev) if counts else m
    dummy = m
    _santa_group_kernel[(B, Hkv, T)](
        q,
        k,
        v,
        stash if stash is not None else dummy,
        a0 if a0 is not None else dummy,
        seed if seed is not None else dummy,
        alpha if alpha is not None else dummy,
        shift if shift is not None else dummy,
        out,
        m,
        l,
        read,
        cnt,
        *ranges,
        s_fixed if s_fixed is not None else dummy,
        N,
        D,
        T,
        Hq // Hkv,
        scale,
        q.stride(0),
        q.stride(1),
        k.stride(0),
        k.stride(1),
        k.stride(2),
        v.stride(0),
        v.stride(1),
        v.stride(2),
        PASS=pass_,
        FIXED=fixed,
        WRITE_COUNTS=counts,
        DEVICE_RNG=seed is not None,
        ROW_OFFSET=row_offset,
        UPCAST=_INTERPRET or q.dtype in (torch.float32, torch.float64),
        # fp32 tiles: three TF32 products on a GPU (about fp32's accuracy), IEEE when
        # interpreted; half-precision tiles use the tensor cores as they are
        PRECISION="ieee"
        if _INTERPRET
        else "tf32x3"
        if q.dtype in (torch.float32, torch.float64)
        else "tf32",
        BLOCK_N=block_n,
        BLOCK_D=max(16, triton.next_power_of_2(D)),
        BLOCK_G=max(16, triton.next_power_of_2(Hq // Hkv)),
    )
    return out, m, l, read, cnt


def _merge_tile_fixed(out_t, m, l, budget):
    """(B, H_q, D) fp32 from the group kernel's per-tile sums, maxima and sums."""
    B, Hq, T, D = out_t.shape
    out = torch.empty(B, Hq, D, dtype=torch.float32, device=out_t.device)
    _tile_fixed_merge_kernel[(B * Hq,)](
        out_t, m, l, budget, out, T, D, Hq,
        BLOCK_T=min(64, triton.next_power_of_2(T)), BLOCK_D=max(16, triton.next_power_of_2(D)),
    )  # fmt: skip
    return out


def santa_decode_triton(
    q,
    k,
    v,
    num_samples,
    mode="tile_fixed",
    block_n=64,
    seed=0,
    scale=None,
    bernoulli_scores=False,
    return_counts=False,
    key_start=None,
    key_end=None,
):
    """SANTA decode on the Triton kernels; same arguments and result as the reference."""
    check_santa_inputs(q, k, v, num_samples, mode, block_n)
    check_seed(seed)
    scale = check_scale(scale)
    if mode == "iid":  # the textbook estimator has no tiled kernel: it is the reference
        return santa_decode_reference(
            q, k, v, num_samples, mode, block_n, seed, scale, bernoulli_scores, return_counts,
            key_start, key_end,
        )  # fmt: skip
    if block_n & (block_n - 1) or block_n < 16:
        raise ValueError(
            f"block_n must be a power of two >= 16 for the Triton kernel, got {block_n}"
        )
    B, Hq, D = q.shape
    N = k.shape[2]
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    if bernoulli_scores:
        if isinstance(seed, torch.Tensor):
            raise ValueError("bernoulli_scores draws on the host: give an integer seed")
        q = ternary_queries(q, torch.Generator().manual_seed(seed))
        seed = seed + 1
    q = q if q.stride(-1) == 1 else q.contiguous()
    k = k if k.stride(-1) == 1 else k.contiguous()
    v = v if v.stride(-1) == 1 else v.contiguous()
    T = math.ceil(N / block_n)
    start, end = key_ranges(key_start, key_end, B, N, q.device)
    n_tiles = (end - start + block_n - 1) // block_n
    if isinstance(seed, torch.Tensor):  # a device seed: the kernel draws the offsets (Philox)
        dev_seed, a0 = seed.to(q.device, torch.int64).reshape(()), None
    else:
        dev_seed, a0 = None, offsets(B, Hq, T, mode, seed).to(q.device, torch.float32)
    rng = dict(seed=dev_seed, row_offset=mode == "systematic")
    if mode == "tile_fixed":
        s_t = fixed_budget(num_samples, n_tiles).float()
        out_t, m, l, read, cnt = _launch(
            q, k, v, None, a0, None, None, block_n, scale, (start, end), s_t, 2, True,
            return_counts, **rng,
        )  # fmt: skip
        out = _merge_tile_fixed(out_t, m, l, s_t)
    else:
        # Statistics pass (the scores are stashed: the sampling pass reads them, not K again),
        # then the same plan the reference builds from the same tile statistics.
        stash = torch.empty(B, Hq, T * block_n, dtype=torch.float32, device=q.device)
        _, m, l, _, _ = _launch(
            q, k, v, stash, None, None, None, block_n, scale, (start, end), None, 0, False, False
        )
        stats = TileStats(m.double(), l.double())
        alpha, shift, _, _, _ = plan_from_tile_stats(stats, num_samples, mode)
        # The counts depend on the grid's start only modulo 1: its fractional part, taken in
        # float64, keeps the fp32 grid fine (the whole shift grows to S).
        shift = shift - torch.floor(shift)
        out_t, _, _, read, cnt = _launch(
            q, k, v, stash, a0, alpha.float().contiguous(), shift.float().contiguous(),
            block_n, scale, (start, end), None, 1, False, return_counts, **rng,
        )  # fmt: skip
        out = out_t.double().sum(-2) / num_samples
    res = SantaOutput(out.to(q.dtype), read.sum(-1).long())
    if not return_counts:
        return res
    # counts by position in each key range -> by key index in the cache
    pos = start[:, None] + torch.arange(T * block_n, device=q.device)
    where = pos.clamp(max=N - 1)[:, None].expand(B, Hq, -1)
    counts = cnt.double().new_zeros(B, Hq, N).scatter_add_(-1, where, cnt.double())
    return res, counts
