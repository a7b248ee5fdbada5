"""Entropy coding of the codes: interleaved rANS (ours, in icml26-kernels) and constriction's ANS.

EntQuant stores each quantised matrix's uint8 codes entropy coded with its own frequency table
("per-chunk tables"; here a chunk is one weight matrix). The coder is the interleaved rANS of
``icml26.kernels.entropy``: a NumPy encoder, a PyTorch reference decoder and a Triton decoder
(one GPU thread per lane). ``constriction`` (Bamler's Rust coder library) is the independent
check: it codes the same symbols with the same quantised probabilities, and the tests require all
three to decode to the same codes and the rates to agree with the entropy.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import torch

from icml26.kernels.entropy import (
    quantize_frequencies,
    rans_decode,
    rans_decode_numpy,
    rans_encode,
)

ALPHABET = 256  # uint8 codes
SYMBOLS_PER_LANE = 2048
"""Interleaved streams per matrix: one lane per 2048 codes. Each lane costs 64 bits (its final
state and its offset): 0.03 bits per code, 1.5% at 2 bits; a 4096 x 11008 matrix still gets 22k
lanes for a GPU, and the reference decoder's step loop (one step per symbol of a lane) stays
2048 long."""
DEFAULT_PROB_BITS = 12


@dataclass(frozen=True)
class EncodedCodes:
    """One matrix's codes, rANS coded. ``words`` (W,) int32 of 16-bit words, ``starts``
    (lanes + 1,) int64, ``freqs`` (256,) int64 summing to 2^prob_bits; ``shape`` of the codes;
    ``prob_bits`` when the table has been checked (the decoders then read no device value)."""

    words: torch.Tensor
    starts: torch.Tensor
    freqs: torch.Tensor
    shape: tuple[int, ...]
    prob_bits: int | None = None

    def __post_init__(self):
        # Records users may assemble from stored tensors: a malformed one must be named here,
        # not as an IndexError inside the decoder. (Stream offsets are checked by the decoders.)
        for name in ("words", "starts", "freqs"):
            t = getattr(self, name)
            if not torch.is_tensor(t) or t.ndim != 1:
                raise TypeError(f"EncodedCodes.{name} must be a 1-D tensor")
        if self.freqs.numel() != ALPHABET:
            raise ValueError(f"EncodedCodes.freqs must hold {ALPHABET} counts (uint8 codes), got "
                             f"{self.freqs.numel()}")  # fmt: skip
        shape = self.shape
        if (
            not isinstance(shape, tuple)
            or not shape
            or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in shape)
        ):
            raise ValueError(f"EncodedCodes.shape must be a tuple of positive ints, got {shape!r}")

    @property
    def num_symbols(self) -> int:
        return int(np.prod(self.shape))

    @property
    def stored_bits(self) -> int:
        """Bits as stored: 16 per word, 32 per lane offset, 16 per frequency."""
        return 16 * self.words.numel() + 32 * self.starts.numel() + 16 * self.freqs.numel()


def words_to_int16(words: torch.Tensor) -> torch.Tensor:
    """16-bit words (int32 values 0..65535) stored in 16 bits: int16 holding the uint16 bit
    patterns (torch's uint16 lacks most ops)."""
    return words.to(torch.int32).to(torch.int16) if words.dtype != torch.int16 else words


def words_to_int32(words: torch.Tensor) -> torch.Tensor:
    """The int32 words the decoders read, from int16 bit patterns (or int32 already)."""
    if words.dtype == torch.int16:
        return words.to(torch.int32) & 0xFFFF
    return words.to(torch.int32)


def entropy_bits(codes: torch.Tensor) -> float:
    """Empirical entropy of the codes' histogram, in bits per symbol."""
    if not isinstance(codes, torch.Tensor) or codes.dtype != torch.uint8 or codes.numel() == 0:
        raise TypeError(f"codes must be a non-empty uint8 tensor of symbols, got "
                        f"{getattr(codes, 'dtype', type(codes).__name__)}")  # fmt: skip
    counts = torch.bincount(codes.flatten().long(), minlength=ALPHABET).double()
    p = counts[counts > 0] / counts.sum()
    return float(-(p * p.log2()).sum())


def encode(
    codes: torch.Tensor, lanes: int | None = None, prob_bits: int = DEFAULT_PROB_BITS
) -> EncodedCodes:
    """rANS-code a uint8 code matrix with its own frequency table (``lanes`` default: one per
    ``SYMBOLS_PER_LANE`` codes)."""
    if not isinstance(codes, torch.Tensor) or codes.dtype != torch.uint8 or codes.numel() == 0:
        raise TypeError("codes must be a non-empty uint8 tensor")
    flat = codes.flatten().cpu()
    freqs = quantize_frequencies(torch.bincount(flat.long(), minlength=ALPHABET), prob_bits)
    if lanes is None:
        lanes = -(-flat.numel() // SYMBOLS_PER_LANE)
    lanes = max(1, min(lanes, flat.numel()))
    streams = rans_encode(flat.numpy(), freqs, lanes)
    return EncodedCodes(streams.words, streams.starts, freqs, tuple(codes.shape), prob_bits)


def decode(enc: EncodedCodes, device: str | torch.device | None = None) -> torch.Tensor:
    """Decode to the uint8 code matrix on ``device``: the Triton kernel for CUDA tensors, the
    NumPy loop on the CPU (``ICML26_KERNELS=reference`` or ``interpret`` use those paths)."""
    if not isinstance(enc, EncodedCodes):
        raise TypeError(f"enc must be the EncodedCodes encode returns, got {type(enc).__name__}")
    device = torch.device(device) if device is not None else enc.words.device
    try:
        if device.type == "cpu" and os.environ.get("ICML26_KERNELS", "auto") == "auto":
            sym = rans_decode_numpy(
                enc.words, enc.starts, enc.freqs, enc.num_symbols, enc.prob_bits
            )
        else:
            sym = rans_decode(
                enc.words.to(device),
                enc.starts.to(device),
                enc.freqs.to(device),
                enc.num_symbols,
                enc.prob_bits,
            )
    except IndexError:
        # a lane read past its words: the streams hold fewer codes than the shape asks for
        raise ValueError(
            f"enc.shape {enc.shape} asks for {enc.num_symbols} codes, more than its "
            f"{enc.starts.numel() - 1} streams hold: the shape does not match the coded matrix"
        ) from None
    return sym.to(torch.uint8).reshape(enc.shape)


def constriction_encode(codes: torch.Tensor, freqs: torch.Tensor) -> np.ndarray:
    """The same symbols with constriction's stack ANS coder and the same quantised
    probabilities; the compressed words (uint32)."""
    import constriction

    model = _constriction_model(freqs)
    coder = constriction.stream.stack.AnsCoder()
    coder.encode_reverse(codes.flatten().cpu().numpy().astype(np.int32), model)
    return coder.get_compressed()


def constriction_decode(
    compressed: np.ndarray, freqs: torch.Tensor, shape: tuple[int, ...]
) -> torch.Tensor:
    import constriction

    coder = constriction.stream.stack.AnsCoder(compressed)
    sym = coder.decode(_constriction_model(freqs), int(np.prod(shape)))
    return torch.from_numpy(sym.astype(np.uint8)).reshape(shape)


def _constriction_model(freqs: torch.Tensor):
    import constriction

    p = freqs.double().cpu().numpy()  # constriction codes on the host
    return constriction.stream.model.Categorical(p / p.sum(), perfect=False)
