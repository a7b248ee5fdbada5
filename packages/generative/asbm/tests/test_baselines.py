"""SB-CFM and reflow, and their formulas against torchcfm (an independent implementation)."""

import numpy as np
import pytest
import torch
from torchcfm.conditional_flow_matching import (
    ConditionalFlowMatcher,
    SchrodingerBridgeConditionalFlowMatcher,
)
from torchcfm.optimal_transport import OTPlanSampler

from icml26.asbm import GaussianEnergy
from icml26.asbm.baselines import (
    FlowMatching,
    Reflow,
    ot_pairing,
    sb_pairing,
    sb_path,
    score_matching,
)
from icml26.asbm.data import moons


def test_sb_path_and_target_match_torchcfm():
    g = torch.Generator().manual_seed(0)
    x0, x1, eps = (torch.randn(64, 3, generator=g, dtype=torch.float64) for _ in range(3))
    t = torch.rand(64, generator=g, dtype=torch.float64).clamp(0.01, 0.99)
    for sigma in (0.3, 1.0):
        ref = SchrodingerBridgeConditionalFlowMatcher(sigma=sigma)
        x_t, u = sb_path(x0, x1, t, eps, sigma)
        torch.testing.assert_close(x_t, ref.sample_xt(x0, x1, t, eps))
        # torchcfm orders the arithmetic differently (1 / (t (1 - t)) reaches 100 here)
        torch.testing.assert_close(u, ref.compute_conditional_flow(x0, x1, t, x_t), rtol=1e-5,
                                   atol=1e-5)  # fmt: skip
    cfm = ConditionalFlowMatcher(sigma=0.0)  # I-CFM: straight line, velocity x1 - x0
    torch.testing.assert_close(cfm.compute_conditional_flow(x0, x1, t, None), x1 - x0)


def test_sb_pairing_draws_from_torchcfms_entropic_plan():
    g = torch.Generator().manual_seed(1)
    x0, x1 = torch.randn(6, 2, generator=g), torch.randn(6, 2, generator=g)
    sigma = 0.7
    plan = OTPlanSampler(method="sinkhorn", reg=2 * sigma**2).get_map(x0, x1)
    counts = np.zeros((6, 6))
    for _ in range(400):
        i, j, exact = sb_pairing(x0, x1, sigma, g)
        assert not exact
        np.add.at(counts, (i.numpy(), j.numpy()), 1)
    freq = counts / counts.sum()
    assert np.abs(freq - plan / plan.sum()).max() < 0.02
    # costs that underflow the kernel: the plan's sigma -> 0 limit, the exact OT permutation
    i, j, exact = sb_pairing(x0 * 1e4, x1, 1e-4, g)
    assert exact and i.tolist() == list(range(6))
    assert j.tolist() == ot_pairing(x0 * 1e4, x1).tolist()


def test_sb_cfm_and_reflow_train_and_sample():
    data = moons(1000)
    torch.manual_seed(0)
    sb = FlowMatching((2,), GaussianEnergy(1.0), "sb", hidden=32, sigma=0.5)
    sb.fit(data, steps=30, batch_size=64, progress=False)
    assert sb.sample(16, 2).shape == (16, 2) and np.isfinite(sb.losses).all()
    rf = Reflow((2,), GaussianEnergy(1.0), hidden=32, n_pairs=256, teacher_steps=4)
    rf.fit(data, steps=40, batch_size=64, progress=False)
    assert rf.nfe["teacher"] == 256 * 4 and len(rf.losses) == 40
    assert rf.nfe["training"] == 3 * 40 * 64  # forward + backward per sample and step
    with pytest.raises(ValueError, match="first_steps"):
        rf.fit(data, steps=10, first_steps=10, progress=False)
    with pytest.raises(ValueError, match="coupling"):
        FlowMatching((2,), GaussianEnergy(1.0), "rectified")
    with pytest.raises(ValueError, match="sigma must be a finite number > 0"):
        FlowMatching((2,), GaussianEnergy(1.0), "sb", sigma=0.0)


def test_reflow_straightens_the_paths_it_is_trained_on():
    """After reflow the 1-step Euler sample lands much closer to the 32-step ODE's endpoint (the
    teacher's) than the first flow's 1-step sample does: the re-fitted paths are straighter."""
    data = moons(2000, seed=1)
    torch.manual_seed(0)
    first = FlowMatching((2,), GaussianEnergy(1.0), hidden=64)
    first.fit(data, steps=600, batch_size=256, progress=False)
    torch.manual_seed(0)
    rf = Reflow((2,), GaussianEnergy(1.0), hidden=64, n_pairs=4096, teacher_steps=32)
    rf.fit(data, steps=1200, batch_size=256, first_steps=600, progress=False)
    x1 = GaussianEnergy(1.0).sample(512, (2,), torch.Generator().manual_seed(3))

    def gap(fm):
        return float((fm.sample(x1=x1, steps=1) - fm.sample(x1=x1, steps=32)).norm(dim=1).mean())

    assert gap(rf) < 0.5 * gap(first)


def test_the_moving_average_is_what_flow_matching_samples_with():
    torch.manual_seed(0)
    data = torch.randn(256, 2) + 2.0
    fm = FlowMatching((2,), GaussianEnergy(), hidden=16, ema=0.9)
    fm.fit(data, steps=50, batch_size=32, progress=False)
    x1 = torch.randn(8, 2)
    averaged = fm.sample(x1=x1, steps=2)
    live = FlowMatching((2,), GaussianEnergy(), net=fm.net)  # the trained network, no average
    assert not torch.equal(averaged, live.sample(x1=x1, steps=2))
    ref = torch.nn.utils.parameters_to_vector
    assert not torch.equal(ref(fm.net_ema.parameters()), ref(fm.net.parameters()))
    with pytest.raises(ValueError, match="ema"):
        FlowMatching((2,), GaussianEnergy(), ema=1.5)


def test_score_matching_baseline_learns_gaussian_data():
    # The paper's baseline (memoryless VP score matching) on N(1.5, 0.5^2): its Euler-Maruyama
    # samples carry the data's moments.
    torch.manual_seed(0)
    data = 1.5 + 0.5 * torch.randn(4000, 1, generator=torch.Generator().manual_seed(0))
    model = score_matching((1,), GaussianEnergy(), hidden=64)
    assert float(model.sde.a(torch.zeros(()), torch.ones(()))) < 0.01  # memoryless
    model.fit_backward(data, steps=1500, buffer_size=4096, coupling="independent",
                       progress=False)  # fmt: skip
    x = model.sample(20000, 100, generator=torch.Generator().manual_seed(1))
    assert x.mean().item() == pytest.approx(1.5, abs=0.05)
    assert x.std().item() == pytest.approx(0.5, rel=0.08)
    # the memoryless reference's own forward control is 0: its probability-flow ODE runs
    # without stage 1, as the official sampler does for score matching
    x = model.sample(20000, 25, method="heun")
    assert x.mean().item() == pytest.approx(1.5, abs=0.05)
    assert x.std().item() == pytest.approx(0.5, rel=0.08)
