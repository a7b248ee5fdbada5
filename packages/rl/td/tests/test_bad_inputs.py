"""Bad input at TD's public entry points ends in a named error, not a silent run."""

import pytest
import torch

from icml26.td import LinearTD
from icml26.td.gym_problems import gymnasium_mrp, gymnasium_transitions
from icml26.testing import assert_rejects

RETURNED = {
    "Slope": "the slope fit returns it",
}
"""Public names a user receives rather than builds (records the package returns): no input."""


def test_linear_td_stops_at_its_horizon():
    td = LinearTD(2, 0.5, horizon=3, eta0=0.5)
    for _ in range(3):
        td.update(torch.eye(2)[0], 1.0, torch.eye(2)[1])
    assert_rejects(lambda: td.update(torch.eye(2)[0], 1.0, torch.eye(2)[1]), ["3 updates", "T"])
    assert LinearTD(2, 0.5, schedule=0.1).eta == 0.1  # a constant step has no horizon


@pytest.mark.parametrize("make", [gymnasium_transitions, gymnasium_mrp])
def test_a_continuous_environment_is_named_not_tabular(make):
    assert_rejects(lambda: make("CartPole-v1"), ["CartPole-v1", "not tabular", "Discrete"])


@pytest.mark.parametrize(
    "args, names",
    [((0, 0.5), ["dim"]), ((2, 1.0), ["gamma"]), ((2, 0.5), ["horizon"])],
)
def test_linear_td_constructor(args, names):
    assert_rejects(lambda: LinearTD(*args), names)


def test_an_update_names_a_reward_or_feature_that_is_not_numbers():
    td, phi = LinearTD(3, 0.9, schedule=0.1), torch.eye(3)[0]
    # the argument's name opens the message (a bare "r" would match any message)
    assert_rejects(lambda: td.update(phi, "1", phi), "r must be numbers")  # was "new(): ..."
    assert_rejects(lambda: td.update(phi, 1.0, "x"), "phi_next must be numbers")
    assert_rejects(lambda: td.update([[0, "a", 1]], 1.0, phi), "phi must be numbers")


from icml26.td import (  # noqa: E402
    Arm,
    ConstantStepSize,
    ExponentialStepSize,
    InverseSqrtStepSize,
    InverseTimeStepSize,
    MarkovRewardProcess,
    MixingTimeStepSize,
    OracleStepSize,
    boyan_chain,
    check_problem,
    exponential_step_size,
    garnet_mdp,
    loglog_slope,
    stationary_distribution,
    td0,
    td0_grid,
    td0_sweep,
    td0_update,
    td_fixed_point,
)

NAN = float("nan")


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: ConstantStepSize(-1.0), "eta"),
        (lambda: ConstantStepSize(NAN), "eta"),
        (lambda: ExponentialStepSize(-0.5, 100), "eta0"),
        (lambda: ExponentialStepSize(0.5, 0), "horizon"),
        (lambda: exponential_step_size(0.5, 0, 1), "horizon"),
        (lambda: InverseSqrtStepSize(-1.0), "eta0"),
        (lambda: InverseTimeStepSize(-1.0, 1.0), "c"),
        (lambda: InverseTimeStepSize(1.0, -1.0), "t0"),
        (lambda: MixingTimeStepSize(1.0, -2.0), "tau_mix"),
        (lambda: OracleStepSize(-0.1, 0.9), "omega"),
        (lambda: OracleStepSize(0.1, 1.0), "gamma"),
    ],
)
def test_step_size_schedules_name_a_bad_constant(make, name):
    assert_rejects(make, name)


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: garnet_mdp(1, 1, 0.9, 0), "n_states"),
        (lambda: garnet_mdp(5, 0, 0.9, 0), "n_features"),
        (lambda: garnet_mdp(5, 3, 1.5, 0), "gamma"),
        (lambda: boyan_chain(0.9, n_states=2), "n_states"),
        (lambda: boyan_chain(1.0), "gamma"),
    ],
)
def test_problem_builders_name_a_bad_size_or_discount(make, name):
    assert_rejects(make, name)


def test_transition_matrices_must_be_stochastic():
    bad = torch.tensor([[0.5, 0.6], [0.5, 0.5]], dtype=torch.float64)
    assert_rejects(lambda: stationary_distribution(bad), "P")
    assert_rejects(lambda: stationary_distribution(torch.tensor([[NAN, 1.0], [0.5, 0.5]])), "P")
    p = garnet_mdp(5, 3, 0.9, 0)
    assert_rejects(lambda: check_problem(bad, p.r[:2], p.phi[:2], 0.9), "P")
    assert_rejects(lambda: check_problem(p.P, p.r, p.phi * 10, 0.9), "phi")
    assert_rejects(lambda: check_problem(p.P, p.r[:3], p.phi, 0.9), "r")
    assert_rejects(lambda: td_fixed_point(p.P, p.r, p.phi, 0.9, p.mu * 2), "mu")
    assert_rejects(lambda: MarkovRewardProcess(bad, p.r[:2], p.phi[:2], 0.9, p.mu[:2]), "P")


