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
