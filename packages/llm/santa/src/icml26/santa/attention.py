"""SANTA decode attention for Hugging Face transformers (Llama-style models).

Prefill (more than one query position) runs the model's dense SDPA attention unchanged; every
decode step (one query position) runs ``icml26.kernels.santa.santa_decode``: exact scores over
the whole cache, then S sampled value rows instead of the full weighted sum. Registered as the
attention implementation ``"santa"`` through ``transformers.AttentionInterface``, so it works
with ``generate()`` and the KV cache as they are.

    enable_santa(model, num_samples=64, mode="tile_fixed")
    model.generate(**inputs, max_new_tokens=32)
    disable_santa(model)
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from icml26.kernels.santa import MODES, santa_decode

IMPLEMENTATION = "santa"


@dataclass
class SantaState:
    """What a model's SANTA attention does, and what it measured."""

    num_samples: int = 64
    mode: str = "tile_fixed"
    block_n: int = 64
    seed: int = 0
    enabled: bool = True
    calls: int = 0
    """Decode-attention calls so far (each gets its own seed: seed + calls)."""
    rows_read: int = 0
    rows_total: int = 0
    """Value rows read vs rows a dense decode would read, summed over calls."""
    capture: Callable | None = None
    """Called as capture(module, q, k, v) on every decode call (for analysis)."""
    previous_implementation: str | None = field(default=None, repr=False)

    @property
    def read_fraction(self) -> float:
        return self.rows_read / max(self.rows_total, 1)


def _decode_mask_is_trivial(mask: torch.Tensor | None) -> bool:
    if mask is None:
        return True
    if mask.dtype == torch.bool:
        return bool(mask.all())
    return bool((mask == 0).all())


def santa_attention_forward(
    module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs
):
    """The ``AttentionInterface`` function: query (B, H_q, T, D), key/value (B, H_kv, N, D)."""
    state: SantaState | None = getattr(module, "santa_state", None)
    decode = query.shape[2] == 1
    if (
        state is None
        or not state.enabled
        or not decode
        or not _decode_mask_is_trivial(attention_mask)
    ):
        # Prefill, or a padded batch: dense attention (padding masks are not sampled around).
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    q = query[:, :, 0]  # (B, H_q, D)
    if state.capture is not None:
        state.capture(module, q, key, value)
    res = santa_decode(
        q,
        key,
        value,
        state.num_samples,
        state.mode,
        state.block_n,
        seed=state.seed + state.calls,
        scale=scaling,
    )
    state.calls += 1
    state.rows_read += int(res.rows_read.sum())
    state.rows_total += key.shape[0] * key.shape[1] * key.shape[2]
    return res.out.unsqueeze(1), None  # (B, 1, H_q, D), as SDPA's wrapper returns


AttentionInterface.register(IMPLEMENTATION, santa_attention_forward)
# Masks: build exactly what SDPA gets (padding included); without this registration transformers
# would hand an unknown implementation no mask at all.
AttentionMaskInterface.register(IMPLEMENTATION, sdpa_mask)


def _attention_modules(model) -> list:
    mods = [m for m in model.modules() if hasattr(m, "q_proj") and hasattr(m, "k_proj")]
    if not mods:
        raise ValueError("no Llama-style attention modules (with q_proj/k_proj) in this model")
    return mods


def _set_implementation(model, name: str) -> None:
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(name)
    else:  # older transformers
        model.config._attn_implementation = name


def enable_santa(
    model,
    num_samples: int = 64,
    mode: str = "tile_fixed",
    block_n: int = 64,
    seed: int = 0,
    capture: Callable | None = None,
) -> SantaState:
    """Make every decode step of ``model`` use SANTA; returns the shared state (stats inside)."""
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
        raise ValueError(f"num_samples must be an integer >= 1, got {num_samples!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    modules = _attention_modules(model)
    state = SantaState(num_samples, mode, block_n, seed, capture=capture)
    state.previous_implementation = getattr(model.config, "_attn_implementation", None) or "sdpa"
    for m in modules:
        m.santa_state = state
    _set_implementation(model, IMPLEMENTATION)
    return state


def disable_santa(model) -> None:
    """Back to the attention implementation the model had before ``enable_santa``."""
    previous = "sdpa"
    for m in _attention_modules(model):
        state = getattr(m, "santa_state", None)
        if state is not None:
            previous = state.previous_implementation or previous
            del m.santa_state
    _set_implementation(model, previous)
