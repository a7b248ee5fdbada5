"""Bad input at the public API ends in a ValueError / TypeError that names the argument; a
legal but degenerate input (an all-zero row: a pruned neuron) is handled, not turned into NaN."""

import pytest
import torch
from torch import nn

from icml26.entquant import load_compressed, quantize, quantize_linear
from icml26.testing import assert_rejects

RETURNED = {
    "LayerReport": "quantize reports it",
    "QuantizeReport": "quantize returns it",
    "QuantizedWeight": "quantize_linear returns it",
}
"""Public names a user receives rather than builds (records the package returns): no input."""


@pytest.mark.parametrize("lam", [0.0, 3.9, 58.0])
@pytest.mark.parametrize("qtype", ["fp8_e4m3", "int8"])
def test_an_all_zero_row_stays_zero_and_finite(lam, qtype):
    torch.manual_seed(0)
    w = torch.randn(6, 32)
    w[2] = 0.0
    w[4] = 1e-38  # subnormal: its absmax scale would overflow as well
    q = quantize_linear(w, lam, qtype, max_iter=30)
    w_hat = q.dequantize()
    assert torch.isfinite(w_hat).all() and torch.isfinite(q.scales).all()
    assert (w_hat[2] == 0).all()


@pytest.mark.parametrize(
    "w, name",
    [
        (torch.zeros(4, 4, dtype=torch.long), "W"),
        (torch.full((4, 4), float("nan")), "W"),
        (torch.zeros(0, 4), "W"),
        (torch.zeros(4), "W"),
    ],
)
def test_quantize_linear_names_a_bad_matrix(w, name):
    assert_rejects(lambda: quantize_linear(w, 1.0), name)


@pytest.mark.parametrize("lam", [-1.0, float("nan"), float("inf")])
def test_lambda_must_be_finite_and_non_negative(lam):
    assert_rejects(lambda: quantize_linear(torch.randn(4, 8), lam), "lam")


def test_quantize_names_what_is_not_a_model_or_has_no_layer():
    assert_rejects(lambda: quantize("model", 1.0), "model")
    assert_rejects(lambda: quantize(nn.Sequential(nn.ReLU()), 1.0, progress=False), "include")


def test_load_compressed_names_a_missing_or_broken_folder(tmp_path):
    assert_rejects(lambda: load_compressed(tmp_path / "absent", nn.Linear(2, 2)), "absent")
    assert_rejects(lambda: load_compressed(nn.Linear(2, 2), tmp_path), "directory")


from icml26.entquant import (  # noqa: E402
    DecodeCache,
    EntQuantConfig,
    bits_per_param,
    encode,
    entropy_bits,
    target_linears,
)


@pytest.mark.parametrize("codes", [torch.rand(10), torch.zeros(0, dtype=torch.uint8), [1, 2]])
def test_symbol_functions_want_uint8_codes(codes):
    assert_rejects(lambda: entropy_bits(codes), "codes")
    assert_rejects(lambda: encode(codes), "codes")


def test_configs_and_helpers_name_a_bad_setting(tmp_path):
    assert_rejects(lambda: EntQuantConfig(lam=-1.0), "lam")
    assert_rejects(lambda: EntQuantConfig(decode="eager"), "decode")
    assert_rejects(lambda: DecodeCache(-1), "max_bytes")
    assert_rejects(lambda: bits_per_param(tmp_path), "entquant.json")
    assert_rejects(lambda: target_linears(nn.Linear(2, 2), "("), "include")


def test_codes_layers_caches_and_files_name_bad_inputs(tmp_path):
    from icml26.entquant import (
        EntQuantLinear,
        compress_streaming,
        decode,
        encode,
        save_compressed,
        set_decode_cache,
    )

    enc = encode(torch.randint(0, 256, (4, 8), dtype=torch.uint8))
    scales = torch.ones(4)
    assert_rejects(lambda: EntQuantLinear(enc, scales, "fp4"), "qtype")
    assert_rejects(lambda: EntQuantLinear(enc, torch.ones(3), "int8"), "scales")
    assert_rejects(lambda: decode("codes"), "enc")
    assert_rejects(lambda: set_decode_cache("model", 10), "model")
    assert_rejects(lambda: set_decode_cache(nn.Linear(2, 2), -1), "max_bytes")
    assert_rejects(lambda: set_decode_cache(nn.Linear(2, 2), 1.5), "max_bytes")
    assert_rejects(lambda: save_compressed(nn.Linear(2, 2), tmp_path / "out"), "EntQuantLinear")
    missing = tmp_path / "none"
    assert_rejects(lambda: compress_streaming(missing, tmp_path / "o", 1.0), "config.json")


def test_encoded_codes_with_a_wrong_shape_are_named():
    from icml26.entquant.coding import EncodedCodes, decode, encode

    enc = encode(torch.randint(0, 7, (8, 16), dtype=torch.uint8))
    assert decode(enc).shape == (8, 16)
    bigger = EncodedCodes(enc.words, enc.starts, enc.freqs, (80, 160), enc.prob_bits)
    assert_rejects(lambda: decode(bigger), ["shape", "12800"])
    assert_rejects(lambda: EncodedCodes(enc.words, enc.starts, enc.freqs, (8, 0)), "shape")
    assert_rejects(lambda: EncodedCodes(enc.words, enc.starts, enc.freqs, [8, 16]), "shape")
    assert_rejects(lambda: EncodedCodes(enc.words, enc.starts, enc.freqs[:10], (8, 16)), "freqs")
    assert_rejects(lambda: EncodedCodes(enc.words[None], enc.starts, enc.freqs, (8, 16)), "words")


from hypothesis import given, settings  # noqa: E402

from icml26.testing.strategies import bad_tensors, out_of_range  # noqa: E402

DRAWS = settings(max_examples=30, deadline=None)


@DRAWS
@given(w=bad_tensors((None, 8)))
def test_weight_matrices_of_every_bad_kind_are_named(w):
    """NaN / inf, a wrong rank, integer, boolean or complex values, or no rows."""
    assert_rejects(lambda: quantize_linear(w, 1.0, "int8", max_iter=2), "W")


@DRAWS
@given(lam=out_of_range(0.0, None))
def test_every_bad_lambda_is_named(lam):
    assert_rejects(lambda: quantize_linear(torch.randn(4, 8), lam, "int8", max_iter=2), "lam")


def test_a_boolean_lambda_is_refused():
    assert_rejects(lambda: quantize_linear(torch.randn(4, 8), True), "lam")  # ran as lambda 1
