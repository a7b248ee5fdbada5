"""Triton path of ``lucid_solve``: blocked forward substitution ``V' = L^{-1} V``, and backward.

Defined by ``icml26.kernels.lucid.lucid_solve_reference``. Rows are cut into blocks (16 to 64
rows) and blocks into panels (512 rows; 256 or 128 for very long sequences). Per panel:

    OUT_panel = P_panel X_panel            P_panel the inverse of L's diagonal panel, built up
                                           front (below); one program per (row block, batch x
                                           head, value chunk): the whole panel in parallel
    X_r -= sum_{j in panel} L_rj OUT_j     for every later row block r, one parallel launch;
                                           L_rj = exp(sqrt(d) (U_r U_j^T - 1)) built on the fly

so a solve is two parallel launches per panel and no program walks a chain of dependent blocks.
The panel inverses come from the diagonal blocks' inverses (small, batched ``solve_triangular``)
by recursive doubling, ``[[A, 0], [C, B]]^-1 = [[A^-1, 0], [-B^-1 C A^-1, B^-1]]``, one batched
matmul per level over every panel and head, in float64 (the inverse of L can hold large,
cancelling entries when keys are correlated). The kernels' dots run on tensor cores with
``tf32x3`` (three TF32 products: about fp32's accuracy) on a GPU, IEEE fp32 in the interpreter.

The backward solve ``dV = L^{-T} dV'`` is the same scheme run from the last panel to the first
with the transposed panel inverses and blocks (``(L_ji)^T = exp(sqrt(d) (U_i U_j^T - 1))`` for
j > i: the same formula). The gradient through ``L`` to the keys, from ``dL = -dV V'^T`` on the
strict lower triangle, is a second kernel that builds each (row block, column block) of dL and L
on the fly (one program per row block, both triangle halves), so no (T, T) matrix is stored.
"""

import math

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from icml26.kernels._triton_common import INTERPRET as _INTERPRET
from icml26.kernels._triton_common import program_id64, tuned
from icml26.kernels.attention import check_attention_inputs as check_lucid_inputs
from icml26.kernels.attention import check_decode_inputs, check_scale, compute_dtype


@triton.jit
def _l_block_product(
    U,
    OUT,
    u_i,
    rmask,
    j,
    T,
    bh,
    sqrt_d,
    stride_ub,
    stride_ut,
    stride_ob,
    stride_ot,
    ck,
    kmask,
    cv,
    vmask,
    BLOCK: tl.constexpr,
    PRECISION: tl.constexpr,
):
    # L_ij OUT_j for row block i (unit keys u_i, row mask rmask) and column block j, with
    # L_ij = exp(sqrt(d) (u_i u_j^T - 1)) built on the fly (the formula is symmetric, so the
    # backward's transposed blocks use it unchanged).
    cols = j * BLOCK + tl.arange(0, BLOCK)
    cmask = cols < T
    u_j = tl.load(
        U + bh * stride_ub + cols[:, None] * stride_ut + ck[None, :],
        mask=cmask[:, None] & kmask[None, :],
        other=0.0,
    )
    l_ij = tl.exp(sqrt_d * (tl.dot(u_i, tl.trans(u_j), input_precision=PRECISION) - 1.0))
    l_ij = tl.where(rmask[:, None] & cmask[None, :], l_ij, 0.0)
    x_j = tl.load(
        OUT + bh * stride_ob + cols[:, None] * stride_ot + cv[None, :],
        mask=cmask[:, None] & vmask[None, :],
        other=0.0,
    )
    return tl.dot(l_ij, x_j, input_precision=PRECISION)


