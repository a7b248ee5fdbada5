import copy
import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from icml26.entquant import (
    EntQuantLinear,
    bits_per_param,
    load_compressed,
    quantize,
    save_compressed,
    target_linears,
)
from icml26.entquant.models import tiny_gpt
from icml26.entquant.storage import MANIFEST, WEIGHTS


@pytest.fixture(scope="module")
def gpt():
    return tiny_gpt(seed=0, dim=32, layers=2, heads=2).eval()


def test_layer_forward_is_a_linear_with_the_dequantised_weight():
    lin = nn.Linear(40, 24)
    layer = EntQuantLinear.from_linear(lin, 14.5, max_iter=20)
    x = torch.randn(3, 5, 40)
    w = layer.quantized().dequantize()
    torch.testing.assert_close(layer(x), F.linear(x, w, lin.bias))
    cached = EntQuantLinear(layer.encoded, layer.scales, "fp8_e4m3", lin.bias, decode="cached")
    torch.testing.assert_close(cached(x), layer(x), rtol=0, atol=0)
    assert (w - lin.weight).abs().max() < lin.weight.abs().max()


def test_coded_tensors_stay_compact_in_memory():
    """16-bit words, 32-bit offsets, a 16-bit table; float16 scales on request, counted so."""
    lin = nn.Linear(64, 48)
    layer = EntQuantLinear.from_linear(lin, 14.5, max_iter=20)
    assert layer.words.dtype == torch.int16 and layer.lane_starts.dtype == torch.int32
    assert layer.freqs.dtype == torch.int16 and layer.scales.dtype == torch.float32
    enc = layer.encoded  # what the decoders read: the same words, widened on the fly
    assert enc.words.dtype == torch.int32 and int(enc.words.max()) > 32767  # uint16 patterns
    half = EntQuantLinear(enc, layer.scales, "fp8_e4m3", lin.bias, scale_dtype=torch.float16)
    assert half.scales.dtype == torch.float16
    x = torch.randn(4, 64)
    torch.testing.assert_close(half(x), layer(x), rtol=2e-3, atol=2e-3)
    with pytest.raises(ValueError, match="float16"):
        EntQuantLinear(enc, layer.scales * 1e-10, "fp8_e4m3", scale_dtype=torch.float16)
    with pytest.raises(ValueError, match="scale_dtype"):
        EntQuantLinear(enc, layer.scales, "fp8_e4m3", scale_dtype=torch.bfloat16)


def test_the_checked_table_precision_reaches_the_decoder():
    """A layer knows its table's precision as a Python int, so a GPU decode reads no value
    back; loading a state dict forgets it until the table is checked again."""
    lin = nn.Linear(32, 16)
    layer = EntQuantLinear.from_linear(lin, 14.5, max_iter=20)
    assert layer.encoded.prob_bits == 12
    with torch.device("meta"):
        twin = EntQuantLinear.placeholder(32, 16, _shapes(layer), "fp8_e4m3", bias=True)
    twin.load_state_dict(layer.state_dict(), assign=True)
    assert twin.encoded.prob_bits is None  # the decoder sums the table itself
    x = torch.randn(2, 32)
    torch.testing.assert_close(twin(x), layer(x), rtol=0, atol=0)
    twin.check()
    assert twin.encoded.prob_bits == 12
    torch.testing.assert_close(twin(x), layer(x), rtol=0, atol=0)


def _shapes(layer):
    return {
        "words": tuple(layer.words.shape),
        "lane_starts": tuple(layer.lane_starts.shape),
        "freqs": tuple(layer.freqs.shape),
        "scales": tuple(layer.scales.shape),
    }


def test_forward_builds_the_weight_in_the_input_dtype():
    lin = nn.Linear(32, 16)
    layer = EntQuantLinear.from_linear(lin, 14.5, max_iter=20)
    x = torch.randn(2, 32, dtype=torch.bfloat16)
    assert layer.dense(torch.bfloat16).dtype == torch.bfloat16
    ref = F.linear(x.float(), layer.weight, lin.bias).to(torch.bfloat16)
    torch.testing.assert_close(layer(x), ref, rtol=2e-2, atol=2e-2)


