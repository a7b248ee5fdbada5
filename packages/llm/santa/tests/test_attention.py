import copy
import dataclasses

import pytest
import torch

from icml26.santa import disable_santa, enable_santa, tiny_llama
from icml26.santa.attention import key_ranges_from_mask, operating_point
from icml26.santa.study import _cache_kw


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


def _record_budgets(monkeypatch):
    """(S, block_n, cache length) of every decode call, read where the op is called."""
    from icml26.kernels.santa import santa_decode

    seen, inner = [], santa_decode.compiled

    def spy(q, k, v, S, mode, block_n, **kw):
        seen.append((S, block_n, k.shape[2]))
        return inner(q, k, v, S, mode, block_n, **kw)

    monkeypatch.setattr(santa_decode, "compiled", spy)
    return seen


def test_the_default_follows_the_paper_operating_point_as_the_cache_grows(model, monkeypatch):
    seen = _record_budgets(monkeypatch)
    ids = torch.randint(0, 256, (1, 60), generator=torch.Generator().manual_seed(5))
    state = enable_santa(model)
    with torch.no_grad():
        model.generate(ids, max_new_tokens=8, do_sample=False)
    disable_santa(model)
    assert state.num_samples is None and state.budget(100) == (16 * 4, 32)
    lengths = sorted({n for _, _, n in seen})
    assert lengths == list(range(61, 68))  # 7 decode steps after the prefill's token
    for S, block_n, n in seen:
        assert (S, block_n) == operating_point(n) == (16 * -(-n // 32), 32)
    assert {S for S, _, _ in seen} == {16 * 2, 16 * 3}  # one more tile past 64 keys


def test_a_fixed_budget_and_other_draws_per_tile(model, monkeypatch):
    seen = _record_budgets(monkeypatch)
    ids = torch.randint(0, 256, (1, 60), generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        enable_santa(model, num_samples=8)
        model.generate(ids, max_new_tokens=3, do_sample=False)
        fixed = list(seen)
        seen.clear()
        enable_santa(model, draws_per_tile=4, block_n=16)
        model.generate(ids, max_new_tokens=3, do_sample=False)
    disable_santa(model)
    assert {(S, b) for S, b, _ in fixed} == {(8, 32)}  # tile size: the authors' for the length
    assert {(S, b) for S, b, _ in seen} == {(4 * 4, 16)}  # 61 and 62 keys: 4 tiles of 16
    with pytest.raises(ValueError, match="not both"):
        enable_santa(model, num_samples=8, draws_per_tile=4)
    # enabled twice, then disabled: back to what the model had before the first time
    assert model.config._attn_implementation == "sdpa"
    enable_santa(model)
    state = enable_santa(model, num_samples=8)
    assert dataclasses.replace(state, num_samples=4).budget(100) == (4, 32)
    disable_santa(model)
    assert model.config._attn_implementation == "sdpa"


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


def _second_token_logits(model, ids, seeds, mode="systematic", **kw):
    """Logits of the first SANTA decode step (the second generated token), one row per seed."""
    rows = []
    for seed in seeds:
        state = enable_santa(model, num_samples=6, mode=mode, block_n=16, seed=seed)
        with torch.no_grad():
            out = model.generate(
                ids, max_new_tokens=2, do_sample=False, output_logits=True,
                return_dict_in_generate=True, **kw,
            )  # fmt: skip
        rows.append(out.logits[1])
        disable_santa(model)
    return torch.stack(rows), state  # (seeds, B, vocab)


@pytest.mark.parametrize("mode", ["systematic", "tile_fixed"])
def test_a_padded_batch_samples_each_sequence_as_it_would_alone(mode):
    model = tiny_llama(seed=0, layers=1)
    g = torch.Generator().manual_seed(2)
    long, short = (
        torch.randint(1, 256, (1, 60), generator=g),
        torch.randint(1, 256, (1, 37), generator=g),
    )
    batch = torch.cat([long, torch.cat([torch.zeros(1, 23, dtype=torch.long), short], 1)])
    mask = torch.ones(2, 60, dtype=torch.long)
    mask[1, :23] = 0  # left padding in the second row
    seeds = range(150)
    padded, state = _second_token_logits(model, batch, seeds, mode, attention_mask=mask)
    assert state.calls == 1 and 0 < state.rows_read < state.rows_total
    assert state.rows_total == 2 * (61 + 38)  # the visible keys of both rows, per KV head
    alone = [
        _second_token_logits(model, x, [1000 + s for s in seeds], mode)[0][:, 0]
        for x in (long, short)
    ]
    for row, single in enumerate(alone):
        got = padded[:, row]
        assert got.std(0).max() > 1e-3  # it samples (a dense fallback would not vary)
        # Same sampling distribution: the means agree within 5 standard errors, the spreads
        # within 30%, on the 20 logits that vary most.
        top = single.std(0).topk(20).indices
        se = (got[:, top].var(0) / len(seeds) + single[:, top].var(0) / len(seeds)).sqrt()
        assert ((got[:, top].mean(0) - single[:, top].mean(0)).abs() / se).max() < 5
        ratio = got[:, top].std(0) / single[:, top].std(0)
        assert (ratio - 1).abs().max() < 0.3


def test_a_static_cache_is_sampled_up_to_its_filled_length(model):
    ids = torch.randint(0, 256, (1, 70), generator=torch.Generator().manual_seed(4))
    state = enable_santa(model, num_samples=16, mode="tile_fixed", block_n=16)
    with torch.no_grad():
        model.generate(ids, max_new_tokens=4, do_sample=False, cache_implementation="static")
    layers = model.config.num_hidden_layers
    assert state.calls == 3 * layers
    # dense decode reads 71, 72, 73 rows per KV head and layer, not the static cache's length
    assert state.rows_total == layers * 2 * (71 + 72 + 73)
    disable_santa(model)


def test_compiled_decode_samples_without_graph_breaks(model):
    from transformers import StaticCache

    ids = torch.randint(0, 256, (1, 40), generator=torch.Generator().manual_seed(5))
    cache = StaticCache(config=model.config, max_cache_len=64)
    kw = _cache_kw(model)
    with torch.no_grad():
        pre = model(ids, use_cache=True, **{kw: cache})
        tok = pre.logits[:, -1:].argmax(-1)
        pos = torch.tensor([40])
        args = dict(cache_position=pos, position_ids=pos[None])
        state = enable_santa(model, num_samples=8, mode="tile_prop", block_n=16, seed=3)
        eager = model(tok, **{kw: copy.deepcopy(cache)}, **args).logits
        disable_santa(model)
        state = enable_santa(model, num_samples=8, mode="tile_prop", block_n=16, seed=3)
        torch._dynamo.reset()
        step = torch.compile(model, fullgraph=True)
        got = step(tok, **{kw: cache}, **args).logits
        disable_santa(model)
        dense = model(tok, **{kw: copy.deepcopy(cache)}, **args).logits
    assert state.calls == model.config.num_hidden_layers and state.rows_read < state.rows_total
    # the compiled step draws what the eager step draws for the same seed, and it samples
    assert torch.allclose(got, eager, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(got, dense, atol=1e-4, rtol=0)


def test_a_sliding_window_model_samples_inside_its_window():
    # transformers' sliding-window cache hands the attention the window's keys; a window mask
    # over a longer cache becomes a key range like padding does (test_key_ranges_from_masks)
    from transformers import MistralConfig, MistralForCausalLM

    torch.manual_seed(0)
    cfg = MistralConfig(vocab_size=256, hidden_size=64, intermediate_size=128,
                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                        sliding_window=24)  # fmt: skip
    model = MistralForCausalLM(cfg).eval()
    ids = torch.randint(0, 256, (1, 80), generator=torch.Generator().manual_seed(6))
    kw = _cache_kw(model)
    with torch.no_grad():
        cache = model(ids[:, :-1], use_cache=True).past_key_values
        dense = model(ids[:, -1:], **{kw: copy.deepcopy(cache)}).logits
        state = enable_santa(model, num_samples=200_000, mode="systematic")
        santa = model(ids[:, -1:], **{kw: copy.deepcopy(cache)}).logits
        disable_santa(model)
    assert state.rows_total == 2 * 2 * 24  # the window, not the 80 cached keys
    assert torch.allclose(santa, dense, atol=2e-3, rtol=0)


def test_soft_capped_models_are_refused():
    from transformers import Gemma2Config, Gemma2ForCausalLM

    cfg = Gemma2Config(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                       num_attention_heads=2, num_key_value_heads=1, head_dim=32)  # fmt: skip
    with pytest.raises(ValueError, match="soft-capping"):
        enable_santa(Gemma2ForCausalLM(cfg))


@pytest.mark.parametrize(
    ("mask", "match"),
    [
        (torch.tensor([[[[True, False, True, True]]]]), "holes"),
        (torch.zeros(1, 2, 1, 4, dtype=torch.bool), "one decode-step mask row"),
        (torch.ones(1, 1, 1, 6, dtype=torch.bool), r"over the 4 cached keys"),
        (torch.tensor([[[[0.0, -1.5, 0.0, 0.0]]]]), "attention bias"),
    ],
)
def test_masks_sampling_cannot_honour_are_refused(mask, match):
    with pytest.raises(ValueError, match=match):
        key_ranges_from_mask(mask, 4)


def test_key_ranges_from_masks():
    pad = torch.tensor([[[[False, False, True, True, True]]], [[[True] * 5]]])
    start, end = key_ranges_from_mask(pad, 5)
    assert start.tolist() == [2, 0] and end.tolist() == [5, 5]
    static = torch.tensor([[[[0.0, 0.0, 0.0, -torch.inf, -torch.inf]]]])
    start, end = key_ranges_from_mask(static, 5)
    assert start.tolist() == [0] and end.tolist() == [3]
    assert key_ranges_from_mask(None, 5) == (None, None)
    window = torch.tensor([[[[False, True, True, True, False]]]])  # one row, broadcast to 3
    start, end = key_ranges_from_mask(window, 5, batch=3)
    assert start.tolist() == [1, 1, 1] and end.tolist() == [4, 4, 4]


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
def test_smollm2_decode_with_many_draws_matches_dense_and_the_operating_point_reads_less():
    from icml26.santa import load_smollm2
    from icml26.santa.attention import operating_point
    from icml26.santa.model import corpus_text

    model, tok = load_smollm2()
    ids = tok(corpus_text(), return_tensors="pt").input_ids[:, :700]
    kw = _cache_kw(model)
    with torch.no_grad():
        cache = model(ids[:, :-1], use_cache=True).past_key_values
        dense = model(ids[:, -1:], **{kw: copy.deepcopy(cache)}).logits
        enable_santa(model, num_samples=1_000_000, mode="systematic")
        many = model(ids[:, -1:], **{kw: copy.deepcopy(cache)}).logits
        disable_santa(model)
        S, block_n = operating_point(700)
        state = enable_santa(model, S, "tile_fixed", block_n)
        model(ids[:, -1:], **{kw: copy.deepcopy(cache)})
        disable_santa(model)
    # 30 layers of GQA (9 query / 3 KV heads) through the real model: with 10^6 systematic
    # draws every p_r is within 1e-6 of exact, so the logits are dense decode's.
    assert (many - dense).abs().max() < 2e-2
    assert state.calls == 30 and (S, block_n) == (16 * 22, 32)
    assert 0.05 < state.read_fraction < 1


@pytest.mark.slow
def test_smollm2_generates_at_the_default_operating_point(monkeypatch):
    from icml26.santa import load_smollm2
    from icml26.santa.model import corpus_text

    model, tok = load_smollm2()
    ids = tok(corpus_text(), return_tensors="pt").input_ids[:, :400]
    with torch.no_grad():
        dense = model.generate(ids, max_new_tokens=4, do_sample=False)
        seen = _record_budgets(monkeypatch)
        state = enable_santa(model)
        santa = model.generate(ids, max_new_tokens=4, do_sample=False)
        disable_santa(model)
    assert santa.shape == dense.shape == (1, 404)
    assert {(S, b) for S, b, _ in seen} == {(16 * 13, 32)}  # 401-403 keys: 13 tiles of 32
    assert state.calls == 30 * 3 and 0.05 < state.read_fraction < 1
