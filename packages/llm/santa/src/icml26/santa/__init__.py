"""icml26.santa: SANTA / S²ANTA sampled value aggregation for decode attention.

Paper: "SANTA" (arXiv 2605.01910, ICML 2026; the authors' CUDA code is OPUSLab/SANTA).
Decode attention keeps exact scores but aggregates only S sampled value rows (i.i.d.,
systematic, or per-tile systematic with fixed or proportional budgets). The estimator and its
Triton kernel live in ``icml26.kernels.santa``; this package plugs it into Hugging Face
transformers (``enable_santa`` / the ``"santa"`` attention implementation: dense prefill, SANTA
decode, ``generate()`` unchanged; padded batches, static caches, sliding windows and
``torch.compile`` sample too) and measures it on SmolLM2-135M-Instruct at the paper's operating
point (``operating_point``: the authors' tile sizes, ~16 draws per tile).
"""

from icml26.kernels.santa import (
    SantaOutput,
    expected_output,
    santa_decode,
    santa_decode_reference,
)
from icml26.santa.attention import (
    SantaState,
    disable_santa,
    enable_santa,
    official_block_n,
    operating_point,
    santa_attention_forward,
)
from icml26.santa.model import corpus_text, load_smollm2, python_docs_text, tiny_llama
from icml26.testing.results import package_version

# The version lives in pyproject.toml only (installed metadata, or the source tree's file).
__version__ = package_version("icml26-santa", __file__)

__all__ = [
    "SantaOutput",
    "SantaState",
    "corpus_text",
    "disable_santa",
    "enable_santa",
    "expected_output",
    "load_smollm2",
    "official_block_n",
    "operating_point",
    "python_docs_text",
    "santa_attention_forward",
    "santa_decode",
    "santa_decode_reference",
    "tiny_llama",
]
