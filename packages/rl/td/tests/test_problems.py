import math

import numpy as np
import pytest
import torch

from icml26.td import (
    MarkovRewardProcess,
    boyan_chain,
    garnet_mdp,
    gymnasium_mrp,
    stationary_distribution,
    td0,
    td_fixed_point,
)
from icml26.td.schedules import ConstantStepSize
from icml26.testing import assert_close


@pytest.mark.parametrize("omega", [None, 0.02, 0.003])
def test_garnet_is_a_valid_problem_with_the_target_omega(omega):
    p = garnet_mdp(23, 5, 0.9, seed=3, omega=omega)
    assert_close(p.P.sum(1), torch.ones(23, dtype=torch.float64))
    assert_close(p.mu @ p.P, p.mu, atol=1e-12, rtol=1e-9)
    assert p.phi.norm(dim=1).max().item() <= 1 + 1e-12
    if omega is not None:
        assert p.omega == pytest.approx(omega, rel=1e-6)


def test_garnet_rejects_an_unreachable_omega():
    with pytest.raises(ValueError, match="omega must lie in"):
        garnet_mdp(10, 4, 0.9, omega=0.3)  # trace(Sigma) <= 1 caps omega at 1/d


def test_fixed_point_solves_the_projected_bellman_equation():
    p = garnet_mdp(17, 4, 0.8, seed=1, omega=0.01)
    theta = td_fixed_point(p.P, p.r, p.phi, p.gamma, p.mu)
    D = torch.diag(p.mu)
    A = p.phi.T @ D @ (p.phi - p.gamma * p.P @ p.phi)
    assert_close(A @ theta, p.phi.T @ D @ p.r, atol=1e-12, rtol=1e-10)


def test_tabular_fixed_point_is_the_true_value_function():
    p = garnet_mdp(9, 3, 0.7, seed=2)
    V = torch.linalg.solve(torch.eye(9, dtype=torch.float64) - 0.7 * p.P, p.r)
    theta = td_fixed_point(p.P, p.r, torch.eye(9, dtype=torch.float64), 0.7, p.mu)
    assert_close(theta, V, atol=1e-10, rtol=1e-10)


def test_boyan_chain_and_lazy_chain():
    b = boyan_chain(0.95)
    assert b.n_states == 13 and b.n_features == 4
    assert_close(b.phi.norm(dim=1).max(), torch.tensor(1.0, dtype=torch.float64))
    lazy = b.lazy(0.1)
    assert_close(lazy.mu @ lazy.P, lazy.mu, atol=1e-12, rtol=1e-9)
    assert_close(lazy.mu, b.mu)  # same stationary distribution, slower mixing
    with pytest.raises(ValueError, match="eps"):
        b.lazy(0.0)


@pytest.mark.parametrize("env_id", ["FrozenLake-v1", "CliffWalking-v1"])
def test_gymnasium_onehot_values_match_the_restarted_chain(env_id):
    p = gymnasium_mrp(env_id, gamma=0.9)
    V = torch.linalg.solve(torch.eye(p.n_states, dtype=torch.float64) - 0.9 * p.P, p.r)
    assert_close(p.theta_star, V, atol=1e-9, rtol=1e-9)
    tiles = gymnasium_mrp(env_id, gamma=0.9, features="tiles")
    assert tiles.n_features < tiles.n_states
    assert tiles.omega > 0


def test_gymnasium_rejects_bad_arguments():
    with pytest.raises(ValueError, match="policy"):
        gymnasium_mrp("FrozenLake-v1", policy=np.ones((3, 3)))
    with pytest.raises(ValueError, match="features"):
        gymnasium_mrp("FrozenLake-v1", features="rbf")


def _args():
    p = garnet_mdp(6, 3, 0.9, seed=0)
    return dict(
        P=p.P.clone(),
        r=p.r.clone(),
        phi=p.phi.clone(),
        gamma=0.9,
        schedule=ConstantStepSize(0.1),
        horizon=5,
    )


@pytest.mark.parametrize(
    "change,match",
    [
        (
            lambda a: a["P"].__setitem__((0, 0), a["P"][0, 0] + 0.5),
            "P must be row-stochastic: row 0",
        ),
        (lambda a: a.__setitem__("P", a["P"][:, :5]), "P must be a square"),
        (lambda a: a.__setitem__("gamma", 1.0), "gamma must lie in"),
        (lambda a: a.__setitem__("gamma", -0.1), "gamma must lie in"),
        (lambda a: a.__setitem__("r", a["r"][:5]), "r must have shape"),
        (lambda a: a.__setitem__("phi", a["phi"][:5]), "phi must have shape"),
        (lambda a: a["phi"].__setitem__((2, 1), math.nan), "phi contains NaN or inf"),
        (lambda a: a["phi"].__setitem__((2, 1), math.inf), "phi contains NaN or inf"),
        (lambda a: a.__setitem__("phi", 3 * a["phi"]), "phi: every feature vector must have norm"),
        (lambda a: a.__setitem__("horizon", 0), "horizon must be an integer >= 1"),
        (lambda a: a.__setitem__("r", torch.empty(0)), "r is empty"),
    ],
)
def test_bad_input_is_a_value_error_naming_the_argument(change, match):
    a = _args()
    change(a)
    with pytest.raises(ValueError, match=match):
        td0(**a)


def test_bad_sampling_and_runs():
    a = _args()
    with pytest.raises(ValueError, match="sampling"):
        td0(**a, sampling="batch")
    with pytest.raises(ValueError, match="runs"):
        td0(**a, runs=0)
    with pytest.raises(ValueError, match="reg"):
        td0(**a, reg=-1.0)


def test_problem_dataclass_validates():
    with pytest.raises(ValueError, match="mu must be a probability distribution"):
        p = garnet_mdp(5, 2, 0.5)
        MarkovRewardProcess(p.P, p.r, p.phi, 0.5, 2 * p.mu)


def test_stationary_distribution_of_a_two_state_chain():
    P = torch.tensor([[0.9, 0.1], [0.3, 0.7]], dtype=torch.float64)
    assert_close(stationary_distribution(P), torch.tensor([0.75, 0.25], dtype=torch.float64))
