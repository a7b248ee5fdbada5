import pytest
import torch

from icml26.asbm import (
    ASBM,
    MLP,
    VPSDE,
    BrownianSDE,
    FlowMatching,
    GaussianEnergy,
    TinyUNet,
    adjoint_matching_loss,
    mmd,
    ot_pairing,
    sliced_w2,
    straightness,
)
from icml26.testing import assert_close, run_distributed


class Constant(torch.nn.Module):
    def __init__(self, value):
        super().__init__()
        self.value = torch.nn.Parameter(torch.tensor(value))

    def forward(self, t, x):
        return self.value.expand_as(x)


def test_adjoint_matching_target_sign_and_scale():
    # Brownian reference, h = 0: the target control is -grad E(x1) = -x1 / s^2 at every t, so a
    # u-net that outputs exactly that has zero loss and any other constant pays the squared gap.
    sde, energy = BrownianSDE(0.5), GaussianEnergy(2.0)
    x0 = torch.zeros(4, 1)
    x1 = torch.full((4, 1), 3.0)
    t = torch.rand(4)
    right = adjoint_matching_loss(Constant(-3.0 / 4), None, sde, energy, x0, x1, t)
    wrong = adjoint_matching_loss(Constant(+3.0 / 4), None, sde, energy, x0, x1, t)
    assert right.item() == pytest.approx(0.0, abs=1e-12)
    assert wrong.item() == pytest.approx((1.5) ** 2)


def test_gaussian_to_gaussian_drift_approaches_the_closed_form_bridge():
    # Source N(m, 0.1^2), target N(0, 1), Brownian sigma = 1: the SB forward drift is affine; at
    # t = 0 it moves the mean towards 0 with velocity E[x1 - x0] = -m (mean of the coupling).
    torch.manual_seed(0)
    m = 2.0
    data = m + 0.1 * torch.randn(4000, 1)
    model = ASBM((1,), BrownianSDE(1.0), GaussianEnergy(1.0), sim_steps=20, hidden=64)
    model.fit_forward(data, rounds=2, adjoint_steps=300, corrector_steps=200, progress=False)
    x1 = model.simulate_forward(data[:2000])
    assert abs(x1.mean().item()) < 0.25
    assert x1.std().item() == pytest.approx(1.0, abs=0.2)
    drift = model.u_net(torch.zeros(1), torch.tensor([[m]])).item()  # g = 1: drift = u
    assert drift == pytest.approx(-m, abs=0.5)


def _two_blobs():
    g = torch.Generator().manual_seed(0)
    return torch.cat(
        [
            torch.randn(1500, 2, generator=g) * 0.2 + 1.5,
            torch.randn(1500, 2, generator=g) * 0.2 - 1.5,
        ]
    )


@pytest.fixture(scope="module")
def trained():
    """The posterior-mean stage 2 on the Brownian reference."""
    torch.manual_seed(0)
    data = _two_blobs()
    model = ASBM((2,), BrownianSDE(0.5), GaussianEnergy(1.0), sim_steps=20, hidden=64,
                 stage2="posterior", ema=None)  # fmt: skip
    model.fit_forward(data, rounds=1, adjoint_steps=300, corrector_steps=150, progress=False)
    model.fit_backward(data, steps=600, progress=False)
    return model, data


@pytest.fixture(scope="module")
def trained_score():
    """The default: VP reference, score-parameterised stage 2 with its moving average."""
    torch.manual_seed(0)
    data = _two_blobs()
    model = ASBM((2,), VPSDE(), GaussianEnergy(1.0), sim_steps=20, hidden=64)
    model.fit_forward(data, rounds=2, adjoint_steps=300, corrector_steps=150, progress=False,
                      diagnostics=0)  # fmt: skip
    model.fit_backward(data, steps=600, progress=False)
    return model, data


