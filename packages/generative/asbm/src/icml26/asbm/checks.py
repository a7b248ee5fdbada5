"""Argument checks of ASBM's public entry points: each failure is a ValueError / TypeError that
names the argument and what was expected. Shapes and dtypes only inside training loops, so a
check never adds a device sync to a gradient step."""

import numbers

import torch

from icml26.testing.checks import integer, number


def positive_int(value, name: str, minimum: int = 1) -> int:
    return integer(name, value, low=minimum)


def positive_ints(**values) -> None:
    for name, value in values.items():
        positive_int(value, name)


def nonnegative_float(value, name: str, positive: bool = False) -> float:
    return number(name, value, above=0) if positive else number(name, value, low=0)


def check_shape(shape) -> tuple[int, ...]:
    """The shape of one sample, e.g. (2,) or (1, 8, 8): a non-empty sequence of positive ints."""
    try:
        out = tuple(shape)
    except TypeError:
        out = ()
    if not out or any(isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 1
                      for s in out):  # fmt: skip
        raise ValueError(f"shape must be a non-empty tuple of positive ints, got {shape!r}")
    return tuple(int(s) for s in out)


def check_pair(x0, x1, t=None, names: tuple[str, str] = ("x0", "x1")) -> None:
    """Endpoint batches of one shape (B, ...) in floating point, and times ``t`` of shape (B,)."""
    for name, x in zip(names, (x0, x1), strict=True):
        if not isinstance(x, torch.Tensor) or x.ndim < 2 or not x.is_floating_point():
            got = f"{x.dtype} {tuple(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"{name} must be a floating (B, ...) tensor, got {got}")
    if x0.shape != x1.shape:
        raise ValueError(f"{names[0]} and {names[1]} must share one shape, got "
                         f"{tuple(x0.shape)} and {tuple(x1.shape)}")  # fmt: skip
    if t is not None and (not isinstance(t, torch.Tensor) or tuple(t.shape) != (len(x0),)):
        got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
        raise ValueError(f"t must be a ({len(x0)},) tensor of times, one per sample, got {got}")


def check_kind(value, kind: type, name: str) -> None:
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")
