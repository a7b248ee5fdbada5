"""Bad input at the public API ends in a ValueError / TypeError that names the argument."""

import math

import numpy as np
import pytest
import torch

from icml26.tactic import ShiftingDependencyGame, ShiftingDependencyParallelEnv, max_sum, q_tot
from icml26.testing import assert_rejects

RETURNED = {
    "ClassFit": "fit_classes returns it",
    "TrainResult": "train returns it",
}
"""Public names a user receives rather than builds (records the package returns): no input."""


@pytest.fixture
def env():
    e = ShiftingDependencyParallelEnv()
    e.reset(seed=0)
    return e


@pytest.mark.parametrize("bad", [1.7, "1", True, -1, 99, None])
def test_parallel_env_refuses_a_non_action(env, bad):
    actions = {a: 0 for a in env.agents}
    actions[env.agents[0]] = bad
    assert_rejects(lambda: env.step(actions), "actions")


def test_parallel_env_refuses_unknown_agents_and_takes_numpy_integers(env):
    actions = {a: 0 for a in env.agents}
    assert_rejects(lambda: env.step({**actions, "agent_99": 0}), "agent_99")
    env.step({a: np.int64(1) for a in env.agents})  # numpy integers are actions


def problem(B=2, n=3, A=4):
    q = torch.randn(B, n, A)
    edges = torch.tensor([[0, 1], [1, 2]])
    return q, torch.randn(B, len(edges), A, A), edges


@pytest.mark.parametrize("poison", [math.nan, math.inf])
def test_max_sum_refuses_non_finite_utilities_and_payoffs(poison):
    q, f, edges = problem()
    q[0, 1, 2] = poison
    assert_rejects(lambda: max_sum(q, f, edges), "utilities")
    q, f, edges = problem()
    f[1, 0, 0, 0] = poison
    assert_rejects(lambda: max_sum(q, f, edges), "payoffs")


def test_q_tot_refuses_actions_out_of_range_or_not_long():
    q, f, edges = problem()
    assert_rejects(lambda: q_tot(q, f, edges, torch.full((2, 3), 4)), "actions")
    assert_rejects(lambda: q_tot(q, f, edges, torch.full((2, 3), -1)), "actions")
    assert_rejects(lambda: q_tot(q, f, edges, torch.zeros(2, 3)), "actions")
    assert_rejects(lambda: q_tot(q, f, edges, torch.zeros(2, 2, dtype=torch.long)), "actions")


def test_vectorised_game_refuses_fractional_or_out_of_range_actions():
    game = ShiftingDependencyGame(num_envs=2)
    game.reset()
    n = game.n_agents
    assert_rejects(lambda: game.step(np.full((2, n), 1.7)), "actions")
    assert_rejects(lambda: game.step(np.full((2, n), game.n_actions)), "actions")
