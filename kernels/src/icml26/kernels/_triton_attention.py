"""Triton path of ``softmax_attention``: flash-style causal attention, forward and backward.

Defined by ``icml26.kernels.attention.softmax_attention_reference``. The scheme is
FlashAttention-2's (Dao, 2023), written here for (B, H, T, D) queries against (B, H_kv, T, D)
keys and values (grouped-query heads read their KV head in place, never a repeated copy):

forward, one program per (query block of BLOCK_M rows, batch x query head):
    for each key block (up to the diagonal when causal):
        s = q k^T scale log2(e)                           (base-2 logits: exp2 is the cheap one)
        m' = max(m, rowmax s);  p = exp2(s - m')
        l  = l exp2(m - m') + rowsum p;  acc = acc exp2(m - m') + p v
    out = acc / l,  lse = m + log2 l                      (only lse is kept for the backward)

backward, with delta_i = sum_d dO_id O_id (a PyTorch reduction before the kernels):
    p = exp2(s - lse),  dp = dO v^T,  ds = p (dp - delta)
    dV_j = sum_i p_ij dO_i,  dK_j = scale sum_i ds_ij q_i,  dQ_i = scale sum_j ds_ij k_j
one kernel per (key block, batch x KV head) accumulates dK and dV over the query blocks of every
query head in its group (no atomics), a second per (query block, batch x query head) builds dQ.

Causal masks are applied only on the diagonal: the blocks wholly below it run without the
compare-and-select (in the forward and dQ, the key blocks before the query block; in dK / dV,
the query blocks after the key block).

Under the Triton interpreter (``TRITON_INTERPRET=1``, how CI runs these kernels on CPU) tiles
are upcast to fp32 before ``tl.dot`` (its half-precision dot is not trustworthy there) and the
blocks are 16 x 16 so that short test sequences span several blocks.
"""

import math

import torch
import triton
import triton.language as tl

from icml26.kernels._triton_common import INTERPRET as _INTERPRET
from icml26.kernels._triton_common import program_id64, tuned
from icml26.kernels.attention import check_attention_inputs, check_scale

_LOG2E = 1.4426950408889634


