"""The toy landscapes and their training loop."""

import pytest
import torch

from icml26.fidia.toys import FactorisedPolicy, additive_landscape, train_toy, two_mode_landscape


def test_two_mode_landscape_has_its_modes_where_stated():
    reward, optimum = two_mode_landscape(L=6, A=3, power=3.0)
    x = torch.stack([torch.zeros(6, dtype=torch.long), optimum])
    assert reward(x).tolist() == [12.0, 20.0]


def test_factorised_policy_log_prob_is_the_sum_over_positions():
    torch.manual_seed(0)
    pol = FactorisedPolicy(5, 3)
    with torch.no_grad():
        pol.theta.normal_()
    x = pol.sample(7)
    logp = torch.log_softmax(pol.theta, -1)
    expected = torch.stack([sum(logp[j, x[i, j]] for j in range(5)) for i in range(7)])
    torch.testing.assert_close(pol.log_prob(x), expected)


def test_every_objective_climbs_the_additive_landscape():
    reward, optimum = additive_landscape(L=6, A=3, seed=1)
    best = float(reward(optimum[None])[0])
    for objective in ("mean", "grpo", "maxn"):
        run = train_toy("additive", objective, 1, L=6, A=3, N=4, steps=150, eval_samples=512)
        assert run.maxn > 0.9 * best, objective


def test_unknown_landscape_is_an_error():
    with pytest.raises(ValueError, match="landscape"):
        train_toy("rugged", "maxn", 0)
