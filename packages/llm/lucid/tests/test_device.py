"""The public API on every device: outputs on the inputs' (or the asked) device, equal to CPU."""

import torch

from icml26.lucid import LucidAttention, LucidCache, TinyLM, TinyLMConfig, lucid_append
from icml26.lucid.tasks import correlated_keys_probe, mqar_batch
from icml26.lucid.train import train_char_lm, train_mqar
from icml26.testing import assert_close


# float32 for the layer and the model: on CUDA their attention is the Triton kernel, which
# computes in fp32 (and refuses fp64)
def test_attention_layer_with_and_without_cache(device):
    torch.manual_seed(0)
    layer = LucidAttention(32, num_heads=2, rope_base=100.0)
    x = torch.randn(1, 7, 32)
    want = layer(x)
    layer, x = layer.to(device), x.to(device)
    full = layer(x)
    cache = LucidCache()
    steps = torch.cat(
        [layer(x[:, :4], cache)] + [layer(x[:, t : t + 1], cache) for t in (4, 5, 6)], 1
    )
    assert full.device.type == steps.device.type == cache.k.device.type == torch.device(device).type
    assert_close(full.cpu(), want, atol=1e-4, rtol=1e-4)
    assert_close(steps.cpu(), want, atol=1e-4, rtol=1e-4)


def test_append_follows_its_inputs(device):
    g = torch.Generator().manual_seed(0)
    k, v = torch.randn(2, 1, 2, 9, 4, generator=g, dtype=torch.float64)
    want = lucid_append(k[:, :, :5], v[:, :, :5], k[:, :, 5:], v[:, :, 5:])
    k, v = k.to(device), v.to(device)
    got = lucid_append(k[:, :, :5], v[:, :, :5], k[:, :, 5:], v[:, :, 5:])
    assert got.device.type == torch.device(device).type
    assert_close(got.cpu(), want, atol=1e-10, rtol=1e-10)


def test_tiny_lm_on_device(device):
    for rope_base in (None, 100.0):
        torch.manual_seed(0)
        cfg = TinyLMConfig(vocab_size=20, max_len=8, dim=32, heads=2, rope_base=rope_base)
        model = TinyLM(cfg)
        x = torch.randint(0, 20, (2, 8))
        want = model(x)
        got = model.to(device)(x.to(device))
        assert got.device.type == torch.device(device).type
        assert_close(got.cpu(), want, atol=1e-4, rtol=1e-4)


def test_task_data_on_the_asked_device(device):
    x, y = mqar_batch(4, 12, 2, 9, torch.Generator().manual_seed(0), device)
    x0, y0 = mqar_batch(4, 12, 2, 9, torch.Generator().manual_seed(0))
    assert x.device.type == y.device.type == torch.device(device).type
    assert torch.equal(x.cpu(), x0) and torch.equal(y.cpu(), y0)
    got = correlated_keys_probe([1, 3], trials=2, seed=0, device=device)
    want = correlated_keys_probe([1, 3], trials=2, seed=0)
    for name in want:
        assert_close(torch.tensor(got[name]), torch.tensor(want[name]), atol=1e-9, rtol=1e-9)


def test_training_runs_on_the_asked_device(device):
    run = train_mqar(
        "lucid", 12, 2, 2, seed=0, vocab=9, dim=32, batch=4, eval_every=2, device=device
    )
    assert run.device.startswith(torch.device(device).type) and len(run.curve) == 1
    lm = train_char_lm("lucid", 1, seed=0, seq_len=16, dim=32, batch=2, device=device)
    assert all(torch.isfinite(torch.tensor(v)) for v in lm.values())
