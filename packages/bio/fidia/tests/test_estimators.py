"""The max@N and pass@N estimators against enumeration, and their gradients against the truth."""

import itertools
import math

import pytest
import torch

from icml26.fidia.estimators import (
    log_binom,
    maxn_value,
    maxn_weights,
    passn_value,
    passn_weights,
    policy_weights,
)
from icml26.fidia.toys import exact_maxn, gradient_check


def _subsets(n, N):
    return [list(s) for s in itertools.combinations(range(n), N)]


@pytest.mark.parametrize("n, N", [(1, 1), (5, 1), (6, 3), (7, 7), (9, 2), (8, 5)])
def test_maxn_value_is_the_mean_over_subsets(n, N):
    r = torch.randn(n, dtype=torch.float64, generator=torch.Generator().manual_seed(n * 10 + N))
    subsets = _subsets(n, N)
    truth = sum(float(r[s].max()) for s in subsets) / len(subsets)
    assert float(maxn_value(r, N)) == pytest.approx(truth, abs=1e-12)


@pytest.mark.parametrize("n, N", [(5, 1), (6, 3), (7, 7), (9, 2), (8, 5)])
def test_weights_match_the_u_statistic_and_its_leave_one_out_baseline(n, N):
    r = torch.randn(n, dtype=torch.float64, generator=torch.Generator().manual_seed(n + 100 * N))
    r[2] = r[4]  # a tie
    subsets = _subsets(n, N)
    raw = torch.tensor(
        [sum(float(r[s].max()) for s in subsets if i in s) for i in range(n)], dtype=torch.float64
    )
    raw = raw / len(subsets)
    torch.testing.assert_close(maxn_weights(r, N, baseline=None), raw, rtol=0, atol=1e-12)
    base = []
    for i in range(n):
        others = r[[j for j in range(n) if j != i]]
        if N == 1:
            base.append(float(others.mean()) / n)
        else:
            sub = _subsets(n - 1, N - 1)
            base.append(N / n * sum(float(others[s].max()) for s in sub) / len(sub))
    torch.testing.assert_close(
        maxn_weights(r, N), raw - torch.tensor(base, dtype=torch.float64), rtol=0, atol=1e-12
    )


def test_batched_groups_equal_single_groups():
    r = torch.randn(4, 11, dtype=torch.float64)
    w = maxn_weights(r, 3)
    for g in range(4):
        torch.testing.assert_close(w[g], maxn_weights(r[g], 3))
    torch.testing.assert_close(maxn_value(r, 3), torch.stack([maxn_value(x, 3) for x in r]))


def test_n_equal_one_is_mean_reward_reinforce():
    r = torch.tensor([0.3, 1.0, -2.0, 0.5], dtype=torch.float64)
    torch.testing.assert_close(maxn_weights(r, 1, baseline=None), r / 4)
    rloo = r - (r.sum() - r) / 3
    torch.testing.assert_close(maxn_weights(r, 1) * 4, rloo)
    torch.testing.assert_close(policy_weights(r, "mean", 8), rloo)


def test_log_space_binomials_agree_with_exact_integers_and_do_not_overflow():
    for n, k in [(0, 0), (5, 2), (60, 30), (200, 7), (1000, 500)]:
        assert float(log_binom(n, k)) == pytest.approx(math.log(math.comb(n, k)), rel=1e-12)
    assert log_binom(3, 5) == -math.inf and log_binom(3, -1) == -math.inf
    r = torch.randn(5000, dtype=torch.float64)
    w = maxn_weights(r, 256)
    assert torch.isfinite(w).all() and torch.isfinite(maxn_value(r, 256))
    # E[max of 256 standard normals] is about 2.8
    assert 2.5 < float(maxn_value(r, 256)) < 3.1


@pytest.mark.parametrize("N", [1, 2, 4, 6])
def test_pass_at_n_closed_forms_equal_the_general_ones_on_binary_rewards(N):
    s = torch.tensor([1, 0, 0, 1, 0, 1, 0, 0], dtype=torch.float64)
    torch.testing.assert_close(passn_value(s, N), maxn_value(s, N))
    for base in ("loo", None):
        torch.testing.assert_close(passn_weights(s, N, base), maxn_weights(s, N, base))
    n, c = 8, 3
    expected = 1 - math.comb(n - c, N) / math.comb(n, N)
    assert float(passn_value(s, N)) == pytest.approx(expected)


def test_exact_maxn_matches_enumeration_of_draws():
    logits = torch.tensor([0.2, -1.0, 0.7, 0.0], dtype=torch.float64)
    rewards = torch.tensor([1.0, 3.0, -0.5, 1.0], dtype=torch.float64)  # a tie
    p = torch.softmax(logits, 0)
    N = 3
    truth = sum(
        float(torch.prod(p[list(draw)])) * float(rewards[list(draw)].max())
        for draw in itertools.product(range(4), repeat=N)
    )
    assert float(exact_maxn(logits, rewards, N)) == pytest.approx(truth, abs=1e-12)


def test_the_gradient_estimate_is_unbiased_and_the_baseline_reduces_its_variance():
    """Monte Carlo mean of the estimator against autograd through the exact J_N: every
    coordinate within 4 standard errors (it fails for a biased weight, see the next test)."""
    check = gradient_check(K=6, n=12, N=4, replicates=20_000, seed=3)
    assert check.cosine > 0.999 and check.max_z < 4.0
    assert check.single_cosine_loo > check.single_cosine_raw + 0.2


def test_a_baseline_that_sees_its_own_sample_is_caught():
    """The check can fail: using the group mean (which includes x_i) scaled up biases it."""
    import icml26.fidia.toys as toys

    def biased(r, N, baseline="loo"):
        return maxn_weights(r, N, None) - 3.0 * r / r.shape[-1]

    original = toys.maxn_weights
    toys.maxn_weights = biased
    try:
        check = gradient_check(K=6, n=12, N=4, replicates=20_000, seed=3)
    finally:
        toys.maxn_weights = original
    assert check.max_z > 10


def test_grpo_advantages_are_zero_for_a_constant_group_and_sum_to_zero():
    assert torch.equal(policy_weights(torch.full((6,), 0.7), "grpo", 2), torch.zeros(6).double())
    r = torch.randn(3, 10)
    torch.testing.assert_close(policy_weights(r, "grpo", 4).sum(-1), torch.zeros(3).double())
    assert torch.equal(policy_weights(torch.full((6,), 0.7), "maxn", 2).abs().max() < 1e-12,
                       torch.tensor(True))  # fmt: skip


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: maxn_value(torch.randn(3), 4), "n >= N"),
        (lambda: maxn_value(torch.tensor([1.0, float("nan")]), 1), "NaN"),
        (lambda: maxn_weights(torch.tensor([]), 1), "empty"),
        (lambda: maxn_weights(torch.randn(4), 0), "positive int"),
        (lambda: maxn_weights(torch.randn(4), 2, baseline="mean"), "baseline"),
        (lambda: maxn_weights(torch.randn(2, 3, 4), 2), "(n,) or (groups, n)"),
        (lambda: passn_value(torch.tensor([0.0, 0.5]), 1), "0 or 1"),
        (lambda: policy_weights(torch.randn(4), "ppo", 2), "objective"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()


def test_numpy_integers_are_accepted_for_n():
    import numpy as np

    r = torch.randn(6, dtype=torch.float64)
    torch.testing.assert_close(maxn_weights(r, np.int64(3)), maxn_weights(r, 3))
    with pytest.raises(ValueError, match="at least 2"):
        policy_weights(torch.randn(1), "grpo", 1)
