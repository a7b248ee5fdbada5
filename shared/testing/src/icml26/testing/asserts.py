"""Closeness checks that say what went wrong: max error, where, and the norm error."""

from collections.abc import Callable, Sequence

import torch

# Default (atol, rtol) per dtype of the tensor under test. Kernel packages keep their own
# tighter or looser tables next to each op; these are for everything else.
DEFAULT_TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-10, 1e-8),
    torch.float32: (1e-5, 1e-4),
    torch.float16: (1e-3, 1e-2),
    torch.bfloat16: (1e-2, 5e-2),
}


def _as_tensor(x) -> torch.Tensor:
    return x if isinstance(x, torch.Tensor) else torch.as_tensor(x)


def assert_close(
    actual,
    reference,
    *,
    atol: float | None = None,
    rtol: float | None = None,
    rel_norm_tol: float | None = None,
    equal_nan: bool = False,
    name: str = "value",
) -> None:
    """Assert ``|actual - reference| <= atol + rtol * |reference|`` elementwise.

    ``reference`` should be computed in float64 where it can be: the report gives the largest
    absolute error, its index, the values there, how many elements fail, and the relative norm
    error ``||actual - reference|| / ||reference||`` computed in float64. ``rel_norm_tol``
    adds a check on that norm error (useful for low-precision kernels whose worst element is
    noisy but whose overall error is not). Tolerances default by ``actual``'s dtype.

    Non-finite values must match exactly: an infinity only matches the same infinity, a finite
    value never matches inf or NaN, and NaN matches NaN only with ``equal_nan=True``.
    """
    actual, reference = _as_tensor(actual), _as_tensor(reference)
    if actual.shape != reference.shape:
        raise AssertionError(
            f"{name}: shape {tuple(actual.shape)} != reference shape {tuple(reference.shape)}"
        )
    if actual.is_complex() or reference.is_complex():
        raise TypeError(f"{name}: assert_close compares real tensors, got a complex one")
    d_atol, d_rtol = DEFAULT_TOLERANCES.get(actual.dtype, DEFAULT_TOLERANCES[torch.float32])
    atol = d_atol if atol is None else atol
    rtol = d_rtol if rtol is None else rtol
    if atol < 0 or rtol < 0:
        raise ValueError(f"{name}: atol and rtol must be >= 0, got atol={atol}, rtol={rtol}")
    a = actual.detach().to("cpu", torch.float64)
    r = reference.detach().to("cpu", torch.float64)
    if a.numel() == 0:
        return
    finite = torch.isfinite(a) & torch.isfinite(r)
    both_nan = torch.isnan(a) & torch.isnan(r)
    # Where either side is non-finite, only an exact match is close: inf == inf (same sign),
    # NaN == NaN when equal_nan. Everything else there is a mismatch, whatever the tolerance.
    nonfinite_ok = (~finite) & ((a == r) | (both_nan & equal_nan))
    err = torch.where(finite, (a - r).abs(), torch.zeros_like(a))
    bad = torch.where(finite, err > atol + rtol * r.abs(), ~nonfinite_ok)
    diff = torch.where(finite, a - r, torch.zeros_like(a))
    rel_norm = (
        torch.linalg.vector_norm(diff)
        / torch.linalg.vector_norm(torch.where(finite, r, torch.zeros_like(r))).clamp_min(1e-300)
    ).item()
    norm_bad = rel_norm_tol is not None and rel_norm > rel_norm_tol
    if not bad.any() and not norm_bad:
        return
    n_nonfinite = int((bad & ~finite).sum())
    # Report a non-finite mismatch first (it is the worse bug), else the largest finite error.
    score = torch.where(bad & ~finite, torch.inf, torch.where(finite, err, -1.0)).flatten()
    i = int(score.argmax())
    where = tuple(int(j) for j in torch.unravel_index(torch.tensor(i), a.shape))
    max_err = err.flatten()[finite.flatten()].max().item() if finite.any() else float("nan")
    nonfinite_note = (
        f", {n_nonfinite} of them non-finite mismatches (inf/NaN where the reference differs"
        f"{'' if equal_nan else '; NaN == NaN needs equal_nan=True'})"
        if n_nonfinite
        else ""
    )
    raise AssertionError(
        f"{name} ({actual.dtype}, shape {tuple(a.shape)}) not close to its reference:\n"
        f"  worst element at index {where}: actual {a.flatten()[i].item():.6g}, "
        f"reference {r.flatten()[i].item():.6g}; max abs error {max_err:.3e} (finite elements)\n"
        f"  {int(bad.sum())} of {a.numel()} elements exceed atol={atol:g} + rtol={rtol:g}*|ref|"
        f"{nonfinite_note}\n"
        f"  relative norm error {rel_norm:.3e} (finite elements)"
        + (f" > rel_norm_tol={rel_norm_tol:g}" if norm_bad else "")
    )


