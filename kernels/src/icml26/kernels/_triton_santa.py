"""Triton kernels for SANTA decode (see ``icml26.kernels.santa`` for the definition).

One program per (batch, query head, key tile): scores of the tile from q and the tile of K (all
of K is read), the tile max ``m_t`` and ``l_t``, systematic counts of the tile's rows, and the
gather-and-add of only the value rows with a positive count (masked loads: rows with count 0 are
never read). ``tile_fixed`` needs nothing global and runs in one pass; ``systematic`` and
``tile_prop`` first run the same kernel in statistics-only mode, build the per-tile plan on the
host (O(B H T) work) and then sample. The sampling arithmetic is float64 so that counts agree
with the reference; scores accumulate in float32 (bf16/fp16 inputs are upcast before any dot).
"""

import math

import torch
import triton
import triton.language as tl

from icml26.kernels._triton_common import program_id64
from icml26.kernels.santa import (
    SantaOutput,
    TileStats,
    check_santa_inputs,
    offsets,
    plan_from_tile_stats,
    santa_decode_reference,
    ternary_queries,
)


@triton.jit
def _santa_tile_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    a0_ptr,
    alpha_ptr,
    shift_ptr,
    out_ptr,
    m_ptr,
    l_ptr,
    cnt_ptr,
    N,
    D,
    T,
    group,
    scale,
    s_fixed,
    sq_b,
    sq_h,
    sk_b,
    sk_h,
    sk_n,
    sv_b,
    sv_h,
    sv_n,
    STATS_ONLY: tl.constexpr,
    FIXED: tl.constexpr,
    WRITE_COUNTS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    b = program_id64(0)
    h = program_id64(1)
    t = tl.program_id(2)
    H = tl.num_programs(1)
    kvh = h // group
    offs_n = t * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    mask_n = offs_n < N
    mask_d = offs_d < D
    q = tl.load(q_ptr + b * sq_b + h * sq_h + offs_d, mask=mask_d, other=0.0).to(tl.float32)
    k = tl.load(
        k_ptr + b * sk_b + kvh * sk_h + offs_n[:, None] * sk_n + offs_d[None, :],
        mask=mask_n[:, None] & mask_d[None, :],
        other=0.0,
    ).to(tl.float32)
    s = tl.sum(k * q[None, :], 1) * scale
    s = tl.where(mask_n, s, -float("inf"))
    m = tl.max(s, 0)
    u = tl.where(mask_n, tl.exp((s - m).to(tl.float64)), 0.0)
    l = tl.sum(u, 0)
    pid = (b * H + h) * T + t
    tl.store(m_ptr + pid, m)
    tl.store(l_ptr + pid, l)
    if not STATS_ONLY:
        if FIXED:
            alpha = s_fixed / l
            base = tl.load(a0_ptr + pid)
        else:
            alpha = tl.load(alpha_ptr + pid)
            base = tl.load(a0_ptr + pid) + tl.load(shift_ptr + pid)
        x = u * alpha
        hi = tl.cumsum(x, 0)
        c = tl.floor(base + hi) - tl.floor(base + hi - x)
        c = tl.where(mask_n, c, 0.0)
        read = mask_n & (c > 0)
        v = tl.load(
            v_ptr + b * sv_b + kvh * sv_h + offs_n[:, None] * sv_n + offs_d[None, :],
            mask=read[:, None] & mask_d[None, :],
            other=0.0,
        ).to(tl.float64)
        out = tl.sum(c[:, None] * v, 0)
        tl.store(out_ptr + pid * D + offs_d, out, mask=mask_d)
        if WRITE_COUNTS:
            tl.store(cnt_ptr + (b * H + h) * (T * BLOCK_N) + offs_n, c, mask=mask_n)


def _launch(q, k, v, a0, alpha, shift, block_n, scale, s_fixed, stats_only, fixed, counts):
    B, Hq, D = q.shape
    Hkv, N = k.shape[1], k.shape[2]
    T = math.ceil(N / block_n)
    dev = q.device
    m = torch.empty(B, Hq, T, dtype=torch.float32, device=dev)
    l = torch.empty(B, Hq, T, dtype=torch.float64, device=dev)
    out = torch.zeros(B, Hq, T, D, dtype=torch.float64, device=dev)
    cnt = torch.zeros(B, Hq, T * block_n, dtype=torch.float64, device=dev) if counts else out
    dummy = torch.zeros(1, dtype=torch.float64, device=dev)
    _santa_tile_kernel[(B, Hq, T)](
        q,
        k,
        v,
        a0 if a0 is not None else dummy,
        alpha if alpha is not None else dummy,
        shift if shift is not None else dummy,
        out,
        m,
        l,
        cnt,
        N,
        D,
        T,
        Hq // Hkv,
        scale,
        float(s_fixed),
        q.stride(0),
        q.stride(1),
        k.stride(0),
        k.stride(1),
        k.stride(2),
        v.stride(0),
        v.stride(1),
        v.stride(2),
        STATS_ONLY=stats_only,
        FIXED=fixed,
        WRITE_COUNTS=counts,
        BLOCK_N=block_n,
        BLOCK_D=triton.next_power_of_2(D),
    )
    return out, m.double(), l, cnt


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
):
    """SANTA decode on the Triton kernels; same arguments and result as the reference."""
    check_santa_inputs(q, k, v, num_samples, mode, block_n)
    if mode == "iid":  # the textbook estimator has no tiled kernel: it is the reference
        return santa_decode_reference(
            q, k, v, num_samples, mode, block_n, seed, scale, bernoulli_scores, return_counts
        )
    if block_n & (block_n - 1):
        raise ValueError(f"block_n must be a power of two for the Triton kernel, got {block_n}")
    B, Hq, D = q.shape
    Hkv, N = k.shape[1], k.shape[2]
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    if bernoulli_scores:
        q = ternary_queries(q, torch.Generator().manual_seed(seed))
        seed = seed + 1
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    k = k if k.stride(-1) == 1 else k.contiguous()
    T = math.ceil(N / block_n)
    a0 = offsets(B, Hq, T, mode, seed).to(q.device)
    if mode == "tile_fixed":
        s_t = max(1, num_samples // T)
        out_t, m, l, cnt = _launch(q, k, v, a0, None, None, block_n, scale, s_t, False, True, True)
        _, _, budget, W, Z = plan_from_tile_stats(TileStats(m, l), num_samples, mode)
        out = (W[..., None] * out_t / (Z[..., None] * budget[..., None])).sum(-2)
    else:
        # Statistics pass, then the same plan the reference builds from the same tile stats.
        _, m, l, _ = _launch(q, k, v, None, None, None, block_n, scale, 0, True, False, False)
        alpha, shift, _, _, _ = plan_from_tile_stats(TileStats(m, l), num_samples, mode)
        out_t, _, _, cnt = _launch(
            q,
            k,
            v,
            a0,
            alpha.contiguous(),
            shift.contiguous(),
            block_n,
            scale,
            0,
            False,
            False,
            True,
        )
        out = out_t.sum(-2) / num_samples
    counts = cnt[..., :N]
    rows = (counts > 0).view(B, Hkv, Hq // Hkv, N).any(2).sum(-1)
    res = SantaOutput(out.to(q.dtype), rows)
    return (res, counts) if return_counts else res
