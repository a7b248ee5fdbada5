"""Stage 2 (score parameterisation) against its closed form on Gaussian data, and the samplers
driven by the exact fields: what the trained networks and the official samplers must reproduce."""

import copy

import pytest
import torch

from icml26.asbm import ASBM, VPSDE, BrownianSDE, GaussianEnergy, bridge_score_loss
from icml26.asbm.gaussian import independent_bridge_fields

M0, V0 = 1.5, 0.25


class Field(torch.nn.Module):
    """A fixed ``(t, x) -> tensor`` as a network (no parameters)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, t, x):
        return self.fn(t, x)


def _exact_model(sde):
    score, control = independent_bridge_fields(M0, V0, sde)
    # the stage-2 network outputs std_t * s
    net = Field(lambda t, x: score(t, x) * sde.from_zero(t)[1].view(-1, 1))
    model = ASBM((1,), sde, GaussianEnergy(), u_net=Field(control), bridge_net=net, ema=None)
    model.stage1_fitted = True  # u_net is the exact forward control
    return model


@pytest.mark.parametrize("sde", [VPSDE(), BrownianSDE(1.0)], ids=["vp", "brownian"])
@pytest.mark.parametrize("method", ["em", "heun"])
def test_samplers_driven_by_the_exact_fields_reach_the_data_law(sde, method):
    # N(0, 1) -> N(1.5, 0.5^2): Euler-Maruyama on the backward SDE with the exact backward score,
    # Heun on the probability-flow ODE with the exact score and forward control.
    model = _exact_model(sde)
    x = model.sample(20000, 200, method=method, generator=torch.Generator().manual_seed(0))
    assert x.mean().item() == pytest.approx(M0, abs=0.03)
    assert x.std().item() == pytest.approx(V0**0.5, rel=0.04)


def test_heun_is_second_order_and_euler_maruyama_first_order():
    # with the exact fields, Heun on the probability-flow ODE is already close at 10 steps, and
    # Euler-Maruyama's bias in the mean halves with each doubling of the steps
    model, g = _exact_model(VPSDE()), torch.Generator().manual_seed(0)
    x = model.sample(20000, 10, method="heun", generator=g)
    assert abs(x.mean().item() - M0) < 0.02 and abs(x.std().item() - V0**0.5) < 0.02
    bias = [abs(model.sample(20000, k, generator=torch.Generator().manual_seed(1)).mean().item()
                - M0) for k in (5, 10, 20)]  # fmt: skip
    assert bias[1] < 0.7 * bias[0] and bias[2] < 0.7 * bias[1]


def test_heun_without_stage_1_needs_a_memoryless_reference(gaussian_score_model):
    # stage 2 alone on VP 0.1 -> 4 has no forward control to integrate the ODE with
    with pytest.raises(ValueError, match="needs stage 1's forward control"):
        gaussian_score_model.sample(10, 4, method="heun")
    assert gaussian_score_model.sample(10, 4).shape == (10, 1)  # Euler-Maruyama needs none


def test_the_exact_score_has_the_lowest_loss():
    # bridge_score_loss is minimised by the conditional expectation: the closed form beats a
    # perturbed copy of itself on the same draws.
    sde = VPSDE()
    exact = _exact_model(sde).bridge_net
    off = Field(lambda t, x: exact(t, x) * 1.1 + 0.05)
    g = torch.Generator().manual_seed(0)
    x0 = M0 + V0**0.5 * torch.randn(50000, 1, generator=g)
    x1, t = torch.randn(50000, 1, generator=g), torch.rand(50000, generator=g)
    torch.manual_seed(1)
    best = bridge_score_loss(exact, sde, x0, x1, t)
    torch.manual_seed(1)
    worse = bridge_score_loss(off, sde, x0, x1, t)
    assert best < worse


@pytest.fixture(scope="module")
def gaussian_score_model():
    """Stage 2 alone, on the independent coupling of N(1.5, 0.5^2) data."""
    torch.manual_seed(0)
    data = M0 + V0**0.5 * torch.randn(4000, 1, generator=torch.Generator().manual_seed(0))
    model = ASBM((1,), VPSDE(), GaussianEnergy(), hidden=64)
    model.fit_backward(data, steps=1500, buffer_size=4096, coupling="independent",
                       progress=False)  # fmt: skip
    return model


def test_trained_score_matches_the_closed_form_and_samples_the_data(gaussian_score_model):
    # The positive control in miniature: stage 2 on the independent coupling of Gaussian data
    # learns the exact backward score, and its sampler reproduces the data's moments.
    model, sde = gaussian_score_model, gaussian_score_model.sde
    assert model.nfe["simulation"] == 0  # no stage 1 ran
    score, _ = independent_bridge_fields(M0, V0, sde)
    t = torch.linspace(0.05, 0.95, 19).repeat_interleave(41)
    x = torch.linspace(-2.0, 3.5, 41).repeat(19)[:, None]
    std = sde.from_zero(t)[1][:, None]
    exact, got = score(t, x) * std, model.score(t, x) * std
    rel = ((got - exact).pow(2).mean() / exact.pow(2).mean()).sqrt().item()
    assert rel < 0.1
    xs = model.sample(20000, 50, generator=torch.Generator().manual_seed(1))
    assert xs.mean().item() == pytest.approx(M0, abs=0.05)
    assert xs.std().item() == pytest.approx(V0**0.5, rel=0.08)


def test_stage2_and_method_mismatches_are_clear_errors():
    model = ASBM((2,), VPSDE(), GaussianEnergy(), hidden=8)
    with pytest.raises(ValueError, match=r"method must be one of .*'em'.*stage2='score'"):
        model.sample(4, 2, method="ode")
    with pytest.raises(ValueError, match="needs stage2='posterior'"):
        model.predict(torch.zeros(2), torch.zeros(2, 2))
    with pytest.raises(ValueError, match="stage2 must be one of"):
        ASBM((2,), VPSDE(), GaussianEnergy(), stage2="x0")
    with pytest.raises(ValueError, match="ema"):
        ASBM((2,), VPSDE(), GaussianEnergy(), ema=1.0)
    with pytest.raises(ValueError, match="coupling"):
        model.fit_backward(torch.randn(8, 2), steps=1, coupling="ot", progress=False)
    two = Field(lambda t, x: torch.cat([x, x], 1))  # a posterior-style (x0, x1) output
    with pytest.raises(ValueError, match="out_mult=1"):
        bridge_score_loss(two, VPSDE(), torch.randn(4, 2), torch.randn(4, 2), torch.rand(4))


def test_distribution_matching_spreads_the_one_jump_generator(gaussian_score_model, tmp_path):
    # The generator starts as the teacher's one-jump posterior mean, which collapses the
    # independent coupling to the data mean (std ~0.03); the distribution-matching term alone
    # (no regression) must spread it towards the data law N(1.5, 0.5^2).
    model = copy.deepcopy(gaussian_score_model)
    model.distill_dm(n_pairs=256, teacher_steps=2, steps=1, regression=0.0, progress=False)
    start = model.sample_distilled(4000, torch.Generator().manual_seed(0))
    assert start.std().item() < 0.1
    model.distill_dm(n_pairs=256, teacher_steps=2, steps=1000, lr=1e-3, regression=0.0,
                     progress=False)  # fmt: skip
    x = model.sample_distilled(4000, torch.Generator().manual_seed(0))
    # distribution matching alone under-disperses (the fake score sees the deterministic
    # pairing (G(z), z), the real one a stochastic coupling): about 0.4 against 0.5 here
    assert 0.3 < x.std().item() < 0.55 and x.mean().item() == pytest.approx(M0, abs=0.15)
    model.save_pretrained(tmp_path)
    again = ASBM.from_pretrained(tmp_path)
    assert again.distill_time == 1.0
    g = torch.Generator().manual_seed(3)
    assert torch.equal(again.sample_distilled(8, g), model.sample_distilled(8, g.manual_seed(3)))
    posterior = ASBM((1,), VPSDE(), GaussianEnergy(), hidden=8, stage2="posterior")
    with pytest.raises(ValueError, match="distill_dm needs stage2='score'"):
        posterior.distill_dm(steps=1)


def test_stage1_simulates_with_the_averaged_control(tmp_path):
    """As the official code does (--simulate-ema): the average of u follows the trained u, and
    every simulation uses the average, not the last iterate; checkpoints keep it."""
    data = torch.randn(256, 2) * 0.5 + 1.0
    model = ASBM((2,), VPSDE(), GaussianEnergy(), hidden=16, sim_steps=4, ema=0.9)
    start = [p.clone() for p in model.u_ema.parameters()]
    model.fit_forward(data, rounds=1, adjoint_steps=30, corrector_steps=0, batch_size=32,
                      buffer_size=64, progress=False, diagnostics=0, check_size=0)  # fmt: skip
    live, avg = list(model.u_net.parameters()), list(model.u_ema.parameters())
    assert not all(torch.equal(a, s) for a, s in zip(avg, start, strict=True))  # it moved
    assert not all(torch.equal(a, b) for a, b in zip(avg, live, strict=True))  # and lags u
    x0, t0 = data[:8], torch.zeros(8)
    got = model.simulate_forward(x0, torch.Generator().manual_seed(0), steps=1)
    g = VPSDE().g(t0)[:, None]
    dw = torch.randn(x0.shape, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        one_step = x0 + VPSDE().f(t0, x0) + g**2 * model.u_ema(t0, x0) + g * dw
    assert torch.allclose(got, one_step, atol=1e-5)
    model.save_pretrained(tmp_path)
    back = ASBM.from_pretrained(tmp_path)
    for a, b in zip(back.u_ema.parameters(), model.u_ema.parameters(), strict=True):
        assert torch.equal(a, b)


def test_corrector_simulations_take_their_own_step_count():
    data = torch.randn(64, 2)
    model = ASBM((2,), VPSDE(), GaussianEnergy(), hidden=8, sim_steps=3)
    model.fit_forward(data, rounds=2, adjoint_steps=1, corrector_steps=1, batch_size=8,
                      buffer_size=16, corrector_buffer=32, corrector_sim_steps=7,
                      progress=False, diagnostics=0, check_size=0)  # fmt: skip
    # two adjoint buffers of 16 at 3 steps, one corrector buffer of 32 at 7
    assert model.nfe["simulation"] == 2 * 16 * 3 + 32 * 7
    with pytest.raises(ValueError, match="corrector_sim_steps"):
        model.fit_forward(data, rounds=1, adjoint_steps=1, corrector_sim_steps=0, progress=False)


@pytest.mark.parametrize("sde", [VPSDE(), BrownianSDE(0.7)], ids=["vp", "brownian"])
def test_control_gain_is_the_integral_of_a_times_g_squared(sde):
    from icml26.asbm.sde import LinearSDE

    s, t = torch.tensor([0.0, 0.3, 0.9]), torch.tensor([0.1, 0.7, 1.0])
    # the closed form against the base class's quadrature
    assert torch.allclose(sde.control_gain(s, t), LinearSDE.control_gain(sde, s, t), rtol=1e-5)


def test_the_exponential_integrator_carries_the_reference_exactly():
    """A fresh model's control is 0 (zeroed output layer): the forward SDE is the reference. At 3
    steps the exponential integrator ends at the exact terminal variance a^2 v0 + v; Euler-
    Maruyama does not."""
    sde, gen = VPSDE(), torch.Generator().manual_seed(0)
    x0 = 2.0 * torch.randn(200_000, 1, generator=gen)
    zero, one = torch.zeros(()), torch.ones(())
    exact = float(sde.a(zero, one) ** 2 * 4.0 + sde.v(zero, one))
    for integrator, close in (("exponential", True), ("em", False)):
        model = ASBM((1,), sde, GaussianEnergy(), hidden=8, integrator=integrator)
        x1 = model.simulate_forward(x0, torch.Generator().manual_seed(1), steps=3)
        assert (abs(x1.var().item() / exact - 1) < 0.01) == close, integrator
    with pytest.raises(ValueError, match="integrator"):
        ASBM((1,), sde, GaussianEnergy(), integrator="rk4")
