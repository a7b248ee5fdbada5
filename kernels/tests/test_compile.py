"""torch.compile: a function using each op compiles without graph breaks (fullgraph=True makes a
break an error) and gives eager's results, on the CPU reference path."""

import pytest
import torch

from icml26.kernels.attention import softmax_attention
from icml26.kernels.entropy import quantize_frequencies, rans_decode, rans_encode
from icml26.kernels.lucid import lucid_decode
from icml26.kernels.santa import santa_decode
from icml26.testing import assert_close


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _compiled(fn):
    torch._dynamo.reset()
    return torch.compile(fn, fullgraph=True)


def test_softmax_attention_compiles():
    q, k, v = _randn(1, 4, 9, 8), _randn(1, 2, 9, 8, seed=1), _randn(1, 2, 9, 8, seed=2)

    def f(q, k, v):
        return softmax_attention(q, k, v, causal=True).square().sum(-1)

    assert_close(_compiled(f)(q, k, v), f(q, k, v), atol=1e-5, rtol=1e-5)


def test_lucid_decode_compiles():
    q, k_new, v_new = _randn(2, 4, 8), _randn(2, 2, 8, seed=1), _randn(2, 2, 8, seed=2)
    kc, vc = _randn(2, 2, 6, 8, seed=3), _randn(2, 2, 6, 8, seed=4)

    def f(q, kc, vc, k_new, v_new):
        out, vp = lucid_decode(q, kc, vc, k_new, v_new)
        return out * 2, vp + 1

    for got, want in zip(
        _compiled(f)(q, kc, vc, k_new, v_new), f(q, kc, vc, k_new, v_new), strict=True
    ):
        assert_close(got, want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("mode", ["iid", "systematic", "tile_fixed", "tile_prop"])
def test_santa_decode_compiles(mode):
    q, k, v = _randn(1, 4, 16), _randn(1, 2, 50, 16, seed=1), _randn(1, 2, 50, 16, seed=2)

    def f(q, k, v):
        (out, rows_read), counts = santa_decode(
            q, k, v, 8, mode=mode, block_n=16, seed=3, return_counts=True
        )
        return out + 1, rows_read, counts

    for got, want in zip(_compiled(f)(q, k, v), f(q, k, v), strict=True):
        assert_close(got, want, atol=1e-6, rtol=1e-6)


def test_rans_decode_compiles():
    sym = torch.randint(0, 20, (300,), generator=torch.Generator().manual_seed(0))
    f = quantize_frequencies(torch.bincount(sym, minlength=20) + 1)
    words, starts = rans_encode(sym, f, lanes=8)

    def decode(words, starts, freqs):
        return rans_decode(words, starts, freqs, 300) + 0

    got = _compiled(decode)(words, starts, f)
    assert torch.equal(got, decode(words, starts, f)) and torch.equal(got, sym)


def test_santa_with_a_device_seed_compiles_without_graph_breaks():
    # A tensor seed (device-drawn offsets on the Triton path) passes through the custom op.
    g = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(1, 4, 16, generator=g), *torch.randn(2, 1, 2, 40, 16, generator=g)
    seed = torch.tensor(3)

    def f(q, k, v, seed):
        return santa_decode(q, k, v, 16, "tile_fixed", 16, seed=seed).out

    eager = f(q, k, v, seed)
    compiled = torch.compile(f, fullgraph=True)(q, k, v, seed)
    assert torch.equal(compiled, eager)
    assert torch.equal(eager, santa_decode(q, k, v, 16, "tile_fixed", 16, seed=3).out)
