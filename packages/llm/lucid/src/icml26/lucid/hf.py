"""LUCID as a Hugging Face transformers attention implementation: ``attn_implementation="lucid"``.

``register_lucid()`` adds ``"lucid"`` to ``transformers.AttentionInterface`` (and the SDPA mask
builder to ``AttentionMaskInterface``), so any model that dispatches attention through the
interface (Llama, Qwen2, Mistral, SmolLM2, ...) runs LUCID for training and for ``generate()``:

    register_lucid()
    model = LlamaForCausalLM._from_config(config, attn_implementation="lucid")
    model.generate(ids, attention_mask=mask, past_key_values=LucidDynamicCache())

The function receives the layer's query (B, H, T_q, D) and the cache's key and value after
rotary embeddings, computes ``V' = L^{-1} V`` (``icml26.kernels.lucid.lucid_solve``) in fp32 and
attention on (Q, K, V') in the model's dtype (V' rounded to it; icml26-kernels'
``lucid_attention`` bounds the error that adds). Unmasked causal self-attention
(training, unpadded prompts) goes through ``icml26.kernels.attention.softmax_attention`` when its
Triton kernel applies (CUDA), everything else through transformers' own SDPA path.

Masks: L respects the attention mask. A key the mask hides from query i enters no row i of L
(``masked_preconditioner``), so left-padded batches give the unpadded outputs at the real tokens
and packed sequences (a block-diagonal mask, e.g. from ``position_ids`` restarting at 0) get one L
per sequence.

Caches: ``LucidDynamicCache`` stores the rotated keys and V' per layer, both in the model's
dtype. Each new V' row is computed in fp32 from the rounded rows before it, so a cached row is
off the exact V' by at most ||L^{-1}||_inf u max|V'| (u the dtype's unit roundoff: the rounding
errors delta enter as L^{-1} delta) when rows arrive one at a time; rows appended as a chunk (a
prompt, or several tokens at once) carry the chunk's own block of L too, L^{-1} diag(L_cc) delta,
at most ||L^{-1}||_inf max_c ||L_cc||_inf u max|V'|. A decode step then
solves only the new token's row: O(T d) per token, no host synchronisation, and one pass over the
cache for both sums through the fused ``lucid_decode`` op (Triton on CUDA) when the step has no
padding mask. With transformers' default ``DynamicCache`` (which stores V, not V') the module
keeps its previous call's K, V and V' and, when the new K and V extend them (checked with
``torch.equal``, a host synchronisation), solves only the new rows; with a padding mask it
solves the whole prefix again. Use ``LucidDynamicCache`` for generation.
"""

import torch
from transformers.cache_utils import Cache, DynamicLayer

IMPLEMENTATION = "lucid"


