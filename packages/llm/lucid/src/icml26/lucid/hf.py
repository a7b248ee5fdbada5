"""LUCID as a Hugging Face transformers attention implementation: ``attn_implementation="lucid"``.

``register_lucid()`` adds ``"lucid"`` to ``transformers.AttentionInterface`` (and the SDPA mask
builder to ``AttentionMaskInterface``), so any model that dispatches attention through the
interface (Llama, Qwen2, Mistral, SmolLM2, ...) runs LUCID for training and for ``generate()``:

    register_lucid()
    model = LlamaForCausalLM._from_config(config, attn_implementation="lucid")

The function receives the layer's query (B, H, T_q, D) and the cache's full key and value
(B, H_kv, T_k, D) after rotary embeddings, computes ``V' = L^{-1} V`` over all T_k keys with
``icml26.kernels.lucid.lucid_solve``, and computes attention on (Q, K, V'): unmasked causal
self-attention (training, unpadded prompts) through ``icml26.kernels.attention.softmax_attention``
when its Triton kernel applies (CUDA), everything else through transformers' own SDPA path
(masks, GQA and scaling as for ``"sdpa"``).

The HF cache stores V, not V'. So that a decode step does not re-solve the whole prefix
(O(T_k^2 d) per step), each attention module keeps, outside autograd only (inference), the K, V
and V' of its previous call: when the new call's K and V start with exactly those rows (checked,
O(T_k d)), only the new rows are solved (``lucid_append``, O(T_k d) per token); anything else
(a new prompt, beam reordering, training) solves from scratch. The price is one extra reference
to the previous step's K and V per layer while generating.

L has no padding mask: left-padded tokens enter the preconditioner of every later token, so batch
generation must use right padding or no padding.
"""

import torch

IMPLEMENTATION = "lucid"


def lucid_attention_forward(
    module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None, **kwargs
):
    """The ``AttentionInterface`` function: attention on (Q, K, L^{-1} V).

    Full causal self-attention with no mask (training, or a prompt without padding) goes to
    ``softmax_attention`` when its Triton kernel applies (CUDA tensors, see ``ICML26_KERNELS``);
    everything else (padding masks, decode steps, dropout, CPU tensors) to transformers' SDPA
    function, which handles masks and GQA for every case."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from icml26.kernels import Backend, select_backend
    from icml26.kernels.attention import softmax_attention

    if not getattr(module, "is_causal", True):
        # an encoder's attention layer: L is lower-triangular, so there is no LUCID for it
        raise ValueError(
            f"LUCID attention needs a causal (decoder) attention layer; "
            f"{type(module).__name__}.is_causal is False"
        )
    window = kwargs.get("sliding_window")
    if window is not None and key.shape[2] > window:
        # L would still span every earlier key while the softmax sees only the last `window`:
        # that mixes two different attentions, so refuse instead of computing neither
        raise ValueError(
            f"LUCID attention does not implement sliding-window attention: {key.shape[2]} keys "
            f"exceed the layer's sliding_window of {window}; set config.sliding_window = None "
            "(or keep sequences within the window)"
        )
    vp = _preconditioned_values(module, key, value).to(value.dtype)
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    if (
        causal
        and attention_mask is None
        and not dropout
        and 1 < query.shape[2] == key.shape[2]
        and query.dtype != torch.float64
        and kwargs.get("position_bias") is None
        and kwargs.get("softcap") is None
        and select_backend(query, key, vp) is Backend.TRITON
    ):
        out = softmax_attention(query, key, vp, causal=True, scale=scaling)
        return out.transpose(1, 2).contiguous(), None  # (B, T, H, D), as transformers expects
    return sdpa_attention_forward(
        module,
        query,
        key,
        vp,
        attention_mask,
        dropout=dropout,
        scaling=scaling,
        is_causal=is_causal,
        **kwargs,
    )


def _preconditioned_values(module, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """V' = L^{-1} V for (B, H_kv, T_k, D) key/value, reusing the module's previous V' rows."""
    from icml26.kernels.lucid import lucid_solve
    from icml26.lucid.attention import lucid_append

    if torch.is_grad_enabled():
        module._lucid_prefix = None
        return lucid_solve(key, value)
    prev = getattr(module, "_lucid_prefix", None)
    vp = None
    if prev is not None:
        k_old, v_old, vp_old = prev
        N = k_old.shape[2]
        if (
            k_old.shape[:2] == key.shape[:2]
            and 0 < N < key.shape[2]
            and torch.equal(key[:, :, :N], k_old)
            and torch.equal(value[:, :, :N], v_old)
        ):
            vp_new = lucid_append(k_old, vp_old, key[:, :, N:], value[:, :, N:])
            vp = torch.cat([vp_old, vp_new], dim=2)
    if vp is None:
        vp = lucid_solve(key, value)
    # a plain attribute, not a buffer: never saved, never moved, never part of the state dict
    module._lucid_prefix = (key, value, vp)
    return vp


def register_lucid() -> str:
    """Register ``"lucid"`` with transformers (idempotent); returns the implementation name."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(IMPLEMENTATION, lucid_attention_forward)
    # Without a mask builder transformers would give an unknown implementation no mask at all.
    AttentionMaskInterface.register(IMPLEMENTATION, sdpa_mask)
    return IMPLEMENTATION