def test_ode_sampling_is_deterministic_given_the_noise(trained, trained_score):
    model, _ = trained
    x1 = torch.randn(50, 2)
    assert torch.equal(model.sample(x1=x1, steps=4), model.sample(x1=x1, steps=4))
    a = model.sample(50, 4, method="sde", generator=torch.Generator().manual_seed(1))
    b = model.sample(50, 4, method="sde", generator=torch.Generator().manual_seed(2))
    assert not torch.equal(a, b)
    model, _ = trained_score
    heun = [model.sample(x1=x1, steps=4, method="heun") for _ in range(2)]
    assert torch.equal(*heun)
    a = model.sample(x1=x1, steps=4, generator=torch.Generator().manual_seed(1))
    b = model.sample(x1=x1, steps=4, generator=torch.Generator().manual_seed(2))
    assert not torch.equal(a, b)  # Euler-Maruyama injects noise


@pytest.mark.parametrize("which", ["posterior", "score"])
def test_samples_land_near_the_data(trained, trained_score, which):
    model, data = trained if which == "posterior" else trained_score
    steps = 4 if which == "posterior" else 20
    x = model.sample(1000, steps)
    noise = torch.randn(1000, 2)
    ref = data[torch.randperm(len(data))[:1000]]
    assert mmd(x, ref) < 0.5 * mmd(noise, ref)


@pytest.mark.parametrize("which", ["posterior", "score"])
def test_checkpoint_round_trip_reproduces_samples(trained, trained_score, which, tmp_path):
    model, _ = trained if which == "posterior" else trained_score
    model.save_pretrained(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "model.safetensors"]
    again = ASBM.from_pretrained(tmp_path)
    assert (again.stage2, again.ema) == (model.stage2, model.ema)
    x1 = torch.randn(20, 2)
    method = "ode" if which == "posterior" else "heun"
    assert torch.equal(model.sample(x1=x1, steps=3, method=method),
                       again.sample(x1=x1, steps=3, method=method))  # fmt: skip


def test_corrupted_checkpoint_is_a_clear_error(trained, tmp_path):
    model, _ = trained
    model.save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(Exception, match=r"(?i)corrupt|header|safetensor|invalid"):
        ASBM.from_pretrained(tmp_path)
    with pytest.raises(ValueError, match="not an ASBM checkpoint"):
        ASBM.from_pretrained(tmp_path / "missing")


def test_bad_inputs_are_clear_errors(trained):
    model, data = trained
    bad = data.clone()
    bad[3, 1] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        model.fit_backward(bad, steps=1, progress=False)
    with pytest.raises(ValueError, match="shape"):
        model.fit_backward(torch.randn(10, 3), steps=1, progress=False)
    with pytest.raises(ValueError, match="steps"):
        model.sample(10, 0)
    with pytest.raises(ValueError, match=r"method.*stage2='posterior'"):
        model.sample(10, 2, method="heun")
    with pytest.raises(ValueError, match="needs stage2='score'"):
        model.score(torch.zeros(2), data[:2])
    with pytest.raises(ValueError, match="steps"):
        FlowMatching((2,), GaussianEnergy()).sample(10, 0)


def test_ot_pairing_beats_random_pairing():
    g = torch.Generator().manual_seed(0)
    x0, x1 = torch.randn(64, 2, generator=g), torch.randn(64, 2, generator=g)
    perm = ot_pairing(x0, x1)
    assert sorted(perm.tolist()) == list(range(64))
    assert (x0 - x1[perm]).pow(2).sum() < (x0 - x1).pow(2).sum()


def test_metrics():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(500, 2, generator=g), torch.randn(500, 2, generator=g)
    assert abs(mmd(a, b)) < 0.02 and mmd(a + 3, b) > 0.5
    assert sliced_w2(a, b) < 0.2 and sliced_w2(a + 3, b) > 1.0
    line = [torch.zeros(5, 2) + k for k in range(4)]
    assert straightness(line) == pytest.approx(1.0)
    zigzag = [torch.zeros(5, 2), torch.ones(5, 2), torch.zeros(5, 2) + torch.tensor([2.0, 0.0])]
    assert straightness(zigzag) > 1.4


