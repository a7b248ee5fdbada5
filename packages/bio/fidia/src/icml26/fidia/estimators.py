"""Unbiased estimators of the best-of-N objective and of its policy gradient.

FIDIA trains the policy for the way designs are used: N sequences are drawn per backbone and the
best is kept, so the objective is

    J_N(theta) = E_{x_1..N ~ pi_theta} [ max_i R(x_i) ].                                  (1)

From n >= N i.i.d. samples with rewards sorted ascending, r_(1) <= ... <= r_(n), the U-statistic
over all C(n, N) subsets of size N is

    J^_N = sum_i C(i-1, N-1) / C(n, N) * r_(i)                                            (2)

(r_(i) is the maximum of exactly C(i-1, N-1) subsets). Differentiating the same U-statistic with
the score function gives per-sample weights

    s_(i) = [ C(i-1, N-1) r_(i) + sum_{m>i} C(m-2, N-2) r_(m) ] / C(n, N),                (3)

so that sum_i s_i grad log pi(x_i) is an unbiased estimate of grad J_N. Subtracting from s_i any
baseline b_i that does not depend on x_i keeps it unbiased; the leave-one-out baseline used here is

    b_i = (N / n) * J^_{N-1}(r_{-i})        (N >= 2; the others' max@(N-1) estimate)      (4)
    b_i = (1 / n) * mean(r_{-i})            (N = 1; RLOO)

which makes s_i - b_i the average *marginal* gain of x_i over the best of the other N - 1 draws
of a subset. For binary success the same weights have a closed form through the unbiased pass@k
estimator rho(n, c, k) = 1 - C(n-c, k) / C(n, k) (``passn_value``, ``passn_weights``).

FIDIA's own paper body is not public: this follows the closest published forms (Walder &
Karkhanis 2025, Pass@k policy optimisation; Chow et al. 2025, best-of-N aware fine-tuning) and is
a reconstruction. Binomials are taken in log space (``torch.lgamma``), so n in the thousands
neither overflows nor loses the ratio; the cost is O(n log n) per group (one sort and two cumulative
sums).
"""

from __future__ import annotations

import math
import numbers

import torch

from icml26.fidia.baselines import _rewards, grpo_weights, rloo_weights


def log_binom(n: torch.Tensor | float, k: torch.Tensor | float) -> torch.Tensor:
    """log C(n, k) in float64, -inf where k < 0 or k > n (an empty choice)."""
    n = torch.as_tensor(n, dtype=torch.float64)
    k = torch.as_tensor(k, dtype=torch.float64)
    valid = (k >= 0) & (k <= n)
    n_, k_ = torch.where(valid, n, 1.0), torch.where(valid, k, 0.0)
    out = torch.lgamma(n_ + 1) - torch.lgamma(k_ + 1) - torch.lgamma(n_ - k_ + 1)
    return torch.where(valid, out, torch.full_like(out, -math.inf))


def _check(rewards: torch.Tensor, N: int, name: str = "rewards") -> torch.Tensor:
    if isinstance(N, bool) or not isinstance(N, numbers.Integral) or N < 1:
        raise ValueError(f"N must be a positive int, got {N!r}")
    n = torch.as_tensor(rewards).shape[-1:]
    if n and 0 < n[0] < N:
        raise ValueError(f"need n >= N samples per group, got n = {n[0]} < N = {N}")
    return _rewards(rewards, name, min_n=int(N))


