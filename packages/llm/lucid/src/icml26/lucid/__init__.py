"""icml26-lucid: LUCID attention (arXiv 2602.10410) for PyTorch and Hugging Face transformers.

``lucid_attention(q, k, v)`` (the op, from icml26-kernels: Triton solve on CUDA, reference on CPU),
``LucidAttention`` (a drop-in causal self-attention layer with a (K, V') cache), ``lucid_append``
(extend a V' cache), ``register_lucid()`` (``attn_implementation="lucid"`` in transformers) and
``LucidDynamicCache`` (its generation cache of keys and V').
"""

from icml26.kernels.lucid import (
    lucid_attention,
    lucid_attention_reference,
    lucid_decode_reference,
    lucid_preconditioner,
    lucid_solve,
    lucid_solve_reference,
)
from icml26.lucid.attention import (
    LucidAttention,
    LucidCache,
    apply_rope,
    lucid_append,
    masked_lucid_solve,
)
from icml26.lucid.hf import LucidDynamicCache, register_lucid
from icml26.lucid.model import TinyLM, TinyLMConfig

__all__ = [
    "LucidAttention",
    "LucidCache",
    "LucidDynamicCache",
    "TinyLM",
    "TinyLMConfig",
    "apply_rope",
    "lucid_append",
    "lucid_attention",
    "lucid_attention_reference",
    "lucid_decode_reference",
    "lucid_preconditioner",
    "lucid_solve",
    "lucid_solve_reference",
    "masked_lucid_solve",
    "register_lucid",
]
