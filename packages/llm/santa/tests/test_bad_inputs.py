"""Bad input at SANTA's public entry points ends in a named error, not a silent run."""

import pytest

from icml26.santa import enable_santa, tiny_llama
from icml26.testing import assert_rejects

RETURNED = {
    "SantaOutput": "santa_decode returns it",
}
"""Public names a user receives rather than builds (records the package returns): no input."""


@pytest.fixture(scope="module")
def model():
    return tiny_llama(seed=0, layers=1)


@pytest.mark.parametrize(
    "kwargs, names",
    [
        ({"block_n": 0}, ["block_n", ">= 1"]),
        ({"block_n": "x"}, ["block_n", "'x'"]),
        ({"block_n": True}, ["block_n"]),
        ({"num_samples": 0}, ["num_samples"]),
        ({"draws_per_tile": 0}, ["draws_per_tile", ">= 1"]),
        ({"draws_per_tile": 2.5}, ["draws_per_tile"]),
        ({"num_samples": 4, "draws_per_tile": 4}, ["num_samples", "draws_per_tile", "not both"]),
        ({"mode": "stratified"}, ["mode", "tile_fixed"]),
        ({"seed": 1.5}, ["seed"]),
    ],
)
def test_enable_santa_rejects_bad_settings(model, kwargs, names):
    assert_rejects(lambda: enable_santa(model, **kwargs), names)


import torch  # noqa: E402

from icml26.santa import (  # noqa: E402
    SantaState,
    corpus_text,
    expected_output,
    official_block_n,
    operating_point,
    santa_decode_reference,
)


@pytest.mark.parametrize("n", [0, -1, 2.5, True])
def test_cache_sizes_must_be_positive_integers(n):
    assert_rejects(lambda: official_block_n(n), "n_keys")
    assert_rejects(lambda: operating_point(n if n != 2.5 else 0), "n_keys")


def test_corpus_length_must_be_non_negative():
    assert_rejects(lambda: corpus_text(-5), "min_chars")


Q, K = torch.randn(1, 2, 8), torch.randn(1, 2, 16, 8)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"num_samples": 0}, "num_samples"),
        ({"num_samples": 4, "mode": "stratified"}, "mode"),
        ({"num_samples": 4, "block_n": 0}, "block_n"),
    ],
)
def test_the_estimator_names_a_bad_setting(kwargs, name):
    assert_rejects(lambda: santa_decode_reference(Q, K, K, **kwargs), name)
    assert_rejects(lambda: expected_output(Q, K, K, **{"mode": "iid", **kwargs}), name)


def test_the_estimator_names_non_finite_or_mismatched_tensors():
    assert_rejects(lambda: santa_decode_reference(Q, K[..., :4], K, 4), "k")
    assert_rejects(lambda: santa_decode_reference(torch.full_like(Q, float("nan")), K, K, 4), "q")


def test_the_santa_state_names_a_bad_setting():
    assert_rejects(lambda: SantaState(num_samples=0), "num_samples")
    assert_rejects(lambda: SantaState(mode="nope"), "mode")


def test_the_attention_hook_and_model_helpers_name_bad_inputs(model):
    from icml26.santa import (
        disable_santa,
        load_smollm2,
        python_docs_text,
        santa_attention_forward,
        santa_decode,
    )

    assert_rejects(lambda: santa_decode(Q, K[..., :4], K, 4), "k")
    assert_rejects(lambda: santa_decode(Q, K, K, 0), "num_samples")
    assert_rejects(lambda: disable_santa("model"), "model")
    assert_rejects(lambda: disable_santa(torch.nn.Linear(2, 2)), "attention modules")
    assert_rejects(lambda: load_smollm2(dtype="half"), "dtype")
    assert_rejects(lambda: load_smollm2(device="gpu0"), "device")
    attn = next(m for m in model.modules() if hasattr(m, "q_proj"))
    q, k = torch.randn(1, 2, 1, 8), torch.randn(1, 2, 5, 4)
    assert_rejects(lambda: santa_attention_forward(attn, q, k, k, None), "head dim")
    assert "lambda" in python_docs_text()  # offline text, no input to get wrong


def test_tiny_llama_names_bad_sizes():
    assert_rejects(lambda: tiny_llama(layers=0), "layers")
    assert_rejects(lambda: tiny_llama(heads=3, kv_heads=2), ["heads", "kv_heads"])


from hypothesis import given, settings  # noqa: E402

from icml26.testing.strategies import bad_tensors, out_of_range  # noqa: E402

DRAWS = settings(max_examples=30, deadline=None)


@DRAWS
@given(block_n=out_of_range(1, None, integer=True), draws=out_of_range(1, None, integer=True))
def test_every_bad_block_size_and_draw_count_is_named(model, block_n, draws):
    assert_rejects(lambda: enable_santa(model, block_n=block_n), "block_n")
    assert_rejects(lambda: enable_santa(model, draws_per_tile=draws), "draws_per_tile")


@DRAWS
@given(q=bad_tensors(tuple(Q.shape)))
def test_queries_of_every_bad_kind_are_named(q):
    """NaN / inf, a wrong rank, integer, boolean or complex values, or no rows."""
    assert_rejects(lambda: santa_decode_reference(q, K, K, 4), "q")
