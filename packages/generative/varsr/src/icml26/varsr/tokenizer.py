"""The multi-scale residual quantiser (VAR's tokenizer) and HIT, its hierarchical training.

VAR (Tian et al. 2024): with encoder features ``f`` (B, C, h, h) and scales s_1 < ... < s_K = h,

    r_k   = Q(down(f - f_hat, s_k))                  one shared codebook, nearest code
    f_hat = f_hat + phi(up(e(r_k), h))               phi: a 3x3 conv mixed in at 0.5

and the decoder maps f_hat back to pixels. **HIT** (hierarchical image tokenization, as the paper
describes it; reconstructed, no code is public): the scales fall into groups ending at h/4, h/2
and h, and the partial sum of each group prefix, accumulated at that group's own side,

    f_hat^(g) = sum_{k : s_k <= side_g} phi(up(e(r_k), side_g)),

decodes (same decoder, it is fully convolutional) to the image downsampled by h / side_g. A
consistency term pulls the encoding of the downsampled image towards the downsampled encoding,
so the tokens of down(x) are a prefix of the tokens of x (measured by :func:`prefix_agreement`).
One pass of the generator therefore yields x1, x2 and x4 outputs.

Codebook: k-means initialisation on the first batch, codebook and commitment losses (VQ-VAE),
dead-code restarts to random encoder outputs; per-scale usage is tracked.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from icml26.varsr.data import check_image, downsample


@dataclass(frozen=True)
class TokenizerConfig:
    """Sizes of the tokenizer."""

    channels: int = 48
    """Width of the convolutional encoder and decoder."""
    latent: int = 16
    """Feature / code dimension C."""
    codebook: int = 1024
    """Codes shared by all scales."""
    down: int = 2
    """Encoder stride (a power of 2): a token map of side s stands for an image of side down * s.
    2 keeps one code per 2 x 2 pixels at the finest scale; at 4 a 32 x 32 patch gets fewer bits
    than its own 8 x 8 LR image holds, which caps reconstruction near 22 dB."""
    scales: tuple[int, ...] = (1, 2, 4, 8, 16)
    """Token-map sides for a 32 x 32 image (feature side 16 at ``down`` 2): groups end at 4 (the
    x4-downsampled image), 8 (x2) and 16."""
    beta: float = 0.25
    """Commitment weight."""

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        s = self.scales
        if not s or list(s) != sorted(set(s)) or s[0] < 1:
            raise ValueError(f"scales must be increasing positive sides, got {s}")
        if s[-1] % 4 or s[-1] // 4 not in s or s[-1] // 2 not in s:
            raise ValueError(f"scales must contain side/4 and side/2 of the last ({s[-1]}) for the "
                             f"x4 / x2 prefixes, got {s}")  # fmt: skip
        if self.down < 1 or self.down & (self.down - 1):
            raise ValueError(f"down must be a power of 2, got {self.down}")
        for name in ("channels", "latent", "codebook"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")


class ResBlock(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.body = nn.Sequential(nn.GroupNorm(8, c), nn.SiLU(), nn.Conv2d(c, c, 3, padding=1),
                                  nn.GroupNorm(8, c), nn.SiLU(),
                                  nn.Conv2d(c, c, 3, padding=1))  # fmt: skip

    def forward(self, x):
        return x + self.body(x)


@dataclass
class QuantOutput:
    """What :meth:`MultiScaleRQ.quantize` returns."""

    indices: list[torch.Tensor]
    """Per scale k: (B, s_k, s_k) code indices."""
    f_hat: torch.Tensor
    """(B, C, h, h) the sum of all scales' contributions (straight-through to f)."""
    loss: torch.Tensor
    """Codebook + commitment loss."""
    prefixes: dict[int, torch.Tensor] = field(default_factory=dict)
    """side -> (B, C, side, side) partial sum of the scales <= side, accumulated at that side."""


