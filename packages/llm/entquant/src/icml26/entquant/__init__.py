"""EntQuant: entropy-coded, data-free quantization of transformer checkpoints (arXiv 2601.22787).

- ``quantize_linear(W, lam)``: the per-row scale search for one matrix -> ``QuantizedWeight``;
- ``quantize(model, lam)``: every linear layer of the blocks -> ``EntQuantLinear`` (rANS-coded
  codes, decoded on the fly or once);
- ``save_compressed`` / ``load_compressed`` / ``bits_per_param``: safetensors + JSON manifest;
- ``encode`` / ``decode``: the interleaved-rANS coder of icml26-kernels on code matrices;
- importing the package registers ``quant_method="entquant"`` with transformers: a quantised
  transformers model round-trips through ``save_pretrained`` / ``from_pretrained``
  (``icml26.entquant.hf``).
"""

from icml26.entquant.coding import EncodedCodes, decode, encode, entropy_bits
from icml26.entquant.compress import compress_streaming
from icml26.entquant.hf import EntQuantConfig
from icml26.entquant.layers import LayerReport, QuantizeReport, quantize, target_linears
from icml26.entquant.linear import DecodeCache, EntQuantLinear, set_decode_cache
from icml26.entquant.quantize import QuantizedWeight, quantize_linear
from icml26.entquant.storage import bits_per_param, load_compressed, save_compressed

__all__ = [
    "DecodeCache",
    "EncodedCodes",
    "EntQuantConfig",
    "EntQuantLinear",
    "LayerReport",
    "QuantizeReport",
    "QuantizedWeight",
    "bits_per_param",
    "compress_streaming",
    "decode",
    "encode",
    "entropy_bits",
    "load_compressed",
    "quantize",
    "quantize_linear",
    "save_compressed",
    "set_decode_cache",
    "target_linears",
]
