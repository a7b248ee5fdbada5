"""Bad input at LUCID's attention ends in a named error, not a silent run."""

import pytest
import torch

from icml26.lucid.attention import LucidAttention
from icml26.testing import assert_rejects


@pytest.mark.parametrize("kind", ["lucid", "softmax"])
def test_a_padding_mask_must_be_bool_or_zero_one(kind):
    attn = LucidAttention(16, 2, kind=kind)
    x = torch.randn(2, 5, 16)
    half = torch.full((2, 5), 0.5)
    assert_rejects(lambda: attn(x, attention_mask=half), ["attention_mask", "0 and 1"])
    ok = torch.ones(2, 5)
    ok[0, :2] = 0  # left padding as 0/1 floats is accepted, and equals the bool mask
    torch.testing.assert_close(attn(x, attention_mask=ok), attn(x, attention_mask=ok.bool()))


def test_an_all_padding_row_is_named():
    attn = LucidAttention(16, 2)
    mask = torch.ones(2, 5, dtype=torch.bool)
    mask[1] = False
    assert_rejects(lambda: attn(torch.randn(2, 5, 16), attention_mask=mask), ["rows [1]"])


def test_wrong_shapes_are_named():
    attn = LucidAttention(16, 2)
    assert_rejects(lambda: attn(torch.randn(2, 5, 12)), ["x must have shape"])
    mask = torch.ones(2, 4, dtype=torch.bool)
    assert_rejects(lambda: attn(torch.randn(2, 5, 16), attention_mask=mask), ["attention_mask"])
    assert_rejects(lambda: LucidAttention(16, 3), ["num_heads"])


from icml26.lucid import (  # noqa: E402
    TinyLMConfig,
    apply_rope,
    lucid_attention,
    masked_lucid_solve,
)

Q = torch.randn(1, 2, 8, 4)


@pytest.mark.parametrize(
    "q, k, name",
    [
        (torch.full_like(Q, float("nan")), Q, "q"),
        (Q, Q[..., :3], "k"),
        (Q.long(), Q.long(), "q"),
        (Q[0], Q[0], "q"),
    ],
)
def test_lucid_attention_names_bad_tensors(q, k, name):
    assert_rejects(lambda: lucid_attention(q, k, k), name)


def test_the_solve_names_mismatched_values():
    assert_rejects(lambda: masked_lucid_solve(Q, Q[..., :6, :], None), "v")


def test_rope_names_a_bad_base():
    assert_rejects(lambda: apply_rope(Q, 0, -1.0), "base")


@pytest.mark.parametrize(
    "kwargs, name",
    [({"vocab_size": -1}, "vocab_size"), ({"dim": 63}, "heads"), ({"kind": "linear"}, "kind")],
)
def test_tiny_lm_config_names_a_bad_shape(kwargs, name):
    assert_rejects(lambda: TinyLMConfig(**kwargs), name)


from icml26.lucid import (  # noqa: E402
    LucidCache,
    LucidDynamicCache,
    TinyLM,
    lucid_append,
    lucid_attention_reference,
    lucid_decode_reference,
    lucid_preconditioner,
    lucid_solve,
    lucid_solve_reference,
)

RETURNED = {"register_lucid": "takes no arguments: it registers the implementation by name"}
"""Public names that take no input."""


def test_the_reference_ops_name_bad_keys_and_values():
    assert_rejects(lambda: lucid_preconditioner(Q * float("nan")), ["k", "NaN"])
    assert_rejects(lambda: lucid_preconditioner(Q.long()), ["k", "floating"])
    assert_rejects(lambda: lucid_preconditioner([1.0]), "k")
    for solve in (lucid_solve, lucid_solve_reference):
        assert_rejects(lambda s=solve: s(Q, Q[..., :5, :]), ["k", "v"])
    assert_rejects(lambda: lucid_solve(Q, Q * float("nan")), "v")
    assert_rejects(lambda: lucid_attention_reference(Q, Q[..., :3], Q), ["q", "k"])
    assert_rejects(lambda: lucid_attention_reference(Q, Q, Q, causal=False), "causal")
    one = Q[..., :1, :]
    assert_rejects(lambda: lucid_decode_reference(one, Q, Q[..., :3, :], one, one), "q")


def test_appending_to_a_v_prime_cache_names_what_does_not_fit():
    one = Q[..., :1, :]
    assert_rejects(lambda: lucid_append(Q, Q[..., :3, :], one, one), "vp_cache")
    assert_rejects(lambda: lucid_append(Q, Q, one[..., :2], one), "k_cache")
    mask = torch.ones(1, 1, 1, 3, dtype=torch.bool)
    assert_rejects(lambda: lucid_append(Q, Q, one, one, mask), "allowed")
    assert_rejects(lambda: lucid_append(Q, Q, one * float("nan"), one), "k_new")
    assert_rejects(lambda: lucid_append(Q, Q, one.long(), one.long()), "k_new")


def test_caches_name_half_filled_or_mismatched_contents():
    assert_rejects(lambda: LucidCache(k=Q), ["k", "v"])
    assert_rejects(lambda: LucidCache(k=Q, v=Q[..., :3, :]), ["k", "v"])
    wrong = torch.ones(1, 5, dtype=torch.bool)
    assert_rejects(lambda: LucidCache(k=Q, v=Q, valid=wrong), "valid")
    assert_rejects(lambda: LucidCache(valid=wrong), "valid")
    assert_rejects(lambda: LucidDynamicCache(5), "ddp_cache_data")
    assert_rejects(lambda: LucidDynamicCache(offloading=True), "offloading")
    LucidDynamicCache(config=None)  # DynamicCache's keyword is accepted


def test_tiny_lm_names_a_bad_config_and_bad_token_ids():
    assert_rejects(lambda: TinyLM("cfg"), "TinyLMConfig")
    model = TinyLM(TinyLMConfig(vocab_size=16, dim=16, heads=2, layers=1, max_len=8))
    for tokens in (torch.tensor([[1, 20]]), torch.tensor([[-1, 2]])):
        assert_rejects(lambda t=tokens: model(t), ["tokens", "[0, 16)"])
    assert_rejects(lambda: model(torch.tensor([[1.0, 2.0]])), ["tokens", "integer"])
    assert_rejects(lambda: model(torch.tensor([1, 2])), "tokens")
    assert_rejects(lambda: model(torch.zeros(1, 30, dtype=torch.long)), "max_len")


from hypothesis import given, settings  # noqa: E402

from icml26.testing.strategies import bad_tensors  # noqa: E402


@settings(max_examples=30, deadline=None)
@given(x=bad_tensors((2, 5, 16)))
def test_hidden_states_of_every_bad_kind_are_named(x):
    """NaN / inf, a wrong rank, integer, boolean or complex values, or no rows."""
    attn = LucidAttention(16, 2)
    assert_rejects(lambda: attn(x), "x")


def test_hidden_states_of_another_dtype_than_the_weights_are_named():
    layer = LucidAttention(16, 2)
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    assert_rejects(lambda: layer(x), ["x is torch.float64", "layer.to"])  # was a raw matmul error
    assert layer.double()(x).dtype == torch.float64
