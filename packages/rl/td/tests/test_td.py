import math

import numpy as np
import pytest
import torch

from icml26.td import (
    Arm,
    ConstantStepSize,
    ExponentialStepSize,
    InverseSqrtStepSize,
    garnet_mdp,
    td0,
    td0_grid,
    td0_sweep,
)
from icml26.testing import assert_unbiased, assert_variance_order


@pytest.fixture(scope="module")
def problem():
    return garnet_mdp(15, 4, 0.9, seed=0, omega=0.02)


@pytest.mark.parametrize("sampling", ["iid", "markov"])
def test_first_update_is_unbiased_for_the_mean_td_step(problem, sampling):
    # From theta_0 = 0 with s_0 ~ mu: theta_1 = eta r(s) phi(s), whose mean is eta * b.
    eta = 0.3
    theta1 = td0(
        problem.P,
        problem.r,
        problem.phi,
        problem.gamma,
        ConstantStepSize(eta),
        1,
        runs=20000,
        sampling=sampling,
        seed=1,
    )
    b = problem.phi.T @ (problem.mu * problem.r)
    assert_unbiased(theta1, eta * b, name=f"theta_1 ({sampling})")
    with pytest.raises(AssertionError):
        assert_unbiased(theta1, 1.3 * eta * b)  # the check has power at this sample size


@pytest.mark.parametrize("sampling", ["iid", "markov"])
def test_exponential_td_converges_to_the_fixed_point(problem, sampling):
    T = 20000
    theta = td0_sweep(problem, [ExponentialStepSize(0.5, T)], T, runs=8, sampling=sampling, seed=2)[
        0
    ]
    err = problem.value_error(theta)
    init_err = problem.value_error(torch.zeros(problem.n_features, dtype=torch.float64))
    assert err.mean() < 0.01 * init_err


def test_regularised_td_converges_to_the_regularised_fixed_point(problem):
    # With lambda > 0 the mean update is b - (A + lambda I) theta: TD tracks that solution.
    lam = 0.05
    D_phi = problem.mu[:, None] * problem.phi
    A = D_phi.T @ (problem.phi - problem.gamma * problem.P @ problem.phi)
    theta_lam = torch.linalg.solve(A + lam * torch.eye(4, dtype=torch.float64), D_phi.T @ problem.r)
    T = 30000
    theta = td0_sweep(
        problem, [ExponentialStepSize(0.5, T)], T, runs=16, sampling="markov", reg=lam, seed=3
    )[0]
    dist_lam = (theta.mean(0) - theta_lam).norm()
    dist_star = (theta.mean(0) - problem.theta_star).norm()
    assert dist_lam < 0.2 * dist_star


def test_error_decreases_with_horizon(problem):
    errs = []
    for T in (300, 3000, 30000):
        theta = td0_sweep(problem, [ExponentialStepSize(0.5, T)], T, runs=10, seed=4)[0]
        errs.append(problem.value_error(theta).mean().item())
    assert errs[0] > errs[1] > errs[2]


def test_tail_averaging_reduces_the_variance_of_constant_steps(problem):
    T = 4000
    out = td0_sweep(
        problem, [ConstantStepSize(0.5)] * 2, T, runs=64, seed=5, tail_average=[True, False]
    )
    assert_variance_order(out[0], out[1], target=problem.theta_star, names=("tail", "last"))


def test_schedules_share_samples(problem):
    # Two copies of the same schedule see the same samples, so they end in the same place.
    out = td0_sweep(problem, [InverseSqrtStepSize(0.5), InverseSqrtStepSize(0.5)], 500, runs=3)
    assert torch.equal(out[0], out[1])
    again = td0_sweep(problem, [InverseSqrtStepSize(0.5)], 500, runs=3)
    assert torch.equal(again[0], out[0])  # seeded


def test_divergence_is_visible_not_hidden(problem):
    out = td0_sweep(problem, [ConstantStepSize(50.0)], 2000, runs=2)
    assert not torch.isfinite(out).all()


