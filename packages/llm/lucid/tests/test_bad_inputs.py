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
