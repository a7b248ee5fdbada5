"""The public API runs where its inputs live: `device` is cpu, and cuda when present."""

import copy

import torch

from icml26.asbm import (
    ASBM,
    VPSDE,
    BrownianSDE,
    FlowMatching,
    GaussianEnergy,
    adjoint_matching_loss,
    bridge_matching_loss,
    corrector_matching_loss,
    frechet_distance,
    mmd,
    ot_pairing,
    sliced_w2,
    straightness,
)
from icml26.asbm.data import TOYS, digits
from icml26.asbm.metrics import train_feature_net
from icml26.asbm.nets import MLP
from icml26.testing import assert_close


def _on(device: str, *tensors: torch.Tensor) -> None:
    for x in tensors:
        assert x.device.type == torch.device(device).type


def test_references_and_losses_follow_the_device(device):
    g = torch.Generator().manual_seed(0)
    x0, x1, noise = (torch.randn(16, 2, generator=g) for _ in range(3))
    t = torch.rand(16, generator=g)
    for sde in (BrownianSDE(0.7), VPSDE(0.1, 2.0)):
        ref = sde.bridge_sample(x0, x1, t, noise)
        got = sde.bridge_sample(x0.to(device), x1.to(device), t.to(device), noise.to(device))
        _on(device, got, *sde.bridge_coefficients(t.to(device)))
        assert_close(got.cpu(), ref)
        assert_close(
            sde.grad_log_transition(x1.to(device), x0.to(device)).cpu(),
            sde.grad_log_transition(x1, x0),
        )
    torch.manual_seed(0)
    u, h, b = MLP((2,), 16), MLP((2,), 16, time=False), MLP((2,), 16, out_mult=2)
    sde, energy = BrownianSDE(0.5), GaussianEnergy()
    ref = corrector_matching_loss(h, sde, x0, x1)  # deterministic; the other two draw x_t
    u, h, b = (copy.deepcopy(m).to(device) for m in (u, h, b))
    x0, x1, t = (x.to(device) for x in (x0, x1, t))
    got = corrector_matching_loss(h, sde, x0, x1)
    am, bm = (
        adjoint_matching_loss(u, h, sde, energy, x0, x1, t),
        bridge_matching_loss(b, sde, x0, x1, t),
    )
    _on(device, got, am, bm)
    assert torch.isfinite(am) and torch.isfinite(bm)
    assert_close(got.cpu(), ref, atol=1e-5, rtol=1e-5)


def test_asbm_trains_samples_and_reloads_on_the_device(device, tmp_path):
    torch.manual_seed(0)
    data = torch.randn(64, 2)  # left on the CPU: fitting moves it to the networks
    model = ASBM((2,), BrownianSDE(0.5), GaussianEnergy(), sim_steps=3, hidden=16).to(device)
    model.fit_forward(data, 1, 3, 3, batch_size=16, buffer_size=32, progress=False)
    model.fit_backward(data, 3, batch_size=16, buffer_size=32, progress=False)
    model.distill(n_pairs=32, teacher_steps=2, steps=2, batch_size=16, progress=False)
    g = torch.Generator().manual_seed(1)
    x, traj = model.sample(8, 3, generator=g, return_trajectory=True)
    _on(device, x, *traj, model.sample(8, 3, method="heun", generator=g))
    _on(device, model.sample_distilled(8, g), model.simulate_forward(data[:8].to(device), g))
    assert torch.isfinite(x).all()
    # The probability-flow sampler is deterministic given x1: the same weights give the CPU's
    # samples.
    x1 = torch.randn(8, 2)
    cpu = copy.deepcopy(model).to("cpu")
    assert_close(
        model.sample(x1=x1.to(device), steps=3, method="heun").cpu(),
        cpu.sample(x1=x1, steps=3, method="heun"),
        atol=1e-4,
        rtol=1e-4,
    )
    model.save_pretrained(tmp_path)
    again = ASBM.from_pretrained(tmp_path, device=device)
    assert again.device.type == torch.device(device).type
    assert_close(again.sample(x1=x1.to(device), steps=3, method="heun"),
                 model.sample(x1=x1.to(device), steps=3, method="heun"))  # fmt: skip


def test_flow_matching_baselines_on_the_device(device):
    torch.manual_seed(0)
    data = torch.randn(64, 2)
    for coupling in ("independent", "ot"):
        fm = FlowMatching((2,), GaussianEnergy(), coupling, hidden=16).to(device)
        fm.fit(data, steps=2, batch_size=16, progress=False)
        x, traj = fm.sample(
            8, 2, generator=torch.Generator().manual_seed(0), return_trajectory=True
        )
        _on(device, x, *traj)
    g = torch.Generator().manual_seed(0)
    x0, x1 = torch.randn(32, 2, generator=g), torch.randn(32, 2, generator=g)
    perm = ot_pairing(x0.to(device), x1.to(device))
    _on(device, perm)
    assert torch.equal(perm.cpu(), ot_pairing(x0, x1))


def test_metrics_and_data_on_the_device(device):
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(200, 2, generator=g), torch.randn(200, 2, generator=g) + 0.5
    da, db = a.to(device), b.to(device)
    assert abs(mmd(da, db) - mmd(a, b)) < 1e-8
    assert abs(sliced_w2(da, db) - sliced_w2(a, b)) < 1e-8
    line = [da * k for k in range(3)]
    assert abs(straightness(line) - 1.0) < 1e-5
    for name, make in TOYS.items():
        x = make(50, seed=1, device=device)
        _on(device, x)
        assert torch.equal(x.cpu(), make(50, seed=1)), name
    x, y = digits(device)
    _on(device, x, y)
    net = train_feature_net(x[:256], y[:256], epochs=1)
    _on(device, *net.parameters())
    assert frechet_distance(net, x[:100], x[100:200]) >= 0.0
