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
    name: str = "value",
) -> None:
    """Assert ``|actual - reference| <= atol + rtol * |reference|`` elementwise.

    ``reference`` should be computed in float64 where it can be: the report gives the largest
    absolute error, its index, the values there, how many elements fail, and the relative norm
    error ``||actual - reference|| / ||reference||`` computed in float64. ``rel_norm_tol``
    adds a check on that norm error (useful for low-precision kernels whose worst element is
    noisy but whose overall error is not). Tolerances default by ``actual``'s dtype.
    """
    actual, reference = _as_tensor(actual), _as_tensor(reference)
    if actual.shape != reference.shape:
        raise AssertionError(
            f"{name}: shape {tuple(actual.shape)} != reference shape {tuple(reference.shape)}"
        )
    d_atol, d_rtol = DEFAULT_TOLERANCES.get(actual.dtype, DEFAULT_TOLERANCES[torch.float32])
    atol = d_atol if atol is None else atol
    rtol = d_rtol if rtol is None else rtol
    a = actual.detach().to("cpu", torch.float64)
    r = reference.detach().to("cpu", torch.float64)
    if a.numel() == 0:
        return
    nonfinite = ~torch.isfinite(a) & torch.isfinite(r)
    err = (a - r).abs()
    err = torch.where(torch.isnan(err) & torch.isnan(a) & torch.isnan(r), 0.0, err)
    bad = (err > atol + rtol * r.abs()) | nonfinite
    rel_norm = (
        torch.linalg.vector_norm((a - r).nan_to_num())
        / torch.linalg.vector_norm(r).clamp_min(1e-300)
    ).item()
    norm_bad = rel_norm_tol is not None and rel_norm > rel_norm_tol
    if not bad.any() and not norm_bad:
        return
    flat = torch.where(torch.isfinite(err), err, torch.inf).flatten()
    i = int(flat.argmax())
    where = tuple(int(j) for j in torch.unravel_index(torch.tensor(i), a.shape))
    nonfinite_note = (
        f", {int(nonfinite.sum())} are non-finite where the reference is finite"
        if nonfinite.any()
        else ""
    )
    raise AssertionError(
        f"{name} ({actual.dtype}, shape {tuple(a.shape)}) not close to its reference:\n"
        f"  max abs error {flat[i].item():.3e} at index {where}: "
        f"actual {a.flatten()[i].item():.6g}, reference {r.flatten()[i].item():.6g}\n"
        f"  {int(bad.sum())} of {a.numel()} elements exceed atol={atol:g} + rtol={rtol:g}*|ref|"
        f"{nonfinite_note}\n"
        f"  relative norm error {rel_norm:.3e}"
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
        torch.autograd.gradcheck(fn, inputs64, eps=eps, atol=atol or 1e-5, rtol=rtol or 1e-3)
        return
    leaves = [x.detach().requires_grad_(x.requires_grad) for x in inputs]
    leaves64 = [
        x.detach().double().requires_grad_(x.requires_grad) if x.is_floating_point() else x
        for x in inputs
    ]
    out = fn(*leaves)
    ref = reference_fn(*leaves64)
    assert_close(out, ref, atol=atol, rtol=rtol, name="forward")
    g = torch.randn_like(ref)
    wrt = [i for i, x in enumerate(inputs) if x.requires_grad]
    grads = torch.autograd.grad(out, [leaves[i] for i in wrt], g.to(out.dtype), allow_unused=True)
    grads64 = torch.autograd.grad(ref, [leaves64[i] for i in wrt], g, allow_unused=True)
    for i, ga, gr in zip(wrt, grads, grads64, strict=True):
        if gr is None:
            continue
        if ga is None:
            raise AssertionError(f"input {i}: no gradient, but the reference has one")
        assert_close(ga, gr, atol=atol, rtol=rtol, name=f"grad of input {i}")
