"""The two reverse steps against Bayes' rule worked by enumeration, and the budget allocation."""

import torch

from icml26.fahnes.diffusion import Schedule
from icml26.fahnes.model import _allocate


def _posterior_one(s: Schedule, t: int, xt: int, p0: float, pi: float) -> float:
    """P(x_{t-1} = 1 | x_t) = sum_x0 p(x0) q(x_t | x_{t-1}) q(x_{t-1} | x0) / normaliser."""
    a, ab = float(s.alpha[t]), float(s.abar[t - 1])
    prior = (1 - pi, pi)
    out = 0.0
    for x0, w in ((0, 1 - p0), (1, p0)):
        num = [(a * (xt == k) + (1 - a) * prior[xt]) * (ab * (k == x0) + (1 - ab) * prior[k])
               for k in (0, 1)]  # fmt: skip
        out += w * num[1] / (num[0] + num[1])
    return out


def test_label_step_is_the_marginalised_d3pm_posterior():
    s, pi, n = Schedule(6), 0.3, 40000
    torch.manual_seed(0)
    for t in (1, 3, 6):
        for xt in (0, 1):
            for p0 in (0.1, 0.8):
                want = _posterior_one(s, t, xt, p0, pi)
                got = s.label_step(torch.full((n,), bool(xt)), torch.full((n,), p0),
                                   torch.full((n,), t), pi).float().mean()  # fmt: skip
                assert abs(float(got) - want) < 0.015, (t, xt, p0, float(got), want)


def test_feature_step_at_t1_returns_the_prediction_and_noise_shrinks():
    s = Schedule(10)
    x0 = torch.randn(5, 3)
    out = s.feature_step(torch.randn(5, 3), x0, torch.ones(5, dtype=torch.long))
    torch.testing.assert_close(out, x0, rtol=1e-4, atol=1e-4)  # abar[0] = 1: the mean is x_0
    assert bool((s.abar[1:] < s.abar[:-1]).all()) and float(s.abar[0]) == 1.0


def test_budgets_split_exactly_among_siblings():
    groups = torch.tensor([0, 0, 1, 2, 2, 2, 3])
    parent = torch.tensor([7, 7, 4, 9, 9, 9, 1])
    sib = torch.tensor([2, 2, 1, 3, 3, 3, 1])
    batch = {"groups": groups, "parent_budget": parent, "siblings_count": sib}
    for seed in range(5):
        logit = torch.randn(7, generator=torch.Generator().manual_seed(seed)) * 3
        b = _allocate(logit, batch)
        assert bool((b >= 1).all())
        sums = torch.zeros(4, dtype=torch.long).index_add_(0, groups, b)
        assert sums.tolist() == [7, 4, 9, 1]