def lucid_attention_forward(
    module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None, **kwargs
):
    """The ``AttentionInterface`` function: attention on (Q, K, L^{-1} V).

    Full causal self-attention with no mask (training, or a prompt without padding) goes to
    ``softmax_attention`` when its Triton kernel applies (CUDA tensors, see ``ICML26_KERNELS``);
    everything else (padding masks, decode steps, dropout, CPU tensors) to transformers' SDPA
    function, which handles masks and GQA for every case. V' is solved in fp32 and the attention
    on it runs in the model's dtype (icml26-kernels' ``lucid_attention`` states the error)."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from icml26.kernels import Backend, select_backend
    from icml26.kernels.attention import softmax_attention

    if not getattr(module, "is_causal", True):
        # an encoder's attention layer: L is lower-triangular, so there is no LUCID for it
        raise ValueError(
            f"LUCID attention needs a causal (decoder) attention layer; "
            f"{type(module).__name__}.is_causal is False"
        )
    layer = getattr(key, "_lucid_layer", None)
    if layer is not None and layer.keys is not key:
        raise ValueError(
            "these keys came from a LucidDynamicCache but are not its current keys (were they "
            "modified between the cache update and the attention?)"
        )
    window = kwargs.get("sliding_window")
    if window is not None and key.shape[2] > window:
        # L would still span every earlier key while the softmax sees only the last `window`:
        # that mixes two different attentions, so refuse instead of computing neither
        if layer is not None:  # leave the cache as it was before this call
            layer.keys = layer.keys[:, :, : layer.values.shape[2]]
        raise ValueError(
            f"LUCID attention does not implement sliding-window attention: {key.shape[2]} keys "
            f"exceed the layer's sliding_window of {window}; set config.sliding_window = None "
            "(or keep sequences within the window)"
        )
    allowed = _allowed(attention_mask, query.shape[2], key.shape[2])
    if layer is not None:  # keys handed out by a LucidDynamicCache
        out = layer.attend(query, key, value, allowed, scaling)
        return out.transpose(1, 2).contiguous(), None
    if allowed is None:
        vp = _preconditioned_values(module, key, value)
    else:
        from icml26.lucid.attention import masked_lucid_solve

        module._lucid_prefix = None
        vp = masked_lucid_solve(key, value, _full_rows(allowed, key.shape[2]))
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    # the attention on V' runs in the model's dtype (bf16 operands, fp32 accumulation), as
    # icml26-kernels' lucid_attention does; the solve above stayed in fp32
    vp = vp.to(query.dtype)
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
        return out.transpose(1, 2).contiguous(), None  # (B, T, H, D), as HF expects
    out, weights = sdpa_attention_forward(
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
    return out.to(query.dtype), weights


def _allowed(attention_mask, q_len: int, k_len: int) -> torch.Tensor | None:
    """The (B, 1, q_len, k_len) bool mask (True: may attend) of a transformers attention mask
    (bool, or additive float with large negatives where hidden); None stays None."""
    if attention_mask is None:
        return None
    m = attention_mask
    if m.dtype != torch.bool:
        m = m > torch.finfo(m.dtype).min / 2
    return m[..., -q_len:, :k_len]


def _full_rows(allowed: torch.Tensor, k_len: int) -> torch.Tensor:
    """All k_len rows of a causal mask given its last q_len rows: with fewer queries than keys
    (a decode step) the earlier rows are causal over the keys the last query may see (the
    others are padding)."""
    if allowed.shape[-2] == k_len:
        return allowed
    visible = allowed[..., -1:, :]  # (B, 1, 1, k_len)
    causal = torch.ones(k_len, k_len, dtype=torch.bool, device=allowed.device).tril()
    return causal & visible


class LucidLayer(DynamicLayer):
    """One layer of a ``LucidDynamicCache``: ``keys`` the rotated keys (the model's dtype),
    ``values`` V' (the model's dtype, computed in fp32), grown one call at a time.

    ``update`` appends the keys and hands the new raw values to the attention function, which
    solves their V' rows (``attend``): the cache is only meaningful with ``"lucid"`` attention.
    """

    def lazy_initialization(
        self, key_states: torch.Tensor, value_states: torch.Tensor | None = None
    ) -> None:
        self.device = key_states.device
        B, H, _, D = key_states.shape
        self.keys = key_states.new_empty(B, H, 0, D)
        self.values = key_states.new_empty(B, H, 0, D)  # V' in the model's dtype
        self.is_initialized = True

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        # keys is None before the first update and after reset() (transformers 4.56 to 5.x)
        if self.keys is None or not getattr(self, "is_initialized", True):
            self.lazy_initialization(key_states)
        self.keys = torch.cat([self.keys, key_states], dim=-2)
        # the attention function finds this layer through the keys it receives (no host sync)
        self.keys._lucid_layer = self
        return self.keys, value_states

    def attend(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        v_new: torch.Tensor,
        allowed: torch.Tensor | None,
        scaling: float | None,
    ) -> torch.Tensor:
        """(B, H, n, D) attention output of the n new queries; appends their V' rows."""
        import torch.nn.functional as F

        from icml26.kernels.attention import expand_kv
        from icml26.kernels.lucid import lucid_decode, lucid_solve
        from icml26.lucid.attention import lucid_append, masked_lucid_solve

        n = v_new.shape[2]
        N = key.shape[2] - n
        H = query.shape[1]
        if n == 1 and N > 0 and allowed is None:
            out, vp_t = lucid_decode(
                query[:, :, 0], key[:, :, :N], self.values, key[:, :, N], v_new[:, :, 0], scaling
            )
            self.values = torch.cat([self.values, vp_t[:, :, None].to(self.values.dtype)], dim=2)
            return out[:, :, None]
        if N == 0:
            vp_new = (
                lucid_solve(key, v_new)
                if allowed is None
                else masked_lucid_solve(key, v_new, allowed)
            )
        else:
            vp_new = lucid_append(key[:, :, :N], self.values, key[:, :, N:], v_new, allowed)
        self.values = torch.cat([self.values, vp_new.to(self.values.dtype)], dim=2)
        ct = self.values.dtype
        if allowed is None and N:
            allowed = torch.ones(n, N + n, dtype=torch.bool, device=key.device).tril(N)
        out = F.scaled_dot_product_attention(
            query.to(ct),
            expand_kv(key, H).to(ct),
            expand_kv(self.values, H),
            attn_mask=allowed,
            is_causal=allowed is None,
            scale=scaling,
        )
        return out.to(query.dtype)


class LucidDynamicCache(Cache):
    """A transformers ``Cache`` for ``attn_implementation="lucid"``: per layer the rotated keys
    and the preconditioned values V' (both in the model's dtype), so each decode step solves one
    new row of L in O(T d) with no host synchronisation. Pass it to ``generate`` as
    ``past_key_values``."""

    def __init__(self, ddp_cache_data=None, config=None, **unsupported) -> None:
        # ``config`` is accepted for DynamicCache's signature and not needed: one LucidLayer is
        # made per attention layer as it is first used.
        if ddp_cache_data is not None:
            raise ValueError(
                "ddp_cache_data is not supported: a LucidDynamicCache starts empty and builds V' "
                "from the keys it sees"
            )
        if unsupported:
            raise TypeError(f"LucidDynamicCache got unexpected arguments {sorted(unsupported)}")
        super().__init__(layer_class_to_replicate=LucidLayer)


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