def test_a_shared_decode_cache_keeps_within_its_budget(gpt):
    from icml26.entquant.linear import set_decode_cache

    model = copy.deepcopy(gpt)
    quantize(model, 14.5, max_iter=20, progress=False)
    ids = torch.randint(0, model.config.vocab_size, (1, 8))
    with torch.no_grad():
        ref = model(ids).logits
    layers = [m for m in model.modules() if isinstance(m, EntQuantLinear)]
    sizes = [m.out_features * m.in_features * 4 for m in layers]
    cache = set_decode_cache(model, sum(sizes))  # room for every layer: decode once
    with torch.no_grad():
        torch.testing.assert_close(model(ids).logits, ref, rtol=0, atol=0)
        model(ids)
    assert cache.misses == len(layers) and cache.hits == len(layers)
    assert cache.nbytes == sum(sizes)
    half = set_decode_cache(model, sum(sizes) // 2)  # never above budget; no thrashing
    with torch.no_grad():
        torch.testing.assert_close(model(ids).logits, ref, rtol=0, atol=0)
        model(ids)
    assert 0 < half.nbytes <= sum(sizes) // 2
    kept = half.nbytes // max(sizes)  # these layers hit on the second pass, the rest miss
    assert half.hits >= kept > 0 and half.misses == 2 * len(layers) - half.hits


def test_quantize_replaces_only_the_block_linears(gpt):
    model = copy.deepcopy(gpt)
    names = target_linears(model)
    assert len(names) == 2 * 7 and all(".layers." in n for n in names)
    report = quantize(model, 14.5, max_iter=20, progress=False)
    assert [r.name for r in report.layers] == names
    assert isinstance(model.lm_head, nn.Linear) and isinstance(
        model.model.embed_tokens, nn.Embedding
    )
    assert all(isinstance(model.get_submodule(n), EntQuantLinear) for n in names)
    entropy = (
        sum(r.entropy_bits * r.shape[0] * r.shape[1] for r in report.layers) / report.num_params
    )
    assert 2 < entropy < 4 and report.params_per_second > 0
    # what is stored on top of the entropy: tables (4096 bits), scales, lane states and offsets
    overhead = sum(4096 + 32 * r.shape[0] + 64 for r in report.layers) / report.num_params
    assert entropy < report.bits_per_param < 1.02 * entropy + overhead


def test_a_layer_with_super_weights_falls_back_to_absmax(gpt):
    model = copy.deepcopy(gpt)
    with torch.no_grad():
        model.model.layers[0].mlp.down_proj.weight[3, 5] = 100.0
    report = quantize(model, 14.5, max_iter=5, progress=False)
    flagged = {r.name: r for r in report.layers if r.fallback}
    assert list(flagged) == ["model.layers.0.mlp.down_proj"]
    assert flagged["model.layers.0.mlp.down_proj"].lam == 0.0


def test_save_and_load_give_identical_outputs(gpt, tmp_path):
    model = copy.deepcopy(gpt)
    report = quantize(model, 14.5, max_iter=20, progress=False)
    save_compressed(model, tmp_path)
    x = torch.randint(0, 256, (2, 9))
    with torch.no_grad():
        expected = model(input_ids=x).logits
        loaded = load_compressed(tmp_path)  # rebuilt from config.json
        torch.testing.assert_close(loaded(input_ids=x).logits, expected, rtol=0, atol=0)
        skeleton = load_compressed(tmp_path, model=tiny_gpt(seed=1, dim=32, layers=2, heads=2))
        torch.testing.assert_close(skeleton(input_ids=x).logits, expected, rtol=0, atol=0)
    # The file's own bytes: the coded tensors, with lane offsets stored as int32 (in memory int64)
    assert abs(bits_per_param(tmp_path) - report.bits_per_param) < 0.01
    assert not list(tmp_path.glob(".*tmp"))


def _layer_byte_range(path: Path, key: str) -> tuple[int, int]:
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    begin, end = json.loads(raw[8 : 8 + n])[key]["data_offsets"]
    return 8 + n + begin, 8 + n + end


def test_corrupted_truncated_or_mismatched_files_are_clear_errors(gpt, tmp_path):
    model = copy.deepcopy(gpt)
    quantize(model, 14.5, max_iter=5, progress=False)
    save_compressed(model, tmp_path)
    weights = tmp_path / WEIGHTS
    good = weights.read_bytes()
    begin, end = _layer_byte_range(weights, "model.layers.1.self_attn.q_proj.words")
    bad = bytearray(good)
    bad[(begin + end) // 2] ^= 0x5A
    weights.write_bytes(bytes(bad))
    with pytest.raises(ValueError, match="CRC mismatch"):
        load_compressed(tmp_path)
    weights.write_bytes(good[: len(good) // 2])
    with pytest.raises(ValueError, match="truncated"):
        load_compressed(tmp_path)
    weights.write_bytes(good)
    with pytest.raises(ValueError, match=r"does not fit|no layer|in_features"):
        load_compressed(tmp_path, model=tiny_gpt(seed=0, dim=64, layers=2, heads=2))
    (tmp_path / MANIFEST).write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_compressed(tmp_path)
    with pytest.raises(ValueError, match="not a compressed checkpoint"):
        load_compressed(tmp_path / "missing")


def test_bad_model_inputs():
    with pytest.raises(TypeError, match=r"nn\.Module"):
        quantize("model", 1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no linear layer matched"):
        quantize(nn.Sequential(nn.Linear(4, 4)), 1.0)
    with pytest.raises(ValueError, match="no EntQuantLinear"):
        save_compressed(nn.Linear(2, 2), "unused")


def _quantize_on_rank():
    # Every rank builds the same model (plain torch: spawned ranks skip importing transformers);
    # the ranks split the layers and exchange the results.
    torch.manual_seed(0)
    model = nn.Sequential(
        *[nn.Sequential(nn.Linear(24, 40), nn.GELU(), nn.Linear(40, 24)) for _ in range(3)]
    )
    report = quantize(model, 14.5, max_iter=10, progress=False)
    words = {n: m.words.clone() for n, m in model.named_modules() if isinstance(m, EntQuantLinear)}
    with torch.no_grad():
        logits = model(torch.linspace(-1, 1, 48).reshape(2, 24))
    return words, [r.name for r in report.layers], logits


def test_two_gloo_ranks_compress_the_same_model_as_one_process():
    from icml26.testing import run_distributed

    ranks = run_distributed(_quantize_on_rank, world_size=2)
    single = _quantize_on_rank()
    assert len(single[1]) == 6
    for words, names, logits in ranks:
        assert names == single[1]
        assert all(torch.equal(words[n], single[0][n]) for n in names)
        torch.testing.assert_close(logits, single[2], rtol=0, atol=0)
