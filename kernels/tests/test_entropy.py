"""Interleaved rANS: round trips, rate against the entropy, the Triton decoder (through the
interpreter) against the reference, and bad input."""

import math

import numpy as np
import pytest
import torch

from icml26.kernels import Backend, triton_available
from icml26.kernels.entropy import (
    quantize_frequencies,
    rans_decode,
    rans_decode_numpy,
    rans_decode_reference,
    rans_encode,
)


def skewed(n, alphabet=256, seed=0, temperature=8.0):
    # FP8-code-like data: a peaked, two-sided distribution over the alphabet.
    rng = np.random.default_rng(seed)
    logits = -np.abs(np.arange(alphabet) - alphabet / 2) / temperature
    p = np.exp(logits) / np.exp(logits).sum()
    return torch.from_numpy(rng.choice(alphabet, size=n, p=p)), p


def test_quantized_frequencies_sum_to_m_and_keep_every_symbol():
    counts = torch.tensor([1000, 1, 0, 3, 50000, 2])
    f = quantize_frequencies(counts, prob_bits=12)
    assert int(f.sum()) == 4096
    assert (f[counts > 0] >= 1).all() and f[2] == 0
    with pytest.raises(ValueError, match="do not fit"):
        quantize_frequencies(torch.ones(300), prob_bits=8)
    with pytest.raises(ValueError, match="all zero"):
        quantize_frequencies(torch.zeros(3))


@pytest.mark.parametrize("n,lanes", [(0, 4), (1, 4), (37, 5), (5000, 32), (3000, 1)])
def test_round_trip(n, lanes):
    sym, _ = skewed(n, seed=n)
    f = quantize_frequencies(torch.bincount(sym, minlength=256) + (n == 0))
    streams = rans_encode(sym, f, lanes)
    assert streams.starts.numel() == lanes + 1
    assert torch.equal(rans_decode_reference(streams.words, streams.starts, f, n), sym)
    assert torch.equal(rans_decode_numpy(streams.words, streams.starts, f, n), sym)


def test_rate_is_close_to_the_entropy():
    n = 200_000
    sym, _ = skewed(n, seed=1)
    counts = torch.bincount(sym, minlength=256)
    f = quantize_frequencies(counts)
    streams = rans_encode(sym, f, lanes=64)
    bits = streams.words.numel() * 16 / n
    emp = counts[counts > 0].double() / n
    entropy = float(-(emp * emp.log2()).sum())
    # rANS with 12-bit frequencies costs a little over the entropy; 64 lanes add 32 bits each.
    assert entropy < bits < entropy * 1.01 + 64 * 32 / n
    assert math.isfinite(bits)


def test_bad_inputs():
    sym, _ = skewed(100)
    f = quantize_frequencies(torch.bincount(sym, minlength=256))
    s = rans_encode(sym, f, 4)
    with pytest.raises(ValueError, match="power of two"):
        rans_decode_reference(s.words, s.starts, f + 1, 100)
    with pytest.raises(TypeError, match="int32"):
        rans_decode_reference(s.words.long(), s.starts, f, 100)
    with pytest.raises(ValueError, match="starts must end"):
        rans_decode_reference(s.words[:-1], s.starts, f, 100)
    with pytest.raises(ValueError, match="frequency 0"):
        rans_encode(torch.tensor([3]), torch.tensor([4096, 0, 0, 0]), 1)
    with pytest.raises(ValueError, match="symbols must be in"):
        rans_encode(torch.tensor([9]), torch.tensor([4096]), 1)


needs_triton = pytest.mark.skipif(not triton_available(), reason="Triton is not installed")


@needs_triton
@pytest.mark.parametrize("n,lanes", [(1, 3), (1000, 7), (4096, 256), (3000, 300)])
def test_triton_decoder_matches_the_reference(monkeypatch, n, lanes):
    monkeypatch.setenv("ICML26_KERNELS", "interpret")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    sym, _ = skewed(n, seed=lanes)
    f = quantize_frequencies(torch.bincount(sym, minlength=256), prob_bits=14)
    s = rans_encode(sym, f, lanes)
    got = rans_decode(s.words, s.starts, f, n)
    assert rans_decode.last_backend is Backend.TRITON
    assert torch.equal(got, sym)


@pytest.mark.gpu
def test_cuda_decoder_round_trips():
    sym, _ = skewed(1_000_000, seed=2)
    f = quantize_frequencies(torch.bincount(sym, minlength=256))
    s = rans_encode(sym, f, 4096)
    got = rans_decode(s.words.cuda(), s.starts.cuda(), f.cuda(), sym.numel())
    assert rans_decode.last_backend is Backend.TRITON
    assert torch.equal(got.cpu(), sym)