class MultiScaleRQ(nn.Module):
    """Encoder, multi-scale residual quantiser with one codebook, decoder (see module docstring).

    ``encode(x)`` -> indices per scale; ``decode(indices)`` -> image at the side the given
    scales reach (a prefix decodes to a smaller image); ``forward(x)`` -> training losses.
    """

    def __init__(self, cfg: TokenizerConfig | None = None):
        super().__init__()
        if cfg is not None and not isinstance(cfg, TokenizerConfig):
            raise TypeError(f"cfg must be a TokenizerConfig or None, got {type(cfg).__name__}")
        self.cfg = cfg = cfg or TokenizerConfig()
        cfg.check()
        c, z = cfg.channels, cfg.latent
        n_down = cfg.down.bit_length() - 1
        self.encoder = nn.Sequential(
            nn.Conv2d(3, c, 3, padding=1), ResBlock(c),
            *[m for _ in range(n_down)
              for m in (nn.Conv2d(c, c, 4, stride=2, padding=1), ResBlock(c))],
            nn.GroupNorm(8, c), nn.SiLU(), nn.Conv2d(c, z, 1),
        )  # fmt: skip  # (B, 3, down*h, down*h) -> (B, C, h, h)
        self.decoder = nn.Sequential(
            nn.Conv2d(z, c, 3, padding=1), ResBlock(c),
            *[m for _ in range(n_down)
              for m in (nn.ConvTranspose2d(c, c, 4, stride=2, padding=1), ResBlock(c))],
            nn.GroupNorm(8, c), nn.SiLU(), nn.Conv2d(c, 3, 3, padding=1),
        )  # fmt: skip  # (B, C, h, h) -> (B, 3, down*h, down*h)
        self.phi = nn.Conv2d(z, z, 3, padding=1)
        self.codebook = nn.Embedding(cfg.codebook, z)
        nn.init.uniform_(self.codebook.weight, -1 / cfg.codebook, 1 / cfg.codebook)
        self.register_buffer("initialised", torch.tensor(False))
        self.register_buffer("usage", torch.zeros(len(cfg.scales), cfg.codebook))

    # -- pieces ------------------------------------------------------------------------------
    def scales_for(self, side: int) -> tuple[int, ...]:
        """The scales of a feature map of ``side`` (the configured ones up to it)."""
        if side not in self.cfg.scales:
            raise ValueError(
                f"feature side {side} is not one of the scales {self.cfg.scales}: "
                f"images must be {self.cfg.down * self.cfg.scales[-1]} px, or /2, /4 of it"
            )
        return tuple(s for s in self.cfg.scales if s <= side)

    def refine(self, e: torch.Tensor) -> torch.Tensor:
        """phi: half the code embedding, half a 3x3 conv of it (VAR's quant_resi, shared)."""
        return 0.5 * e + 0.5 * self.phi(e)

    def embed(self, idx: torch.Tensor) -> torch.Tensor:
        """(B, s, s) indices -> (B, C, s, s) code vectors."""
        return self.codebook(idx).permute(0, 3, 1, 2)

    def nearest(self, v: torch.Tensor) -> torch.Tensor:
        """(B, C, s, s) vectors -> (B, s, s) nearest code indices."""
        B, C, s, _ = v.shape
        flat = v.permute(0, 2, 3, 1).reshape(-1, C)
        w = self.codebook.weight
        d = flat.pow(2).sum(1, keepdim=True) - 2 * flat @ w.T + w.pow(2).sum(1)[None]
        return d.argmin(1).view(B, s, s)

    @torch.no_grad()
    def kmeans_init(self, f: torch.Tensor, iters: int = 10) -> None:
        """Codebook <- k-means of the feature vectors of ``f`` (B, C, h, h) at every scale."""
        vecs = torch.cat([F.adaptive_avg_pool2d(f, s).permute(0, 2, 3, 1).reshape(-1, f.shape[1])
                          for s in self.cfg.scales])  # fmt: skip
        K = self.cfg.codebook
        g = torch.Generator(device="cpu").manual_seed(0)
        centers = vecs[torch.randint(len(vecs), (K,), generator=g).to(vecs.device)].clone()
        for _ in range(iters):
            assign = torch.cdist(vecs, centers).argmin(1)
            sums = torch.zeros_like(centers).index_add_(0, assign, vecs)
            counts = torch.bincount(assign, minlength=K)[:, None]
            centers = torch.where(counts > 0, sums / counts.clamp(min=1), centers)
        self.codebook.weight.copy_(centers)
        if dist.is_available() and dist.is_initialized():
            dist.broadcast(self.codebook.weight.data, 0)  # one codebook on every rank
        self.initialised.fill_(True)

    @torch.no_grad()
    def restart_dead_codes(self, f: torch.Tensor, min_uses: float = 1.0,
                           generator: torch.Generator | None = None) -> int:  # fmt: skip
        """Codes used fewer than ``min_uses`` times since the last call jump to random encoder
        vectors of ``f``; usage counters reset. Returns how many were restarted. Under
        torch.distributed the usage is summed over ranks and rank 0's codebook is broadcast,
        so every rank keeps the same codebook."""
        distributed = dist.is_available() and dist.is_initialized()
        if distributed:
            dist.all_reduce(self.usage)
        dead = self.usage.sum(0) < min_uses
        n = int(dead.sum())
        if n:
            vecs = f.permute(0, 2, 3, 1).reshape(-1, f.shape[1])
            g = generator or torch.Generator().manual_seed(0)
            pick = torch.randint(len(vecs), (n,), generator=g).to(vecs.device)
            noise = torch.randn(n, vecs.shape[1], generator=g).to(vecs.device)
            self.codebook.weight[dead] = vecs[pick] + 1e-3 * noise
        if distributed:
            dist.broadcast(self.codebook.weight.data, 0)
        self.usage.zero_()
        return n

    # -- quantisation ------------------------------------------------------------------------
    def quantize(self, f: torch.Tensor, given: list[torch.Tensor] | None = None) -> QuantOutput:
        """VAR's residual quantisation of ``f`` (B, C, h, h) over the scales up to h, with the
        HIT prefix sums (see the module docstring). ``given`` fixes the indices of the first
        scales (the LR image's own tokens) and quantises the residual that remains after them."""
        h = f.shape[-1]
        scales = self.scales_for(h)
        given = list(given or [])
        for k, g in enumerate(given):
            if k >= len(scales) or g.shape[-2:] != (scales[k], scales[k]):
                raise ValueError(f"given indices must match the first scales {scales}, got "
                                 f"{[tuple(x.shape[-2:]) for x in given]}")  # fmt: skip
        if self.training and not bool(self.initialised):
            self.kmeans_init(f.detach())
        f_hat = torch.zeros_like(f)
        indices, loss = [], f.new_zeros(())
        contributions = []
        for k, s in enumerate(scales):
            rest = F.interpolate(f - f_hat, size=(s, s), mode="area") if s < h else f - f_hat
            idx = given[k] if k < len(given) else self.nearest(rest.detach())
            e = self.embed(idx)
            # VQ-VAE: codebook term pulls codes to the residuals, commitment the other way
            loss = (
                loss + F.mse_loss(e, rest.detach()) + self.cfg.beta * F.mse_loss(rest, e.detach())
            )
            e = rest + (e - rest).detach()  # straight-through
            contributions.append(e)
            up = F.interpolate(e, size=(h, h), mode="bicubic", align_corners=False) if s < h else e
            f_hat = f_hat + self.refine(up)
            indices.append(idx)
            if self.training:
                self.usage[k] += torch.bincount(idx.flatten(), minlength=self.cfg.codebook)
        prefixes = {}
        for side in (h // 4, h // 2):
            if side in scales:
                prefixes[side] = sum(
                    self.refine(F.interpolate(e, size=(side, side), mode="bicubic",
                                              align_corners=False) if e.shape[-1] < side else e)
                    for e, s in zip(contributions, scales, strict=True) if s <= side)  # fmt: skip
        return QuantOutput(indices, f_hat, loss / len(scales), prefixes)

    def f_hat_from(self, indices: list[torch.Tensor], side: int | None = None) -> torch.Tensor:
        """Sum of the given scales' contributions accumulated at ``side`` (default: the last
        given scale's side): (B, C, side, side)."""
        if not indices:
            raise ValueError("indices is empty")
        side = side or indices[-1].shape[-1]
        total = 0
        for idx in indices:
            e = self.embed(idx)
            if e.shape[-1] < side:
                e = F.interpolate(e, size=(side, side), mode="bicubic", align_corners=False)
            total = total + self.refine(e)
        return total

    # -- public ------------------------------------------------------------------------------
    @torch.no_grad()
    def encode(self, x: torch.Tensor, given: list[torch.Tensor] | None = None
               ) -> list[torch.Tensor]:  # fmt: skip
        """Image(s) (B, 3, down*h, down*h) in [0, 1] -> per-scale indices [(B, s_k, s_k)].

        ``given``: indices of the first scales to keep (e.g. ``encode(down(x, 4))``, the LR
        image's tokens), the rest quantising what they leave; the tokens of an HR image given
        its LR image, exactly as super-resolution generates them."""
        x = check_image(x, "x", multiple=self.cfg.down)
        return self.quantize(self.encoder(x * 2 - 1), given).indices

    @torch.no_grad()
    def decode(self, indices: list[torch.Tensor]) -> torch.Tensor:
        """Indices of the first scales -> the image at their side x down: (B, 3, down*s, down*s)."""
        return (self.decoder(self.f_hat_from(indices)).clamp(-1, 1) + 1) / 2

    def forward(self, x: torch.Tensor, hit: bool = True, consistency: float = 1.0) -> dict:
        """Training losses on images (B, 3, down*h, down*h): reconstruction, VQ, and with ``hit``
        the prefix reconstructions of the x2 / x4 downsampled images and the encoding
        consistency."""
        x = check_image(x, "x", multiple=4 * self.cfg.down)
        target = x * 2 - 1
        f = self.encoder(target)
        q = self.quantize(f)
        rec = self.decoder(q.f_hat)
        out = {"reconstruction": F.mse_loss(rec, target), "vq": q.loss}
        if hit:
            h = f.shape[-1]
            prefix = 0.0
            for side, fp in q.prefixes.items():
                small = downsample(x, h // side) * 2 - 1
                prefix = prefix + F.mse_loss(self.decoder(fp), small)
                # the encoding of the small image should be the small encoding (token overlap)
                f_small = self.encoder(small)
                prefix = prefix + consistency * F.mse_loss(
                    f_small, F.interpolate(f, size=(side, side), mode="area").detach()
                )
            out["prefix"] = prefix
        out["loss"] = sum(out.values())
        return out


@torch.no_grad()
def prefix_agreement(tok: MultiScaleRQ, x: torch.Tensor, factor: int) -> float:
    """Share of the tokens of down(x, factor) equal to the matching prefix of x's tokens."""
    full = tok.encode(x)
    small = tok.encode(downsample(x, factor))
    hits = sum(int((a == b).sum()) for a, b in zip(small, full, strict=False))
    total = sum(a.numel() for a in small)
    return hits / total
