"""LUCID as a Hugging Face transformers attention implementation: ``attn_implementation="lucid"``.

``register_lucid()`` adds ``"lucid"`` to ``transformers.AttentionInterface`` (and the SDPA mask
builder to ``AttentionMaskInterface``), so any model that dispatches attention through the
interface (Llama, Qwen2, Mistral, SmolLM2, ...) runs LUCID for training and for ``generate()``:

    register_lucid()
    model = LlamaForCausalLM._from_config(config, attn_implementation="lucid")

The function receives the layer's query (B, H, T_q, D) and the cache's full key and value
(B, H_kv, T_k, D) after rotary embeddings, computes ``V' = L^{-1} V`` over all T_k keys with
``icml26.kernels.lucid.lucid_solve``, and hands (Q, K, V') to transformers' own SDPA path (masks,
GQA and scaling as for ``"sdpa"``).

Two caveats. The HF cache stores V, not V', so each decode step re-solves the whole prefix
(O(T_k^2 d) per step instead of O(T_k d)); ``LucidAttention`` with a ``LucidCache`` is the
efficient path. And L has no padding mask: left-padded tokens enter the preconditioner of every
later token, so batch generation must use right padding or no padding.
"""

IMPLEMENTATION = "lucid"


def lucid_attention_forward(module, query, key, value, attention_mask, **kwargs):
    """The ``AttentionInterface`` function: SDPA on (Q, K, L^{-1} V)."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from icml26.kernels.lucid import lucid_solve

    vp = lucid_solve(key, value).to(value.dtype)
    return sdpa_attention_forward(module, query, key, vp, attention_mask, **kwargs)


def register_lucid() -> str:
    """Register ``"lucid"`` with transformers (idempotent); returns the implementation name."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(IMPLEMENTATION, lucid_attention_forward)
    # Without a mask builder transformers would give an unknown implementation no mask at all.
    AttentionMaskInterface.register(IMPLEMENTATION, sdpa_mask)
    return IMPLEMENTATION
