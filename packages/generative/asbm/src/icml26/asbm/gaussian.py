"""Stage 1 in closed form for Gaussian data: the exact iteration the trained networks approximate.

With data x0 ~ N(m0, v0) (per coordinate, coordinates independent), a linear reference with
transition X1 | X0 ~ N(a x0, v) (a = a(0, 1), v = v(0, 1)) and the prior N(0, s^2), every object of
stage 1 stays Gaussian and every network has an exact linear answer:

- adjoint matching with terminal cost g = E + psi, grad psi = h(x) = alpha x + beta, reaches the
  stochastic-optimal-control optimum p*(x1 | x0) ∝ p_ref(x1 | x0) exp(-g(x1)): Gaussian with
  precision P = 1 / v + 1 / s^2 + alpha and mean (a x0 / v - beta) / P, so x1 = c x0 + d + noise
  with c = a / (v P), d = -beta / P, noise variance 1 / P;
- corrector matching regresses grad_{x1} log p_ref(x1 | x0) = -(x1 - a x0) / v on x1 under that
  coupling: h(x1) = -x1 / v + a E[x0 | x1] / v with E[x0 | x1] = m0 + k (x1 - m1),
  k = c v0 / Var(x1); so alpha = (a k - 1) / v and beta = a (m0 - k m1) / v.

Round 1 uses h = 0 (psi constant); each later round first fits h to the previous round's coupling,
then re-solves the control problem. The terminal law converges to the prior N(0, s^2) -- the
Schrödinger bridge's marginal -- at a speed set by v / s^2.
"""

from dataclasses import dataclass

import torch

from icml26.asbm.sde import LinearSDE


@dataclass(frozen=True)
class GaussianRound:
    """The terminal law X1 ~ N(mean, var) after one round (per coordinate), and the corrector
    h(x) = alpha x + beta the round used."""

    mean: torch.Tensor
    var: torch.Tensor
    alpha: torch.Tensor
    beta: torch.Tensor


def gaussian_stage1(
    m0: torch.Tensor, v0: torch.Tensor, sde: LinearSDE, prior_scale: float, rounds: int
) -> list[GaussianRound]:
    """The exact per-round terminal moments of stage 1 for data N(m0, v0) (tensors of any shape,
    one entry per coordinate)."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    m0, v0 = torch.as_tensor(m0, dtype=torch.float64), torch.as_tensor(v0, dtype=torch.float64)
    if (v0 <= 0).any():
        raise ValueError("the data variance v0 must be positive")
    zero, one = torch.zeros(()), torch.ones(())
    a = float(sde.a(zero, one))
    v = float(sde.v(zero, one))
    s2 = prior_scale**2
    alpha, beta = torch.zeros_like(m0), torch.zeros_like(m0)
    out = []
    for _ in range(rounds):
        precision = 1 / v + 1 / s2 + alpha
        c, d = a / (v * precision), -beta / precision
        m1, var1 = c * m0 + d, c**2 * v0 + 1 / precision
        out.append(GaussianRound(m1, var1, alpha, beta))
        k = c * v0 / var1
        alpha, beta = (a * k - 1) / v, a * (m0 - k * m1) / v
    return out


def independent_bridge_fields(m0, v0, sde: LinearSDE, prior_scale: float = 1.0):
    """Stage 2 in closed form for data N(m0, v0) (per coordinate) paired independently with the
    prior N(0, s^2): the exact backward score and forward control of the mixture of reference
    bridges, as functions ``(t, x) -> tensor`` (t of shape (B,), x of shape (B, ...)).

    On the bridge ``x_t = A_t x0 + B_t x1 + sqrt(v_t) z`` everything is jointly Gaussian, with
    ``Var x_t = A_t^2 v0 + B_t^2 s^2 + v_t``, so ``E[x0 | x_t]`` and ``E[x1 | x_t]`` are linear
    regressions and

        s*(t, x) = (a(0, t) E[x0 | x_t = x] - x) / v(0, t)                 (backward score)
        u*(t, x) = a(t, 1) (E[x1 | x_t = x] - a(t, 1) x) / v(t, 1)         (forward control)

    the conditional expectations of what ``bridge_score_loss`` and the forward bridge's Doob
    transform regress. Times are kept in [EPS, 1 - EPS] like the bridge's.
    """
    from icml26.asbm.sde import EPS

    m0, v0 = torch.as_tensor(m0, dtype=torch.float64), torch.as_tensor(v0, dtype=torch.float64)
    s2 = float(prior_scale) ** 2

    def regressions(t, x):
        t = torch.as_tensor(t, dtype=torch.float32).clamp(EPS, 1 - EPS)
        A, B, v = (c.double().view(-1, *([1] * (x.dim() - 1))) for c in sde.bridge_coefficients(t))
        var = A**2 * v0 + B**2 * s2 + v
        resid = x.double() - A * m0
        return t, m0 + A * v0 / var * resid, B * s2 / var * resid

    def score(t, x):
        t, e0, _ = regressions(t, x)
        a0t, std = (c.double().view(-1, *([1] * (x.dim() - 1))) for c in sde.from_zero(t))
        return ((a0t * e0 - x.double()) / std**2).to(x.dtype)

    def control(t, x):
        t, _, e1 = regressions(t, x)
        one = torch.ones_like(t)
        shape = (-1, *([1] * (x.dim() - 1)))
        at1, vt1 = sde.a(t, one).double().view(shape), sde.v(t, one).double().view(shape)
        return (at1 * (e1 - at1 * x.double()) / vt1).to(x.dtype)

    return score, control
