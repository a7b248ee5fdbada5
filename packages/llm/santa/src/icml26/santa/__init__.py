"""icml26.santa: SANTA / S²ANTA sampled value aggregation for decode attention.

Paper: "SANTA" (arXiv 2605.01910, ICML 2026; the authors' CUDA code is OPUSLab/SANTA).
Decode attention keeps exact scores but aggregates only S sampled value rows (i.i.d.,
systematic, or per-tile systematic with fixed or proportional budgets). The estimator and its
Triton kernel live in ``icml26.kernels.santa``; this package plugs it into Hugging Face
transformers (``enable_santa`` / the ``"santa"`` attention implementation: dense prefill, SANTA
decode, ``generate()`` unchanged) and measures it on SmolLM2-135M-Instruct.
"""

from icml26.kernels.santa import SantaOutput, santa_decode, santa_decode_reference
from icml26.santa._results import package_version
from icml26.santa.attention import SantaState, disable_santa, enable_santa, santa_attention_forward
from icml26.santa.model import load_smollm2, python_docs_text, tiny_llama

# The version lives in pyproject.toml only (installed metadata, or the source tree's file).
__version__ = package_version("icml26-santa", __file__)

__all__ = [
    "SantaOutput",
    "SantaState",
    "disable_santa",
    "enable_santa",
    "load_smollm2",
    "python_docs_text",
    "santa_attention_forward",
    "santa_decode",
    "santa_decode_reference",
    "tiny_llama",
]