def _coefficients(n: int, N: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """For ranks i = 1..n: C(i-1, N-1)/C(n, N) and C(i-2, N-2)/C(n, N), from log space."""
    i = torch.arange(1, n + 1, dtype=torch.float64, device=device)
    denom = log_binom(n, N)
    own = torch.exp(log_binom(i - 1, N - 1) - denom)
    other = torch.exp(log_binom(i - 2, N - 2) - denom)
    return own, other


def maxn_value(rewards: torch.Tensor, N: int) -> torch.Tensor:
    """Unbiased estimate of E[max of N draws] (eq. 2) from n >= N samples.

    Args:
        rewards: (n,) or (groups, n) rewards of i.i.d. samples.
    Returns:
        () or (groups,) float64.
    """
    rewards = _check(rewards, N)
    r = rewards.double().sort(-1).values
    own, _ = _coefficients(r.shape[-1], N, r.device)
    return (own * r).sum(-1)


def maxn_weights(rewards: torch.Tensor, N: int, baseline: str | None = "loo") -> torch.Tensor:
    """Per-sample policy-gradient weights of the max@N objective (eq. 3), minus a baseline (eq. 4).

    ``sum_i w_i * grad log pi(x_i)`` is an unbiased estimate of grad J_N. For N = 1 this is
    mean-reward REINFORCE, r_i / n (with ``baseline="loo"``: RLOO).

    Args:
        rewards: (n,) or (groups, n).
        baseline: ``"loo"`` (eq. 4) or None.
    Returns:
        float64 weights, same shape as ``rewards``, in the samples' own order.
    """
    if baseline not in ("loo", None):
        raise ValueError(f"baseline must be 'loo' or None, got {baseline!r}")
    rewards = _check(rewards, N)
    squeeze = rewards.ndim == 1
    r_in = rewards.double().reshape(-1, rewards.shape[-1])
    n = r_in.shape[-1]
    r, perm = r_in.sort(-1)
    own, other = _coefficients(n, N, r.device)
    # suffix[i] = sum_{m > i} C(m-2, N-2) r_(m) / C(n, N)
    tail = (other * r).flip(-1).cumsum(-1).flip(-1)
    suffix = torch.cat([tail[:, 1:], torch.zeros_like(tail[:, :1])], -1)
    s = own * r + suffix
    if baseline == "loo":
        s = s - _loo_baseline(r, N)
    out = torch.empty_like(s).scatter_(-1, perm, s)
    return out[0] if squeeze else out


def _loo_baseline(r: torch.Tensor, N: int) -> torch.Tensor:
    """b_(i) of eq. 4 for sorted rewards r (groups, n)."""
    n = r.shape[-1]
    if n == 1:
        return torch.zeros_like(r)
    if N == 1:
        return (r.sum(-1, keepdim=True) - r) / (n - 1) / n
    # J^_{N-1} over the n-1 others: ranks below i keep rank j (coefficient C(j-1, N-2)), ranks
    # above i move down to j-1 (coefficient C(j-2, N-2)); both over C(n-1, N-1).
    j = torch.arange(1, n + 1, dtype=torch.float64, device=r.device)
    denom = log_binom(n - 1, N - 1)
    below = torch.exp(log_binom(j - 1, N - 2) - denom) * r
    above = torch.exp(log_binom(j - 2, N - 2) - denom) * r
    prefix = torch.cat([torch.zeros_like(below[:, :1]), below.cumsum(-1)[:, :-1]], -1)
    tail = above.flip(-1).cumsum(-1).flip(-1)
    suffix = torch.cat([tail[:, 1:], torch.zeros_like(tail[:, :1])], -1)
    return (N / n) * (prefix + suffix)


def passn_value(successes: torch.Tensor, N: int) -> torch.Tensor:
    """Unbiased pass@N, rho(n, c, N) = 1 - C(n-c, N) / C(n, N), from n >= N binary outcomes."""
    s = _check(successes, N, "successes")
    if not ((s == 0) | (s == 1)).all():
        raise ValueError("successes must be 0 or 1")
    n = s.shape[-1]
    c = s.double().sum(-1)
    return 1.0 - torch.exp(log_binom(n - c, N) - log_binom(n, N))


def passn_weights(successes: torch.Tensor, N: int, baseline: str | None = "loo") -> torch.Tensor:
    """The weights of :func:`maxn_weights` for 0/1 rewards, in closed form.

    A success gets (N/n) [1 - b]; a failure gets (N/n) rho(n-1, c, N-1) - b, where with the
    leave-one-out baseline b is (N/n) rho(n-1, c_{-i}, N-1): a failure then gets 0 (it is never
    the best of a subset that a success could not also win) and a success (N/n) C(n-c, N-1) /
    C(n-1, N-1), its chance of being the only success of its subset.
    """
    if baseline not in ("loo", None):
        raise ValueError(f"baseline must be 'loo' or None, got {baseline!r}")
    s = _check(successes, N, "successes")
    if not ((s == 0) | (s == 1)).all():
        raise ValueError("successes must be 0 or 1")
    s = s.double()
    n = s.shape[-1]
    c = s.sum(-1, keepdim=True)

    def rho(m, cc, k):  # 1 - C(m - cc, k) / C(m, k); k = 0 means an empty subset: never a pass
        return 1.0 - torch.exp(log_binom(m - cc, k) - log_binom(m, k))

    scale = N / n
    if N == 1:
        raw = s / n
        if baseline is None:
            return raw
        others = (c - s) / max(n - 1, 1)
        return raw - (others / n if n > 1 else 0.0)
    fail = scale * rho(n - 1, c, N - 1)
    raw = torch.where(s == 1, torch.full_like(s, scale), fail)
    if baseline is None:
        return raw
    return raw - scale * rho(n - 1, c - s, N - 1)


def policy_weights(rewards: torch.Tensor, objective: str, N: int) -> torch.Tensor:
    """Per-sample policy-gradient weights of one group, by training objective.

    ``maxn``: FIDIA's max@N weights (eq. 3 - 4 above) times n/N so
    they are per-sample marginal gains in reward units; ``mean``: RLOO, r_i - mean(r_{-i});
    ``grpo``: (r_i - mean(r)) / (std(r) + 1e-4) (Shao et al. 2024).
    """
    if objective not in ("maxn", "mean", "grpo"):
        raise ValueError(f"objective must be 'maxn', 'mean' or 'grpo', got {objective!r}")
    rewards = _check(rewards, N if objective == "maxn" else 1)
    n = rewards.shape[-1]
    if objective != "maxn" and n < 2:
        raise ValueError(f"{objective} needs at least 2 samples per group, got {n}")
    if objective == "maxn":
        return maxn_weights(rewards, N) * (n / N)
    return rloo_weights(rewards) if objective == "mean" else grpo_weights(rewards)
