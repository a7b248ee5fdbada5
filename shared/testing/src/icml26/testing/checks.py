"""Argument checks that name the one bad field: ``<name> must be <what>, got <value>``.

Configs and public functions check each setting on its own line, so a user who passes three
settings and gets one wrong reads which one and what it should be, not a list of rules. Stdlib
only; numpy scalars pass (they register as ``numbers.Integral`` / ``numbers.Real``), booleans
and non-finite numbers do not.

    integer("steps", cfg.steps, low=0)
    number("lr", cfg.lr, above=0)
    number("gamma", cfg.gamma, low=0, high=1)
"""

import math
import numbers


def _bounds(low, high, above, below) -> str:
    parts = []
    if low is not None:
        parts.append(f">= {low}")
    if above is not None:
        parts.append(f"> {above}")
    if high is not None:
        parts.append(f"<= {high}")
    if below is not None:
        parts.append(f"< {below}")
    return " and ".join(parts)


def _within(value, low, high, above, below) -> bool:
    return (
        (low is None or value >= low)
        and (above is None or value > above)
        and (high is None or value <= high)
        and (below is None or value < below)
    )


def integer(name: str, value, *, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an int when it is an integer (not a bool) within [low, high]; else a
    ValueError that names ``name``, the rule and the value."""
    bounds = _bounds(low, high, None, None)
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if not ok or not _within(value, low, high, None, None):
        rule = f"an integer {bounds}" if bounds else "an integer"
        raise ValueError(f"{name} must be {rule}, got {value!r}")
    return int(value)


def number(
    name: str,
    value,
    *,
    low: float | None = None,
    high: float | None = None,
    above: float | None = None,
    below: float | None = None,
) -> float:
    """``value`` as a float when it is a finite real number (not a bool) with ``low <= value
    <= high`` and ``above < value < below`` (each bound optional); else a ValueError that
    names ``name``, the rule and the value."""
    bounds = _bounds(low, high, above, below)
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or not _within(value, low, high, above, below):
        rule = f"a finite number {bounds}" if bounds else "a finite number"
        raise ValueError(f"{name} must be {rule}, got {value!r}")
    return float(value)
