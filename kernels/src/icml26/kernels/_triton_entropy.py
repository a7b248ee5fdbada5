"""Triton path of ``rans_decode``: one thread per interleaved rANS lane.

Defined by ``icml26.kernels.entropy.rans_decode_reference``. Each program owns ``BLOCK`` lanes;
at every step a lane decodes one symbol (slot -> symbol by a table lookup, the state update, at
most one conditional 16-bit read) and writes it to position ``step * lanes + lane``. States are
int64 so the 32-bit unsigned arithmetic needs no casts.
"""

import torch
import triton
import triton.language as tl

from icml26.kernels._triton_common import tuned
from icml26.kernels.entropy import STATE_LOW, WORD_BITS, _check_decode


@tuned(key=["PROB_BITS", "BLOCK"])
@triton.jit
def _rans_decode_kernel(
    WORDS,  # (W,) int32 16-bit words
    STARTS,  # (lanes + 1,) int64
    FREQ,  # (A,) int64
    CUM,  # (A,) int64
    SYMBOL_OF_SLOT,  # (M,) int64
    OUT,  # (n,) int64
    n,
    lanes,
    steps,
    PROB_BITS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    lane = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = lane < lanes
    ptr = tl.load(STARTS + lane, mask=live, other=0)
    hi = tl.load(WORDS + ptr, mask=live, other=0).to(tl.int64)
    lo = tl.load(WORDS + ptr + 1, mask=live, other=0).to(tl.int64)
    x = (hi << 16) | lo
    ptr += 2
    for step in range(0, steps):
        idx = step * lanes + lane
        active = live & (idx < n)
        slot = x & ((1 << PROB_BITS) - 1)
        s = tl.load(SYMBOL_OF_SLOT + slot, mask=active, other=0)
        f = tl.load(FREQ + s, mask=active, other=1)
        c = tl.load(CUM + s, mask=active, other=0)
        x_dec = f * (x >> PROB_BITS) + slot - c
        need = active & (x_dec < 65536)
        word = tl.load(WORDS + ptr, mask=need, other=0).to(tl.int64)
        x = tl.where(active, tl.where(need, (x_dec << 16) | word, x_dec), x)
        ptr += need.to(tl.int64)
        tl.store(OUT + idx, s, mask=active)


def rans_decode_triton(
    words: torch.Tensor,
    starts: torch.Tensor,
    freqs: torch.Tensor,
    num_symbols: int,
    prob_bits: int | None = None,
) -> torch.Tensor:
    """Decode ``num_symbols`` symbols, one thread per lane; (num_symbols,) int64."""
    prob_bits = _check_decode(words, starts, freqs, num_symbols, prob_bits)
    assert STATE_LOW == 1 << WORD_BITS == 65536  # the kernel hard-codes both
    device = words.device
    lanes = starts.numel() - 1
    f = freqs.to(device, torch.int64, non_blocking=True).contiguous()
    c = (torch.cumsum(f, 0) - f).contiguous()
    # output_size given: a tensor of repeats would otherwise sum them on the host (a sync)
    symbol_of_slot = torch.repeat_interleave(
        torch.arange(f.numel(), device=device), f, output_size=1 << prob_bits
    )
    out = torch.empty(num_symbols, dtype=torch.int64, device=device)
    if num_symbols == 0:
        return out
    block = 128
    grid = (triton.cdiv(lanes, block),)
    _rans_decode_kernel[grid](
        words.contiguous(),
        starts.to(device, torch.int64).contiguous(),
        f,
        c,
        symbol_of_slot.contiguous(),
        out,
        num_symbols,
        lanes,
        triton.cdiv(num_symbols, lanes),
        PROB_BITS=prob_bits,
        BLOCK=block,
    )
    return out
