"""EntQuant as a transformers quantization method: save_pretrained / from_pretrained."""

import copy
import json

import pytest
import torch
from safetensors import safe_open
from transformers import AutoModelForCausalLM

from icml26.entquant import EntQuantConfig, EntQuantLinear, quantize
from icml26.entquant.models import tiny_gpt


@pytest.fixture(scope="module")
def compressed(tmp_path_factory):
    model = tiny_gpt(seed=0, dim=32, layers=2, heads=2).eval()
    quantize(model, 14.5, max_iter=20, progress=False)
    ids = torch.randint(0, 256, (2, 12), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        logits = model(ids).logits
    path = tmp_path_factory.mktemp("hf")
    model.save_pretrained(path)
    return path, ids, logits


def test_save_pretrained_writes_the_coded_tensors_and_the_config(compressed):
    path, _, _ = compressed
    config = json.loads((path / "config.json").read_text())["quantization_config"]
    assert config == {"quant_method": "entquant", "qtype": "fp8_e4m3", "lam": 14.5,
                      "decode": "lazy"}  # fmt: skip
    with safe_open(str(path / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
        assert f.get_slice("model.layers.0.mlp.down_proj.words").get_dtype() == "I16"
    assert "model.layers.0.mlp.down_proj.words" in keys
    assert "model.layers.0.mlp.down_proj.weight" not in keys  # no dense copy of a coded layer
    assert "lm_head.weight" in keys or "model.embed_tokens.weight" in keys


def test_from_pretrained_gives_the_same_logits_and_round_trips(compressed, tmp_path):
    path, ids, logits = compressed
    model, info = AutoModelForCausalLM.from_pretrained(path, output_loading_info=True)
    assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys"))
    layer = model.model.layers[1].self_attn.q_proj
    assert isinstance(layer, EntQuantLinear) and layer.words.dtype == torch.int16
    assert isinstance(model.config.quantization_config, EntQuantConfig)
    with torch.no_grad():
        torch.testing.assert_close(model(ids).logits, logits, rtol=0, atol=0)
    model.save_pretrained(tmp_path)  # and back: the same tensors
    with (
        safe_open(str(path / "model.safetensors"), "pt") as a,
        safe_open(str(tmp_path / "model.safetensors"), "pt") as b,
    ):
        assert set(a.keys()) == set(b.keys())
        assert all(torch.equal(a.get_tensor(k), b.get_tensor(k)) for k in a.keys())  # noqa: SIM118


def test_bf16_loading_keeps_the_scales_and_codes_exact(compressed):
    path, ids, logits = compressed
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16)
    layer = model.model.layers[0].mlp.up_proj
    assert layer.scales.dtype == torch.float32 and layer.words.dtype == torch.int16
    assert model.model.embed_tokens.weight.dtype == torch.bfloat16
    with torch.no_grad():
        out = model(ids).logits.float()
    assert (out.softmax(-1) - logits.softmax(-1)).abs().max() < 0.05


def test_coded_layers_are_never_built_dense(compressed, monkeypatch):
    """The loader builds the model on the meta device and swaps the compressed linears before
    any weight is read: no real (out, in) float tensor is ever made for them."""
    path, _, _ = compressed
    shapes = set()
    real_init = torch.nn.Linear.reset_parameters

    def spy(self):
        if self.weight.device.type != "meta":
            shapes.add(tuple(self.weight.shape))
        return real_init(self)

    monkeypatch.setattr(torch.nn.Linear, "reset_parameters", spy)
    model = AutoModelForCausalLM.from_pretrained(path)
    coded = {(m.out_features, m.in_features) for m in model.modules()
             if isinstance(m, EntQuantLinear)}  # fmt: skip
    assert coded and not (shapes & coded)


def test_a_full_precision_checkpoint_cannot_be_quantised_on_load(tmp_path):
    model = tiny_gpt(seed=0, dim=32, layers=1, heads=2)
    model.save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="pre-quantized"):
        AutoModelForCausalLM.from_pretrained(tmp_path, quantization_config=EntQuantConfig())


def test_a_quantised_copy_leaves_the_original_alone():
    model = tiny_gpt(seed=0, dim=32, layers=1, heads=2)
    q = copy.deepcopy(model)
    quantize(q, 14.5, max_iter=5, progress=False)
    assert getattr(model.config, "quantization_config", None) is None


def test_streaming_compression_equals_quantize_then_save(tmp_path):
    """Shard by shard, tensor by tensor: the same checkpoint as the in-memory path, from a
    source split into several shards and into several output shards."""
    from icml26.entquant.compress import compress_streaming

    model = tiny_gpt(seed=1, dim=32, layers=2, heads=2).eval()
    model.save_pretrained(tmp_path / "src", max_shard_size="40KB")
    assert len(list((tmp_path / "src").glob("*.safetensors"))) > 1
    summary = compress_streaming(tmp_path / "src", tmp_path / "stream", 14.5, max_iter=20,
                                 shard_bytes=30_000, progress=False)  # fmt: skip
    assert summary["layers"] == 2 * 7 and summary["output shards"] > 1
    assert (tmp_path / "stream" / "model.safetensors.index.json").is_file()
    quantize(model, 14.5, max_iter=20, progress=False)
    ids = torch.randint(0, 256, (1, 10), generator=torch.Generator().manual_seed(1))
    streamed = AutoModelForCausalLM.from_pretrained(tmp_path / "stream")
    with torch.no_grad():
        torch.testing.assert_close(streamed(ids).logits, model(ids).logits, rtol=0, atol=0)
    layer = streamed.model.layers[1].mlp.gate_proj
    ref = model.model.layers[1].mlp.gate_proj
    assert torch.equal(layer.words, ref.words) and torch.equal(layer.scales, ref.scales)
    with pytest.raises(ValueError, match="already quantised"):
        compress_streaming(tmp_path / "stream", tmp_path / "again", 14.5, progress=False)
    with pytest.raises(ValueError, match=r"config\.json"):
        compress_streaming(tmp_path / "nothing", tmp_path / "x", 14.5, progress=False)
    with pytest.raises(ValueError, match="new or empty"):
        compress_streaming(tmp_path / "src", tmp_path / "stream", 14.5, progress=False)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no leftovers


def test_compress_command_streams(tmp_path, capsys):
    from icml26.entquant.cli import main

    tiny_gpt(seed=0, dim=32, layers=1, heads=2).save_pretrained(tmp_path / "src")
    args = ["compress", "--model", str(tmp_path / "src"), "--out", str(tmp_path / "out"),
            "--stream", "--max-iter", "5"]  # fmt: skip
    assert main(args) == 0
    assert "streamed from 1 shard(s)" in capsys.readouterr().out
    assert AutoModelForCausalLM.from_pretrained(tmp_path / "out").config.quantization_config


def test_loading_a_compressed_model_peaks_below_the_fp32_one(tmp_path):
    """from_pretrained + one forward, each in a fresh process: the EntQuant checkpoint's peak
    resident memory stays below the fp32 checkpoint's, and its logits equal those before
    saving."""
    from icml26.entquant.bench import load_memory

    model = tiny_gpt(seed=0, dim=256, layers=2, heads=4).eval()
    out = load_memory(model, 14.5, tmp_path, max_iter=10)
    assert out["logits max |difference| after saving and loading"] == 0.0
    assert out["peak MiB, EntQuant checkpoint"] < out["peak MiB, fp32 checkpoint"]


def test_layers_survive_dtype_and_device_moves_and_copies():
    """model.to(bf16) keeps the scales in their stored dtype and drops decoded copies; a deep
    copy's decode cache entries belong to the copy."""
    from icml26.entquant import set_decode_cache

    model = tiny_gpt(seed=0, dim=32, layers=1, heads=2).eval()
    quantize(model, 14.5, max_iter=5, progress=False, decode="cached")
    layer = model.model.layers[0].mlp.up_proj
    scales = layer.scales.clone()
    ids = torch.randint(0, 256, (1, 6))
    with torch.no_grad():
        model(ids)
    assert layer._dense is not None
    model.to(torch.bfloat16)
    assert layer.scales.dtype == torch.float32 and torch.equal(layer.scales, scales)
    assert layer._dense is None
    with torch.no_grad():
        assert model(ids).logits.dtype == torch.bfloat16
    lazy = tiny_gpt(seed=0, dim=32, layers=1, heads=2).eval()
    quantize(lazy, 14.5, max_iter=5, progress=False)
    cache = set_decode_cache(lazy, 10**8)
    with torch.no_grad():
        lazy(ids)
    twin = copy.deepcopy(lazy)
    with torch.no_grad():
        twin(ids)
    assert twin.model.layers[0].mlp.up_proj.cache is not cache
    assert twin.model.layers[0].mlp.up_proj.cache.hits == cache.misses  # the copy's own entries


def test_a_corrupted_checkpoint_fails_at_load(compressed, tmp_path):
    from safetensors.torch import load_file, save_file

    path, _, _ = compressed
    tensors = load_file(path / "model.safetensors")
    tensors["model.layers.0.mlp.up_proj.lane_starts"][-1] += 3
    (tmp_path / "bad").mkdir()
    save_file(tensors, tmp_path / "bad" / "model.safetensors", metadata={"format": "pt"})
    (tmp_path / "bad" / "config.json").write_text((path / "config.json").read_text())
    with pytest.raises(ValueError, match="lane offsets"):
        AutoModelForCausalLM.from_pretrained(tmp_path / "bad")


def test_a_base_model_loads_from_the_causal_lm_checkpoint(compressed):
    from transformers import AutoModel

    path, _, _ = compressed
    base = AutoModel.from_pretrained(path)
    assert isinstance(base.layers[0].mlp.down_proj, EntQuantLinear)
