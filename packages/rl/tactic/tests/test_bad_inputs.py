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
    "StepOut": "a learner's forward returns it",
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


@pytest.mark.parametrize(
    "edges",
    [
        torch.tensor([[0, 1], [1, 5]]),  # agent 5 of 3: was a raw IndexError
        torch.tensor([[0.0, 1.0], [1.0, 2.0]]),  # float pairs: was a raw RuntimeError
        torch.tensor([[0, 0], [1, 2]]),  # a self-loop: ran silently
        torch.tensor([0, 1]),
    ],
)
def test_max_sum_and_q_tot_name_bad_edges(edges):
    q, f, _ = problem()
    assert_rejects(lambda: max_sum(q, f, edges), "edges")
    assert_rejects(lambda: q_tot(q, f, edges, torch.zeros(2, 3, dtype=torch.long)), "edges")


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


from icml26.tactic import (  # noqa: E402
    ClassPredictor,
    EpisodeBuffer,
    GameConfig,
    Learner,
    LearnerConfig,
    TrainConfig,
    TrajectoryVQVAE,
    all_edges,
    arm_config,
    brute_force_greedy,
    fit_classes,
    payoff_matrix,
    payoff_variance,
    select_edges,
    train,
)


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: ShiftingDependencyGame(GameConfig(n_agents=1)), "n_agents"),
        (lambda: Learner(LearnerConfig(hidden=-1), 4, 3, 10, 5), "hidden"),
        (lambda: Learner(LearnerConfig(kind="x"), 4, 3, 10, 5), "kind"),
        (lambda: select_edges(torch.rand(2, 6), 2.0), "rho"),
        (lambda: all_edges(1), "agents"),
        (lambda: arm_config("x"), "arm"),
        (lambda: fit_classes(torch.rand(5, 4, 3), 0), "n_classes"),
        (lambda: EpisodeBuffer(0, 5, 2, 3, 3, 2), "capacity"),
        (lambda: TrajectoryVQVAE(0), "in_dim"),
        (lambda: ClassPredictor(0, 2, 3), "obs_dim"),
    ],
)
def test_components_name_a_bad_size(make, name):
    assert_rejects(make, name)


def test_payoff_helpers_name_factors_or_payoffs_of_the_wrong_shape():
    assert_rejects(lambda: payoff_matrix(torch.rand(2, 3, 4), torch.rand(2, 3, 5)), "factors")
    assert_rejects(lambda: payoff_variance(torch.rand(2, 3, 4), torch.rand(2, 3, 5)), "factors")
    edges = torch.tensor([[0, 1], [1, 2]])
    assert_rejects(
        lambda: brute_force_greedy(torch.rand(1, 3, 2), torch.rand(1, 2, 3, 3), edges), "payoffs"
    )


def test_training_names_a_bad_budget():
    def make_env(n, seed):
        return ShiftingDependencyGame(GameConfig(), n, seed)

    assert_rejects(lambda: train(make_env, LearnerConfig(), TrainConfig(steps=-1)), "steps")


def test_matchings_predictor_training_and_evaluation_name_bad_values():
    from icml26.tactic import evaluate, task_matchings, train_predictor

    assert_rejects(lambda: task_matchings(1, 1), "n_agents")
    assert_rejects(lambda: task_matchings(4, 0), "n_types")
    assert_rejects(lambda: task_matchings(4, 4), "n_types")
    assert_rejects(lambda: evaluate("run", 5, 0), "run")
    obs, labels = torch.zeros(4, 3, 2, 5), torch.zeros(4, 3, dtype=torch.long)
    assert_rejects(lambda: train_predictor(None, obs[0], labels), "obs")
    assert_rejects(lambda: train_predictor(None, obs, labels, steps=0), "steps")
    assert_rejects(lambda: train_predictor(None, obs, labels, holdout=1.0), "holdout")


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [("codes", {"codes": 0}), ("buffer", {"buffer": 0}), ("td_lambda", {"td_lambda": 2.0})],
)
def test_messages_name_the_one_bad_argument(name, kwargs):
    from icml26.tactic.abstraction import TrajectoryVQVAE
    from icml26.tactic.train import TrainConfig

    make = (lambda: TrajectoryVQVAE(4, **kwargs)) if name == "codes" else \
        (lambda: TrainConfig(**kwargs).check())  # fmt: skip
    err = assert_rejects(make, name)
    assert str(err).startswith(f"{name} must"), err


from hypothesis import given, settings  # noqa: E402

from icml26.testing.strategies import bad_tensors  # noqa: E402


@settings(max_examples=30, deadline=None)
@given(q=bad_tensors((2, 3, 4)), f=bad_tensors((2, 2, 4, 4)))
def test_utilities_and_payoffs_of_every_bad_kind_are_named(q, f):
    """NaN / inf, a wrong rank, integer, boolean or complex values, or no rows."""
    good_q, good_f, edges = problem()
    assert_rejects(lambda: max_sum(q, good_f, edges), "utilities")
    assert_rejects(lambda: max_sum(good_q, f, edges), "payoffs")