def test_runs_name_a_bad_horizon_run_count_or_sampling():
    p = garnet_mdp(5, 3, 0.9, 0)
    sched = ConstantStepSize(0.1)
    assert_rejects(lambda: td0(p.P, p.r, p.phi, 0.9, sched, 0), "horizon")
    assert_rejects(lambda: td0(p.P, p.r, p.phi, 0.9, sched, 10, runs=0), "runs")
    assert_rejects(lambda: td0(p.P, p.r, p.phi, 0.9, sched, 10, sampling="sometimes"), "sampling")
    assert_rejects(lambda: td0_sweep(p, [sched], 10, 0), "runs")
    assert_rejects(lambda: td0_grid([p], [Arm(sched)], [0], 1), "checkpoints")
    assert_rejects(lambda: Arm(sched, average="median"), "average")
    for start in (5, -1, 1.5, True):
        assert_rejects(lambda s=start: td0_grid([p], [Arm(sched)], [5], 1, "markov", start_state=s),
                       "start_state")  # fmt: skip
    assert_rejects(lambda: p.value_error(p.theta_star, to=torch.zeros(2)), "to")


def test_a_single_update_names_mismatched_shapes_and_non_finite_rewards():
    theta = torch.zeros(3)
    phi = torch.eye(3)[:2]
    assert_rejects(lambda: td0_update(theta, phi, torch.ones(2), phi[:, :2], 0.9, 0.1), "phi_next")
    assert_rejects(lambda: td0_update(theta, phi, torch.tensor([1.0, NAN]), phi, 0.9, 0.1), "r")


def test_loglog_slope_names_bad_horizons_and_errors():
    assert_rejects(lambda: loglog_slope([10, 10], [[1.0], [2.0]]), "horizons")
    assert_rejects(lambda: loglog_slope([10, 100], [[1.0], [-2.0]]), "errors")
    assert_rejects(lambda: loglog_slope([10, 100], [[1.0], [NAN]]), "errors")


def test_fit_critic_and_the_schedule_base_name_what_is_wrong():
    from icml26.td import StepSizeSchedule, fit_critic, garnet_mdp

    problem = garnet_mdp(5, 3, 0.9, seed=0)
    critic = torch.nn.Linear(3, 1, dtype=torch.float64)
    assert_rejects(lambda: fit_critic("mdp", critic, 10), "problem")
    assert_rejects(lambda: fit_critic(problem, torch.nn.ReLU(), 10), "critic")
    assert_rejects(lambda: fit_critic(problem, critic, 0), "horizon")
    assert_rejects(lambda: fit_critic(problem, critic, 10, batch_size=0), "batch_size")
    assert_rejects(lambda: fit_critic(problem, critic, 10, eta0=0.0), "eta0")
    assert_rejects(StepSizeSchedule, "values")  # the base is abstract: subclass it


from hypothesis import given, settings  # noqa: E402

from icml26.testing.strategies import empty, non_finite, out_of_range  # noqa: E402

DRAWS = settings(max_examples=30, deadline=None)


@DRAWS
@given(gamma=out_of_range(0.0, 1.0), reg=out_of_range(0.0, None))
def test_every_bad_discount_and_regulariser_is_named(gamma, reg):
    assert_rejects(lambda: LinearTD(3, gamma, schedule=0.1), "gamma")
    assert_rejects(lambda: LinearTD(3, 0.9, schedule=0.1, reg=reg), "reg")
    theta, phi, r = torch.zeros(3), torch.eye(3)[:2], torch.ones(2)
    assert_rejects(lambda: td0_update(theta, phi, r, phi, gamma, 0.1), "gamma")
    assert_rejects(lambda: td0_update(theta, phi, r, phi, 0.9, 0.1, reg=reg), "reg")


@DRAWS
@given(eta=out_of_range(0.0, None))
def test_every_bad_step_size_is_named(eta):
    theta, phi, r = torch.zeros(3), torch.eye(3)[:2], torch.ones(2)
    assert_rejects(lambda: td0_update(theta, phi, r, phi, 0.9, eta), "eta")


@DRAWS
@given(bad=non_finite((2, 3)) | empty((2, 3)))
def test_features_that_are_not_finite_or_empty_are_named(bad):
    theta, r = torch.zeros(3), torch.ones(len(bad))
    assert_rejects(lambda: td0_update(theta, bad, r, torch.eye(3)[: len(bad)], 0.9, 0.1), "phi")
