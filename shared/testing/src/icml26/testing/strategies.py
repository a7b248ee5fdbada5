"""Hypothesis strategies for bad-input tests: the inputs a user gets wrong most often.

Each strategy draws values that an entry point expecting a finite float tensor of ``shape``
(``None`` in ``shape``: any size from 1 to 4 there) must refuse with a named error:

- ``non_finite(shape)``: the right shape and dtype, with NaN or +-inf at one or more drawn
  places;
- ``wrong_rank(shape)``: finite floats with a dimension added or removed;
- ``wrong_dtype(shape)``: the right shape as integers, booleans or complex numbers;
- ``empty(shape)``: zero rows;
- ``bad_tensors(shape)``: any of the four;
- ``out_of_range(low, high)``: numbers outside ``[low, high]`` (an open side is ``None``), NaN
  and infinities included, and for ``integer=True`` non-integral floats and booleans too.

Use them with ``assert_rejects``::

    @given(x=bad_tensors((None, 2)))
    def test_fit_refuses_bad_data(x):
        assert_rejects(lambda: model.fit(x), "data")

Needs ``hypothesis`` (in the ``pytest`` extra) and torch.
"""

import math
from collections.abc import Sequence

import torch
from hypothesis import strategies as st

Shape = Sequence[int | None]

__all__ = ["bad_tensors", "empty", "non_finite", "out_of_range", "wrong_dtype", "wrong_rank"]


def _check_shape(shape: Shape) -> tuple[int | None, ...]:
    if isinstance(shape, str | bytes) or not isinstance(shape, Sequence):
        raise TypeError(f"shape must be a sequence of sizes (int or None), got {shape!r}")
    for s in shape:
        if s is not None and (isinstance(s, bool) or not isinstance(s, int) or s < 1):
            raise ValueError(f"shape entries must be positive ints or None, got {shape!r}")
    return tuple(shape)


def _sizes(shape: Shape) -> st.SearchStrategy[tuple[int, ...]]:
    """Concrete sizes for ``shape``: a free (None) size draws 1 to 4."""
    return st.tuples(*(st.integers(1, 4) if s is None else st.just(s) for s in shape))


def _finite(sizes: tuple[int, ...], seed: int) -> torch.Tensor:
    return torch.randn(sizes, generator=torch.Generator().manual_seed(seed))


_SEEDS = st.integers(0, 2**31 - 1)


def non_finite(shape: Shape) -> st.SearchStrategy[torch.Tensor]:
    """Float tensors of ``shape`` with NaN or +-inf at one or more drawn places."""
    shape = _check_shape(shape)

    @st.composite
    def draw(draw_) -> torch.Tensor:
        sizes = draw_(_sizes(shape))
        x = _finite(sizes, draw_(_SEEDS)).flatten()
        places = draw_(st.lists(st.integers(0, len(x) - 1), min_size=1, max_size=3))
        for i in places:
            x[i] = draw_(st.sampled_from([math.nan, math.inf, -math.inf]))
        return x.reshape(sizes)

    return draw()


def wrong_rank(shape: Shape) -> st.SearchStrategy[torch.Tensor]:
    """Finite float tensors with one dimension more or one fewer than ``shape`` (never rank 0
    when ``shape`` has rank 1: a scalar is its own case)."""
    shape = _check_shape(shape)

    @st.composite
    def draw(draw_) -> torch.Tensor:
        sizes = list(draw_(_sizes(shape)))
        if len(sizes) > 1 and draw_(st.booleans()):
            del sizes[draw_(st.integers(0, len(sizes) - 1))]
        else:
            sizes.insert(draw_(st.integers(0, len(sizes))), draw_(st.integers(2, 3)))
        return _finite(tuple(sizes), draw_(_SEEDS))

    return draw()


def wrong_dtype(shape: Shape) -> st.SearchStrategy[torch.Tensor]:
    """Tensors of ``shape`` holding integers, booleans or complex numbers."""
    shape = _check_shape(shape)

    @st.composite
    def draw(draw_) -> torch.Tensor:
        x = _finite(draw_(_sizes(shape)), draw_(_SEEDS))
        kind = draw_(st.sampled_from(["int64", "int32", "bool", "complex64"]))
        if kind == "bool":
            return x > 0
        if kind == "complex64":
            return torch.complex(x, x)
        return (3 * x).round().to(getattr(torch, kind))

    return draw()


def empty(shape: Shape) -> st.SearchStrategy[torch.Tensor]:
    """Float tensors of ``shape`` with zero rows (the first size 0)."""
    shape = _check_shape(shape)
    if not shape:
        raise ValueError("empty needs a shape with at least one dimension")
    return _sizes(shape[1:]).map(lambda rest: torch.zeros((0, *rest)))


def bad_tensors(shape: Shape) -> st.SearchStrategy[torch.Tensor]:
    """Any of ``non_finite``, ``wrong_rank``, ``wrong_dtype`` and ``empty`` for ``shape``."""
    return st.one_of(non_finite(shape), wrong_rank(shape), wrong_dtype(shape), empty(shape))


def out_of_range(
    low: float | None = None, high: float | None = None, *, integer: bool = False
) -> st.SearchStrategy[float | int | bool]:
    """Numbers an argument documented as lying in ``[low, high]`` must refuse: values below
    ``low`` and above ``high``, NaN and the infinities; with ``integer=True`` also non-integral
    floats inside the range and booleans (``True`` is not the count 1)."""
    for name, bound in (("low", low), ("high", high)):
        if bound is not None and not (isinstance(bound, int | float) and math.isfinite(bound)):
            raise ValueError(f"{name} must be a finite number or None, got {bound!r}")
    if low is not None and high is not None and low > high:
        raise ValueError(f"low must be <= high, got [{low}, {high}]")
    parts = [st.sampled_from([math.nan, math.inf, -math.inf])]
    number = st.integers if integer else st.floats
    if low is not None:
        below = number(max_value=math.ceil(low) - 1) if integer else number(max_value=low)
        parts.append(below.filter(lambda v: v < low))
    if high is not None:
        above = number(min_value=math.floor(high) + 1) if integer else number(min_value=high)
        parts.append(above.filter(lambda v: v > high and math.isfinite(v)))
    if integer:
        lo = -1e6 if low is None else low
        hi = 1e6 if high is None else high
        if hi - lo > 1:  # a non-integral float that the range itself contains
            inside = st.floats(lo, hi, allow_nan=False).filter(lambda v: v != int(v))
            parts.append(inside)
        parts.append(st.booleans())
    return st.one_of(*parts)
