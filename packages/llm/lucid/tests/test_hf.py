import os
import subprocess
import sys

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from icml26.lucid import lucid_attention_reference, register_lucid
from icml26.lucid.hf import lucid_attention_forward
from icml26.testing import assert_close

CONFIG = dict(
    vocab_size=64,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
)


def _model():
    register_lucid()
    torch.manual_seed(0)
    return LlamaForCausalLM._from_config(LlamaConfig(**CONFIG), attn_implementation="lucid").eval()


def test_generate_with_the_cache_matches_a_full_forward(monkeypatch):
    import icml26.kernels.lucid as ops

    solved_rows = []
    solve = ops.lucid_solve

    def counting_solve(k, v):
        solved_rows.append(k.shape[2])
        return solve(k, v)

    monkeypatch.setattr(ops, "lucid_solve", counting_solve)
    model = _model()
    x = torch.randint(1, 64, (2, 5), generator=torch.Generator().manual_seed(0))  # 0 is padding
    out = model.generate(
        x,
        max_new_tokens=7,
        do_sample=False,
        output_logits=True,
        return_dict_in_generate=True,
        pad_token_id=0,
    )
    stepwise = torch.stack(out.logits, 1)  # (B, 7, vocab)
    # each layer solved the 5-token prompt once; the 6 decode steps only appended V' rows
    assert solved_rows == [5, 5]
    full = model(out.sequences).logits[:, 4:11]  # with autograd on: always a full solve
    assert solved_rows == [5, 5, 12, 12]
    assert_close(stepwise, full, atol=1e-5, rtol=1e-5)


def test_the_interface_function_is_lucid_attention():
    model = _model()
    attn = model.model.layers[0].self_attn
    g = torch.Generator().manual_seed(1)
    q = torch.randn(1, 4, 9, 8, generator=g)
    k = torch.randn(1, 2, 9, 8, generator=g)
    v = torch.randn(1, 2, 9, 8, generator=g)
    got, _ = lucid_attention_forward(attn, q, k, v, None, scaling=8**-0.5)
    ref = lucid_attention_reference(q.double(), k.double(), v.double())
    assert_close(got.transpose(1, 2).double(), ref, atol=1e-5, rtol=1e-5)  # HF returns (B, T, H, D)


def test_the_interface_function_attends_on_vp_in_the_models_dtype(monkeypatch):
    # a bf16 model: V' is solved in fp32, the attention on it runs with bf16 operands, and the
    # output is within icml26-kernels' bound for that (3u max|V'|, u = 2^-8)
    import transformers.integrations.sdpa_attention as sdpa

    from icml26.lucid import lucid_solve_reference

    seen = []
    real = sdpa.sdpa_attention_forward

    def spy(module, q, k, v, *args, **kwargs):
        seen.append((q.dtype, k.dtype, v.dtype))
        return real(module, q, k, v, *args, **kwargs)

    monkeypatch.setattr(sdpa, "sdpa_attention_forward", spy)
    attn = _model().model.layers[0].self_attn
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, h, 9, 8, generator=g).bfloat16() for h in (4, 2, 2))
    got, _ = lucid_attention_forward(attn, q, k, v, None, scaling=8**-0.5)
    assert seen == [(torch.bfloat16,) * 3] and got.dtype == torch.bfloat16
    ref = lucid_attention_reference(q.double(), k.double(), v.double())
    bound = 3 * 2.0**-8 * lucid_solve_reference(k.double(), v.double()).abs().max()
    assert (got.transpose(1, 2).double() - ref).abs().max() <= bound


