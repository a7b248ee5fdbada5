"""Bad inputs drawn at random: every op names the argument it refuses, on every path this
machine runs (the reference; the Triton path under the interpreter is tested per op)."""

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.kernels.attention import softmax_attention, softmax_attention_reference
from icml26.kernels.entropy import quantize_frequencies, rans_encode
from icml26.kernels.lucid import lucid_attention, lucid_attention_reference, lucid_decode_reference
from icml26.kernels.santa import santa_decode_reference
from icml26.testing import assert_rejects
from icml26.testing.strategies import non_finite, out_of_range, wrong_dtype, wrong_rank

DRAWS = settings(max_examples=25, deadline=None)

SHAPES = {"q": (1, 2, 3, 4), "k": (1, 1, 3, 4), "v": (1, 1, 3, 4)}
ATTENTION = (softmax_attention, softmax_attention_reference, lucid_attention,
             lucid_attention_reference)  # fmt: skip


def _qkv() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return {n: torch.randn(s, generator=g, dtype=torch.float64) for n, s in SHAPES.items()}


def _bad(name: str):
    shape = SHAPES[name]
    return st.one_of(non_finite(shape).map(torch.Tensor.double), wrong_rank(shape),
                     wrong_dtype(shape))  # fmt: skip


@DRAWS
@given(which=st.sampled_from(sorted(SHAPES)), data=st.data())
def test_attention_names_the_bad_tensor(which, data):
    bad = data.draw(_bad(which))
    args = {**_qkv(), which: bad}
    if bad.is_floating_point() and bad.dtype != torch.float64:
        args = {n: t.to(bad.dtype) for n, t in args.items()}  # only the drawn flaw is wrong
    for op in ATTENTION:
        assert_rejects(lambda op=op: op(**args), which)


@DRAWS
@given(scale=out_of_range(0.0, None).filter(lambda s: s <= 0 or not math.isfinite(s)))
def test_attention_names_a_scale_that_is_not_a_finite_positive_number(scale):
    qkv = _qkv()
    for op in ATTENTION:
        assert_rejects(lambda op=op: op(**qkv, scale=scale), "scale")
    q, k, v = qkv["q"][:, :, 0], qkv["k"], qkv["v"]
    assert_rejects(lambda: lucid_decode_reference(q, k, v, k[:, :, 0], v[:, :, 0], scale), "scale")
    assert_rejects(lambda: santa_decode_reference(q, k, v, 4, "systematic", 4, scale=scale),
                   "scale")  # fmt: skip


@DRAWS
@given(count=out_of_range(1, 2**31 - 1, integer=True), tile=out_of_range(1, None, integer=True),
       seed=st.one_of(st.floats(allow_nan=True), st.booleans(), st.text(max_size=2)))  # fmt: skip
def test_santa_names_a_bad_sample_count_tile_and_seed(count, tile, seed):
    q, k, v = _qkv()["q"][:, :, 0], _qkv()["k"], _qkv()["v"]
    assert_rejects(lambda: santa_decode_reference(q, k, v, count, "systematic", 4), "num_samples")
    assert_rejects(lambda: santa_decode_reference(q, k, v, 4, "tile_fixed", tile), "block_n")
    assert_rejects(lambda: santa_decode_reference(q, k, v, 4, "systematic", 4, seed), "seed")


@DRAWS
@given(bits=out_of_range(1, 16, integer=True), lanes=out_of_range(1, None, integer=True),
       count=st.sampled_from([math.nan, math.inf]))  # fmt: skip
def test_the_entropy_coder_names_bad_precisions_lanes_and_counts(bits, lanes, count):
    counts = torch.tensor([5.0, 3.0, 0.0, 2.0])
    assert_rejects(lambda: quantize_frequencies(counts, bits), "prob_bits")
    freqs = quantize_frequencies(counts)
    assert_rejects(lambda: rans_encode(torch.tensor([0, 1, 3]), freqs, lanes), "lanes")
    assert_rejects(lambda: quantize_frequencies(torch.tensor([1.0, count])), "counts")
    assert_rejects(lambda: rans_encode(torch.tensor([0.5, 1.0]), freqs), "symbols")
