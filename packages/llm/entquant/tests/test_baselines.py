from itertools import pairwise

import pytest
import torch

from icml26.entquant.baselines import BASELINES, gptq, gptq_hessian, gptq_layers, hqq, rtn


def test_rtn_error_falls_with_bits_and_counts_scales_and_zeros():
    w = torch.randn(16, 128)
    errs = [float((rtn(w, b).w_hat - w).norm()) for b in (2, 3, 4, 8)]
    assert all(a > b for a, b in pairwise(errs))
    assert rtn(w, 3).bits_per_param == 3 + 32 / 64
    assert rtn(w, 4, group_size=128).bits_per_param == 4.25
    # a group's max is reproduced within one grid step (the zero point is an integer code)
    g, ref = rtn(w, 8).w_hat.reshape(-1, 64), w.reshape(-1, 64)
    step = (ref.amax(1) - ref.amin(1)) / 255
    assert ((g.amax(1) - ref.amax(1)).abs() <= step * 1.01).all()


def test_hqq_beats_or_matches_rtn_at_three_bits():
    w = torch.distributions.StudentT(4.0).sample((32, 256))
    assert float((hqq(w, 3).w_hat - w).abs().mean()) <= 1.02 * float(
        (rtn(w, 3).w_hat - w).abs().mean()
    )


def test_every_baseline_returns_the_shape_and_a_rate():
    w = torch.randn(8, 128)
    for name in ("RTN-2", "HQQ-2"):
        res = BASELINES[name](w)
        assert res.w_hat.shape == w.shape and 2 < res.bits_per_param < 3


def test_groups_must_divide_the_matrix():
    with pytest.raises(ValueError, match="groups of 64"):
        rtn(torch.randn(3, 7), 4)


def test_gptq_without_input_correlations_is_rtn():
    w = torch.randn(12, 128)
    res = gptq(w, torch.eye(128), 3)
    torch.testing.assert_close(res.w_hat, rtn(w, 3).w_hat, rtol=0, atol=0)
    assert res.bits_per_param == rtn(w, 3).bits_per_param


@pytest.mark.parametrize("bits", [2, 3, 4])
def test_gptq_lowers_the_layer_output_error_on_correlated_inputs(bits):
    g = torch.Generator().manual_seed(0)
    w = torch.randn(32, 256, generator=g)
    mix = torch.randn(256, 256, generator=g) / 16
    x = torch.randn(2048, 256, generator=g) @ (torch.eye(256) + mix)  # correlated inputs
    out = {}
    for name, w_hat in (
        ("rtn", rtn(w, bits).w_hat),
        ("gptq", gptq(w, gptq_hessian(x), bits).w_hat),
    ):
        out[name] = float(((w_hat - w) @ x.T).square().mean())
    assert out["gptq"] < 0.8 * out["rtn"], out


def test_gptq_checks_its_inputs():
    w = torch.randn(4, 128)
    with pytest.raises(ValueError, match=r"hessian must be \(128, 128\)"):
        gptq(w, torch.eye(64), 3)
    with pytest.raises(ValueError, match="NaN or inf"):
        gptq(w, torch.full((128, 128), float("nan")), 3)
    with pytest.raises(ValueError, match="must divide"):
        gptq(w, torch.eye(128), 3, group_size=48)
    with pytest.raises(ValueError, match="at least one finite sample"):
        gptq_hessian(torch.zeros(0, 8))
    # an input that never fires gets zero weight
    h = torch.eye(128)
    h[5, 5] = 0
    assert (gptq(w, h, 4).w_hat[:, 5] == 0).all()


def test_gptq_layers_quantises_block_after_block_with_calibration_inputs():
    import copy

    from torch import nn

    g = torch.Generator().manual_seed(1)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(
                nn.ModuleDict({"fc": nn.Linear(128, 128), "out": nn.Linear(128, 128)})
                for _ in range(2)
            )

        def forward(self, x):
            for b in self.blocks:
                x = x + b["out"](torch.tanh(b["fc"](x)))
            return x

    torch.manual_seed(0)
    net = Net()
    mix = torch.eye(128) + torch.randn(128, 128, generator=g) / 12
    calib = torch.randn(512, 128, generator=g) @ mix
    test = torch.randn(512, 128, generator=g) @ mix
    names = [f"blocks.{i}.{k}" for i in range(2) for k in ("fc", "out")]
    q = copy.deepcopy(net)
    bits = gptq_layers(q, names, lambda m: m(calib), 3)
    assert bits == 3 + 32 / 64
    r = copy.deepcopy(net)
    with torch.no_grad():
        for n in names:
            r.get_submodule(n).weight.copy_(rtn(r.get_submodule(n).weight, 3).w_hat)
        ref = net(test)
        err_gptq = float((q(test) - ref).square().mean())
        err_rtn = float((r(test) - ref).square().mean())
    assert err_gptq < 0.8 * err_rtn
    with pytest.raises(ValueError, match="calibration never ran"):
        gptq_layers(copy.deepcopy(net), names, lambda m: None, 3)
