"""The Var-JEPA evidence lower bound, as pure functions of Gaussian parameters and likelihoods.

The coupled latent-variable model (Var-JEPA, arXiv 2603.20111) has a context latent z_C and a
target latent z_T:

    p(z_C) = N(0, I),   p(z_T | z_C) (the learned conditional prior: JEPA's predictor),
    p(x_C | z_C), p(x_T | z_T) (decoders),

and the variational posteriors q(z_C | x_C), q(z_T | x_T) (JEPA's two encoders). The bound is

    ELBO = E_q[log p(x_T | z_T) + log p(x_C | z_C)]
           - KL(q(z_T | x_T) || p(z_T | z_C)) - KL(q(z_C | x_C) || N(0, I)),

with the KL to the learned prior standing where JEPA has its L2 prediction loss. ``beta`` weights
both KL terms (beta = 1 is the bound itself). These functions hold no model, so a closed-form
model (the linear-Gaussian one in the tests) and :class:`~icml26.varjepa.VarTJEPA` use the same
code.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from icml26.testing.checks import number


class ElboTerms(NamedTuple):
    """Each term averaged over rows (nats per row). ``elbo`` includes ``beta``; ``loss = -elbo``."""

    recon_target: torch.Tensor
    recon_context: torch.Tensor
    kl_target: torch.Tensor
    kl_context: torch.Tensor
    elbo: torch.Tensor

    @property
    def loss(self) -> torch.Tensor:
        return -self.elbo


def _same_shape(**tensors: torch.Tensor) -> None:
    """Arguments that must broadcast together; a ValueError naming them (shape only: no sync)."""
    try:
        torch.broadcast_shapes(*(t.shape for t in tensors.values()))
    except RuntimeError:
        shapes = ", ".join(f"{k} {tuple(t.shape)}" for k, t in tensors.items())
        raise ValueError(f"shapes do not match: {shapes}") from None


def reparameterize(mu: torch.Tensor, logvar: torch.Tensor, generator=None) -> torch.Tensor:
    """z = mu + sigma * eps, eps ~ N(0, I): a sample whose gradient reaches mu and logvar."""
    _same_shape(mu=mu, logvar=logvar)
    eps = torch.randn(mu.shape, generator=generator, device=mu.device, dtype=mu.dtype)
    return mu + torch.exp(0.5 * logvar) * eps


def gaussian_kl(
    mu_q: torch.Tensor,
    logvar_q: torch.Tensor,
    mu_p: torch.Tensor | None = None,
    logvar_p: torch.Tensor | None = None,
) -> torch.Tensor:
    """KL(N(mu_q, diag e^{logvar_q}) || N(mu_p, diag e^{logvar_p})), elementwise (sum it yourself).

    With ``mu_p``/``logvar_p`` omitted the prior is N(0, I). Closed form:
    0.5 (logvar_p - logvar_q + (e^{logvar_q} + (mu_q - mu_p)^2) / e^{logvar_p} - 1).
    """
    if mu_p is None:
        mu_p = torch.zeros_like(mu_q)
    if logvar_p is None:
        logvar_p = torch.zeros_like(logvar_q)
    _same_shape(mu_q=mu_q, logvar_q=logvar_q, mu_p=mu_p, logvar_p=logvar_p)
    return 0.5 * (
        logvar_p - logvar_q + (logvar_q.exp() + (mu_q - mu_p).square()) / logvar_p.exp() - 1.0
    )


def gaussian_log_likelihood(
    x: torch.Tensor, mean: torch.Tensor, logvar: torch.Tensor
) -> torch.Tensor:
    """log N(x | mean, e^{logvar}), elementwise."""
    _same_shape(x=x, mean=mean, logvar=logvar)
    return -0.5 * (math.log(2 * math.pi) + logvar + (x - mean).square() / logvar.exp())


def _check_term(name: str, t, rows: int) -> None:
    """One per-row term of ``elbo_terms``: a finite, non-empty float (B,) tensor of ``rows``."""
    if not isinstance(t, torch.Tensor) or not t.is_floating_point():
        got = t.dtype if isinstance(t, torch.Tensor) else type(t).__name__
        raise TypeError(f"{name} must be a floating-point (B,) tensor, got {got}")
    if t.ndim != 1 or len(t) == 0 or len(t) != rows:
        raise ValueError(f"{name} must be a per-row (B,) tensor with B = {rows or '>= 1'} like "
                         f"loglik_target, got shape {tuple(t.shape)}")  # fmt: skip
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} holds NaN or inf (a diverged encoder or a zero variance?)")


def elbo_terms(
    loglik_target: torch.Tensor,
    loglik_context: torch.Tensor,
    kl_target: torch.Tensor,
    kl_context: torch.Tensor,
    beta: float = 1.0,
) -> ElboTerms:
    """Combine per-row terms (each shape (B,), summed over that row's columns and latent
    dimensions) into the batch-mean bound ``E[recon] - beta (KL_T + KL_C)``."""
    beta = number("beta", beta, low=0)
    names = ("loglik_target", "loglik_context", "kl_target", "kl_context")
    terms = (loglik_target, loglik_context, kl_target, kl_context)
    first = loglik_target
    rows = len(first) if isinstance(first, torch.Tensor) and first.ndim == 1 else 0
    for name, t in zip(names, terms, strict=True):
        _check_term(name, t, rows)
    rt, rc = loglik_target.mean(), loglik_context.mean()
    kt, kc = kl_target.mean(), kl_context.mean()
    return ElboTerms(rt, rc, kt, kc, rt + rc - beta * (kt + kc))