@triton.jit
def _fwd_block(
    acc, l_i, m_i, q, k_base, v_base, start_n, offs_m, offs_d, dmask, T, skt, svt, qk_scale,
    MASKED: tl.constexpr, CAUSAL: tl.constexpr, UPCAST: tl.constexpr, BLOCK_N: tl.constexpr,
    PRECISION: tl.constexpr,
):  # fmt: skip
    # One key block of the online softmax. Column 0 is valid for every row (padded rows
    # included), so the running max is finite after the first block and no row ever computes
    # exp2(-inf - -inf).
    offs_n = start_n + tl.arange(0, BLOCK_N)
    if MASKED:
        nmask = offs_n < T
    else:
        nmask = offs_n >= 0  # all true: a block wholly inside the sequence
    kv_mask = nmask[:, None] & dmask[None, :]
    k = tl.load(k_base + offs_n[:, None] * skt + offs_d[None, :], mask=kv_mask, other=0.0)
    v = tl.load(v_base + offs_n[:, None] * svt + offs_d[None, :], mask=kv_mask, other=0.0)
    if UPCAST:
        k = k.to(tl.float32)
        v = v.to(tl.float32)
    s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * qk_scale
    if MASKED:
        valid = nmask[None, :]
        if CAUSAL:
            valid = valid & (offs_n[None, :] <= offs_m[:, None])
        s = tl.where(valid, s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, 1))
    alpha = tl.exp2(m_i - m_new)
    p = tl.exp2(s - m_new[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
    return acc, l_i, m_new


def _fits(configs, named_args, **kwargs):
    # Tiles that fit shared memory: FlashAttention-2's 128 x 64 for head dims up to 64, 64 x 64
    # up to 128, 32 x 32 beyond; BLOCK_M a multiple of BLOCK_N (the diagonal split needs it).
    d = named_args["D"]
    top = 128 if d <= 64 else 64 if d <= 128 else 32
    ok = [
        c
        for c in configs
        if c.kwargs["BLOCK_M"] <= top
        and c.kwargs["BLOCK_N"] <= min(64, top)
        and c.kwargs["BLOCK_M"] % c.kwargs["BLOCK_N"] == 0
    ]
    return ok or configs[-1:]


ATTN_CONFIGS = [
    triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w, num_stages=st)
    for m, n, w, st in (
        (128, 64, 4, 3),
        (128, 64, 8, 3),
        (64, 64, 4, 2),
        (64, 64, 4, 3),
        (64, 32, 4, 2),
        (32, 32, 4, 1),
    )
]


@tuned(key=["D", "CAUSAL", "UPCAST"], configs=ATTN_CONFIGS, prune=_fits)
@triton.jit
def _attn_fwd_kernel(
    Q,  # (B, H, T, D)
    K,  # (B, H_kv, T, D)
    V,  # (B, H_kv, T, D)
    O,  # (B, H, T, D) in the input dtype
    LSE,  # (B * H, T) fp32, base-2 log-sum-exp of the scaled logits
    T,
    D,
    H,
    G,
    qk_scale,  # scale * log2(e)
    sqb,
    sqh,
    sqt,
    skb,
    skh,
    skt,
    svb,
    svh,
    svt,
    sob,
    soh,
    sot,
    CAUSAL: tl.constexpr,
    UPCAST: tl.constexpr,
    PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    pid_m = program_id64(0)  # int64: offs_m * (a transposed q's T stride) can pass 2^31
    bh = program_id64(1)
    b = bh // H
    h = bh % H
    hk = h // G  # query head h reads KV head h // G
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    mmask = offs_m < T
    dmask = offs_d < D
    q = tl.load(
        Q + b * sqb + h * sqh + offs_m[:, None] * sqt + offs_d[None, :],
        mask=mmask[:, None] & dmask[None, :],
        other=0.0,
    )
    if UPCAST:
        q = q.to(tl.float32)
    k_base = K + b * skb + hk * skh
    v_base = V + b * svb + hk * svh
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    if CAUSAL:
        # Key blocks wholly before this query block need no mask (every key < the block's first
        # row < T); only the blocks on the diagonal are masked. BLOCK_M is a multiple of BLOCK_N.
        diag = pid_m * BLOCK_M
        for start_n in range(0, diag, BLOCK_N):
            acc, l_i, m_i = _fwd_block(
                acc, l_i, m_i, q, k_base, v_base, start_n, offs_m, offs_d, dmask, T, skt, svt,
                qk_scale, False, False, UPCAST, BLOCK_N, PRECISION,
            )  # fmt: skip
        for start_n in range(diag, tl.minimum(diag + BLOCK_M, T), BLOCK_N):
            acc, l_i, m_i = _fwd_block(
                acc, l_i, m_i, q, k_base, v_base, start_n, offs_m, offs_d, dmask, T, skt, svt,
                qk_scale, True, True, UPCAST, BLOCK_N, PRECISION,
            )  # fmt: skip
    else:
        for start_n in range(0, T, BLOCK_N):
            acc, l_i, m_i = _fwd_block(
                acc, l_i, m_i, q, k_base, v_base, start_n, offs_m, offs_d, dmask, T, skt, svt,
                qk_scale, True, False, UPCAST, BLOCK_N, PRECISION,
            )  # fmt: skip
    out = acc / l_i[:, None]
    tl.store(
        O + b * sob + h * soh + offs_m[:, None] * sot + offs_d[None, :],
        out.to(O.dtype.element_ty),
        mask=mmask[:, None] & dmask[None, :],
    )
    tl.store(LSE + bh * T + offs_m, m_i + tl.log2(l_i), mask=mmask)


@triton.jit
def _load_pair(A, B, off, mask, UPCAST: tl.constexpr):
    # Two tiles at the same offsets (q and dO, or k and v), upcast under the interpreter.
    a = tl.load(A + off, mask=mask, other=0.0)
    b = tl.load(B + off, mask=mask, other=0.0)
    if UPCAST:
        a = a.to(tl.float32)
        b = b.to(tl.float32)
    return a, b


@triton.jit
def _probs_and_score_grads(
    q, k, v, do, lse, delta, offs_m, offs_n, T, qk_scale, CAUSAL: tl.constexpr,
    MASKED: tl.constexpr, PRECISION: tl.constexpr,
):  # fmt: skip
    # The backward's shared step: p recomputed from the saved log-sum-exp, and
    # ds = p (dO v^T - delta), both (BLOCK_M, BLOCK_N), zero outside the mask. Unmasked blocks
    # (off the diagonal) may hold padded rows or keys past T: their q, dO (and lse, delta) or k,
    # v are zero, so they add nothing to a stored gradient.
    s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * qk_scale
    if MASKED:
        valid = (offs_m[:, None] < T) & (offs_n[None, :] < T)
        if CAUSAL:
            valid = valid & (offs_n[None, :] <= offs_m[:, None])
        p = tl.where(valid, tl.exp2(s - lse[:, None]), 0.0)
    else:
        p = tl.exp2(s - lse[:, None])
    ds = p * (tl.dot(do, tl.trans(v), input_precision=PRECISION) - delta[:, None])
    return p, ds


@triton.jit
def _dkdv_block(
    dk, dv, k, v, Q, DO, LSE, DELTA, bh, start_m, offs_n, offs_d, dmask, T, D, qk_scale,
    CAUSAL: tl.constexpr, MASKED: tl.constexpr, UPCAST: tl.constexpr, BLOCK_M: tl.constexpr,
    PRECISION: tl.constexpr,
):  # fmt: skip
    # One query block's contribution to a key block's dK and dV. Rows past T load as zero
    # (q, dO, lse, delta), so they contribute nothing even unmasked.
    offs_m = start_m + tl.arange(0, BLOCK_M)
    mmask = offs_m < T
    q_off = bh * T * D + offs_m[:, None] * D + offs_d[None, :]
    q, do = _load_pair(Q, DO, q_off, mmask[:, None] & dmask[None, :], UPCAST)
    lse = tl.load(LSE + bh * T + offs_m, mask=mmask, other=0.0)
    delta = tl.load(DELTA + bh * T + offs_m, mask=mmask, other=0.0)
    p, ds = _probs_and_score_grads(
        q, k, v, do, lse, delta, offs_m, offs_n, T, qk_scale, CAUSAL, MASKED, PRECISION
    )
    dv += tl.dot(tl.trans(p.to(do.dtype)), do, input_precision=PRECISION)
    dk += tl.dot(tl.trans(ds.to(q.dtype)), q, input_precision=PRECISION)
    return dk, dv


@tuned(key=["D", "CAUSAL", "UPCAST"], configs=ATTN_CONFIGS[2:], prune=_fits)
@triton.jit
def _attn_bwd_dkdv_kernel(
    Q,  # (B, H, T, D), contiguous
    K,  # (B, H_kv, T, D), contiguous
    V,
    DO,  # (B, H, T, D), contiguous
    LSE,  # (B * H, T) fp32
    DELTA,  # (B * H, T) fp32
    DK,  # (B, H_kv, T, D) fp32
    DV,  # (B, H_kv, T, D) fp32
    T,
    D,
    H,
    G,
    qk_scale,
    sm_scale,
    CAUSAL: tl.constexpr,
    UPCAST: tl.constexpr,
    PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    pid_n = program_id64(0)
    bhk = program_id64(1)  # batch x KV head
    h_kv = H // G
    b = bhk // h_kv
    hk = bhk % h_kv
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    nmask = offs_n < T
    dmask = offs_d < D
    kv_off = bhk * T * D + offs_n[:, None] * D + offs_d[None, :]
    kv_mask = nmask[:, None] & dmask[None, :]
    k, v = _load_pair(K, V, kv_off, kv_mask, UPCAST)
    dk = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    lo = 0
    diag_end = T
    if CAUSAL:  # query rows before this key block never see it
        lo = (pid_n * BLOCK_N // BLOCK_M) * BLOCK_M
        # query blocks from here on lie wholly below the diagonal: no causal mask
        diag_end = tl.minimum(tl.cdiv((pid_n + 1) * BLOCK_N, BLOCK_M) * BLOCK_M, T)
    for g in range(0, G):
        bh = b * H + hk * G + g
        for start_m in range(lo, diag_end, BLOCK_M):
            dk, dv = _dkdv_block(
                dk, dv, k, v, Q, DO, LSE, DELTA, bh, start_m, offs_n, offs_d, dmask, T, D,
                qk_scale, CAUSAL, True, UPCAST, BLOCK_M, PRECISION,
            )  # fmt: skip
        for start_m in range(diag_end, T, BLOCK_M):
            dk, dv = _dkdv_block(
                dk, dv, k, v, Q, DO, LSE, DELTA, bh, start_m, offs_n, offs_d, dmask, T, D,
                qk_scale, CAUSAL, False, UPCAST, BLOCK_M, PRECISION,
            )  # fmt: skip
    tl.store(DK + kv_off, dk * sm_scale, mask=kv_mask)
    tl.store(DV + kv_off, dv, mask=kv_mask)


@triton.jit
def _dq_block(
    dq, q, do, lse, delta, K, V, bhk, start_n, offs_m, offs_d, dmask, T, D, qk_scale,
    CAUSAL: tl.constexpr, MASKED: tl.constexpr, UPCAST: tl.constexpr, BLOCK_N: tl.constexpr,
    PRECISION: tl.constexpr,
):  # fmt: skip
    offs_n = start_n + tl.arange(0, BLOCK_N)
    nmask = offs_n < T
    kv_off = bhk * T * D + offs_n[:, None] * D + offs_d[None, :]
    k, v = _load_pair(K, V, kv_off, nmask[:, None] & dmask[None, :], UPCAST)
    _, ds = _probs_and_score_grads(
        q, k, v, do, lse, delta, offs_m, offs_n, T, qk_scale, CAUSAL, MASKED, PRECISION
    )
    return dq + tl.dot(ds.to(k.dtype), k, input_precision=PRECISION)


@tuned(key=["D", "CAUSAL", "UPCAST"], configs=ATTN_CONFIGS[2:], prune=_fits)
@triton.jit
def _attn_bwd_dq_kernel(
    Q,
    K,
    V,
    DO,
    LSE,
    DELTA,
    DQ,  # (B, H, T, D) fp32
    T,
    D,
    H,
    G,
    qk_scale,
    sm_scale,
    CAUSAL: tl.constexpr,
    UPCAST: tl.constexpr,
    PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    pid_m = program_id64(0)  # int64: offs_m * (a transposed q's T stride) can pass 2^31
    bh = program_id64(1)
    b = bh // H
    bhk = b * (H // G) + (bh % H) // G
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    mmask = offs_m < T
    dmask = offs_d < D
    q_off = bh * T * D + offs_m[:, None] * D + offs_d[None, :]
    q_mask = mmask[:, None] & dmask[None, :]
    q, do = _load_pair(Q, DO, q_off, q_mask, UPCAST)
    lse = tl.load(LSE + bh * T + offs_m, mask=mmask, other=0.0)
    delta = tl.load(DELTA + bh * T + offs_m, mask=mmask, other=0.0)
    dq = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    diag = 0
    hi = T
    if CAUSAL:  # key blocks wholly before this query block: no mask
        diag = pid_m * BLOCK_M
        hi = tl.minimum(diag + BLOCK_M, T)
    for start_n in range(0, diag, BLOCK_N):
        dq = _dq_block(dq, q, do, lse, delta, K, V, bhk, start_n, offs_m, offs_d, dmask, T, D,
                       qk_scale, CAUSAL, False, UPCAST, BLOCK_N, PRECISION)  # fmt: skip
    for start_n in range(diag, hi, BLOCK_N):
        dq = _dq_block(dq, q, do, lse, delta, K, V, bhk, start_n, offs_m, offs_d, dmask, T, D,
                       qk_scale, CAUSAL, True, UPCAST, BLOCK_N, PRECISION)  # fmt: skip
    tl.store(DQ + q_off, dq * sm_scale, mask=q_mask)


def _launch_config(D: int) -> dict:
    """Tiles under the interpreter (16 x 16, so short test sequences span several blocks); on a
    GPU the autotuner picks them (``ATTN_CONFIGS``) and this is empty."""
    return dict(BLOCK_M=16, BLOCK_N=16) if _INTERPRET else {}


def _grid(blocks_of: str, rows: int, T: int, cfg: dict):
    """The launch grid: (row blocks of T, rows), the block size from ``cfg`` or the tuner."""
    if cfg:
        return (triton.cdiv(T, cfg[blocks_of]), rows)
    return lambda meta: (triton.cdiv(T, meta[blocks_of]), rows)


def _precision(dtype: torch.dtype) -> str:
    """How fp32 tiles use the tensor cores. On a GPU, fp32 inputs get ``tf32x3`` (three TF32
    products, about fp32's accuracy: LUCID runs this attention on an fp32 V' whose rounding
    matters); plain TF32 (Triton's default) would round V' to 10 bits. Half-precision tiles
    ignore it. The interpreter computes in IEEE fp32."""
    if _INTERPRET:
        return "ieee"
    return "tf32x3" if dtype == torch.float32 else "tf32"


def _upcast(dtype: torch.dtype) -> bool:
    return _INTERPRET or dtype == torch.float32


def _last_dim_contiguous(t: torch.Tensor) -> torch.Tensor:
    return t if t.stride(-1) == 1 else t.contiguous()


def _forward(q, k, v, causal: bool, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    B, H, T, D = q.shape
    G = H // k.shape[1]
    q, k, v = (_last_dim_contiguous(t) for t in (q, k, v))
    o = torch.empty(B, H, T, D, device=q.device, dtype=q.dtype)
    lse = torch.empty(B * H, T, device=q.device, dtype=torch.float32)
    cfg = _launch_config(D)
    _attn_fwd_kernel[_grid("BLOCK_M", B * H, T, cfg)](
        q,
        k,
        v,
        o,
        lse,
        T,
        D,
        H,
        G,
        scale * _LOG2E,
        *q.stride()[:3],
        *k.stride()[:3],
        *v.stride()[:3],
        *o.stride()[:3],
        CAUSAL=causal,
        UPCAST=_upcast(q.dtype),
        PRECISION=_precision(q.dtype),
        BLOCK_D=max(16, triton.next_power_of_2(D)),
        **cfg,
    )
    return o, lse


def _backward(q, k, v, o, lse, do, causal: bool, scale: float):
    B, H, T, D = q.shape
    H_kv = k.shape[1]
    G = H // H_kv
    q, k, v, do = (t.contiguous() for t in (q, k, v, do))
    delta = (do.float() * o.float()).sum(-1).reshape(B * H, T)
    dq = torch.empty(B, H, T, D, device=q.device, dtype=torch.float32)
    dk = torch.empty(B, H_kv, T, D, device=q.device, dtype=torch.float32)
    dv = torch.empty_like(dk)
    cfg = _launch_config(D)
    common = dict(
        CAUSAL=causal,
        UPCAST=_upcast(q.dtype),
        PRECISION=_precision(q.dtype),
        BLOCK_D=max(16, triton.next_power_of_2(D)),
    )
    args = (T, D, H, G, scale * _LOG2E, scale)
    _attn_bwd_dkdv_kernel[_grid("BLOCK_N", B * H_kv, T, cfg)](
        q, k, v, do, lse, delta, dk, dv, *args, **common, **cfg
    )
    _attn_bwd_dq_kernel[_grid("BLOCK_M", B * H, T, cfg)](
        q, k, v, do, lse, delta, dq, *args, **common, **cfg
    )
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype)


class _SoftmaxAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal: bool, scale: float):
        o, lse = _forward(q, k, v, causal, scale)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal, ctx.scale = causal, scale
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = _backward(q, k, v, o, lse, do, ctx.causal, ctx.scale)
        return dq, dk, dv, None, None


def softmax_attention_triton(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool = True,
    scale: float | None = None,
) -> torch.Tensor:
    """Flash-style attention (see the module docstring); (B, H, T, D) in q's dtype."""
    check_attention_inputs(q, k, v)
    if q.dtype == torch.float64:
        raise TypeError("the Triton attention computes in fp32: use the reference for fp64")
    scale = check_scale(scale)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    return _SoftmaxAttention.apply(q, k, v, bool(causal), scale)