def test_unet_shapes():
    net = TinyUNet(channels=1, width=16, out_mult=2)
    out = net(torch.rand(3), torch.randn(3, 1, 8, 8))
    assert out.shape == (3, 2, 8, 8)
    model = ASBM(
        (1, 8, 8),
        BrownianSDE(0.5),
        GaussianEnergy(),
        u_net=TinyUNet(width=16),
        bridge_net=TinyUNet(width=16, out_mult=2),
        h_net=MLP((1, 8, 8), 32, time=False),
        stage2="posterior",
    )
    assert model.sample(2, 2).shape == (2, 1, 8, 8)
    score = ASBM((1, 8, 8), VPSDE(), GaussianEnergy(), u_net=TinyUNet(width=16),
                 bridge_net=TinyUNet(width=16), h_net=MLP((1, 8, 8), 32, time=False))  # fmt: skip
    score.stage1_fitted = True  # shapes only: the untrained u_net stands in for stage 1's
    for method in ("em", "heun"):
        assert score.sample(2, 2, method=method).shape == (2, 1, 8, 8)


def test_unet_all_four_networks_train_and_distill():
    """The TinyUNet as u, h (time-free), bridge and generator (time-free), as the demo runs it."""
    model = ASBM((1, 8, 8), BrownianSDE(0.5), GaussianEnergy(), sim_steps=2,
                 u_net=TinyUNet(width=8), h_net=TinyUNet(width=8),
                 bridge_net=TinyUNet(width=8), generator=TinyUNet(width=8))  # fmt: skip
    data = torch.randn(16, 1, 8, 8)
    model.fit_forward(data, 2, 2, 2, batch_size=4, buffer_size=4, corrector_buffer=4,
                      progress=False, diagnostics=0, check_size=0)  # fmt: skip
    model.distill(n_pairs=4, teacher_steps=2, steps=2, batch_size=4, progress=False)
    assert model.sample_distilled(3).shape == (3, 1, 8, 8)


def test_compute_is_counted_in_network_evaluations():
    """Simulation (every buffer), each gradient step at 3 per sample, h's forward pass inside
    adjoint matching once h is used, the distillation teacher: the counts equal-compute runs use."""
    model = ASBM((2,), BrownianSDE(0.5), GaussianEnergy(), sim_steps=5, hidden=16)
    data = torch.randn(64, 2)
    model.fit_forward(data, rounds=2, adjoint_steps=6, corrector_steps=4, batch_size=8,
                      buffer_size=32, corrector_buffer=48, resimulate_every=4,
                      progress=False, diagnostics=16)  # fmt: skip
    # refreshes: adjoint 2 per round (steps 0 and 4) x 2 rounds of 32; corrector 1 of 48
    assert model.nfe["simulation"] == 5 * (4 * 32 + 48)  # diagnostics are not counted
    assert model.nfe["training"] == 3 * 8 * 6 + 4 * 8 * 6 + 3 * 8 * 4
    model.fit_backward(data, steps=3, batch_size=8, buffer_size=16, progress=False)
    assert model.nfe["simulation"] == 5 * (4 * 32 + 48 + 16)
    model.distill(n_pairs=20, teacher_steps=3, steps=2, batch_size=8, progress=False)
    # the teacher is Heun on the probability-flow ODE: score and control at both ends of a
    # step, at one end on the last
    assert model.nfe["teacher"] == 20 * (4 * 3 - 2) == 20 * model.sampler_calls(3, "heun")
    assert model.nfe["training"] == 3 * 8 * 6 + 4 * 8 * 6 + 3 * 8 * 4 + 3 * 8 * 3 + 3 * 8 * 2
    assert model.log.diagnostics_seconds > 0


def _ddp_fit(steps: int):
    torch.manual_seed(0)
    data = torch.randn(256, 2)
    fm = FlowMatching((2,), GaussianEnergy(), "independent", hidden=16)
    fm.fit(data, steps=steps, batch_size=32, progress=False)
    model = ASBM((2,), BrownianSDE(0.5), GaussianEnergy(), sim_steps=5, hidden=16)
    model.fit_backward(data, steps=steps, batch_size=32, buffer_size=64, progress=False)
    return [p.detach().clone() for p in [*fm.net.parameters(), *model.bridge_net.parameters()]]


@pytest.mark.distributed
def test_training_runs_under_two_gloo_ranks_with_identical_weights():
    ranks = run_distributed(_ddp_fit, 5, world_size=2)
    for a, b in zip(ranks[0], ranks[1], strict=True):
        assert_close(a, b, atol=0, rtol=0)