@tuned(key=["DV", "BLOCK", "PB", "REVERSE"])
@triton.jit
def _lucid_panel_solve_kernel(
    P,  # (BH, NP, PB, PB) fp32 inverses of L's diagonal panels
    X,  # (BH, T, DV) right-hand side (V forward, dV' backward), earlier panels subtracted
    OUT,  # (BH, T, DV) fp32 solution
    T,
    DV,
    NP,
    PANEL,  # this panel's index; its row blocks are [BLK_LO, BLK_HI)
    BLK_LO,
    BLK_HI,
    stride_xb,
    stride_xt,
    stride_ob,
    stride_ot,
    PB: tl.constexpr,
    BLOCK: tl.constexpr,
    BLOCK_DV: tl.constexpr,
    REVERSE: tl.constexpr,
    PRECISION: tl.constexpr,
):
    # OUT_i = sum_j (P)_ij X_j over the panel's column blocks (j <= i forward; for L^T the
    # panel's inverse is P^T, j >= i): one program per (row block, batch x head, value chunk),
    # every row block of the panel at once - no sequential walk inside the panel.
    r = tl.program_id(0)
    bh = program_id64(1)
    col0 = tl.program_id(2) * BLOCK_DV
    i = BLK_LO + r
    rr = tl.arange(0, BLOCK)
    cv = col0 + tl.arange(0, BLOCK_DV)
    vmask = cv < DV
    rows = i * BLOCK + rr
    rmask = rows < T
    p_base = P + (bh * NP + PANEL) * PB * PB
    acc = tl.zeros([BLOCK, BLOCK_DV], dtype=tl.float32)
    lo = i if REVERSE else BLK_LO
    hi = BLK_HI if REVERSE else i + 1
    for j in range(lo, hi):
        cols = j * BLOCK + rr
        if REVERSE:  # (P^T)_ij = (P_ji)^T
            p = tl.load(
                p_base + ((j - BLK_LO) * BLOCK + rr[None, :]) * PB + r * BLOCK + rr[:, None]
            )
        else:
            p = tl.load(
                p_base + (r * BLOCK + rr[:, None]) * PB + (j - BLK_LO) * BLOCK + rr[None, :]
            )
        x = tl.load(
            X + bh * stride_xb + cols[:, None] * stride_xt + cv[None, :],
            mask=(cols < T)[:, None] & vmask[None, :],
            other=0.0,
        ).to(tl.float32)
        acc += tl.dot(p, x, input_precision=PRECISION)
    tl.store(
        OUT + bh * stride_ob + rows[:, None] * stride_ot + cv[None, :],
        acc,
        mask=rmask[:, None] & vmask[None, :],
    )


def _block_size(T: int) -> int:
    # tl.dot needs >= 16; larger blocks mean fewer sequential steps but bigger diagonal inverses.
    return 16 if T <= 256 else 32 if T <= 2048 else 64


def _diagonal_inverses(u: torch.Tensor, block: int, sqrt_d: float) -> torch.Tensor:
    """(BH, NB, BLOCK, BLOCK) inverses of the unit lower-triangular diagonal blocks of L; the
    padding past T is the identity."""
    bh, T, dk = u.shape
    nb = triton.cdiv(T, block)
    pad = nb * block - T
    up = F.pad(u, (0, 0, 0, pad)).view(bh, nb, block, dk)
    diag = torch.tril(torch.exp(sqrt_d * (up @ up.transpose(-1, -2) - 1.0)))
    if pad:
        valid = torch.arange(nb * block, device=u.device).view(nb, block) < T
        keep = valid[:, :, None] & valid[:, None, :]
        eye = torch.eye(block, device=u.device, dtype=u.dtype)
        diag = torch.where(keep, diag, eye)
    eye = torch.eye(block, device=u.device, dtype=u.dtype).expand_as(diag)
    return torch.linalg.solve_triangular(diag, eye, upper=False, unitriangular=True)


def _panel_inverses(
    u: torch.Tensor, dinv: torch.Tensor, panel_blocks: int, sqrt_d: float
) -> torch.Tensor:
    """(BH, NP, PB, PB) fp32 inverses of L's diagonal panels (PB = panel_blocks x BLOCK rows),
    by recursive doubling from the diagonal blocks' inverses, in float64:

        [[A, 0], [C, B]]^-1 = [[A^-1, 0], [-B^-1 C A^-1, B^-1]]

    with C the block of L below A and left of B, built from the unit keys. Each level is one
    batched matmul over every panel and head (parallel, tensor-core work); the padding past T is
    the identity."""
    bh, T, dk = u.shape
    nb, b = dinv.shape[1], dinv.shape[-1]
    n_panels = triton.cdiv(nb, panel_blocks)
    nbp = n_panels * panel_blocks
    inv = dinv.double()
    if nbp > nb:
        eye = torch.eye(b, device=u.device, dtype=inv.dtype).expand(bh, nbp - nb, b, b)
        inv = torch.cat([inv, eye], 1)
    up = F.pad(u.double(), (0, 0, 0, nbp * b - T))
    valid = torch.arange(nbp * b, device=u.device) < T
    s = b
    while s < panel_blocks * b:
        n = inv.shape[1] // 2  # pairs of s x s blocks
        a_inv, b_inv = inv[:, 0::2], inv[:, 1::2]
        halves = up.view(bh, n, 2, s, dk)
        c = torch.exp(sqrt_d * (halves[:, :, 1] @ halves[:, :, 0].transpose(-1, -2) - 1.0))
        vm = valid.view(n, 2, s)
        c = c * (vm[:, 1, :, None] & vm[:, 0, None, :])  # padded rows / columns: zero
        merged = inv.new_zeros(bh, n, 2 * s, 2 * s)
        merged[..., :s, :s] = a_inv
        merged[..., s:, s:] = b_inv
        merged[..., s:, :s] = -(b_inv @ c @ a_inv)
        inv, s = merged, 2 * s
    return inv.float().contiguous()


