"""A small decoder-only language model whose attention layers are ``LucidAttention``.

Pre-norm blocks (LayerNorm, attention, LayerNorm, GELU MLP), learned position embeddings (or
rotary ones, ``rope_base``), tied input/output embeddings: the nanoGPT shape, small enough for
the demo's CPU runs. ``kind`` switches every layer between LUCID and softmax attention with
identical parameters.
"""

from dataclasses import dataclass

import torch
from torch import nn

from icml26.lucid.attention import LucidAttention, LucidCache
from icml26.testing.checks import number


@dataclass(frozen=True)
class TinyLMConfig:
    """Shape of the demo's language model."""

    vocab_size: int = 128
    """Tokens."""
    max_len: int = 256
    """Longest sequence (learned position embeddings)."""
    dim: int = 64
    """Model width."""
    layers: int = 2
    """Transformer blocks."""
    heads: int = 2
    """Attention heads."""
    kind: str = "lucid"
    """'lucid' or 'softmax' attention in every layer."""
    temperature: float = 1.0
    """Softmax temperature of the attention (1: standard)."""
    rope_base: float | None = None
    """Rotary position embeddings with this base in every attention layer (None: learned
    absolute position embeddings instead)."""
    beta: float = 1.0
    """Preconditioner strength of the LUCID layers (1: the published L; a diagnostic variant
    otherwise, see ``icml26.lucid.attention``)."""
    detach_preconditioner: bool = False
    """Build L from detached keys (diagnostic variant)."""

    def __post_init__(self) -> None:
        for name in ("vocab_size", "max_len", "dim", "layers", "heads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.dim % self.heads:
            raise ValueError(f"dim ({self.dim}) must be a multiple of heads ({self.heads})")
        if self.kind not in ("lucid", "softmax"):
            raise ValueError(f"kind must be 'lucid' or 'softmax', got {self.kind!r}")
        number("temperature", self.temperature, above=0)
        if self.rope_base is not None:
            number("rope_base", self.rope_base, above=0)


class Block(nn.Module):
    def __init__(self, cfg: TinyLMConfig) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(cfg.dim), nn.LayerNorm(cfg.dim)
        self.attn = LucidAttention(
            cfg.dim,
            cfg.heads,
            kind=cfg.kind,
            temperature=cfg.temperature,
            rope_base=cfg.rope_base,
            beta=cfg.beta,
            detach_preconditioner=cfg.detach_preconditioner,
        )
        self.mlp = nn.Sequential(
            nn.Linear(cfg.dim, 4 * cfg.dim), nn.GELU(), nn.Linear(4 * cfg.dim, cfg.dim)
        )

    def forward(self, x: torch.Tensor, cache: LucidCache | None = None) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), cache)
        return x + self.mlp(self.ln2(x))


def _check_tokens(tokens, vocab_size: int) -> None:
    if not isinstance(tokens, torch.Tensor):
        raise TypeError(f"tokens must be a (B, T) tensor of token ids, got {type(tokens).__name__}")
    if tokens.dim() != 2 or tokens.is_floating_point() or tokens.dtype == torch.bool:
        raise ValueError(f"tokens must be a (B, T) integer tensor of token ids, got "
                         f"{tokens.dtype} {tuple(tokens.shape)}")  # fmt: skip
    # the range scan reads the ids on the host: CPU only, as the kernels' NaN scans
    if tokens.device.type == "cpu" and tokens.numel():
        lo, hi = int(tokens.min()), int(tokens.max())
        if lo < 0 or hi >= vocab_size:
            raise ValueError(f"tokens must be ids in [0, {vocab_size}), got {lo}..{hi}")


class TinyLM(nn.Module):
    """``tokens (B, T) -> logits (B, T, vocab)``; pass one ``LucidCache`` per layer to decode."""

    def __init__(self, cfg: TinyLMConfig) -> None:
        super().__init__()
        if not isinstance(cfg, TinyLMConfig):
            raise TypeError(f"cfg must be a TinyLMConfig, got {type(cfg).__name__}")
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.pos = nn.Embedding(cfg.max_len, cfg.dim) if cfg.rope_base is None else None
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.ln = nn.LayerNorm(cfg.dim)
        # GPT-2 / nanoGPT scale for the (tied) embeddings: unit-variance rows would start the
        # logits at a loss of tens of nats.
        nn.init.normal_(self.tok.weight, std=0.02)
        if self.pos is not None:
            nn.init.normal_(self.pos.weight, std=0.02)

    def forward(self, tokens: torch.Tensor, caches: list[LucidCache] | None = None) -> torch.Tensor:
        _check_tokens(tokens, self.cfg.vocab_size)
        T = tokens.shape[1]
        start = caches[0].length if caches else 0
        if start + T > self.cfg.max_len:
            raise ValueError(f"sequence of {start + T} tokens exceeds max_len {self.cfg.max_len}")
        x = self.tok(tokens)
        if self.cfg.rope_base is None:
            x = x + self.pos(torch.arange(start, start + T, device=tokens.device))
        for i, block in enumerate(self.blocks):
            x = block(x, caches[i] if caches else None)
        return self.ln(x) @ self.tok.weight.T  # (B, T, vocab)
