"""The VAR transformer for super-resolution: next-scale prediction conditioned on the LR image.

Following VAR (Tian et al. 2024): the token maps r_1..r_K of a :class:`MultiScaleRQ` are
predicted scale by scale. The input at scale k is the running sum f_hat of the scales < k,
resized to s_k (scale 1's input is a start embedding), plus a scale embedding and a 2-D position
embedding; a **block-causal** mask lets every position of scale k attend to all positions of
scales <= k, and the outputs at scale k are the logits of r_k, all tokens of a scale at once.
Conditioning (reconstructed; the paper conditions on the LR image): the LR image's features,
resized to each scale, are added to the inputs, and with a HIT tokenizer the LR image's own
tokens are the first scales, given rather than sampled, so generation starts at the first scale
the LR image does not determine. ``generate(..., return_scales=True)`` decodes the x1 / x2 / x4
images of that one pass. Attention is PyTorch SDPA; sampling uses a KV cache.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from icml26.varsr.tokenizer import MultiScaleRQ


@dataclass(frozen=True)
class VARConfig:
    """Size of the transformer."""

    d_model: int = 128
    n_layer: int = 4
    n_head: int = 4
    given_scales: int | None = None
    """Leading scales taken from the LR image's own tokens; None: every scale up to side h/4,
    i.e. all the tokens a HIT tokenizer gives the x4-downsampled image (0 for plain RQ)."""

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        for name in ("d_model", "n_layer", "n_head"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if self.d_model % self.n_head:
            raise ValueError(
                f"d_model ({self.d_model}) must be a multiple of n_head ({self.n_head})"
            )
        if min(self.n_layer, self.n_head) < 1 or (self.given_scales or 0) < 0:
            raise ValueError("n_layer, n_head >= 1 and given_scales >= 0 needed")


def block_causal_mask(scales: tuple[int, ...], device=None) -> torch.Tensor:
    """(L, L) bool, True = may attend: position i of scale k sees every position of scales <= k."""
    level = torch.cat([torch.full((s * s,), k, device=device) for k, s in enumerate(scales)])
    return level[:, None] >= level[None, :]


class Block(nn.Module):
    def __init__(self, d: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, mask, cache=None):
        """x: (B, T, D); mask: (T, S) bool; cache: (k, v) of (B, H, S - T, Dh)."""
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=2)
        q, k, v = (t.view(B, T, self.n_head, D // self.n_head).transpose(1, 2) for t in (q, k, v))
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, D))
        return x + self.mlp(self.ln2(x)), (k, v)


class VARTransformer(nn.Module):
    """Next-scale prediction over a tokenizer's scales, conditioned on the LR image."""

    def __init__(self, tokenizer: MultiScaleRQ, cfg: VARConfig | None = None):
        super().__init__()
        if not isinstance(tokenizer, MultiScaleRQ):
            raise TypeError(f"tokenizer must be a MultiScaleRQ, got {type(tokenizer).__name__}")
        if cfg is not None and not isinstance(cfg, VARConfig):
            raise TypeError(f"cfg must be a VARConfig or None, got {type(cfg).__name__}")
        self.cfg = cfg = cfg or VARConfig()
        cfg.check()
        self.scales = tokenizer.cfg.scales
        self.given_scales = (sum(s <= self.scales[-1] // 4 for s in self.scales)
                             if cfg.given_scales is None else cfg.given_scales)  # fmt: skip
        n_lr = sum(s <= self.scales[-1] // 4 for s in self.scales)
        if self.given_scales > n_lr:
            raise ValueError(f"given_scales ({self.given_scales}) can be at most the {n_lr} "
                             f"scales of an LR image (<= {self.scales[-1] // 4})")  # fmt: skip
        self.lr_side = tokenizer.cfg.down * self.scales[-1] // 4
        z, d, V = tokenizer.cfg.latent, cfg.d_model, tokenizer.cfg.codebook
        self.tokenizer = [tokenizer]  # a reference, not a submodule: it is trained separately
        self.inp = nn.Linear(z, d)
        self.cond = nn.Conv2d(3, d, 3, padding=1)
        self.start = nn.Parameter(torch.zeros(1, 1, d))
        self.level = nn.Embedding(len(self.scales), d)
        side = self.scales[-1]
        self.pos = nn.Parameter(torch.zeros(1, d, side, side))
        nn.init.normal_(self.pos, std=0.02)
        self.blocks = nn.ModuleList(Block(d, cfg.n_head) for _ in range(cfg.n_layer))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, V)
        self.register_buffer("mask", block_causal_mask(self.scales), persistent=False)

    @property
    def tok(self) -> MultiScaleRQ:
        return self.tokenizer[0]

    def _scale_input(self, k: int, f_hat: torch.Tensor | None, lr: torch.Tensor) -> torch.Tensor:
        """Inputs of scale k: (B, s_k^2, D)."""
        s = self.scales[k]
        B = lr.shape[0]
        if k == 0:
            x = self.start.expand(B, 1, -1).reshape(B, -1, 1, 1)
        else:
            x = self.inp(F.interpolate(f_hat, size=(s, s), mode="area").permute(0, 2, 3, 1))
            x = x.permute(0, 3, 1, 2)
        x = x + F.interpolate(self.cond(lr * 2 - 1), size=(s, s), mode="area")
        x = (
            x
            + F.interpolate(self.pos, size=(s, s), mode="area")
            + self.level.weight[k][None, :, None, None]
        )
        return x.flatten(2).transpose(1, 2)

    def inputs(self, indices: list[torch.Tensor], lr: torch.Tensor) -> torch.Tensor:
        """Teacher-forced inputs of every scale from the ground-truth indices: (B, L, D)."""
        h = self.scales[-1]
        parts, f_hat = [], None
        for k in range(len(self.scales)):
            parts.append(self._scale_input(k, f_hat, lr))
            f_hat = self.tok.f_hat_from(indices[: k + 1], side=h)
        return torch.cat(parts, 1)

    def forward(self, indices: list[torch.Tensor], lr: torch.Tensor) -> torch.Tensor:
        """Logits of every scale's tokens, teacher forced: (B, L, V), L = sum s_k^2."""
        x = self.inputs(indices, lr)
        for blk in self.blocks:
            x, _ = blk(x, self.mask)
        return self.head(self.ln(x))

    def logprob(self, indices: list[torch.Tensor], lr: torch.Tensor) -> torch.Tensor:
        """log pi(y | LR) summed over the predicted (not given) scales' tokens: (B,)."""
        logits = self.forward(indices, lr)
        target = torch.cat([i.flatten(1) for i in indices], 1)
        lp = torch.log_softmax(logits.float(), -1).gather(-1, target[..., None]).squeeze(-1)
        start = sum(s * s for s in self.scales[: self.given_scales])
        return lp[:, start:].sum(1)

    def loss(self, indices: list[torch.Tensor], lr: torch.Tensor) -> torch.Tensor:
        """Cross-entropy over the predicted scales' tokens (the given ones are not learnt)."""
        logits = self.forward(indices, lr)
        target = torch.cat([i.flatten(1) for i in indices], 1)
        start = sum(s * s for s in self.scales[: self.given_scales])
        return F.cross_entropy(logits[:, start:].reshape(-1, logits.shape[-1]),
                               target[:, start:].reshape(-1))  # fmt: skip

    @torch.no_grad()
    def generate(self, lr: torch.Tensor, temperature: float = 0.0, top_k: int = 0,
                 generator: torch.Generator | None = None,
                 return_scales: bool = False, stop_at: int | None = None):  # fmt: skip
        """Super-resolve LR images (B, 3, h, h) by 4 in one pass over the scales (KV cache).

        The first ``given_scales`` scales are the LR image's own tokens; temperature 0 is
        greedy. Returns the x4 image (B, 3, 4h, 4h), or with ``return_scales`` a dict
        {1: x1 decode of the given prefix, 2: x2 image, 4: x4 image}. ``stop_at`` (a scale side)
        ends generation after that scale (what a model of that output size would run)."""
        from icml26.varsr.data import check_image

        lr = check_image(lr, "lr")
        side, n = self.scales[-1], self.lr_side
        if lr.shape[-1] != n or lr.shape[-2] != n:
            raise ValueError(f"lr must be {n} x {n} (the model's x4 input), got "
                             f"{tuple(lr.shape[-2:])}")  # fmt: skip
        given = self.tok.encode(lr)[: self.given_scales]
        indices: list[torch.Tensor] = []
        cache = [None] * len(self.blocks)
        f_hat, offset = None, 0
        for k, s in enumerate(self.scales):
            x = self._scale_input(k, f_hat, lr)
            T = x.shape[1]
            mask = self.mask[offset : offset + T, : offset + T]
            for i, blk in enumerate(self.blocks):
                x, cache[i] = blk(x, mask, cache[i])
            offset += T
            if k < len(given):
                idx = given[k]
            else:
                logits = self.head(self.ln(x)).float()
                idx = _pick(logits, temperature, top_k, generator).view(-1, s, s)
            indices.append(idx)
            if stop_at is not None and s >= stop_at:
                return self.tok.decode(indices)
            f_hat = self.tok.f_hat_from(indices, side=side)
        out = self.tok.decode(indices)
        if not return_scales:
            return out
        by_side = {s: k for k, s in enumerate(self.scales)}
        return {1: self.tok.decode(indices[: by_side[side // 4] + 1]),
                2: self.tok.decode(indices[: by_side[side // 2] + 1]), 4: out}  # fmt: skip


def _pick(logits, temperature, top_k, generator):
    if temperature == 0:
        return logits.argmax(-1)
    logits = logits / temperature
    if top_k:
        kth = logits.topk(top_k, -1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, -torch.inf)
    probs = torch.softmax(logits, -1).flatten(0, 1)
    return (
        torch.multinomial(probs.cpu(), 1, generator=generator)
        .view(logits.shape[:2])
        .to(logits.device)
    )


def dpo_loss(policy_chosen: torch.Tensor, policy_rejected: torch.Tensor, ref_chosen: torch.Tensor,
             ref_rejected: torch.Tensor, beta: float = 0.1) -> torch.Tensor:  # fmt: skip
    """-log sigmoid(beta [(log pi(y_w) - log pi_ref(y_w)) - (log pi(y_l) - log pi_ref(y_l))]),
    averaged: the chosen y_w is the HR image's tokens, the rejected y_l the tokens of the
    bicubic-upsampled LR image, pi_ref the frozen cross-entropy model. All inputs (B,)."""
    if not (isinstance(beta, (int, float)) and 0 < beta < math.inf):
        raise ValueError(f"beta must be a finite number > 0, got {beta!r}")
    names = ("policy_chosen", "policy_rejected", "ref_chosen", "ref_rejected")
    args = (policy_chosen, policy_rejected, ref_chosen, ref_rejected)
    for name, t in zip(names, args, strict=True):
        if not isinstance(t, torch.Tensor) or t.dim() != 1 or t.shape != policy_chosen.shape:
            got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"{name} must be a (B,) tensor of sequence log-probabilities like "
                             f"policy_chosen, got {got}")  # fmt: skip
    margin = (policy_chosen - ref_chosen) - (policy_rejected - ref_rejected)
    return -F.logsigmoid(beta * margin).mean()
