import os
import subprocess
import sys

import pytest
import torch

from icml26.lucid import (
    LucidAttention,
    LucidCache,
    TinyLM,
    TinyLMConfig,
    apply_rope,
    lucid_append,
    lucid_attention_reference,
    lucid_solve_reference,
)
from icml26.testing import assert_close, run_distributed


def test_append_equals_the_full_solve_in_chunks():
    g = torch.Generator().manual_seed(0)
    k = torch.randn(2, 2, 23, 8, generator=g, dtype=torch.float64)
    v = torch.randn(2, 2, 23, 8, generator=g, dtype=torch.float64)
    full = lucid_solve_reference(k, v)
    parts, done = [], 0
    for n in (5, 1, 9, 1, 7):
        vp_cache = torch.cat(parts, 2) if parts else v[:, :, :0]
        parts.append(
            lucid_append(
                k[:, :, :done], vp_cache, k[:, :, done : done + n], v[:, :, done : done + n]
            )
        )
        done += n
    assert_close(torch.cat(parts, 2), full, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("rope_base", [None, 100.0])
@pytest.mark.parametrize("kind", ["lucid", "softmax"])
def test_module_with_cache_matches_the_full_forward(kind, rope_base):
    torch.manual_seed(0)
    layer = LucidAttention(32, num_heads=4, num_kv_heads=2, kind=kind, rope_base=rope_base)
    layer = layer.double()
    x = torch.randn(2, 13, 32, dtype=torch.float64)
    full = layer(x)
    cache = LucidCache()
    steps = [layer(x[:, :6], cache)] + [layer(x[:, t : t + 1], cache) for t in range(6, 13)]
    assert cache.length == 13
    assert_close(torch.cat(steps, 1), full, atol=1e-10, rtol=1e-10)


def test_rotary_scores_depend_on_relative_position_only():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 1, 1, 1, 16, generator=g, dtype=torch.float64)
    x_q, x_k = q.expand(1, 1, 12, 16), k.expand(1, 1, 12, 16)  # the same vectors at 12 positions
    scores = apply_rope(x_q, 3, 50.0) @ apply_rope(x_k, 3, 50.0).transpose(-1, -2)
    for offset in (0, 1, 5):  # constant along every diagonal m - n = offset
        diagonal = scores[0, 0].diagonal(-offset)
        assert_close(diagonal, diagonal[:1].expand_as(diagonal), atol=1e-12, rtol=1e-12)
    assert not torch.allclose(scores[0, 0, 5, 4], scores[0, 0, 5, 0])
    assert_close(apply_rope(x_q, 7, 50.0).norm(dim=-1), x_q.norm(dim=-1), atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match="even head dimension"):
        LucidAttention(12, num_heads=4, rope_base=100.0)


FUSED_DECODE_CHECK = """
import torch
from icml26.lucid import LucidAttention, LucidCache
from icml26.kernels.lucid import lucid_decode
torch.manual_seed(1)
layer = LucidAttention(24, num_heads=4, num_kv_heads=2)
x = torch.randn(1, 9, 24)
with torch.no_grad():
    full = layer(x)
    cache = LucidCache()
    steps = [layer(x[:, :4], cache)] + [layer(x[:, t : t + 1], cache) for t in range(4, 9)]
assert lucid_decode.last_backend.name == "TRITON", lucid_decode.last_backend
print((torch.cat(steps, 1) - full).abs().max().item())
"""


def test_decoding_through_the_fused_triton_kernel():
    # A fresh process: Triton's interpreter must be switched on before triton is first imported
    # (transformers, imported by this package, may import it earlier in this one).
    pytest.importorskip("triton")
    env = {**os.environ, "ICML26_KERNELS": "interpret", "TRITON_INTERPRET": "1"}
    res = subprocess.run(
        [sys.executable, "-c", FUSED_DECODE_CHECK], capture_output=True, text=True, env=env
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert float(res.stdout.strip().splitlines()[-1]) < 1e-4


def test_module_equals_the_reference_op():
    torch.manual_seed(1)
    layer = LucidAttention(16, num_heads=2).double()
    x = torch.randn(1, 9, 16, dtype=torch.float64)
    q = layer.q_proj(x).view(1, 9, 2, 8).transpose(1, 2)
    k = layer.k_proj(x).view(1, 9, 2, 8).transpose(1, 2)
    v = layer.v_proj(x).view(1, 9, 2, 8).transpose(1, 2)
    ref = layer.o_proj(lucid_attention_reference(q, k, v).transpose(1, 2).reshape(1, 9, 16))
    assert_close(layer(x), ref, atol=1e-10, rtol=1e-10)


def test_causality_and_gradients_flow():
    torch.manual_seed(2)
    model = TinyLM(TinyLMConfig(vocab_size=20, max_len=16, dim=16, layers=2, heads=2))
    x = torch.randint(0, 20, (2, 16))
    y = x.clone()
    y[:, 10:] = (y[:, 10:] + 1) % 20
    assert_close(model(x)[:, :10], model(y)[:, :10], atol=1e-6, rtol=1e-6)
    model(x).sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


def test_bad_arguments():
    with pytest.raises(ValueError, match="num_heads"):
        LucidAttention(30, num_heads=4)
    with pytest.raises(ValueError, match="kind"):
        LucidAttention(16, 2, kind="linear")
    layer = LucidAttention(16, 2)
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, 16\)"):
        layer(torch.randn(2, 5, 8))
    with pytest.raises(ValueError, match="NaN"):
        layer(torch.full((1, 3, 16), float("nan")))
    model = TinyLM(TinyLMConfig(vocab_size=10, max_len=4, dim=8, heads=2))
    with pytest.raises(ValueError, match="exceeds max_len"):
        model(torch.zeros(1, 5, dtype=torch.long))


def _ddp_mqar():
    from icml26.lucid.train import train_mqar

    run = train_mqar("lucid", 12, 2, 6, seed=0, vocab=9, dim=16, batch=8, eval_every=3)
    return run.curve


@pytest.mark.distributed
def test_mqar_training_runs_under_two_gloo_ranks():
    curves = run_distributed(_ddp_mqar, world_size=2)
    assert curves[0] == curves[1] and len(curves[0]) == 2
