import math

import pytest
import torch

from icml26.asbm import VPSDE, BrownianSDE, GaussianEnergy
from icml26.testing import assert_close


@pytest.mark.parametrize("sde", [BrownianSDE(0.7), VPSDE(0.1, 2.0)], ids=["brownian", "vp"])
def test_bridge_samples_have_the_right_moments(sde):
    # Bridge marginal at t: the product of the forward transition from x0 and the backward from x1.
    x0, x1 = torch.tensor([[1.0, -2.0]]), torch.tensor([[0.5, 3.0]])
    t = torch.full((200000,), 0.3)
    xt = sde.bridge_sample(x0.expand(len(t), 2), x1.expand(len(t), 2), t)
    A, B, v = sde.bridge_coefficients(torch.tensor(0.3))
    assert_close(xt.mean(0), (A * x0 + B * x1)[0], atol=0.01, rtol=0)
    assert_close(xt.var(0), torch.full((2,), v.item()), atol=0.01, rtol=0.02)


def test_brownian_bridge_coefficients_are_the_textbook_ones():
    A, B, v = BrownianSDE(0.5).bridge_coefficients(torch.tensor([0.25, 0.5]))
    assert_close(A, torch.tensor([0.75, 0.5]))
    assert_close(B, torch.tensor([0.25, 0.5]))
    assert_close(v, 0.25 * torch.tensor([0.25 * 0.75, 0.25]))


def test_vp_bridge_matches_brute_force_conditioning():
    # Simulate the VP SDE with Euler-Maruyama, keep paths ending near x1: their x_t statistics
    # approach the closed-form bridge (a loose check of the algebra, not of the integrator).
    sde = VPSDE(0.1, 2.0)
    g = torch.Generator().manual_seed(0)
    n, steps = 400000, 100
    x = torch.zeros(n, 1)
    mid = None
    for k in range(steps):
        t = torch.full((n,), k / steps)
        x = (
            x
            + sde.f(t, x) / steps
            + sde.g(t)[:, None] * torch.randn(n, 1, generator=g) / math.sqrt(steps)
        )
        if k + 1 == steps // 2:
            mid = x.clone()
    keep = (x[:, 0] - 0.8).abs() < 0.02
    _, B, v = sde.bridge_coefficients(torch.tensor(0.5))
    assert mid[keep].mean().item() == pytest.approx((B * 0.8).item(), abs=0.03)
    assert mid[keep].var().item() == pytest.approx(v.item(), rel=0.1)


def test_vp_reference_is_not_memoryless():
    sde = VPSDE(0.1, 2.0)
    assert sde.a(torch.tensor(0.0), torch.tensor(1.0)).item() > 0.5


def test_grad_log_transition_and_energy():
    sde = BrownianSDE(0.5)
    x0, x1 = torch.tensor([[1.0, 0.0]]), torch.tensor([[2.0, 1.0]])
    assert_close(sde.grad_log_transition(x1, x0), -(x1 - x0) / 0.25)
    e = GaussianEnergy(2.0)
    assert_close(e.grad(x1), x1 / 4)
    assert e.energy(x1).item() == pytest.approx(5 / 8)


def test_bad_parameters():
    with pytest.raises(ValueError, match="sigma"):
        BrownianSDE(0.0)
    with pytest.raises(ValueError, match="beta"):
        VPSDE(2.0, 1.0)
    with pytest.raises(ValueError, match="scale"):
        GaussianEnergy(-1.0)
