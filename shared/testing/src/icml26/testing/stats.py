"""Statistical checks for stochastic estimators: unbiasedness and variance ordering.

These are tests that can fail: with ``k`` standard errors the false-alarm rate for a correct
estimator is about ``2 * (1 - Phi(k))`` per coordinate (k=4: 6e-5), and a biased estimator
fails once its bias exceeds k standard errors of the sample mean.
"""

import math

import torch


def assert_unbiased(samples, target, *, k: float = 4.0, name: str = "estimator") -> None:
    """Assert the mean of ``samples`` (n, *shape) is within ``k`` standard errors of ``target``.

    The standard error is per coordinate, ``std / sqrt(n)``, with a floor relative to the
    target's scale so that exactly-deterministic coordinates do not need bit equality.
    """
    x = torch.as_tensor(samples).detach().to("cpu", torch.float64)
    t = torch.as_tensor(target).detach().to("cpu", torch.float64)
    n = x.shape[0]
    if n < 2:
        raise ValueError(f"samples: need at least 2 draws along dim 0, got {n}")
    if x.shape[1:] != t.shape:
        raise ValueError(f"samples {tuple(x.shape)} do not match target {tuple(t.shape)}")
    if not torch.isfinite(t).all():
        raise ValueError(f"{name}: the target has non-finite values")
    if not torch.isfinite(x).all():
        raise AssertionError(
            f"{name}: {int((~torch.isfinite(x)).sum())} of {x.numel()} sample values are not finite"
        )
    mean = x.mean(0)
    se = x.std(0, unbiased=True) / math.sqrt(n)
    floor = 1e-12 * t.abs().max().clamp_min(1.0)
    z = (mean - t).abs() / (se + floor)
    if (z > k).any():
        i = int(z.flatten().argmax())
        raise AssertionError(
            f"{name} looks biased: {int((z > k).sum())} of {z.numel()} coordinates deviate by more "
            f"than {k} standard errors (n={n}); worst at flat index {i}: mean "
            f"{mean.flatten()[i].item():.6g}, target {t.flatten()[i].item():.6g}, "
            f"se {se.flatten()[i].item():.3g}, z={z.flatten()[i].item():.2f}"
        )


def assert_variance_order(
    low, high, *, target=None, k: float = 3.0, names: tuple[str, str] = ("low", "high")
) -> None:
    """Assert the estimator behind ``low`` has a smaller mean squared error than ``high``'s.

    Both are (n, *shape) draws. Per draw the squared error is summed over coordinates (around
    ``target`` when given, otherwise around each estimator's own mean); the difference of the two
    means must be more than ``k`` standard errors in favour of ``low``.
    """
    a = torch.as_tensor(low).detach().to("cpu", torch.float64)
    b = torch.as_tensor(high).detach().to("cpu", torch.float64)
    for x, name in ((a, names[0]), (b, names[1])):
        if x.shape[0] < 2:
            raise ValueError(f"{name}: need at least 2 draws along dim 0, got {x.shape[0]}")
        if not torch.isfinite(x).all():
            raise AssertionError(f"{name}: draws hold non-finite values")
    ca = a - (a.mean(0) if target is None else torch.as_tensor(target, dtype=torch.float64))
    cb = b - (b.mean(0) if target is None else torch.as_tensor(target, dtype=torch.float64))
    ea = ca.pow(2).flatten(1).sum(1)
    eb = cb.pow(2).flatten(1).sum(1)
    diff = eb.mean() - ea.mean()
    se = math.sqrt(ea.var().item() / len(ea) + eb.var().item() / len(eb))
    if not diff.item() > k * se:
        raise AssertionError(
            f"expected {names[0]} to have the smaller variance: {names[0]} {ea.mean().item():.4g} "
            f"vs {names[1]} {eb.mean().item():.4g} (difference {diff.item():.3g}, needs > "
            f"{k} x se {se:.3g})"
        )
