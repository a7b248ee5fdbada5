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
