"""The tokenizer, the VAR transformer and the upscaler run where their inputs live (cpu, and
cuda when present) and give the CPU's numbers there."""

import torch

from icml26.varsr.tokenizer import MultiScaleRQ, TokenizerConfig
from icml26.varsr.upscale import upscale
from icml26.varsr.var import VARConfig, VARTransformer

TINY = TokenizerConfig(channels=16, latent=8, codebook=32, down=4, scales=(1, 2, 4, 8))


def _models():
    torch.manual_seed(0)
    tok = MultiScaleRQ(TINY)
    tok(torch.rand(4, 3, 32, 32))  # k-means initialisation
    var = VARTransformer(tok.eval(), VARConfig(d_model=32, n_layer=1, n_head=2)).eval()
    return tok, var


def test_models_run_on_the_device_and_match_the_cpu(device):
    tok, var = _models()
    x = torch.rand(2, 3, 32, 32)
    lr = torch.rand(2, 3, var.lr_side, var.lr_side)
    with torch.no_grad():
        want_rec = tok.decode(tok.encode(x))
        want_sr = var.generate(lr)
        tok_d, var_d = tok.to(device), var.to(device)
        got_rec = tok_d.decode(tok_d.encode(x.to(device)))
        got_sr = var_d.generate(lr.to(device))
    assert got_rec.device.type == got_sr.device.type == torch.device(device).type
    torch.testing.assert_close(got_rec.cpu(), want_rec, atol=1e-4, rtol=1e-4)
    # greedy decoding picks the same tokens unless two logits tie within float noise
    assert (got_sr.cpu() - want_sr).abs().mean() < 1e-3


def test_upscale_tiles_a_larger_image_on_the_device(device):
    _, var = _models()
    var = var.to(device)
    lr = torch.rand(1, 3, 2 * var.lr_side + 3, var.lr_side + 1, device=device)
    with torch.no_grad():
        sr = upscale(var, lr)
    assert sr.shape == (1, 3, 4 * lr.shape[2], 4 * lr.shape[3]) and sr.device == lr.device
    assert torch.isfinite(sr).all()
