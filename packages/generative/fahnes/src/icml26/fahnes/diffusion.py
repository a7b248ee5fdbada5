"""The two diffusions every refinement step runs: a discrete one over binary labels (which
candidate incidences / edges are kept) and a Gaussian one over continuous features.

- Labels: D3PM (Austin et al. 2021) with *marginal* transitions, as in DiGress (Vignac et al.
  2023) and the hierarchical line of work FAHNES builds on (Bergmeister et al. 2024):
  ``Q_t = alpha_t I + (1 - alpha_t) 1 pi^T`` with ``pi`` the labels' training marginal, so
  ``q(x_t | x_0) = abar_t onehot(x_0) + (1 - abar_t) pi``; the network predicts ``p(x_0)`` and a
  step samples ``sum_{x_0} p(x_0) q(x_{t-1} | x_t, x_0)``.
- Features: DDPM (Ho et al. 2020) with the network predicting ``x_0``; a step samples the
  posterior ``q(x_{t-1} | x_t, x_0_hat)``.

Both use the cosine schedule (Nichol and Dhariwal 2021) with ``T`` steps.
"""

from __future__ import annotations

import math

import torch

__all__ = ["Schedule"]


class Schedule:
    """Cosine noise schedule: ``abar[t]`` for t = 0..T (``abar[0] = 1``: clean)."""

    def __init__(self, steps: int = 10, s: float = 0.008):
        if steps < 1:
            raise ValueError(f"steps must be >= 1, got {steps}")
        self.T = steps
        t = torch.arange(steps + 1, dtype=torch.float64) / steps
        f = torch.cos((t + s) / (1 + s) * math.pi / 2) ** 2
        abar = (f / f[0]).clamp(1e-5, 1.0)
        self.abar = abar.float()
        self.alpha = torch.cat([torch.ones(1), (abar[1:] / abar[:-1]).float()])

    # ---- labels (binary D3PM, marginal transitions) ---------------------------------------------

    def noisy_labels(self, x0: torch.Tensor, t: torch.Tensor, pi: float, gen=None) -> torch.Tensor:
        """Sample x_t ~ q(x_t | x_0) for bool labels ``x0`` with per-label step ``t``."""
        ab = self.abar[t]
        p1 = ab * x0.float() + (1 - ab) * pi
        return torch.rand(x0.shape, generator=gen) < p1

    def label_step(
        self, xt: torch.Tensor, p0: torch.Tensor, t: torch.Tensor, pi: float, gen=None
    ) -> torch.Tensor:
        """One reverse step: x_{t-1} from x_t (bool) and the predicted P(x_0 = 1) ``p0``."""
        a, ab_prev = self.alpha[t], self.abar[t - 1]
        pis = torch.tensor([1 - pi, pi])
        xt_l = xt.long()
        # q(x_t | x_{t-1} = k) for k in {0, 1}: (E, 2)
        lik = (
            a[:, None] * (torch.arange(2)[None, :] == xt_l[:, None]).float()
            + (1 - a[:, None]) * pis[xt_l][:, None]
        )
        post = torch.zeros(xt.shape[0], 2)
        for x0, w in ((0, 1 - p0), (1, p0)):
            # q(x_{t-1} = k | x_0): (E, 2)
            prior = (
                ab_prev[:, None] * (torch.arange(2)[None, :] == x0).float()
                + (1 - ab_prev[:, None]) * pis[None, :]
            )
            joint = lik * prior
            post += w[:, None] * joint / joint.sum(1, keepdim=True).clamp_min(1e-12)
        return torch.rand(xt.shape, generator=gen) < post[:, 1] / post.sum(1).clamp_min(1e-12)

    # ---- features (DDPM, x_0 prediction) --------------------------------------------------------

    def noisy_features(self, x0: torch.Tensor, t: torch.Tensor, gen=None) -> torch.Tensor:
        ab = self.abar[t][:, None]
        noise = torch.randn(x0.shape, generator=gen)
        return ab.sqrt() * x0 + (1 - ab).sqrt() * noise

    def feature_step(self, xt: torch.Tensor, x0_hat: torch.Tensor, t: torch.Tensor, gen=None):
        """x_{t-1} ~ q(x_{t-1} | x_t, x_0_hat) (the mean at t = 1)."""
        ab, ab_prev, a = self.abar[t][:, None], self.abar[t - 1][:, None], self.alpha[t][:, None]
        beta = 1 - a
        mean = (ab_prev.sqrt() * beta / (1 - ab)) * x0_hat + (
            a.sqrt() * (1 - ab_prev) / (1 - ab)
        ) * xt
        var = beta * (1 - ab_prev) / (1 - ab)
        noise = torch.randn(xt.shape, generator=gen)
        return mean + (t[:, None] > 1).float() * var.sqrt() * noise
