"""TD(0) from sampled transitions: the update itself, and learning from a gymnasium environment."""

import numpy as np
import pytest
import torch

from icml26.td import (
    ConstantStepSize,
    ExponentialStepSize,
    LinearTD,
    gymnasium_mrp,
    gymnasium_transitions,
    td0_update,
    td_fixed_point,
)


def test_td0_update_is_the_batch_mean_of_the_textbook_step():
    theta = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    phi = torch.randn(5, 3, dtype=torch.float64)
    phi_next = torch.randn(5, 3, dtype=torch.float64)
    r = torch.randn(5, dtype=torch.float64)
    done = torch.tensor([0, 1, 0, 0, 1])
    new, delta = td0_update(theta, phi, r, phi_next, 0.9, 0.1, done=done, reg=0.2)
    expected_delta = torch.stack(
        [r[i] + 0.9 * (1 - done[i]) * phi_next[i] @ theta - phi[i] @ theta for i in range(5)]
    )
    torch.testing.assert_close(delta, expected_delta)
    step = sum(expected_delta[i] * phi[i] for i in range(5)) / 5 - 0.2 * theta
    torch.testing.assert_close(new, theta + 0.1 * step)
    # one transition as (d,) vectors is a batch of one (done[0] = 0: it bootstraps)
    one, _ = td0_update(theta, phi[0], r[0], phi_next[0], 0.9, 0.1)
    torch.testing.assert_close(one, theta + 0.1 * expected_delta[0] * phi[0])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"gamma": 1.0}, "gamma"),
        ({"eta": 0.0}, "eta"),
        ({"reg": -1.0}, "reg"),
        ({"r": torch.zeros(4)}, "batch of 3"),
        ({"phi_next": torch.full((3, 2), float("nan"))}, "phi_next holds NaN"),
        ({"phi": torch.zeros(3, 5)}, "d = 5"),
    ],
)
def test_td0_update_rejects_bad_input(kwargs, match):
    args = {
        "theta": torch.zeros(2, dtype=torch.float64),
        "phi": torch.ones(3, 2),
        "r": torch.ones(3),
        "phi_next": torch.ones(3, 2),
        "gamma": 0.9,
        "eta": 0.1,
    }
    if "phi" in kwargs and kwargs["phi"].shape[1] == 5:
        args["phi_next"] = torch.ones(3, 5)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        td0_update(**args)


def test_linear_td_follows_its_schedule_and_validates():
    td = LinearTD(4, 0.5, schedule=ConstantStepSize(0.25))
    assert td.eta == 0.25
    td = LinearTD(4, 0.5, horizon=100, eta0=0.8)
    sched = ExponentialStepSize(0.8, 100)
    for t in range(3):
        assert td.eta == pytest.approx(sched.values(100)[t].item())
        td.update(torch.eye(4)[0], 1.0, torch.eye(4)[1])
    assert td.t == 3
    assert LinearTD(2, 0.1, schedule=0.3).eta == 0.3
    with pytest.raises(ValueError, match="horizon"):
        LinearTD(4, 0.9)
    with pytest.raises(ValueError, match="dim"):
        LinearTD(0, 0.9, schedule=0.1)


def test_linear_td_runs_on_the_device(device):
    td = LinearTD(3, 0.9, horizon=10, device=device)
    phi = torch.eye(3, dtype=torch.float64, device=device)
    delta = td.update(phi, torch.ones(3, device=device), phi.roll(1, 0))
    assert td.theta.device.type == delta.device.type == torch.device(device).type


def test_linear_td_learns_frozenlake_values_from_sampled_transitions():
    """One trajectory of the random policy on FrozenLake (the continuing chain of
    ``gymnasium_mrp``), one-hot features, T = 20 000 updates of the exponential schedule: the
    learnt values are within 30% (D-norm) of the exact TD fixed point; starting from zero, the
    error is 100%. Measured here: 13-18% over seeds 0-2."""
    T, gamma = 20_000, 0.9
    s, r, s_next = gymnasium_transitions("FrozenLake-v1", T, seed=0)
    phi = torch.eye(16, dtype=torch.float64)
    td = LinearTD(16, gamma, horizon=T, eta0=1.0)
    for i in range(T):
        td.update(phi[s[i]], r[i], phi[s_next[i]])
    mrp = gymnasium_mrp("FrozenLake-v1", gamma=gamma)
    v_star = td_fixed_point(mrp.P, mrp.r, mrp.phi, mrp.gamma, mrp.mu)  # the kept states' values
    visited = np.unique(s)  # the states the chain visits, in the order gymnasium_mrp keeps them
    assert len(visited) == len(v_star)
    err = torch.sqrt((mrp.mu * (td.value(phi[visited]) - v_star) ** 2).sum())
    norm = torch.sqrt((mrp.mu * v_star**2).sum())
    assert err / norm < 0.3, f"relative D-norm error {err / norm:.3f}"


def test_gymnasium_transitions_continue_through_episode_ends():
    s, r, s_next = gymnasium_transitions("FrozenLake-v1", 500, seed=1)
    assert s.shape == r.shape == s_next.shape == (500,)
    np.testing.assert_array_equal(s[1:], s_next[:-1])  # one unbroken trajectory
    holes_and_goal = {5, 7, 11, 12, 15}  # FrozenLake 4x4: terminal cells are never a state
    assert not holes_and_goal & set(s.tolist())
    with pytest.raises(ValueError, match="n must be"):
        gymnasium_transitions("FrozenLake-v1", 0)
