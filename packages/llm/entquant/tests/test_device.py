"""The public API on every device: outputs on the inputs' (or the asked) device, equal to CPU."""

import copy

import torch
import torch.nn.functional as F
from torch import nn

from icml26.entquant import (
    EntQuantLinear,
    coding,
    load_compressed,
    quantize,
    quantize_linear,
    save_compressed,
)
from icml26.entquant.baselines import BASELINES
from icml26.entquant.models import lm_quality, next_token_logprobs, tiny_gpt, train_tiny_gpt


def _weights():
    g = torch.Generator().manual_seed(0)
    return torch.randn(16, 128, generator=g) * 0.02


def test_scale_search_and_codes_stay_on_the_device(device):
    w = _weights()
    want = quantize_linear(w, 0.0)  # absmax: no optimiser, the same on every device
    got = quantize_linear(w.to(device), 0.0)
    assert got.codes.device.type == got.scales.device.type == torch.device(device).type
    torch.testing.assert_close(got.scales.cpu(), want.scales)
    # CUDA's exp2 may differ from the CPU's in the last bit: at most a code on a rounding boundary
    assert (got.codes.cpu() != want.codes).sum() <= 2
    searched = quantize_linear(w.to(device), 14.5, max_iter=10)
    assert searched.dequantize().device.type == torch.device(device).type
    enc = coding.encode(searched.codes)
    assert torch.equal(coding.decode(enc, device).cpu(), searched.codes.cpu())


def test_entquant_linear_runs_where_its_input_is(device):
    torch.manual_seed(0)
    lin = nn.Linear(64, 24).to(device)
    layer = EntQuantLinear.from_linear(lin, 14.5, max_iter=10).to(device)
    x = torch.randn(3, 64, device=device)
    out = layer(x)
    assert out.device == x.device
    torch.testing.assert_close(out, F.linear(x, layer.quantized().dequantize(), lin.bias))


def test_baselines_follow_their_input(device):
    w = _weights()
    for name in ("RTN-3", "HQQ-2"):
        res = BASELINES[name](w.to(device))
        assert res.w_hat.device.type == torch.device(device).type and res.w_hat.shape == w.shape
    torch.testing.assert_close(
        BASELINES["RTN-3"](w.to(device)).w_hat.cpu(), BASELINES["RTN-3"](w).w_hat
    )


def test_model_round_trip_on_the_device(device, tmp_path):
    model = tiny_gpt(seed=0, dim=32, layers=1, heads=2, device=device)
    assert next(model.parameters()).device.type == torch.device(device).type
    tokens = torch.randint(0, 256, (400,), generator=torch.Generator().manual_seed(0))
    train_tiny_gpt(model, tokens, 1, batch=2, seq_len=16, progress=False)
    windows = tokens[:64].reshape(4, 16)
    ref = next_token_logprobs(model, windows)
    assert ref.device == next(model.parameters()).device
    q = copy.deepcopy(model)
    quantize(q, 14.5, max_iter=5, progress=False)
    save_compressed(q, tmp_path)
    loaded = load_compressed(tmp_path, decode="cached", device=device)
    assert {p.device.type for p in loaded.state_dict().values()} == {torch.device(device).type}
    lp = next_token_logprobs(loaded, windows)
    torch.testing.assert_close(lp, next_token_logprobs(q, windows))
    assert 0 < lm_quality(lp, ref, windows).kl < 1
    skeleton = tiny_gpt(seed=1, dim=32, layers=1, heads=2, device=device)
    into = load_compressed(tmp_path, model=skeleton)
    assert {p.device.type for p in into.state_dict().values()} == {torch.device(device).type}
