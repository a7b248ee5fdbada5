"""Interleaved rANS: the entropy coder behind EntQuant's compressed weights (arXiv 2601.22787).

rANS (Duda 2013; the byte-oriented form of Giesen's ryg_rans) with a 32-bit state, 16-bit
renormalisation words and a frequency table quantised to ``M = 2^prob_bits`` (default 12 bits):

    encode s (symbols taken in reverse):  if x >= x_max(s): emit x & 0xFFFF, x >>= 16
                                          x = (x // f_s) * M + (x % f_s) + c_s
    decode:                               slot = x mod M, s = symbol(slot)
                                          x = f_s * (x // M) + slot - c_s
                                          if x < 2^16: x = (x << 16) | next word

with ``x_max(s) = 2^(32 - prob_bits) f_s`` keeping the state in [2^16, 2^32). One renormalisation
word at most per symbol (M <= 2^16), which is what lets a GPU thread decode branch-free.

Interleaving: symbol i goes to lane ``i mod lanes``; each lane is an independent rANS stream
(its final state, two words, then its renormalisation words in decode order). Lanes decode in
parallel: the Triton kernel gives each lane one thread. The streams are concatenated into one
int32 tensor of 16-bit words with ``starts`` (lanes + 1 offsets).

- ``quantize_frequencies(counts, prob_bits)``: counts -> frequencies summing to M exactly, every
  occurring symbol >= 1;
- ``rans_encode(symbols, freqs, lanes)``: the encoder (NumPy, vectorised over lanes like the
  reference decoder; encoding is done once, offline, when a checkpoint is compressed);
- ``rans_decode(words, starts, freqs, num_symbols, prob_bits=None)``: the decoder op (give
  ``prob_bits`` of a table already checked and a device decode reads no value back to the host);
  ``rans_decode_reference`` is plain PyTorch (vectorised over lanes, one loop over steps), the
  Triton kernel runs one thread per lane; ``rans_decode_numpy`` is the same loop in NumPy, the
  fast CPU path.
"""

import numbers
from typing import NamedTuple

import numpy as np
import torch

from icml26.kernels.dispatch import register_op

STATE_LOW = 1 << 16  # L: the state's lower bound
WORD_BITS = 16


class RansStreams(NamedTuple):
    """``words`` (W,) int32 holding 16-bit words; ``starts`` (lanes + 1,) int64 offsets."""

    words: torch.Tensor
    starts: torch.Tensor


def quantize_frequencies(counts, prob_bits: int = 12) -> torch.Tensor:
    """Integer frequencies summing to ``2^prob_bits``, proportional to ``counts``; every symbol
    with a nonzero count gets at least 1 (so it stays encodable). (A,) int64."""
    counts = torch.as_tensor(counts, dtype=torch.float64)
    if counts.dim() != 1 or counts.numel() == 0 or (counts < 0).any():
        raise ValueError("counts must be a non-empty 1-D array of non-negative numbers")
    if not torch.isfinite(counts).all():
        raise ValueError("counts must be finite, got NaN or inf")
    _check_prob_bits(prob_bits)
    M = 1 << prob_bits
    present = counts > 0
    if int(present.sum()) > M:
        raise ValueError(f"{int(present.sum())} distinct symbols do not fit in 2^{prob_bits} slots")
    if not present.any():
        raise ValueError("counts are all zero")
    freqs = torch.where(present, torch.clamp(torch.floor(counts / counts.sum() * M), min=1), 0)
    # Fix the total by adjusting the largest entries (they lose the least, relatively).
    diff = M - int(freqs.sum())
    order = torch.argsort(counts, descending=True)
    i = 0
    while diff != 0:
        j = order[i % int(present.sum())]
        if diff > 0:
            freqs[j] += 1
            diff -= 1
        elif freqs[j] > 1:
            freqs[j] -= 1
            diff += 1
        i += 1
    return freqs.to(torch.int64)


def _check_prob_bits(prob_bits) -> None:
    if isinstance(prob_bits, bool) or not isinstance(prob_bits, numbers.Integral):
        raise ValueError(f"prob_bits must be an int in [1, 16], got {prob_bits!r}")
    if not 1 <= prob_bits <= 16:
        raise ValueError(f"prob_bits must be an int in [1, 16], got {prob_bits!r}")