def test_schedule_horizon_must_match(problem):
    with pytest.raises(ValueError, match="built for horizon 100"):
        td0_sweep(problem, [ExponentialStepSize(0.5, 100)], 200, runs=1)


def test_golden_error_after_seeded_run(problem):
    # One end-to-end number: if sampling, the update or the schedule changes, this moves.
    theta = td0_sweep(problem, [ExponentialStepSize(0.5, 2000)], 2000, runs=4, seed=7)[0]
    assert problem.value_error(theta).mean().item() == pytest.approx(GOLDEN, rel=1e-6)


GOLDEN = 0.0005470877268709685


def _one_state(gamma=0.5):
    from icml26.td import MarkovRewardProcess

    one = torch.ones(1, 1, dtype=torch.float64)
    return MarkovRewardProcess(one, torch.ones(1, dtype=torch.float64), one, gamma, one[0])


def test_projection_and_polyak_averaging_on_a_deterministic_chain():
    """One state, reward 1, gamma 0.5: theta_{t+1} = theta_t + eta (1 - 0.5 theta_t), fixed
    point 2. Projection onto radius 0.5 stops at 0.5; Polyak-Ruppert is the mean of all T
    iterates, the tail average that of the last half; the last iterate is the plain run."""

    T, eta = 40, 0.3
    iterates, theta = [], 0.0
    for _ in range(T):
        theta = theta + eta * (1 - 0.5 * theta)
        iterates.append(theta)
    sched = [ConstantStepSize(eta)] * 4
    out = td0_sweep(
        _one_state(),
        sched,
        T,
        runs=2,
        radius=[None, 0.5, None, None],
        polyak=[False, False, True, False],
        tail_average=[False, False, False, True],
    )[..., 0]  # (K, R)
    expected = [iterates[-1], 0.5, sum(iterates) / T, sum(iterates[T // 2 :]) / (T - T // 2)]
    torch.testing.assert_close(
        out, torch.tensor(expected, dtype=torch.float64)[:, None].expand(4, 2)
    )
    with pytest.raises(ValueError, match="radius"):
        td0_sweep(_one_state(), sched[:1], T, 1, radius=0.0)
    with pytest.raises(ValueError, match="not both"):
        td0_sweep(_one_state(), sched[:1], T, 1, polyak=True, tail_average=True)


def test_inverse_time_schedule():
    from icml26.td import InverseTimeStepSize

    s = InverseTimeStepSize(2.0, 10.0)
    torch.testing.assert_close(
        s.values(3), torch.tensor([0.2, 2 / 11, 2 / 12], dtype=torch.float64)
    )
    assert s(2) == pytest.approx(2 / 12)
    with pytest.raises(ValueError, match="t0"):
        InverseTimeStepSize(1.0, 0.0)


def test_regularised_fixed_point_is_where_regularised_td_settles():
    problem = garnet_mdp(n_states=8, n_features=3, gamma=0.9, seed=3)
    torch.testing.assert_close(problem.regularised_fixed_point(0.0), problem.theta_star)
    lam = 0.05
    floor = problem.regularised_fixed_point(lam)
    assert problem.value_error(floor) > 0  # a bias, not noise
    # expected TD with a small constant step converges to it: theta += eta (b - (A + lam) theta)
    D_phi = problem.mu[:, None] * problem.phi
    A = D_phi.T @ (problem.phi - problem.gamma * problem.P @ problem.phi)
    b = D_phi.T @ problem.r
    theta = torch.zeros(3, dtype=torch.float64)
    for _ in range(20_000):
        theta = theta + 0.5 * (b - (A + lam * torch.eye(3, dtype=torch.float64)) @ theta)
    torch.testing.assert_close(theta, floor)
    with pytest.raises(ValueError, match="reg"):
        problem.regularised_fixed_point(-1.0)


def test_optimisation_error_and_floor_split_the_regularised_error():
    problem = garnet_mdp(n_states=8, n_features=3, gamma=0.9, seed=3)
    floor = problem.regularised_fixed_point(0.05)
    # the distance to the regularised point is zero there, and the floor is the distance from it
    assert problem.value_error(floor, to=floor).item() == 0.0
    torch.testing.assert_close(
        problem.value_error(problem.theta_star, to=floor), problem.value_error(floor)
    )


def test_markov_runs_can_start_in_one_state():
    """From a fixed state the first transitions leave that state; from mu they do not."""
    problem = garnet_mdp(n_states=8, n_features=3, gamma=0.9, seed=3)
    arm = [Arm(ConstantStepSize(0.5))]
    one = td0_grid([problem], arm, [1], 64, "markov", start_state=2)[0, 0, 0]
    # a single step from state 2 moves theta along phi(2) only
    direction = problem.phi[2] / problem.phi[2].norm()
    torch.testing.assert_close(one - (one @ direction)[:, None] * direction, torch.zeros_like(one))
    drawn = td0_grid([problem], arm, [1], 64, "markov")[0, 0, 0]
    assert (drawn - (drawn @ direction)[:, None] * direction).abs().max() > 1e-3


def test_loglog_slope_recovers_a_known_rate_with_an_interval():
    from icml26.td import loglog_slope

    horizons = [1_000, 10_000, 100_000, 1_000_000]
    rng = np.random.default_rng(0)
    # error = 3 T^-1 times seed noise (lognormal, sd 0.3): the slope is -1
    errors = 3.0 / np.array(horizons)[:, None] * np.exp(0.3 * rng.standard_normal((4, 10)))
    fit = loglog_slope(horizons, errors)
    assert fit.low <= -1.0 <= fit.high and fit.high - fit.low < 0.3
    assert abs(fit.slope + 1) < 0.15
    flat = loglog_slope(horizons, np.full((4, 10), 0.2))  # no decay: slope 0, no spread
    assert flat.slope == pytest.approx(0.0, abs=1e-12) and flat.low == pytest.approx(flat.high)
    with pytest.raises(ValueError, match="diverged"):
        loglog_slope(horizons, np.full((4, 3), np.inf))
    with pytest.raises(ValueError, match="horizons"):
        loglog_slope([10, 10], np.ones((2, 3)))


def test_mixing_time_grows_with_laziness():
    problem = garnet_mdp(n_states=10, n_features=3, gamma=0.9, seed=0)
    fast = problem.mixing_time()
    assert fast >= 1
    assert problem.lazy(0.1).mixing_time() > 5 * fast  # (1 - eps) I + eps P mixes ~1/eps slower
    with pytest.raises(ValueError, match="eps"):
        problem.mixing_time(eps=1.0)


def _det_run(gamma, etas, reg=0.0, radius=None):
    """One state, reward 1: theta <- theta + eta (1 - (1 - gamma) theta - reg theta)."""
    out, theta = [], 0.0
    for eta in etas:
        theta = theta + eta * (1 - (1 - gamma) * theta - reg * theta)
        if radius is not None:
            theta = min(theta, radius)
        out.append(theta)
    return out


def test_td0_grid_reads_every_checkpoint_and_stops_arms_at_their_horizon():
    from icml26.td import Arm, td0_grid

    cps = [10, 25, 60]
    arms = [
        [
            Arm(ConstantStepSize(0.3)),
            Arm(ConstantStepSize(0.3), average="tail"),
            Arm(ConstantStepSize(0.3), average="polyak"),
            Arm(ExponentialStepSize(0.5, 25), reg=0.1),
            Arm(InverseSqrtStepSize(0.4), radius=0.7),
        ]
        for _ in range(2)
    ]
    arms[1][0] = Arm(ConstantStepSize(0.1))  # one problem's arms differ from the other's
    problems = [_one_state(0.5), _one_state(0.9)]
    out = td0_grid(problems, arms, cps, runs=2)[..., 0]  # (C, M, K, R)
    assert out.shape == (3, 2, 5, 2)
    for m, gamma in enumerate((0.5, 0.9)):
        eta0 = 0.3 if m == 0 else 0.1
        const = _det_run(gamma, [eta0] * 60)
        plain = _det_run(gamma, [0.3] * 60)
        exp_run = _det_run(gamma, ExponentialStepSize(0.5, 25).values(25).tolist(), reg=0.1)
        proj = _det_run(gamma, InverseSqrtStepSize(0.4).values(60).tolist(), radius=0.7)
        for c, T in enumerate(cps):
            want = [
                const[T - 1],
                sum(plain[T // 2 : T]) / (T - T // 2),
                sum(plain[:T]) / T,
                exp_run[min(T, 25) - 1],  # frozen at its own horizon from then on
                proj[T - 1],
            ]
            torch.testing.assert_close(
                out[c, m], torch.tensor(want, dtype=torch.float64)[:, None].expand(5, 2)
            )


def test_td0_grid_checks_its_input():
    from icml26.td import Arm, td0_grid

    one = [Arm(ConstantStepSize(0.1))]
    with pytest.raises(ValueError, match="not a checkpoint"):
        td0_grid([_one_state()], [Arm(ExponentialStepSize(0.5, 30))], [10, 20], runs=1)
    with pytest.raises(ValueError, match="strictly increasing"):
        td0_grid([_one_state()], one, [20, 10], runs=1)
    with pytest.raises(ValueError, match="same number of states"):
        td0_grid([_one_state(), garnet_mdp(5, 1, 0.9, seed=0)], one, [10], runs=1)
    with pytest.raises(ValueError, match="one per problem"):
        td0_grid([_one_state(), _one_state()], [one], [10], runs=1)
    with pytest.raises(ValueError, match="average"):
        Arm(ConstantStepSize(0.1), average="mean")


def test_td0_grid_matches_td0_sweep_on_a_random_chain(problem):
    """One problem, one checkpoint: the same samples and numbers as td0_sweep."""
    from icml26.td import Arm, td0_grid

    scheds = [ExponentialStepSize(0.5, 700), ConstantStepSize(0.05)]
    for sampling in ("iid", "markov"):
        want = td0_sweep(
            problem, scheds, 700, 3, sampling, reg=[0.01, 0.0], seed=4, polyak=[False, True]
        )
        arms = [Arm(scheds[0], reg=0.01), Arm(scheds[1], average="polyak")]
        got = td0_grid([problem], arms, [700], 3, sampling, seed=4)[0, 0]
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_schedule_segments_are_slices_of_their_values():
    from icml26.td import InverseTimeStepSize, MixingTimeStepSize, OracleStepSize

    for s in (
        ConstantStepSize(0.2),
        InverseSqrtStepSize(0.3),
        InverseTimeStepSize(3.0, 7.0),
        OracleStepSize(0.01, 0.9),
        ExponentialStepSize(0.5, 50),
        MixingTimeStepSize(2.0, 4.0),
    ):
        torch.testing.assert_close(s.segment(13, 40), s.values(40)[13:])
        assert s(17) == pytest.approx(s.values(40)[17].item())
    m = MixingTimeStepSize(2.0, 4.0)
    assert m(0) == pytest.approx(2.0 / (4.0 * math.log(2)))
    with pytest.raises(ValueError, match="tau_mix"):
        MixingTimeStepSize(1.0, 0.0)


def test_loglog_slope_of_a_family_tuned_in_hindsight():
    from icml26.td import loglog_slope

    horizons = [100, 1000, 10_000]
    T = np.array(horizons, dtype=float)[:, None]
    # two schedules: one good early (flat), one good late (1/T); the best of them falls as the
    # lower envelope, and a diverged schedule is never picked
    flat = np.full((3, 4), 0.01)
    fast = 1.0 / T * np.ones((3, 4))
    family = np.stack([flat, fast, np.full((3, 4), np.inf)], 1)  # (H, F, seeds)
    fit = loglog_slope(horizons, family)
    envelope = np.log(np.minimum(0.01, 1.0 / T[:, 0]))
    x = np.log(T[:, 0]) - np.log(T[:, 0]).mean()
    assert fit.slope == pytest.approx((x * envelope).sum() / (x * x).sum())
    with pytest.raises(ValueError, match="every schedule"):
        loglog_slope(horizons, np.full((3, 2, 4), np.inf))