@pytest.mark.parametrize("chunk", [1, 3])
def test_a_bf16_cache_holds_vp_within_the_propagated_rounding_bound(chunk):
    # LucidDynamicCache keeps V' in the model's dtype; each new row is computed from the rounded
    # rows before it, so a cached row is off the exact V' by L^{-1} diag(L_cc) delta (delta: the
    # roundings, L_cc each appended chunk's block), at most ||L^{-1}||_inf max_c ||L_cc||_inf u
    # max|V'| (hf.py's docstring). Clustered keys: L far from I.
    from icml26.lucid import lucid_preconditioner
    from icml26.lucid.hf import LucidLayer

    g = torch.Generator().manual_seed(7)
    T, D = 48, 16
    centres = torch.randn(1, 2, 4, D, generator=g)
    k = centres[:, :, torch.randint(0, 4, (T,), generator=g)]
    k = (k + 0.05 * torch.randn(1, 2, T, D, generator=g)).bfloat16()
    v = torch.randn(1, 2, T, D, generator=g).bfloat16()
    q = torch.randn(1, 4, T, D, generator=g).bfloat16()
    layer, outs = LucidLayer(), []
    spans = [(0, 8), *((t, min(t + chunk, T)) for t in range(8, T, chunk))]  # prefill, then steps
    for a, b in spans:
        keys, _ = layer.update(k[:, :, a:b], v[:, :, a:b])
        outs.append(layer.attend(q[:, :, a:b], keys, v[:, :, a:b], None, None))
    assert layer.values.dtype == torch.bfloat16
    L = lucid_preconditioner(k.double())
    exact = torch.linalg.solve_triangular(L, v.double(), upper=False, unitriangular=True)
    linv = torch.linalg.inv(L).abs().sum(-1).max().item()
    block = max(L[..., a:b, a:b].abs().sum(-1).max().item() for a, b in spans)
    assert linv > 1.5  # L is far from the identity here
    u, vp_max = 2.0**-8, exact.abs().max().item()
    err = (layer.values.double() - exact).abs().max().item()
    assert err <= 1.01 * linv * block * u * vp_max, (err, linv, block, vp_max)
    out = torch.cat(outs, 2).double()
    ref = lucid_attention_reference(q.double(), k.double(), v.double())
    assert (out - ref).abs().max().item() <= (linv * block + 2) * u * vp_max


def test_an_encoder_attention_layer_is_refused():
    attn = _model().model.layers[0].self_attn
    q, k, v = torch.randn(1, 4, 5, 8), torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8)
    attn.is_causal = False  # as in a bidirectional encoder
    with pytest.raises(ValueError, match="needs a causal"):
        lucid_attention_forward(attn, q, k, v, None, scaling=8**-0.5)


def test_training_step_through_transformers():
    model = _model().train()
    x = torch.randint(0, 64, (2, 12), generator=torch.Generator().manual_seed(2))
    loss = model(x, labels=x).loss
    loss.backward()
    grad = model.model.layers[0].self_attn.k_proj.weight.grad
    assert torch.isfinite(loss) and grad is not None and grad.abs().sum() > 0


TRITON_LLAMA_CHECK = """
import os
import torch
from transformers import LlamaConfig, LlamaForCausalLM
from icml26.kernels.attention import softmax_attention
from icml26.kernels.lucid import lucid_solve
from icml26.lucid import register_lucid

register_lucid()
torch.manual_seed(0)
model = LlamaForCausalLM._from_config(LlamaConfig(**CONFIG), attn_implementation="lucid").train()
x = torch.randint(1, 64, (2, 20), generator=torch.Generator().manual_seed(3))
runs = {}
for mode in ("interpret", "reference"):
    os.environ["ICML26_KERNELS"] = mode
    model.zero_grad()
    out = model(x, labels=x)
    out.loss.backward()
    runs[mode] = (out.logits.detach(), model.model.layers[0].self_attn.k_proj.weight.grad.clone())
    if mode == "interpret":  # both Triton kernels ran: the solve, then flash attention on V'
        assert softmax_attention.last_backend.name == "TRITON", softmax_attention.last_backend
        assert lucid_solve.last_backend.name == "TRITON", lucid_solve.last_backend
(l1, g1), (l2, g2) = runs["interpret"], runs["reference"]
print((l1 - l2).abs().max().item(), ((g1 - g2).norm() / g2.norm()).item())
"""


