import pytest
import torch

from icml26.santa import disable_santa, enable_santa, tiny_llama


@pytest.fixture
def model():
    return tiny_llama(seed=0)


def test_generate_runs_with_santa_decode_and_dense_prefill(model):
    ids = torch.randint(0, 256, (1, 200), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        dense_prefill = model(ids).logits
        state = enable_santa(model, num_samples=32, mode="tile_fixed", block_n=64)
        santa_prefill = model(ids).logits
        out = model.generate(ids, max_new_tokens=6, do_sample=False)
    # Prefill stays dense SDPA (an explicit causal mask instead of is_causal: rounding only).
    assert torch.allclose(dense_prefill, santa_prefill, atol=1e-5, rtol=1e-5)
    assert out.shape == (1, 206)
    layers = model.config.num_hidden_layers
    assert state.calls == layers * 5  # every decode step after the first token, every layer
    assert 0 < state.rows_read <= state.rows_total
    disable_santa(model)
    assert model.config._attn_implementation == "sdpa"
    assert not any(hasattr(m, "santa_state") for m in model.modules())


def test_many_samples_approach_dense_decode(model):
    ids = torch.randint(0, 256, (1, 120), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        pre = model(ids[:, :-1], use_cache=True)
        cache = pre.past_key_values
        import copy

        dense = model(ids[:, -1:], past_key_values=copy.deepcopy(cache)).logits
        enable_santa(model, num_samples=200_000, mode="systematic")
        santa = model(ids[:, -1:], past_key_values=copy.deepcopy(cache)).logits
        disable_santa(model)
    # systematic sampling with S counts is within 1/S of p per row
    assert torch.allclose(santa, dense, atol=2e-3, rtol=0)


def test_padded_batches_fall_back_to_dense(model):
    ids = torch.randint(1, 256, (2, 50), generator=torch.Generator().manual_seed(2))
    mask = torch.ones(2, 50, dtype=torch.long)
    mask[1, :10] = 0  # left padding in the second row
    state = enable_santa(model, num_samples=8)
    with torch.no_grad():
        model.generate(ids, attention_mask=mask, max_new_tokens=3, do_sample=False)
    assert state.calls == 0
    disable_santa(model)


def test_seeds_advance_per_call_and_runs_are_reproducible(model):
    ids = torch.randint(0, 256, (1, 150), generator=torch.Generator().manual_seed(3))
    outs = []
    for _ in range(2):
        enable_santa(model, num_samples=4, mode="tile_prop", seed=11)
        with torch.no_grad():
            outs.append(model.generate(ids, max_new_tokens=5, do_sample=False))
        disable_santa(model)
    assert torch.equal(outs[0], outs[1])


def test_bad_arguments(model):
    with pytest.raises(ValueError, match="num_samples"):
        enable_santa(model, num_samples=0)
    with pytest.raises(ValueError, match="mode"):
        enable_santa(model, mode="topk")
    with pytest.raises(ValueError, match="attention modules"):
        enable_santa(torch.nn.Linear(2, 2))


@pytest.mark.slow
def test_smollm2_loads_and_generates_with_santa():
    from icml26.santa import load_smollm2

    model, tok = load_smollm2()
    ids = tok("def fibonacci(n):", return_tensors="pt").input_ids
    enable_santa(model, num_samples=64)
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=8, do_sample=False)
    disable_santa(model)
    assert out.shape[1] == ids.shape[1] + 8
