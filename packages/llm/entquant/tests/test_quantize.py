from itertools import pairwise

import pytest
import torch

from icml26.entquant import coding
from icml26.entquant.quantize import (
    absmax_log_scales,
    fake_quantize,
    quantize_linear,
    regulariser,
)


def weights(rows=48, cols=200, seed=0):
    g = torch.Generator().manual_seed(seed)
    # Student-t: heavier tails than a Gaussian, like trained weights.
    return (torch.distributions.StudentT(5.0).sample((rows, cols)) * 0.02).contiguous(), g


def test_lambda_zero_is_absmax_fp8():
    w, _ = weights()
    qw = quantize_linear(w, 0.0)
    s = w.abs().amax(1) / 448
    expected = (w / s[:, None]).to(torch.float8_e4m3fn).float() * s[:, None]
    assert qw.iterations == 0
    torch.testing.assert_close(qw.scales, s, rtol=1e-6, atol=0)
    torch.testing.assert_close(qw.dequantize(), expected, rtol=1e-6, atol=1e-9)
    # every row's largest weight sits on the grid's maximum
    assert (qw.values().abs().amax(1) == 448).all()


def test_int8_lambda_zero_is_rounding():
    w, _ = weights(seed=1)
    qw = quantize_linear(w, 0.0, qtype="int8")
    s = w.abs().amax(1) / 127
    torch.testing.assert_close(qw.values(), torch.round(w / s[:, None]))
    assert qw.codes.min() >= 1 and qw.codes.max() <= 255  # -127..127 + 128


@pytest.mark.parametrize("qtype", ["fp8_e4m3", "int8"])
def test_entropy_falls_as_lambda_grows(qtype):
    w, _ = weights(64, 256, seed=2)
    lams = [0.0, 3.9, 14.5, 58.0] if qtype == "fp8_e4m3" else [0.0, 0.5, 2.0, 8.0]
    h = [coding.entropy_bits(quantize_linear(w, lam, qtype=qtype).codes) for lam in lams]
    errors = [
        float((quantize_linear(w, lam, qtype=qtype).dequantize() - w).abs().sum()) for lam in lams
    ]
    assert all(a > b for a, b in pairwise(h)), h
    assert all(a < b for a, b in pairwise(errors)), errors


def test_paper_lambdas_land_near_their_bit_rates():
    # The paper: lambda 3.9, 14.5, 58 give about 4, 3, 2 bits per parameter.
    w, _ = weights(128, 512, seed=3)
    for lam, bits in [(3.9, 4), (14.5, 3), (58.0, 2)]:
        h = coding.entropy_bits(quantize_linear(w, lam).codes)
        assert abs(h - bits) < 0.5, (lam, h)


def test_straight_through_gradient_reaches_the_scales():
    w, _ = weights(8, 32, seed=4)
    log_scale = absmax_log_scales(w, "fp8_e4m3").clone().requires_grad_(True)
    q = fake_quantize(w, log_scale, "fp8_e4m3")
    loss = (q * torch.exp2(log_scale)[:, None] - w).abs().sum() + regulariser(q, "fp8_e4m3")
    loss.backward()
    assert log_scale.grad is not None and torch.isfinite(log_scale.grad).all()
    assert (log_scale.grad != 0).all()


def test_negative_zero_is_stored_as_zero():
    w = torch.tensor([[1.0, -1e-30, 1e-30, 0.0, -0.0]])
    codes = quantize_linear(w, 0.0).codes
    assert (codes[0, 1:] == 0).all()


def test_bad_inputs_are_clear_errors():
    w, _ = weights(4, 8)
    with pytest.raises(ValueError, match="NaN or inf"):
        quantize_linear(torch.full((2, 2), float("nan")), 1.0)
    with pytest.raises(ValueError, match="2-D"):
        quantize_linear(torch.ones(5), 1.0)
    with pytest.raises(TypeError, match="floating point"):
        quantize_linear(torch.ones(2, 2, dtype=torch.int32), 1.0)
    with pytest.raises(ValueError, match="lam"):
        quantize_linear(w, -1.0)
    with pytest.raises(ValueError, match="qtype"):
        quantize_linear(w, 1.0, qtype="fp4")  # type: ignore[arg-type]


def test_learning_rate_follows_the_authors_presets():
    from icml26.entquant.quantize import default_lr

    assert [default_lr(lam) for lam in (0.0, 3.9, 14.5, 57.9, 58.0, 100.0)] == [
        1.0, 1.0, 1.0, 1.0, 0.25, 0.25
    ]  # fmt: skip
    w = torch.randn(8, 32)
    same = quantize_linear(w, 58.0, max_iter=10), quantize_linear(w, 58.0, max_iter=10, lr=0.25)
    assert torch.equal(same[0].codes, same[1].codes)
    with pytest.raises(ValueError, match="lr"):
        quantize_linear(w, 1.0, lr=0.0)