def _check_freqs(freqs: torch.Tensor, prob_bits: int | None = None) -> int:
    """The table's precision ``log2(sum(freqs))``. On the CPU the sum is read and checked; a
    table on a device with ``prob_bits`` given is taken at its word (it was validated where it
    was built or loaded), so a decode reads no device value; without ``prob_bits`` the sum is
    read, one host sync."""
    if (
        not isinstance(freqs, torch.Tensor)
        or freqs.dim() != 1
        or freqs.dtype
        not in (
            torch.int32,
            torch.int64,
        )
    ):
        raise TypeError("freqs must be a 1-D int32/int64 tensor")
    if prob_bits is not None:
        _check_prob_bits(prob_bits)
    if prob_bits is not None and freqs.device.type != "cpu":
        return prob_bits
    total = int(freqs.sum())
    bits = total.bit_length() - 1
    negative = freqs.device.type == "cpu" and bool((freqs < 0).any())
    if total != 1 << bits or not 1 <= bits <= 16 or negative:
        raise ValueError(f"freqs must be >= 0 and sum to a power of two <= 2^16, got sum {total}")
    if prob_bits is not None and prob_bits != bits:
        raise ValueError(f"prob_bits={prob_bits} but the table sums to 2^{bits}")
    return bits


def rans_encode(symbols, freqs: torch.Tensor, lanes: int = 32) -> RansStreams:
    """Encode ``symbols`` (1-D ints in [0, A)) with ``freqs`` into ``lanes`` interleaved streams."""
    if isinstance(lanes, bool) or not isinstance(lanes, numbers.Integral) or lanes < 1:
        raise ValueError(f"lanes must be an integer >= 1, got {lanes!r}")
    prob_bits = _check_freqs(freqs)
    symbols = torch.as_tensor(symbols)
    if symbols.is_floating_point() or symbols.is_complex() or symbols.dtype == torch.bool:
        raise TypeError(f"symbols must be integers in [0, A), got {symbols.dtype}")
    sym = np.asarray(symbols.cpu(), dtype=np.int64).ravel()
    f = freqs.cpu().numpy().astype(np.int64)
    if sym.size and (sym.min() < 0 or sym.max() >= f.size):
        raise ValueError(f"symbols must be in [0, {f.size}), got [{sym.min()}, {sym.max()}]")
    if sym.size and (f[sym] == 0).any():
        raise ValueError("a symbol to encode has frequency 0")
    c = np.concatenate([[0], np.cumsum(f)[:-1]])
    x_max_unit = 1 << (32 - prob_bits)
    # All lanes advance together, one symbol each per step (vectorised over lanes; the loop runs
    # n / lanes times). Lane l holds symbols l, l + lanes, ...; rANS encodes them in reverse, so
    # step t visits position (steps - 1 - t) of every lane that is that long.
    n = sym.size
    steps = -(-n // lanes)
    padded = np.full(steps * lanes, -1, dtype=np.int64)
    padded[:n] = sym
    grid = padded.reshape(steps, lanes)  # grid[t, l] = symbol t * lanes + l
    x = np.full(lanes, STATE_LOW, dtype=np.int64)
    emitted = np.zeros((steps, lanes), dtype=np.int64)  # word emitted at each step, if any
    did_emit = np.zeros((steps, lanes), dtype=bool)
    for t in range(steps - 1, -1, -1):
        s = grid[t]
        live = s >= 0
        s_safe = np.where(live, s, 0)
        fs = np.maximum(f[s_safe], 1)  # dead lanes divide by 1 and keep their state
        emit = live & (x >= x_max_unit * fs)
        emitted[t] = x & 0xFFFF
        did_emit[t] = emit
        x = np.where(emit, x >> WORD_BITS, x)
        x = np.where(live, ((x // fs) << prob_bits) + (x % fs) + c[s_safe], x)
    # Per lane: final state (two words), then the emitted words in decode order, which is the
    # order of increasing t (the encoder emitted them at decreasing t).
    counts = did_emit.sum(axis=0)
    lengths = 2 + counts
    starts = np.concatenate([[0], np.cumsum(lengths)])
    words = np.empty(int(starts[-1]), dtype=np.int32)
    words[starts[:-1]] = x >> WORD_BITS
    words[starts[:-1] + 1] = x & 0xFFFF
    lane_of, t_of = np.nonzero(did_emit.T)  # lane-major, t increasing within a lane
    rank = np.arange(lane_of.size) - np.concatenate([[0], np.cumsum(counts)])[lane_of]
    words[starts[lane_of] + 2 + rank] = emitted[t_of, lane_of]
    return RansStreams(torch.from_numpy(words), torch.from_numpy(starts.astype(np.int64)))


def _check_decode(words, starts, freqs, num_symbols, prob_bits=None) -> int:
    prob_bits = _check_freqs(freqs, prob_bits)
    if not isinstance(words, torch.Tensor) or words.dim() != 1 or words.dtype != torch.int32:
        raise TypeError("words must be a 1-D int32 tensor of 16-bit words")
    if not isinstance(starts, torch.Tensor) or starts.dim() != 1 or starts.numel() < 2:
        raise ValueError("starts must be a 1-D tensor of lanes + 1 offsets")
    # value checks of the stream offsets on the host only (on a GPU they would synchronise)
    if starts.device.type == "cpu" and (
        int(starts[-1]) != words.numel() or bool((starts.diff() < 2).any())
    ):
        raise ValueError("starts must end at len(words) and give every lane >= 2 words (its state)")
    if num_symbols < 0:
        raise ValueError(f"num_symbols must be >= 0, got {num_symbols}")
    return prob_bits


def rans_decode_reference(
    words: torch.Tensor,
    starts: torch.Tensor,
    freqs: torch.Tensor,
    num_symbols: int,
    prob_bits: int | None = None,
) -> torch.Tensor:
    """Decode ``num_symbols`` symbols from interleaved streams; (num_symbols,) int64."""
    prob_bits = _check_decode(words, starts, freqs, num_symbols, prob_bits)
    device = words.device
    lanes = starts.numel() - 1
    M = 1 << prob_bits
    f = freqs.to(device, torch.int64)
    c = torch.cumsum(f, 0) - f
    symbol_of_slot = torch.repeat_interleave(torch.arange(f.numel(), device=device), f)  # (M,)
    w = words.to(torch.int64)
    ptr = starts[:-1].to(device, torch.int64)
    x = (w[ptr] << WORD_BITS) | w[ptr + 1]  # (lanes,)
    ptr = ptr + 2
    out = torch.empty(num_symbols, dtype=torch.int64, device=device)
    lane_ids = torch.arange(lanes, device=device)
    for step in range((num_symbols + lanes - 1) // lanes):
        idx = step * lanes + lane_ids
        active = idx < num_symbols
        slot = x & (M - 1)
        s = symbol_of_slot[slot]
        x_dec = f[s] * (x >> prob_bits) + slot - c[s]
        need = active & (x_dec < STATE_LOW)
        word = w[torch.where(need, ptr, torch.zeros_like(ptr))]
        x = torch.where(active, torch.where(need, (x_dec << WORD_BITS) | word, x_dec), x)
        ptr = ptr + need.to(torch.int64)
        out[idx[active]] = s[active]
    return out


def rans_decode_numpy(
    words: torch.Tensor,
    starts: torch.Tensor,
    freqs: torch.Tensor,
    num_symbols: int,
    prob_bits: int | None = None,
) -> torch.Tensor:
    """The reference decoder's loop in NumPy: the fast CPU path (a NumPy step on a few hundred
    lanes costs a few microseconds, a PyTorch step tens). Same output as the reference, which
    the tests check; (num_symbols,) int64 on the CPU."""
    prob_bits = _check_decode(words, starts, freqs, num_symbols, prob_bits)
    lanes = starts.numel() - 1
    M = 1 << prob_bits
    f = freqs.cpu().numpy().astype(np.int64)
    c = np.cumsum(f) - f
    symbol_of_slot = np.repeat(np.arange(f.size), f)
    w = words.cpu().numpy().astype(np.int64)
    ptr = starts[:-1].cpu().numpy().astype(np.int64)
    x = (w[ptr] << WORD_BITS) | w[ptr + 1]
    ptr = ptr + 2
    steps = -(-num_symbols // lanes)
    out = np.zeros(steps * lanes, dtype=np.int64)
    full = num_symbols // lanes  # steps where every lane is active
    for step in range(steps):
        slot = x & (M - 1)
        s = symbol_of_slot[slot]
        x_dec = f[s] * (x >> prob_bits) + slot - c[s]
        need = x_dec < STATE_LOW
        if step >= full:  # the last, partial step: lanes past the end stay put
            live = np.arange(lanes) < num_symbols - step * lanes
            need &= live
            x_dec = np.where(live, x_dec, x)
        x = np.where(need, (x_dec << WORD_BITS) | w[np.where(need, ptr, 0)], x_dec)
        ptr += need
        out[step * lanes : (step + 1) * lanes] = s
    return torch.from_numpy(out[:num_symbols])


rans_decode = register_op(
    "rans_decode", rans_decode_reference, "icml26.kernels._triton_entropy:rans_decode_triton"
)


# torch.library registration: the decode loop is data-dependent (table lookups that pick how
# many words each lane reads); as a custom op it is one node in a compiled graph, dispatching at
# run time (Triton on CUDA).
@torch.library.custom_op("icml26::rans_decode", mutates_args=())
def _rans_decode_op(
    words: torch.Tensor,
    starts: torch.Tensor,
    freqs: torch.Tensor,
    num_symbols: int,
    prob_bits: int | None = None,
) -> torch.Tensor:
    return rans_decode(words, starts, freqs, num_symbols, prob_bits).contiguous()


@_rans_decode_op.register_fake
def _(words, starts, freqs, num_symbols, prob_bits=None):
    return words.new_empty(num_symbols, dtype=torch.int64)


rans_decode.compiled = _rans_decode_op