def check_gradients(
    fn: Callable[..., torch.Tensor],
    inputs: Sequence[torch.Tensor],
    reference_fn: Callable[..., torch.Tensor] | None = None,
    *,
    atol: float | None = None,
    rtol: float | None = None,
    eps: float = 1e-6,
) -> None:
    """Check the gradients of ``fn`` at ``inputs``.

    Without ``reference_fn``: ``torch.autograd.gradcheck`` in float64 (finite differences).
    With ``reference_fn``: the gradients of ``sum(fn(*inputs) * g)`` for a random cotangent ``g``
    are compared with those of the float64 ``reference_fn`` on the same inputs; tolerances
    default by the inputs' dtype. Inputs that do not require grad are passed through.
    """
    if reference_fn is None:
        inputs64 = [
            x.detach().double().requires_grad_(x.requires_grad) if x.is_floating_point() else x
            for x in inputs
        ]
        if not any(x.requires_grad for x in inputs64 if isinstance(x, torch.Tensor)):
            raise ValueError("check_gradients: no input requires grad, nothing would be checked")
        torch.autograd.gradcheck(
            fn,
            inputs64,
            eps=eps,
            atol=1e-5 if atol is None else atol,
            rtol=1e-3 if rtol is None else rtol,
        )
        return
    leaves = [x.detach().requires_grad_(x.requires_grad) for x in inputs]
    leaves64 = [
        x.detach().double().requires_grad_(x.requires_grad) if x.is_floating_point() else x
        for x in inputs
    ]
    out = fn(*leaves)
    ref = reference_fn(*leaves64)
    assert_close(out, ref, atol=atol, rtol=rtol, name="forward")
    if not out.requires_grad:
        raise AssertionError(
            "fn's output carries no gradient to any input (detached?), but the reference's does"
        )
    g = torch.randn_like(ref)
    wrt = [i for i, x in enumerate(inputs) if x.requires_grad]
    if not wrt:
        raise ValueError("check_gradients: no input requires grad, nothing would be checked")
    grads = torch.autograd.grad(out, [leaves[i] for i in wrt], g.to(out.dtype), allow_unused=True)
    grads64 = torch.autograd.grad(ref, [leaves64[i] for i in wrt], g, allow_unused=True)
    for i, ga, gr in zip(wrt, grads, grads64, strict=True):
        if gr is None:
            if ga is not None and ga.count_nonzero():
                raise AssertionError(f"input {i}: a non-zero gradient where the reference has none")
            continue
        if ga is None:
            raise AssertionError(f"input {i}: no gradient, but the reference has one")
        assert_close(ga, gr, atol=atol, rtol=rtol, name=f"grad of input {i}")


def assert_rejects(
    call: Callable[[], object],
    names: str | Sequence[str],
    error: type[Exception] | tuple[type[Exception], ...] = (ValueError, TypeError),
) -> Exception:
    """``call()`` must raise ``error`` (by default ValueError or TypeError) whose message names
    every one of ``names`` (the argument and, where useful, what was expected), so a user hears
    what to fix at the call instead of a traceback from deep inside a library. Returns the
    exception for further checks."""
    names = [names] if isinstance(names, str) else list(names)
    try:
        call()
    except error as e:
        missing = [n for n in names if n not in str(e)]
        if missing:
            raise AssertionError(
                f"{type(e).__name__} does not name {missing}: {str(e)[:300]!r}"
            ) from e
        return e
    except Exception as e:
        raise AssertionError(
            f"expected {error} naming {names}, got {type(e).__name__}: {str(e)[:300]}"
        ) from e
    raise AssertionError(f"expected {error} naming {names}; the call returned normally")
