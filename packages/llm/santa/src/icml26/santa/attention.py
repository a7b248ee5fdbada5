"""SANTA decode attention for Hugging Face transformers (Llama-style models).

Prefill (more than one query position) runs the model's dense SDPA attention unchanged; every
decode step (one query position) runs ``icml26.kernels.santa.santa_decode``: exact scores over
the whole cache, then S sampled value rows instead of the full weighted sum. Registered as the
attention implementation ``"santa"`` through ``transformers.AttentionInterface``, so it works
with ``generate()`` and the KV cache as they are.

Masks: a decode step's mask (left padding, a static cache's unused tail, a sliding window)
leaves one contiguous run of visible keys per sequence; it becomes ``key_start`` / ``key_end``
of the op, which samples each sequence only there, exactly as it would sample it alone. The
seed and the counters are device tensors updated in place: no host sync per step, and a
compiled decode step (static cache, ``fullgraph=True``) keeps SANTA in its graph. Models with
attention-logit soft-capping are refused.

    enable_santa(model)  # the paper's operating point: 16 draws per tile, S grows with the cache
    model.generate(**inputs, max_new_tokens=32)
    disable_santa(model)

    enable_santa(model, num_samples=64, block_n=64)  # a fixed budget S at every cache length
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from icml26.kernels.santa import MODES, santa_decode
from icml26.testing.checks import integer

IMPLEMENTATION = "santa"
DRAWS_PER_TILE = 16
"""The paper's operating point: about 16 draws per tile (S = 256 at 512 keys with 32-key tiles,
S = 2048 at 32K keys with 256-key tiles)."""


@dataclass
class SantaState:
    """What a model's SANTA attention does, and what it measured.

    The counters live in tensors on the model's device and are updated in place, so a decode
    step never waits on the device and ``torch.compile`` traces the attention as one graph; the
    properties read them (one sync each)."""

    num_samples: int | None = None
    """A fixed S at every decode step; None (the default): S follows the cache, ``draws_per_tile``
    draws for each of its tiles."""
    mode: str = "tile_fixed"
    block_n: int | None = None
    """Keys per tile; None: the authors' tile size for the cache's length (``official_block_n``)."""
    seed: int = 0
    enabled: bool = True
    capture: Callable | None = None
    """Called as capture(module, q, k, v) on every decode call (for analysis; breaks a
    compiled graph)."""
    draws_per_tile: int | None = None
    """Draws per tile of the cache when ``num_samples`` is None (None: DRAWS_PER_TILE, the
    paper's operating point)."""
    previous_implementation: str | None = field(default=None, repr=False)
    step: torch.Tensor | None = field(default=None, repr=False)
    """The next call's seed, ``seed + calls`` (int64, incremented in place after each call)."""
    counters: torch.Tensor | None = field(default=None, repr=False)
    """(value rows read, value rows a dense decode would read) summed over calls (int64)."""

    def __post_init__(self) -> None:
        if self.num_samples is not None and self.draws_per_tile is not None:
            raise ValueError(
                f"give num_samples (a fixed S, got {self.num_samples!r}) or draws_per_tile (S "
                f"grows with the cache, got {self.draws_per_tile!r}), not both"
            )
        if self.num_samples is not None:
            integer("num_samples", self.num_samples, low=1)
        elif self.draws_per_tile is not None:
            integer("draws_per_tile", self.draws_per_tile, low=1)
        if self.block_n is not None:
            integer("block_n", self.block_n, low=1)  # keys per tile
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        integer("seed", self.seed)

    def budget(self, n_keys: int) -> tuple[int, int]:
        """(S, block_n) of a decode step over a cache of ``n_keys`` keys (a static cache counts
        its full length: the visible length lives on the device, and reading it would sync)."""
        block_n = self.block_n if self.block_n is not None else official_block_n(n_keys)
        if self.num_samples is not None:
            return self.num_samples, block_n
        draws = DRAWS_PER_TILE if self.draws_per_tile is None else self.draws_per_tile
        return draws * -(-n_keys // block_n), block_n

    def _on(self, device: torch.device) -> None:
        if self.step is None:
            self.step = torch.tensor(self.seed, dtype=torch.int64, device=device)
            self.counters = torch.zeros(2, dtype=torch.int64, device=device)
        elif self.step.device != device:  # the model moved
            self.step, self.counters = self.step.to(device), self.counters.to(device)

    @property
    def calls(self) -> int:
        """Decode-attention calls so far (call i draws with seed ``seed + i``)."""
        return 0 if self.step is None else int(self.step) - self.seed

    @property
    def rows_read(self) -> int:
        return 0 if self.counters is None else int(self.counters[0])

    @property
    def rows_total(self) -> int:
        return 0 if self.counters is None else int(self.counters[1])

    @property
    def read_fraction(self) -> float:
        return self.rows_read / max(self.rows_total, 1)


def key_ranges_from_mask(mask: torch.Tensor | None, n_keys: int, batch: int | None = None):
    """The (key_start, key_end) of each sequence from a decode-step attention mask, or (None,
    None) when every key is visible.

    ``mask`` is what transformers hands the attention at a decode step: None, a boolean (B, 1,
    1, N) (True = attend) or an additive float mask (0 = attend, -inf = masked), with N the
    cache's length (a batch dimension of 1 is broadcast to ``batch``). Left padding, a static
    cache's unused tail and a sliding window all leave one contiguous run of visible keys per
    sequence, which is what SANTA samples from. Other masks (holes, per-head masks, additive
    biases) are refused: on the CPU with a ValueError, on a GPU with a device-side assert (no
    host sync; like an out-of-range index, it stops the process)."""
    if mask is None:
        return None, None
    if mask.dim() != 4 or mask.shape[1] != 1 or mask.shape[2] != 1 or mask.shape[3] != n_keys:
        raise ValueError(
            f"SANTA needs one decode-step mask row per sequence over the {n_keys} cached keys, "
            f"(B, 1, 1, {n_keys}); got {tuple(mask.shape)}"
        )
    row = mask[:, 0, 0]
    if batch is not None and row.shape[0] == 1 and batch > 1:
        row = row.expand(batch, -1)
    if row.dtype == torch.bool:
        visible = row
    else:
        visible = row == 0
        bias_free = ((row == 0) | (row == -torch.inf) | (row <= torch.finfo(row.dtype).min)).all()
        _check(bias_free, "SANTA takes a 0 / -inf mask, not an additive attention bias")
    v = visible.to(torch.int32)
    start = v.argmax(-1)
    end = n_keys - v.flip(-1).argmax(-1)
    _check(
        (v.sum(-1) == end - start).all() & (end > start).all(),
        "SANTA samples one contiguous run of visible keys per sequence; this mask has holes "
        "or hides every key",
    )
    return start, end


def _check(ok: torch.Tensor, message: str) -> None:
    if ok.device.type == "cpu" and not torch.compiler.is_compiling():
        if not bool(ok):
            raise ValueError(message)
    else:  # checked on the device (no host sync on the decode path) or inside the graph
        torch._assert_async(ok, message)


def _check_qkv(query, key, value) -> None:
    if not all(isinstance(t, torch.Tensor) and t.ndim == 4 for t in (query, key, value)):
        raise ValueError("query, key and value must be 4-D tensors (B, H, T or N, D)")
    if key.shape != value.shape[:3] + key.shape[3:] or key.shape[-1] != query.shape[-1]:
        raise ValueError(
            f"key {tuple(key.shape)} and value {tuple(value.shape)} must share (B, H_kv, N), and "
            f"key's head dim must be query's {query.shape[-1]}"
        )


def santa_attention_forward(
    module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs
):
    """The ``AttentionInterface`` function: query (B, H_q, T, D), key/value (B, H_kv, N, D).

    ``iid`` mode runs the float64 reference on every device (its draws come from a host
    generator: a sync per step, not capturable in a CUDA graph); the tile modes run the Triton
    kernel on CUDA."""
    _check_qkv(query, key, value)
    state: SantaState | None = getattr(module, "santa_state", None)
    if state is None or not state.enabled or query.shape[2] != 1:  # prefill: dense SDPA
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    if kwargs.get("softcap") is not None:
        raise NotImplementedError(_SOFTCAP)
    extra = [k for k in _UNSUPPORTED if kwargs.get(k) is not None]
    if extra:  # terms SANTA's softmax over q K^T would silently drop
        raise NotImplementedError(
            f"SANTA decode does not implement {extra} (attention sinks, position biases): keep "
            "this model on dense attention"
        )
    q = query[:, :, 0]  # (B, H_q, D)
    if state.capture is not None:
        state.capture(module, q, key, value)
    B, Hkv, N = key.shape[:3]
    # Padding, a static cache's tail, a sliding window: sampled around, per sequence.
    start, end = key_ranges_from_mask(attention_mask, N, B)
    state._on(query.device)
    S, block_n = state.budget(N)  # host ints: the cache's shape, no sync
    res = santa_decode.compiled(
        q,
        key,
        value,
        S,
        state.mode,
        block_n,
        seed=state.step,
        scale=scaling,
        key_start=start,
        key_end=end,
    )
    state.counters[0].add_(res.rows_read.sum())
    # what dense decode reads: the visible keys, per KV head
    state.counters[1].add_(Hkv * B * N if start is None else Hkv * (end - start).sum())
    state.step.add_(1)
    return res.out.unsqueeze(1), None  # (B, 1, H_q, D), as SDPA's wrapper returns


_UNSUPPORTED = ("s_aux", "sinks", "position_bias")
_SOFTCAP = (
    "SANTA samples value rows in proportion to softmax(q K^T); a model with attention logit "
    "soft-capping (Gemma 2 style) needs tanh-capped scores, which SANTA does not implement"
)


AttentionInterface.register(IMPLEMENTATION, santa_attention_forward)
# Masks: build exactly what SDPA gets (padding included); without this registration transformers
# would hand an unknown implementation no mask at all.
AttentionMaskInterface.register(IMPLEMENTATION, sdpa_mask)


def official_block_n(n_keys: int) -> int:
    """The authors' tile size: 32 keys up to 3072 cached keys, 256 above (their kernels)."""
    if isinstance(n_keys, bool) or not isinstance(n_keys, int) or n_keys < 1:
        raise ValueError(f"n_keys must be a positive integer, got {n_keys!r}")
    return 32 if n_keys <= 3072 else 256


def operating_point(n_keys: int, draws_per_tile: int = DRAWS_PER_TILE) -> tuple[int, int]:
    """(num_samples, block_n) at the paper's operating point for a cache of ``n_keys``: the
    official tile size and ``draws_per_tile`` draws per tile (~16 in the paper: S = 256 at 512
    keys with 32-key tiles, S = 2048 at 32K keys with 256-key tiles). What ``enable_santa``'s
    default uses at every decode step."""
    return SantaState(draws_per_tile=draws_per_tile).budget(n_keys)  # both checked there


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
    num_samples: int | None = None,
    mode: str = "tile_fixed",
    block_n: int | None = None,
    seed: int = 0,
    capture: Callable | None = None,
    *,
    draws_per_tile: int | None = None,
) -> SantaState:
    """Make every decode step of ``model`` use SANTA; returns the shared state (stats inside).

    By default each step runs at the paper's operating point for the cache it sees: the
    authors' tile size and ``draws_per_tile`` (16) draws per tile, so S grows as the cache
    grows. ``num_samples`` fixes S instead (and ``block_n`` the tile size) at every length."""
    state = SantaState(
        num_samples, mode, block_n, seed, capture=capture, draws_per_tile=draws_per_tile
    )  # checks the settings
    modules = _attention_modules(model)
    if getattr(model.config, "attn_logit_softcapping", None) is not None:
        raise ValueError(_SOFTCAP + f" (this model's config sets attn_logit_softcapping="
                         f"{model.config.attn_logit_softcapping})")  # fmt: skip
    previous = getattr(model.config, "_attn_implementation", None) or "sdpa"
    if previous == IMPLEMENTATION:  # enabled again: keep what the model had before the first time
        earlier = getattr(modules[0], "santa_state", None)
        previous = getattr(earlier, "previous_implementation", None) or "sdpa"
    state.previous_implementation = previous
    for m in modules:
        m.santa_state = state
    _set_implementation(model, IMPLEMENTATION)
    return state


def disable_santa(model) -> None:
    """Back to the attention implementation the model had before ``enable_santa``."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a transformers model, got {type(model).__name__}")
    previous = "sdpa"
    for m in _attention_modules(model):
        state = getattr(m, "santa_state", None)
        if state is not None:
            previous = state.previous_implementation or previous
            del m.santa_state
    _set_implementation(model, previous)