@tuned(key=["DK", "DV", "BLOCK"], restore=["X"])
@triton.jit
def _lucid_panel_update_kernel(
    U,  # (BH, T, DK) unit keys, fp32
    X,  # (BH, T, DV) fp32 right-hand side, updated in place
    OUT,  # (BH, T, DV) fp32 solution (this panel's rows are final)
    T,
    DK,
    DV,
    ROW_BLK0,  # first row block this launch updates
    BLK_LO,  # the panel just solved: column blocks [BLK_LO, BLK_HI)
    BLK_HI,
    sqrt_d,
    stride_ub,
    stride_ut,
    stride_xb,
    stride_xt,
    stride_ob,
    stride_ot,
    BLOCK: tl.constexpr,
    BLOCK_DK: tl.constexpr,
    BLOCK_DV: tl.constexpr,
    PRECISION: tl.constexpr,
):
    # X_r -= sum_{j in panel} L_rj OUT_j for one row block r outside the panel: every such row
    # block is independent, so this is one parallel launch per panel. The same formula serves
    # the backward (rows before the panel, L^T): (L^T)_rj = L_jr = exp(sqrt(d) (u_r . u_j - 1)).
    r_blk = ROW_BLK0 + tl.program_id(0)
    bh = program_id64(1)
    col0 = tl.program_id(2) * BLOCK_DV
    r = tl.arange(0, BLOCK)
    ck = tl.arange(0, BLOCK_DK)
    cv = col0 + tl.arange(0, BLOCK_DV)
    kmask = ck < DK
    vmask = cv < DV
    rows = r_blk * BLOCK + r
    rmask = rows < T
    u_r = tl.load(
        U + bh * stride_ub + rows[:, None] * stride_ut + ck[None, :],
        mask=rmask[:, None] & kmask[None, :],
        other=0.0,
    )
    acc = tl.zeros([BLOCK, BLOCK_DV], dtype=tl.float32)
    for j in range(BLK_LO, BLK_HI):
        acc += _l_block_product(
            U,
            OUT,
            u_r,
            rmask,
            j,
            T,
            bh,
            sqrt_d,
            stride_ub,
            stride_ut,
            stride_ob,
            stride_ot,
            ck,
            kmask,
            cv,
            vmask,
            BLOCK,
            PRECISION,
        )
    x_ptr = X + bh * stride_xb + rows[:, None] * stride_xt + cv[None, :]
    x_mask = rmask[:, None] & vmask[None, :]
    tl.store(x_ptr, tl.load(x_ptr, mask=x_mask, other=0.0) - acc, mask=x_mask)


