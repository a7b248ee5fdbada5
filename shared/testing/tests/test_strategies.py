"""The bad-input strategies draw only what they promise: every draw is bad in its own way."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.testing import assert_rejects
from icml26.testing.strategies import (
    bad_tensors,
    empty,
    non_finite,
    out_of_range,
    wrong_dtype,
    wrong_rank,
)

FAST = settings(max_examples=40, deadline=None)


@FAST
@given(non_finite((None, 3)))
def test_non_finite_keeps_shape_and_dtype(x):
    assert x.dtype == torch.float32 and x.ndim == 2 and x.shape[1] == 3
    assert not torch.isfinite(x).all()


@FAST
@given(wrong_rank((None, 3)))
def test_wrong_rank_changes_the_rank(x):
    assert x.ndim in (1, 3) and torch.isfinite(x).all()


@FAST
@given(wrong_rank((5,)))
def test_wrong_rank_of_a_vector_is_never_a_scalar(x):
    assert x.ndim == 2


@FAST
@given(wrong_dtype((2, None)))
def test_wrong_dtype_keeps_the_shape(x):
    assert not x.is_floating_point() and x.shape[0] == 2


@FAST
@given(empty((None, 4)))
def test_empty_has_no_rows(x):
    assert x.shape == (0, 4)


@FAST
@given(bad_tensors((None, 2)))
def test_a_strict_check_refuses_every_bad_tensor(x):
    def check(data):
        if not isinstance(data, torch.Tensor) or not data.is_floating_point():
            raise TypeError(f"data must be a float tensor, got {data.dtype}")
        if data.ndim != 2 or data.shape[1] != 2 or len(data) == 0:
            raise ValueError(f"data must be (N >= 1, 2), got {tuple(data.shape)}")
        if not torch.isfinite(data).all():
            raise ValueError("data holds NaN or inf")

    assert_rejects(lambda: check(x), "data")


@FAST
@given(st.data())
def test_out_of_range_stays_out(data):
    v = data.draw(out_of_range(0.0, 1.0))
    assert not (0.0 <= v <= 1.0) or math.isnan(v)
    n = data.draw(out_of_range(1, None, integer=True))
    assert isinstance(n, bool) or not (isinstance(n, int) and n >= 1) or math.isnan(n)
    w = data.draw(out_of_range(None, 5.0))
    assert math.isnan(w) or w > 5.0 or math.isinf(w)


def test_strategy_arguments_are_checked():
    for bad in ("ab", 3, [0, 2], [2.5]):
        with pytest.raises((TypeError, ValueError), match="shape"):
            non_finite(bad)
    with pytest.raises(ValueError, match="at least one"):
        empty(())
    with pytest.raises(ValueError, match="low must be <= high"):
        out_of_range(2.0, 1.0)
    with pytest.raises(ValueError, match="high"):
        out_of_range(0.0, math.inf)
