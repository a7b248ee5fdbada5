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
    lucid_attention,
    lucid_attention_reference,
    lucid_preconditioner,
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


def _layer(**kw):
    torch.manual_seed(0)
    return LucidAttention(32, 4, 2, rope_base=1e4, **kw).double()


def test_left_padding_gives_the_unpadded_outputs_with_and_without_a_cache():
    layer = _layer()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(1, 7, 32, generator=g, dtype=torch.float64)
    pad = torch.cat([torch.randn(1, 3, 32, generator=g, dtype=torch.float64), x], 1)
    mask = torch.tensor([[False] * 3 + [True] * 7])
    alone = layer(x)
    assert_close(layer(pad, attention_mask=mask)[:, 3:], alone, atol=1e-12, rtol=1e-10)
    # ...and the padding stays out of L when decoding after a padded prompt
    z = torch.randn(1, 2, 32, generator=g, dtype=torch.float64)
    full = layer(torch.cat([x, z], 1))
    cache = LucidCache()
    layer(pad, cache, attention_mask=mask)
    steps = torch.cat([layer(z[:, :1], cache), layer(z[:, 1:], cache)], 1)
    assert_close(steps, full[:, 7:], atol=1e-12, rtol=1e-10)
    # without the mask the padding enters L (and the softmax): other outputs
    assert not torch.allclose(layer(pad)[:, 3:], alone, atol=1e-3)


def test_packed_sequences_each_get_their_own_preconditioner():
    layer = _layer()
    g = torch.Generator().manual_seed(2)
    a = torch.randn(1, 6, 32, generator=g, dtype=torch.float64)
    b = torch.randn(1, 4, 32, generator=g, dtype=torch.float64)
    both = layer(torch.cat([a, b], 1), cu_seqlens=torch.tensor([0, 6, 10]))
    assert_close(both[:, :6], layer(a), atol=1e-12, rtol=1e-10)
    assert_close(both[:, 6:], layer(b), atol=1e-12, rtol=1e-10)
    with pytest.raises(ValueError, match="end at the packed length 10"):
        layer(torch.cat([a, b], 1), cu_seqlens=torch.tensor([0, 6, 9]))
    with pytest.raises(ValueError, match=r"x must be \(1, T, dim\)"):
        layer(torch.cat([a, a], 0), cu_seqlens=torch.tensor([0, 6]))


def test_preconditioner_variants():
    from icml26.lucid.attention import preconditioner_statistics, variant_preconditioner

    g = torch.Generator().manual_seed(3)
    k = torch.randn(1, 1, 6, 8, generator=g, dtype=torch.float64)
    # beta = 1 is LUCID's L; a large beta leaves the identity (LUCID -> softmax)
    assert_close(variant_preconditioner(k, 1.0), lucid_preconditioner(k), atol=0, rtol=0)
    eye = torch.eye(6, dtype=torch.float64)
    assert (variant_preconditioner(k, 1e3) - eye).abs().max() < 1e-6
    stats = preconditioner_statistics(k, torch.randn(1, 1, 6, 8, generator=g, dtype=torch.float64))
    assert stats["L row sum"] > 1 and stats["median cond(L)"] >= 1
    # L from detached keys: no gradient reaches the keys through L, only through the logits
    x = torch.randn(1, 6, 32, generator=g, dtype=torch.float64)
    grads = {}
    for detach in (False, True):
        layer = _layer(detach_preconditioner=detach)
        layer(x).sum().backward()
        grads[detach] = layer.k_proj.weight.grad
    assert not torch.allclose(grads[False], grads[True])
    with pytest.raises(ValueError, match="beta"):
        LucidAttention(16, 2, beta=0.0)
    with pytest.raises(ValueError, match="LUCID variants"):
        LucidAttention(16, 2, kind="softmax", beta=2.0)
    with pytest.raises(ValueError, match="for training"):
        _layer(beta=2.0)(x, LucidCache())


def test_attention_on_preconditioned_values_in_bf16_and_fp32():
    # bf16 inputs, against fp64 LUCID on the same (rounded) inputs, on keys clustered round one
    # direction with queries near them (the output cancels: rows ~0.02 of V's). By default the
    # attention on V' runs in bf16: within the kernels' error analysis (3u max|V'|, absolute);
    # attention_dtype=float32 keeps V' unrounded and is far more accurate relative to each row.
    from icml26.kernels.attention import softmax_attention

    g = torch.Generator().manual_seed(4)
    centre = torch.randn(1, 1, 1, 64, generator=g, dtype=torch.float64)
    k = centre + 0.15 * torch.randn(1, 2, 256, 64, generator=g, dtype=torch.float64)
    q = k.repeat_interleave(2, 1) + 0.1 * torch.randn(
        1, 4, 256, 64, generator=g, dtype=torch.float64
    )
    v = torch.randn(1, 2, 256, 64, generator=g, dtype=torch.float64)
    qb, kb, vb = q.bfloat16(), k.bfloat16(), v.bfloat16()
    ref = lucid_attention_reference(qb.double(), kb.double(), vb.double())  # the same inputs
    vp = lucid_solve_reference(kb, vb)

    def median_rel(out):
        return ((out.double() - ref).norm(dim=-1) / ref.norm(dim=-1)).median().item()

    default = lucid_attention(qb, kb, vb)
    assert default.dtype == torch.bfloat16
    assert (default.double() - ref).abs().max() <= 3 * 2.0**-8 * vp.abs().max()
    rounded = median_rel(softmax_attention(qb, kb, vp.bfloat16()))
    assert median_rel(default) == pytest.approx(rounded, rel=0.5)  # the same computation
    # fp32 attention: what is left is the output's own rounding to bf16 (0.17% here, 1.2% above)
    kept = median_rel(lucid_attention(qb, kb, vb, attention_dtype=torch.float32))
    assert kept < rounded / 4, (kept, rounded)


def test_compiled_layer_equals_eager_without_graph_breaks():
    torch.manual_seed(5)
    layer = LucidAttention(32, 4, 2, rope_base=1e4)
    compiled = torch.compile(layer, fullgraph=True)  # a graph break is an error
    x = torch.randn(2, 9, 32, requires_grad=True)
    eager_out, compiled_out = layer(x), compiled(x)
    assert_close(compiled_out, eager_out, atol=1e-5, rtol=1e-5)
    (g_eager,) = torch.autograd.grad(eager_out.square().sum(), x)
    (g_compiled,) = torch.autograd.grad(compiled_out.square().sum(), x)
    assert_close(g_compiled, g_eager, atol=1e-5, rtol=1e-5)


def test_needle_batches():
    from icml26.lucid.tasks import needle_batch

    x, y = needle_batch(4, 40, 3, 32, torch.Generator().manual_seed(6))
    K = 32 // 4
    asked = y != -100
    assert asked.sum(1).tolist() == [3] * 4 and asked[:, -3:].all()
    for b in range(4):
        for key, value in zip(x[b, -3:].tolist(), y[b, -3:].tolist(), strict=True):
            assert 1 <= key <= K and K < value <= 2 * K
            at = (x[b, :-3] == key).nonzero().flatten().tolist()
            assert len(at) == 1 and x[b, at[0] + 1] == value  # one needle, its value next
        assert (x[b, :-3] > 2 * K).sum() == 37 - 6  # the rest is distractors
    with pytest.raises(ValueError, match="needles"):
        needle_batch(1, 8, 3, 32, torch.Generator())
