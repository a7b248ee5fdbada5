"""Small discrete problems where the best-of-N objective can be checked exactly.

* :func:`exact_maxn` / :func:`gradient_check`: a categorical policy over K outcomes, where
  J_N = sum_k r_(k) [F(r_(k))^N - F(r_(k-1))^N] is exact (F the policy's CDF over sorted rewards),
  so its gradient by autograd is the truth :mod:`icml26.fidia.estimators` is held to.
* :class:`FactorisedPolicy` with :func:`two_mode_landscape` and :func:`additive_landscape`: a
  policy over L positions x A letters (independent softmaxes) trained by policy gradient with
  mean-reward REINFORCE (RLOO), GRPO or max@N weights. The two-mode landscape has a broad,
  easy mode (reward up to 12, linear in the number of matches) and a narrow, higher one (20 at
  the exact motif, a steep power away from it): mean-reward RL climbs the broad slope; the
  additive landscape has one mode and is the negative control, where no gain is expected.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from icml26.fidia.estimators import maxn_value, maxn_weights, passn_value, policy_weights


def exact_maxn(logits: torch.Tensor, rewards: torch.Tensor, N: int) -> torch.Tensor:
    """Exact E[max of N draws] for a categorical policy softmax(logits) over outcomes with
    ``rewards`` (K,), differentiable in ``logits`` (ties are handled by grouping equal rewards)."""
    probs = torch.softmax(logits.double(), -1)
    values, inverse = torch.unique(rewards.double(), sorted=True, return_inverse=True)
    mass = torch.zeros(len(values), dtype=torch.float64).index_add(0, inverse, probs)
    cdf = mass.cumsum(0)
    prev = torch.cat([cdf.new_zeros(1), cdf[:-1]])
    return (values * (cdf.clamp(max=1) ** N - prev**N)).sum()


@dataclass(frozen=True)
class GradientCheck:
    """Monte Carlo estimator against the exact gradient of J_N."""

    cosine: float
    """cosine between the mean of the estimates and the true gradient"""
    max_z: float
    """largest |mean - truth| / standard error over coordinates"""
    single_cosine_loo: float
    """mean cosine of a single estimate (one group of n) with the leave-one-out baseline"""
    single_cosine_raw: float
    """the same without a baseline (the baseline's variance reduction shows here)"""
    replicates: int


def gradient_check(K: int = 6, n: int = 16, N: int = 4, replicates: int = 20_000,
                   seed: int = 0) -> GradientCheck:  # fmt: skip
    """Hold :func:`maxn_weights` to the exact gradient of J_N on a random categorical policy."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(K, generator=g, dtype=torch.float64).requires_grad_(True)
    rewards = torch.randn(K, generator=g, dtype=torch.float64)
    (truth,) = torch.autograd.grad(exact_maxn(logits, rewards, N), logits)
    probs = torch.softmax(logits.detach(), -1)
    draws = torch.multinomial(probs.expand(replicates, K), n, replacement=True, generator=g)
    r = rewards[draws]  # (replicates, n)
    score = torch.nn.functional.one_hot(draws, K).double() - probs  # grad log pi(x) for softmax
    est = {}
    for base in ("loo", None):
        w = maxn_weights(r, N, baseline=base)
        est[base] = (w[..., None] * score).sum(1)  # (replicates, K)
    mean = est["loo"].mean(0)
    se = est["loo"].std(0) / replicates**0.5
    cos = torch.nn.functional.cosine_similarity
    return GradientCheck(
        cosine=float(cos(mean, truth, dim=0)),
        max_z=float(((mean - truth).abs() / se.clamp(min=1e-12)).max()),
        single_cosine_loo=float(cos(est["loo"], truth.expand_as(est["loo"]), dim=1).mean()),
        single_cosine_raw=float(cos(est[None], truth.expand_as(est[None]), dim=1).mean()),
        replicates=replicates,
    )


# ---------------------------------------------------------------------- factorised toy policy
class FactorisedPolicy(torch.nn.Module):
    """pi(x) = prod_j softmax(theta_j)[x_j] over L positions with A letters each."""

    def __init__(self, L: int, A: int):
        super().__init__()
        self.theta = torch.nn.Parameter(torch.zeros(L, A))

    def sample(self, n: int, generator=None) -> torch.Tensor:
        probs = torch.softmax(self.theta.detach(), -1)
        return torch.multinomial(probs, n, replacement=True, generator=generator).T  # (n, L)

    def log_prob(self, x: torch.Tensor) -> torch.Tensor:
        logp = torch.log_softmax(self.theta, -1)  # (L, A)
        return logp.gather(1, x.T).sum(0)


def two_mode_landscape(L: int = 8, A: int = 4, power: float = 6.0):
    """Broad mode: 12 * (matches to all-0) / L. Narrow mode: 20 * (matches to all-1 / L)^power.

    How visible the narrow mode is to the initial (uniform) policy is set by A^-L (the chance of
    drawing it exactly) and ``power`` (how much a near miss earns)."""

    def reward(x: torch.Tensor) -> torch.Tensor:
        broad = 12.0 * (x == 0).double().mean(1)
        narrow = 20.0 * (x == 1).double().mean(1) ** power
        return torch.maximum(broad, narrow)

    return reward, torch.ones(L, dtype=torch.long)


def additive_landscape(L: int = 8, A: int = 4, seed: int = 0):
    """R(x) = sum_j v[j, x_j] with v ~ U(0, 20 / L): one mode, the negative control."""
    v = torch.rand(L, A, generator=torch.Generator().manual_seed(10_000 + seed),
                   dtype=torch.float64) * (20.0 / L)  # fmt: skip

    def reward(x: torch.Tensor) -> torch.Tensor:
        return v.gather(1, x.T).sum(0)

    return reward, v.argmax(1)


@dataclass(frozen=True)
class ToyRun:
    objective: str
    seed: int
    maxn: float
    """E[max of N] of the final policy (unbiased, from ``eval_samples`` draws)"""
    mean: float
    optimum_at_n: float
    """P(at least one of N draws is the global optimum), unbiased pass@N"""


def train_toy(landscape: str, objective: str, seed: int, *, L: int = 8, A: int = 4, N: int = 8,
              power: float = 6.0, n: int = 32, steps: int = 300, lr: float = 0.05,
              eval_samples: int = 4096) -> ToyRun:  # fmt: skip
    """Policy gradient on a toy landscape with Adam; every objective gets the same samples."""
    if landscape == "two_mode":
        reward, optimum = two_mode_landscape(L, A, power)
    elif landscape == "additive":
        reward, optimum = additive_landscape(L, A, seed)
    else:
        raise ValueError(f"landscape must be 'two_mode' or 'additive', got {landscape!r}")
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    policy = FactorisedPolicy(L, A)
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    for _ in range(steps):
        x = policy.sample(n, g)
        adv = policy_weights(reward(x), objective, N).float()
        loss = -(adv * policy.log_prob(x)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        x = policy.sample(eval_samples, g)
        r = reward(x)
        hit = (x == optimum).all(1).double()
    return ToyRun(objective, seed, float(maxn_value(r, N)), float(r.mean()),
                  float(passn_value(hit, N)))  # fmt: skip
