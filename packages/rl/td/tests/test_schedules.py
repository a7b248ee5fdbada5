import math

import pytest
import torch
from torch.optim.lr_scheduler import LRScheduler

from icml26.td import (
    ConstantStepSize,
    ExponentialStepSize,
    InverseSqrtStepSize,
    OracleStepSize,
)
from icml26.testing import assert_close


@pytest.mark.parametrize("horizon,beta", [(1, 1.0), (7, 1.0), (1000, 3.0)])
def test_exponential_schedule_endpoints_and_ratio(horizon, beta):
    s = ExponentialStepSize(0.8, horizon, beta)
    eta = s.values()
    alpha = (beta / horizon) ** (1 / horizon)
    assert eta.shape == (horizon,)
    assert eta[0].item() == pytest.approx(0.8)
    # eta_t = eta0 * alpha^t, so eta_T (one past the last step) = eta0 * beta / T.
    assert (eta[-1] * alpha).item() == pytest.approx(0.8 * beta / horizon, rel=1e-9)
    if horizon > 1:
        assert_close(eta[1:] / eta[:-1], torch.full((horizon - 1,), alpha, dtype=torch.float64))
    assert s(3 if horizon > 3 else 0) == pytest.approx(0.8 * alpha ** (3 if horizon > 3 else 0))


def test_baseline_schedules():
    assert ConstantStepSize(0.1).values(4).tolist() == [0.1] * 4
    assert_close(
        InverseSqrtStepSize(1.0).values(4), 1 / torch.arange(1, 5, dtype=torch.float64).sqrt()
    )
    o = OracleStepSize(omega=0.01, gamma=0.9)
    # Bhandari et al.: beta / (lam + t), beta = 2/(omega(1-gamma)), lam = 16/(omega(1-gamma)^2)
    assert o.values(1)[0].item() == pytest.approx((2 / (0.01 * 0.1)) / (16 / (0.01 * 0.01)))


def test_exponential_is_an_lr_scheduler():
    w = torch.nn.Parameter(torch.zeros(3))
    opt = torch.optim.SGD([w], lr=123.0)
    sched = ExponentialStepSize(0.5, 10, optimizer=opt)
    assert isinstance(sched, LRScheduler)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.5)
    for k in range(1, 11):
        opt.step()
        sched.step()
        assert opt.param_groups[0]["lr"] == pytest.approx(0.5 * sched.alpha**k)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.5 / 10)
    assert sched.get_last_lr()[0] == pytest.approx(0.05)


def test_exponential_keeps_optimizer_rates_when_eta0_is_none():
    a, b = torch.nn.Parameter(torch.zeros(1)), torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([{"params": [a], "lr": 1.0}, {"params": [b], "lr": 0.1}])
    sched = ExponentialStepSize(None, 4, optimizer=opt)
    opt.step()
    sched.step()
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([sched.alpha, 0.1 * sched.alpha])


def test_bad_schedule_arguments_name_the_argument():
    with pytest.raises(ValueError, match="horizon"):
        ExponentialStepSize(1.0, 0)
    with pytest.raises(ValueError, match="horizon"):
        ExponentialStepSize(1.0, 2.5)
    with pytest.raises(ValueError, match="eta0"):
        ExponentialStepSize(-1.0, 10)
    with pytest.raises(ValueError, match="eta0"):
        ExponentialStepSize(math.nan, 10)
    with pytest.raises(ValueError, match="beta"):
        ExponentialStepSize(1.0, 10, beta=20.0)
    with pytest.raises(ValueError, match="eta"):
        ConstantStepSize(0)
    with pytest.raises(ValueError, match="gamma"):
        OracleStepSize(0.1, 1.0)
    with pytest.raises(RuntimeError, match=r"has none"):
        ExponentialStepSize(1.0, 10).step()


def test_exponential_step_size_function_matches_the_schedule():
    from icml26.td import exponential_step_size

    s = ExponentialStepSize(0.7, 200, beta=2.0)
    for t in (0, 1, 57, 199, 200):
        assert exponential_step_size(t, 200, 0.7, beta=2.0) == pytest.approx(s(t))
    assert exponential_step_size(200, 200, 0.7) == pytest.approx(0.7 / 200)
    with pytest.raises(ValueError, match="horizon"):
        exponential_step_size(0, 0, 0.7)