def test_training_through_the_triton_kernels_matches_the_reference_path():
    # A fresh process: Triton's interpreter must be on before triton is first imported (which
    # transformers may do). Logits and a gradient through both Triton kernels (the solve, then
    # the flash-style attention) against the same model on the reference path (SDPA).
    pytest.importorskip("triton")
    env = {**os.environ, "ICML26_KERNELS": "interpret", "TRITON_INTERPRET": "1"}
    res = subprocess.run(
        [sys.executable, "-c", f"CONFIG = {CONFIG!r}\n" + TRITON_LLAMA_CHECK],
        capture_output=True,
        text=True,
        env=env,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    logits_err, grad_rel_err = map(float, res.stdout.strip().splitlines()[-1].split())
    assert logits_err < 1e-4 and grad_rel_err < 1e-4, (logits_err, grad_rel_err)


def test_qwen2_generate_with_the_cache_matches_a_full_forward():
    # Qwen2's attention adds q/k/v biases; the attention interface is the same as Llama's
    from transformers import Qwen2Config, Qwen2ForCausalLM

    register_lucid()
    torch.manual_seed(0)
    model = Qwen2ForCausalLM._from_config(Qwen2Config(**CONFIG), attn_implementation="lucid").eval()
    x = torch.randint(1, 64, (2, 5), generator=torch.Generator().manual_seed(0))
    out = model.generate(
        x, max_new_tokens=6, do_sample=False, output_logits=True,
        return_dict_in_generate=True, pad_token_id=0,
    )  # fmt: skip
    stepwise = torch.stack(out.logits, 1)
    with torch.no_grad():
        full = model(out.sequences).logits[:, 4:10]
    assert_close(stepwise, full, atol=1e-5, rtol=1e-5)
    # and it is LUCID, not softmax attention: the same weights under SDPA give other logits
    model.config._attn_implementation = "sdpa"
    with torch.no_grad():
        assert not torch.allclose(model(out.sequences).logits[:, 4:10], full, atol=1e-3)


def test_mistral_runs_and_its_sliding_window_is_refused_past_the_window():
    from transformers import MistralConfig, MistralForCausalLM

    register_lucid()
    torch.manual_seed(0)
    x = torch.randint(1, 64, (1, 8), generator=torch.Generator().manual_seed(0))
    full_window = MistralForCausalLM._from_config(
        MistralConfig(**CONFIG, sliding_window=None), attn_implementation="lucid"
    ).eval()
    with torch.no_grad():
        logits = full_window(x).logits
    assert torch.isfinite(logits).all()
    windowed = MistralForCausalLM._from_config(
        MistralConfig(**CONFIG, sliding_window=4), attn_implementation="lucid"
    ).eval()
    windowed.load_state_dict(full_window.state_dict())
    with torch.no_grad():
        # within the window the two models are the same attention
        assert_close(windowed(x[:, :4]).logits, logits[:, :4], atol=1e-5, rtol=1e-5)
        with pytest.raises(ValueError, match="sliding_window of 4"):
            windowed(x)
        # a refused step leaves a LucidDynamicCache as it was
        from icml26.lucid import LucidDynamicCache

        cache = LucidDynamicCache()
        windowed(x[:, :3], past_key_values=cache)
        with pytest.raises(ValueError, match="sliding_window of 4"):
            windowed(x[:, 3:5], past_key_values=cache)
        assert all(layer.keys.shape[2] == layer.values.shape[2] == 3 for layer in cache.layers)


def _greedy(model, x, mask=None, cache=None, steps=6):
    out = model.generate(
        x, attention_mask=mask, max_new_tokens=steps, do_sample=False, output_logits=True,
        return_dict_in_generate=True, pad_token_id=0, past_key_values=cache,
    )  # fmt: skip
    return out.sequences[:, x.shape[1] :], torch.stack(out.logits, 1)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("cache", ["lucid", "dynamic"])
def test_left_padded_batched_generate_equals_each_sequence_alone(cache, arch):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from icml26.lucid import LucidDynamicCache

    if arch == "llama":
        model = _model()
    else:
        torch.manual_seed(0)
        model = Qwen2ForCausalLM._from_config(
            Qwen2Config(**CONFIG), attn_implementation="lucid"
        ).eval()
    g = torch.Generator().manual_seed(4)
    prompts = [torch.randint(1, 64, (n,), generator=g) for n in (7, 4, 2)]
    width = max(len(p) for p in prompts)
    x = torch.zeros(len(prompts), width, dtype=torch.long)  # 0: the pad token
    mask = torch.zeros_like(x)
    for i, p in enumerate(prompts):
        x[i, width - len(p) :], mask[i, width - len(p) :] = p, 1
    new_cache = LucidDynamicCache if cache == "lucid" else lambda: None
    tokens, logits = _greedy(model, x, mask, new_cache())
    for i, p in enumerate(prompts):
        alone_tokens, alone_logits = _greedy(model, p[None], cache=new_cache())
        assert torch.equal(tokens[i], alone_tokens[0])
        assert_close(logits[i], alone_logits[0], atol=1e-5, rtol=1e-5)


def test_lucid_cache_decodes_with_the_fused_op_and_no_full_solve(monkeypatch):
    import icml26.kernels.lucid as ops
    from icml26.lucid import LucidDynamicCache

    calls = {"solve": [], "decode": 0}
    solve, decode = ops.lucid_solve, ops.lucid_decode

    def counting_solve(k, v):
        calls["solve"].append(k.shape[2])
        return solve(k, v)

    def counting_decode(*args):
        calls["decode"] += 1
        return decode(*args)

    monkeypatch.setattr(ops, "lucid_solve", counting_solve)
    monkeypatch.setattr(ops, "lucid_decode", counting_decode)
    model = _model()
    x = torch.randint(1, 64, (2, 5), generator=torch.Generator().manual_seed(0))
    cache = LucidDynamicCache()
    tokens, logits = _greedy(model, x, cache=cache, steps=7)
    assert calls == {"solve": [5, 5], "decode": 2 * 6}  # prompt once per layer, then one row
    layer = cache.layers[0]
    assert layer.values.dtype == torch.float32 and layer.keys.shape[2] == 11
    with torch.no_grad():
        full = model(torch.cat([x, tokens], 1)).logits[:, 4:11]
    assert_close(logits, full, atol=1e-5, rtol=1e-5)


def test_packed_sequences_get_one_preconditioner_each():
    # position_ids restarting at 0 mark packed sequences (without a cache: training): transformers
    # builds a block-diagonal mask, and L follows it, so each sequence gets its logits alone
    model = _model()
    g = torch.Generator().manual_seed(5)
    a, b = torch.randint(1, 64, (1, 6), generator=g), torch.randint(1, 64, (1, 5), generator=g)
    packed = torch.cat([a, b], 1)
    position_ids = torch.cat([torch.arange(6), torch.arange(5)])[None]
    with torch.no_grad():
        both = model(packed, position_ids=position_ids, use_cache=False).logits
        assert_close(both[:, :6], model(a).logits, atol=1e-5, rtol=1e-5)
        assert_close(both[:, 6:], model(b).logits, atol=1e-5, rtol=1e-5)


def test_masks_through_transformers_mean_what_they_mean_for_sdpa():
    """transformers builds the mask before LUCID sees it (the same one SDPA gets): a 0.5 entry is
    read as "attend" and an all-padding row stays finite, as with SDPA. Documented, not refused:
    the user's 2-D mask never reaches the attention function."""
    ids = torch.randint(0, 64, (2, 6), generator=torch.Generator().manual_seed(0))
    ones = torch.ones(2, 6)
    half, zero, allpad = ones.clone(), ones.clone(), ones.clone()
    half[0, :2], zero[0, :2], allpad[1] = 0.5, 0.0, 0.0
    for impl in ("sdpa", "lucid"):
        model = _model()
        model.config._attn_implementation = impl
        with torch.no_grad():
            masks = {"ones": ones, "half": half, "zero": zero, "allpad": allpad}
            out = {k: model(ids, attention_mask=m).logits for k, m in masks.items()}
        assert torch.equal(out["half"], out["ones"]), impl
        assert not torch.allclose(out["half"], out["zero"]), impl
        assert torch.isfinite(out["allpad"]).all(), impl