def _panel_blocks(block: int, bh: int, T: int) -> int:
    """Row blocks per panel (a power of two). Within a panel the solve is one parallel matmul
    with the panel's inverse; across panels the off-diagonal update is one parallel launch over
    the remaining row blocks, so a solve is 2 launches per panel. 512-row panels keep that chain
    short; building the inverses takes ~32 bytes per entry of BH x T x PB (float64 with
    temporaries), so longer sequences get 256- or 128-row panels (~4 GiB at most above that only
    past BH x T = 1M). Under the interpreter, 2-block panels so that short test sequences
    cross panels."""
    if _INTERPRET:
        return 2
    # the doubling works in float64 with a few panel-sized temporaries: ~32 bytes per entry
    rows = 512
    while rows > 128 and bh * T * rows * 32 > 1 << 32:
        rows //= 2
    return max(1, rows // block)


# Tensor cores with error compensation on a GPU (3 TF32 products: about fp32's accuracy, which
# the solve needs: it amplifies rounding); the interpreter's dot is plain fp32 either way.
_PRECISION = "ieee" if _INTERPRET else "tf32x3"


def _substitute(
    u: torch.Tensor, x: torch.Tensor, dinv: torch.Tensor, reverse: bool
) -> torch.Tensor:
    """Solve ``L out = x`` (``L^T out = x`` when ``reverse``) panel by panel; ``dinv`` holds the
    inverses of L's diagonal blocks (not transposed)."""
    bh, T, dk = u.shape
    dv = x.shape[-1]
    block = dinv.shape[-1]
    nb = dinv.shape[1]
    sqrt_d = math.sqrt(dk)
    panel = _panel_blocks(block, bh, T)
    p_inv = _panel_inverses(u, dinv, panel, sqrt_d)
    n_panels = p_inv.shape[1]
    panels = [(lo, min(lo + panel, nb)) for lo in range(0, nb, panel)]
    if len(panels) > 1:  # the update kernel writes into x: work on an fp32 copy
        x = x.to(torch.float32, copy=True).contiguous()
    out = torch.empty(bh, T, dv, device=x.device, dtype=torch.float32)
    block_dv = max(16, min(64, triton.next_power_of_2(dv)))
    # narrower value chunks when the panel solve would leave SMs idle (B = 1, few KV heads)
    while block_dv > 16 and bh * panel * triton.cdiv(dv, block_dv) < 264:
        block_dv //= 2
    n_dv = triton.cdiv(dv, block_dv)
    consts = dict(BLOCK=block, BLOCK_DK=max(16, triton.next_power_of_2(dk)), BLOCK_DV=block_dv)
    strides = (u.stride(0), u.stride(1), x.stride(0), x.stride(1), out.stride(0), out.stride(1))
    for index, (lo, hi) in reversed(list(enumerate(panels))) if reverse else enumerate(panels):
        _lucid_panel_solve_kernel[(hi - lo, bh, n_dv)](
            p_inv, x, out, T, dv, n_panels, index, lo, hi, *strides[2:],
            PB=panel * block, BLOCK=block, BLOCK_DV=block_dv, REVERSE=reverse,
            PRECISION=_PRECISION,
        )  # fmt: skip
        first, count = (0, lo) if reverse else (hi, nb - hi)  # the rows still to solve
        if count:
            _lucid_panel_update_kernel[(count, bh, n_dv)](
                u,
                x,
                out,
                T,
                dk,
                dv,
                first,
                lo,
                hi,
                sqrt_d,
                *strides,
                **consts,
                PRECISION=_PRECISION,
            )
    return out


@triton.jit
def _row_dots(
    A, B, rows, cols, rmask, cmask, DV, BLOCK: tl.constexpr, BLOCK_C: tl.constexpr,
    PRECISION: tl.constexpr,
):  # fmt: skip
    """(BLOCK, BLOCK) inner products a_r . b_c over the value dimension (rows of A and B are
    DV long), BLOCK_C columns at a time so only one slice of each is live in registers."""
    cc = tl.arange(0, BLOCK_C)
    prod = tl.zeros([BLOCK, BLOCK], dtype=tl.float32)
    for c0 in range(0, DV, BLOCK_C):
        cv = c0 + cc
        vmask = cv < DV
        a_c = tl.load(
            A + rows[:, None] * DV + cv[None, :], mask=rmask[:, None] & vmask[None, :], other=0.0
        )
        b_c = tl.load(
            B + cols[:, None] * DV + cv[None, :], mask=cmask[:, None] & vmask[None, :], other=0.0
        )
        prod += tl.dot(a_c, tl.trans(b_c), input_precision=PRECISION)
    return prod


@tuned(key=["DK", "DV", "BLOCK"])
@triton.jit
def _lucid_key_grad_kernel(
    U,  # (BH, T, DK) unit keys, fp32
    G,  # (BH, T, DV) dV = L^{-T} dV', fp32
    VP,  # (BH, T, DV) V', fp32
    OUT,  # (BH, T, DK) fp32: d loss / d u
    T,
    DK,
    DV,
    NB,
    sqrt_d,
    BLOCK: tl.constexpr,
    BLOCK_DK: tl.constexpr,
    BLOCK_C: tl.constexpr,
    PRECISION: tl.constexpr,
):
    # With dC_ab = -(g_a . v'_b) L_ab sqrt(d) for a > b (the strict lower triangle of L; the unit
    # diagonal is constant), the gradient w.r.t. the unit keys is
    #     du_i = sum_{b < i} dC_ib u_b  +  sum_{a > i} dC_ai u_a,
    # built block by block (row block i against every column block j), so no (T, T) matrix is
    # stored. To fit registers at D = 128 the two sums run as two loops (the first needs the
    # row block's dV, the second its V', never both) and the inner products over the value
    # dimension go BLOCK_C columns at a time (reloaded from cache, not held): the live tiles
    # are u_i, the accumulator, u_j and one BLOCK x BLOCK score tile.
    bh = program_id64(0)
    i = tl.program_id(1)
    r = tl.arange(0, BLOCK)
    ck = tl.arange(0, BLOCK_DK)
    kmask = ck < DK
    rows = i * BLOCK + r
    rmask = rows < T
    base_k = bh * T * DK
    base_v = bh * T * DV
    u_i = tl.load(
        U + base_k + rows[:, None] * DK + ck[None, :],
        mask=rmask[:, None] & kmask[None, :],
        other=0.0,
    )
    acc = tl.zeros([BLOCK, BLOCK_DK], dtype=tl.float32)
    for part in range(0, 2):
        # part 0: rows of block i as a, columns of blocks j <= i as b < a;
        # part 1: rows of blocks j >= i as a > b, b the rows of block i (L_ab = l_ij^T)
        lo = i if part == 1 else 0
        hi = NB if part == 1 else i + 1
        for j in range(lo, hi):
            cols = j * BLOCK + r
            cmask = cols < T
            u_j = tl.load(
                U + base_k + cols[:, None] * DK + ck[None, :],
                mask=cmask[:, None] & kmask[None, :],
                other=0.0,
            )
            l_ij = tl.exp(sqrt_d * (tl.dot(u_i, tl.trans(u_j), input_precision=PRECISION) - 1.0))
            # part 0: g_i . v'_j; part 1: v'_i . g_j (the transposed block of dC)
            a_ptr = G if part == 0 else VP
            b_ptr = VP if part == 0 else G
            prod = _row_dots(
                a_ptr + base_v, b_ptr + base_v, rows, cols, rmask, cmask, DV, BLOCK, BLOCK_C,
                PRECISION,
            )  # fmt: skip
            d_c = -prod * l_ij * sqrt_d
            valid = rmask[:, None] & cmask[None, :]
            if part == 0:
                valid = valid & (cols[None, :] < rows[:, None])
            else:
                valid = valid & (cols[None, :] > rows[:, None])
            d_c = tl.where(valid, d_c, 0.0)
            acc += tl.dot(d_c, u_j, input_precision=PRECISION)
    tl.store(
        OUT + base_k + rows[:, None] * DK + ck[None, :], acc, mask=rmask[:, None] & kmask[None, :]
    )


def _key_grad(u: torch.Tensor, g: torch.Tensor, vp: torch.Tensor) -> torch.Tensor:
    bh, T, dk = u.shape
    dv = g.shape[-1]
    out = torch.empty_like(u)
    # its own blocks: 32 rows keep the kernel's live tiles in registers at D = 128 (16 in the
    # interpreter, so test sequences cross blocks)
    block = 16 if _INTERPRET or T <= 256 else 32
    nb = triton.cdiv(T, block)
    _lucid_key_grad_kernel[(bh, nb)](
        u.contiguous(),
        g.contiguous(),
        vp.contiguous(),
        out,
        T,
        dk,
        dv,
        nb,
        math.sqrt(dk),
        BLOCK=block,
        BLOCK_DK=max(16, triton.next_power_of_2(dk)),
        BLOCK_C=max(16, min(32, triton.next_power_of_2(dv))),
        PRECISION=_PRECISION,
    )
    return out


class _LucidSolve(torch.autograd.Function):
    @staticmethod
    def forward(ctx, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        B, H, T, dk = k.shape
        norm = k.float().norm(dim=-1, keepdim=True).clamp_min(1e-12)
        u = (k.float() / norm).reshape(B * H, T, dk).contiguous()
        sqrt_d = math.sqrt(dk)
        dinv = _diagonal_inverses(u.double(), _block_size(T), sqrt_d).contiguous()
        x = v.reshape(B * H, T, v.shape[-1]).contiguous()
        vp = _substitute(u, x, dinv, reverse=False)
        ctx.save_for_backward(u, norm, vp, dinv)
        ctx.shape = (B, H, T, dk, v.shape[-1])
        ctx.dtypes = (k.dtype, v.dtype)
        return vp.view(B, H, T, -1)

    @staticmethod
    def backward(ctx, grad_vp: torch.Tensor):
        u, norm, vp, dinv = ctx.saved_tensors
        B, H, T, dk, dv = ctx.shape
        g = grad_vp.float().reshape(B * H, T, dv).contiguous()
        # dV = L^{-T} dV': the panels run last to first with the transposed panel inverses.
        grad_v = _substitute(u, g, dinv, reverse=True)
        grad_k = None
        if ctx.needs_input_grad[0]:
            # d loss / d u by the fused kernel: no (T, T) matrix.
            grad_u = _key_grad(u, grad_v, vp)
            # u = k / ||k||: project out the radial part.
            grad_u = grad_u.view(B, H, T, dk)
            uu = u.view(B, H, T, dk)
            grad_k = (grad_u - (grad_u * uu).sum(-1, keepdim=True) * uu) / norm
            grad_k = grad_k.to(ctx.dtypes[0])
        return grad_k, grad_v.view(B, H, T, dv).to(ctx.dtypes[1])


def lucid_solve_backward_triton(
    k: torch.Tensor, vp: torch.Tensor, grad_vp: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(dK, dV) of ``V' = L^{-1} V`` given the forward's output ``vp``, by the same kernels as
    ``_LucidSolve.backward`` (the diagonal inverses recomputed): for the torch.library op, whose
    backward cannot call autograd."""
    B, H, T, dk = k.shape
    dv = vp.shape[-1]
    norm = k.float().norm(dim=-1, keepdim=True).clamp_min(1e-12)
    u = (k.float() / norm).reshape(B * H, T, dk).contiguous()
    dinv = _diagonal_inverses(u.double(), _block_size(T), math.sqrt(dk)).contiguous()
    g = grad_vp.float().reshape(B * H, T, dv).contiguous()
    grad_v = _substitute(u, g, dinv, reverse=True)
    x = vp.float().reshape(B * H, T, dv).contiguous()
    grad_u = _key_grad(u, grad_v, x).view(B, H, T, dk)
    uu = u.view(B, H, T, dk)
    grad_k = (grad_u - (grad_u * uu).sum(-1, keepdim=True) * uu) / norm
    return grad_k.to(k.dtype), grad_v.view(B, H, T, dv)


def lucid_solve_triton(k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``V' = L^{-1} V`` through the Triton substitution kernel; (B, H_kv, T, D) fp32."""
    check_lucid_inputs(None, k, v)
    if compute_dtype(k.dtype) != torch.float32:
        raise TypeError("the Triton LUCID solve computes in fp32: use the reference for fp64")
    return _LucidSolve.apply(k, v)


# -- the fused decode step, split over the cache ------------------------------------------------
# One program per (batch x KV head, cache split) serves the G = H / H_kv query heads of its group
# on one contiguous chunk of the cache (flash-decoding's split: at B = 1 and 8 KV heads a single
# program per head would leave a GPU nearly idle on a long cache). A single pass over its chunk
# reads each (k_j, v'_j) block once and feeds both sums of the decode rule:
#
#     acc_L = sum_{j in chunk} L_tj v'_j,  L_tj = exp(sqrt(d) (u_t . u_j - 1))
#     online softmax over s_gj = scale q_g . k_j: partial max m_g, sum l_g, accumulator acc_g
#
# A merge program per (batch x KV head) then sums acc_L over the chunks (v'_t = v_t - acc_L),
# rescales the partial softmaxes to their common max, and adds the new token's own term (key
# k_t, value v'_t), which needs v'_t and so can only join after every chunk.
#
# The key norms are recomputed from the K rows each step rather than cached: the rows are in
# registers for the scores anyway, so a norm costs D multiply-adds per row on data already
# read, in a step whose time is the cache read.
@triton.jit
def _preconditioner_row(k, u_new, nmask, sqrt_d):
    """L_tj = exp(sqrt(d) (u_t . u_j - 1)) of the new token t against a block of cached keys
    k (BLOCK_N, BLOCK_D); 0 on masked rows."""
    k_norm = tl.sqrt(tl.sum(k * k, 1))
    cos = tl.sum(k * u_new[None, :], 1) / tl.where(nmask, k_norm, 1.0)
    return tl.where(nmask, tl.exp(sqrt_d * (cos - 1.0)), 0.0)  # (BLOCK_N,)


@tuned(key=["D", "G", "BLOCK_N"])
@triton.jit
def _lucid_decode_split_kernel(
    Q,  # (B, H_kv, G, D)
    KC,  # (B, H_kv, N, D)
    VC,  # (B, H_kv, N, D) V' cache
    KN,  # (B, H_kv, D)
    ACC_L,  # (B * H_kv, SPLITS, D) fp32: partial preconditioner sums
    M,  # (B * H_kv, SPLITS, G) fp32: partial maxima
    L,  # (B * H_kv, SPLITS, G) fp32: partial sums
    ACC,  # (B * H_kv, SPLITS, G, D) fp32: partial accumulators
    N,
    CHUNK,  # cache rows per split (a multiple of BLOCK_N)
    SPLITS,
    G,
    D,
    H_KV,
    scale,
    sqrt_d,
    sq_b, sq_h, sq_g,  # strides of Q, KC, VC and KN (the last dimension is contiguous)
    skc_b, skc_h, skc_n,
    svc_b, svc_h, svc_n,
    skn_b, skn_h,
    BLOCK_N: tl.constexpr,
    BLOCK_G: tl.constexpr,
    BLOCK_D: tl.constexpr,
    PRECISION: tl.constexpr,
):  # fmt: skip
    pid = program_id64(0)
    split = tl.program_id(1)
    b = pid // H_KV
    h = pid % H_KV
    offs_d = tl.arange(0, BLOCK_D)
    offs_g = tl.arange(0, BLOCK_G)
    dmask = offs_d < D
    gmask = offs_g < G
    gd_mask = gmask[:, None] & dmask[None, :]
    q = tl.load(
        Q + b * sq_b + h * sq_h + offs_g[:, None] * sq_g + offs_d[None, :], mask=gd_mask, other=0.0
    ).to(tl.float32)  # (BLOCK_G, BLOCK_D)
    k_new = tl.load(KN + b * skn_b + h * skn_h + offs_d, mask=dmask, other=0.0).to(tl.float32)
    u_new = k_new / tl.sqrt(tl.sum(k_new * k_new, 0))
    acc_l = tl.zeros([BLOCK_D], dtype=tl.float32)
    m = tl.full([BLOCK_G], float("-inf"), dtype=tl.float32)
    l = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, BLOCK_D], dtype=tl.float32)
    lo = split * CHUNK
    hi = tl.minimum(lo + CHUNK, N)
    for start in range(lo, hi, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        nmask = offs_n < hi
        kv_mask = nmask[:, None] & dmask[None, :]
        k = tl.load(
            KC + b * skc_b + h * skc_h + offs_n[:, None] * skc_n + offs_d[None, :],
            mask=kv_mask,
            other=0.0,
        ).to(tl.float32)  # (BLOCK_N, BLOCK_D)
        vp = tl.load(
            VC + b * svc_b + h * svc_h + offs_n[:, None] * svc_n + offs_d[None, :],
            mask=kv_mask,
            other=0.0,
        ).to(tl.float32)
        acc_l += tl.sum(_preconditioner_row(k, u_new, nmask, sqrt_d)[:, None] * vp, 0)
        # the attention scores of every query head of the group on the same rows, by tl.dot
        # (the group padded to 16 rows; padded heads are never stored)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * scale  # (BLOCK_G, BLOCK_N)
        s = tl.where(nmask[None, :], s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        l = l * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p, vp, input_precision=PRECISION)
        m = m_new
    part = pid * SPLITS + split
    tl.store(ACC_L + part * D + offs_d, acc_l, mask=dmask)
    tl.store(M + part * G + offs_g, m, mask=gmask)
    tl.store(L + part * G + offs_g, l, mask=gmask)
    tl.store(ACC + (part * G + offs_g[:, None]) * D + offs_d[None, :], acc, mask=gd_mask)


@triton.jit
def _lucid_decode_merge_kernel(
    Q,  # (B, H_kv, G, D)
    KN,  # (B, H_kv, D)
    VN,  # (B, H_kv, D)
    ACC_L,
    M,
    L,
    ACC,
    OUT,  # (B, H_kv, G, D) fp32
    VPN,  # (B, H_kv, D) fp32: v'_t
    SPLITS,
    G,
    D,
    H_KV,
    scale,
    sq_b,
    sq_h,
    sq_g,
    skn_b,
    skn_h,
    svn_b,
    svn_h,
    BLOCK_S: tl.constexpr,
    BLOCK_G: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    pid = program_id64(0)
    b = pid // H_KV
    h = pid % H_KV
    offs_s = tl.arange(0, BLOCK_S)
    offs_g = tl.arange(0, BLOCK_G)
    offs_d = tl.arange(0, BLOCK_D)
    smask, gmask, dmask = offs_s < SPLITS, offs_g < G, offs_d < D
    part = pid * SPLITS + offs_s  # (BLOCK_S,)
    acc_l = tl.sum(
        tl.load(
            ACC_L + part[:, None] * D + offs_d[None, :],
            mask=smask[:, None] & dmask[None, :],
            other=0.0,
        ),
        0,
    )
    v_new = tl.load(VN + b * svn_b + h * svn_h + offs_d, mask=dmask, other=0.0).to(tl.float32)
    vp_new = v_new - acc_l
    k_new = tl.load(KN + b * skn_b + h * skn_h + offs_d, mask=dmask, other=0.0).to(tl.float32)
    q = tl.load(
        Q + b * sq_b + h * sq_h + offs_g[:, None] * sq_g + offs_d[None, :],
        mask=gmask[:, None] & dmask[None, :],
        other=0.0,
    ).to(tl.float32)
    s_new = tl.sum(q * k_new[None, :], 1) * scale  # (BLOCK_G,)
    sg_mask = smask[:, None] & gmask[None, :]
    m = tl.load(M + part[:, None] * G + offs_g[None, :], mask=sg_mask, other=float("-inf"))
    l = tl.load(L + part[:, None] * G + offs_g[None, :], mask=sg_mask, other=0.0)
    m_all = tl.maximum(tl.max(m, 0), s_new)  # (BLOCK_G,): finite, s_new is
    w = tl.exp(m - m_all[None, :])  # (BLOCK_S, BLOCK_G); an empty chunk (m = -inf) weighs 0
    p_new = tl.exp(s_new - m_all)
    denom = tl.sum(w * l, 0) + p_new
    out = p_new[:, None] * vp_new[None, :]
    for sp in range(0, SPLITS):
        w_s = tl.exp(
            tl.load(M + (pid * SPLITS + sp) * G + offs_g, mask=gmask, other=float("-inf")) - m_all
        )
        acc_s = tl.load(
            ACC + ((pid * SPLITS + sp) * G + offs_g[:, None]) * D + offs_d[None, :],
            mask=gmask[:, None] & dmask[None, :],
            other=0.0,
        )
        out += w_s[:, None] * acc_s
    out = out / denom[:, None]
    tl.store(
        OUT + (pid * G + offs_g[:, None]) * D + offs_d[None, :],
        out,
        mask=gmask[:, None] & dmask[None, :],
    )
    tl.store(VPN + pid * D + offs_d, vp_new, mask=dmask)


def decode_splits(bh: int, n: int, block_n: int, target_programs: int = 264) -> int:
    """Cache chunks per (batch, KV head): enough programs to fill a GPU (about two per SM of a
    132-SM part) at small batch, never a chunk under 4 blocks, at most
    ``cdiv(target_programs, bh)`` (the merge kernel is sized for that). Under the interpreter,
    chunks of one block, so short test caches cross several splits."""
    blocks = triton.cdiv(max(n, 1), block_n)
    if _INTERPRET:
        return blocks
    return max(1, min(triton.cdiv(blocks, 4), triton.cdiv(target_programs, bh)))


def lucid_decode_triton(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    vp_cache: torch.Tensor,
    k_new: torch.Tensor,
    v_new: torch.Tensor,
    scale: float | None = None,
    num_splits: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One decode step (see ``lucid_decode_reference``), split over the cache and merged:
    (out (B, H, D) in q's dtype, v'_t (B, H_kv, D) fp32). ``num_splits``: cache chunks per
    (batch, KV head); default :func:`decode_splits`."""
    check_decode_inputs(q, k_cache, vp_cache, k_new, v_new)
    if compute_dtype(q.dtype) != torch.float32:
        raise TypeError("the Triton LUCID decode computes in fp32: use the reference for fp64")
    B, H, D = q.shape
    H_kv, N = k_cache.shape[1], k_cache.shape[2]
    G = H // H_kv
    scale = check_scale(scale)
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    # (B, H, D) -> (B, H_kv, G, D): query head h_kv * G + g belongs to KV head h_kv
    q4 = q.reshape(B, H_kv, G, D)
    if q4.stride(-1) != 1:
        q4 = q4.contiguous()

    def last_contiguous(t):
        return t if t.stride(-1) == 1 else t.contiguous()

    kc, vc = last_contiguous(k_cache), last_contiguous(vp_cache)
    kn, vn = last_contiguous(k_new), last_contiguous(v_new)
    # tl.dot needs >= 16 along every dimension: the head dim and the group are padded to 16
    block_d = max(16, triton.next_power_of_2(D))
    block_g = max(16, triton.next_power_of_2(G))
    block_n = 64
    chunk, splits, block_s = _split_plan(B * H_kv, N, block_n, num_splits)
    dev, f32 = q.device, torch.float32
    acc_l = torch.empty(B * H_kv, splits, D, device=dev, dtype=f32)
    m = torch.empty(B * H_kv, splits, G, device=dev, dtype=f32)
    l = torch.empty(B * H_kv, splits, G, device=dev, dtype=f32)
    acc = torch.empty(B * H_kv, splits, G, D, device=dev, dtype=f32)
    q_strides = (q4.stride(0), q4.stride(1), q4.stride(2))
    consts = dict(BLOCK_G=block_g, BLOCK_D=block_d)
    _lucid_decode_split_kernel[(B * H_kv, splits)](
        q4,
        kc,
        vc,
        kn,
        acc_l,
        m,
        l,
        acc,
        N,
        chunk,
        splits,
        G,
        D,
        H_kv,
        scale,
        math.sqrt(D),
        *q_strides,
        *kc.stride()[:3],
        *vc.stride()[:3],
        *kn.stride()[:2],
        BLOCK_N=block_n,
        PRECISION=_PRECISION,
        **consts,
    )
    partials = (acc_l, m, l, acc)
    out, vp_t = _merge(q4, kn, vn, partials, splits, scale, q_strides, block_s, consts)
    return out.reshape(B, H, D).to(q.dtype), vp_t


def _split_plan(bh: int, N: int, block_n: int, num_splits: int | None) -> tuple[int, int, int]:
    """(chunk length, number of chunks, merge width) of a decode over a cache of N keys."""
    if num_splits is not None and (not isinstance(num_splits, int) or num_splits < 1):
        raise ValueError(f"num_splits must be a positive integer, got {num_splits!r}")
    splits = num_splits or decode_splits(bh, N, block_n)
    chunk = block_n * triton.cdiv(triton.cdiv(max(N, 1), splits), block_n)
    splits = max(1, triton.cdiv(N, chunk))  # no empty trailing chunk
    # The merge's width is fixed per (batch x KV head) count, not by the cache length: a decode
    # loop whose cache grows must not compile a new merge every time the split count doubles.
    cap = splits if (_INTERPRET or num_splits) else max(splits, triton.cdiv(264, bh))
    return chunk, splits, triton.next_power_of_2(cap)


def _merge(q4, kn, vn, partials, splits, scale, q_strides, block_s, consts):
    """Merge the chunks' partial sums with the new token: (out (B, H_kv, G, D), v'_t)."""
    B, H_kv, G, D = q4.shape
    acc_l, m, l, acc = partials
    dev, f32 = q4.device, torch.float32
    out = torch.empty(B, H_kv, G, D, device=dev, dtype=f32)
    vp_t = torch.empty(B, H_kv, D, device=dev, dtype=f32)
    _lucid_decode_merge_kernel[(B * H_kv,)](
        q4, kn, vn, acc_l, m, l, acc, out, vp_t,
        splits,
        G,
        D,
        H_kv,
        scale,
        *q_strides,
        *kn.stride()[:2],
        *vn.stride()[:2],
        BLOCK_S=block_s,
        **consts,
    )  # fmt: skip
    return out, vp_t
