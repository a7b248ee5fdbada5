"""Small self-supervised trainers: SimCLR, VICReg and Barlow Twins on MLP or CNN encoders, with
image augmentations written in torch. They exist to produce the training dynamics the measures
watch, not to set records.

Losses (each takes two views' projections z1, z2 of shape (B, p)):
- SimCLR (Chen et al., 2020): NT-Xent, cross-entropy of each view against its partner among
  the 2B - 1 others, cosine similarities over a temperature.
- VICReg (Bardes et al., 2022): 25 * invariance (MSE) + 25 * variance (hinge on the per-dim std
  at 1) + 1 * covariance (squared off-diagonal covariances / p).
- Barlow Twins (Zbontar et al., 2021): the cross-correlation of the standardised views driven to
  the identity, off-diagonal terms weighted by 5e-3.
"""

import math
from collections.abc import Callable
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

Objective = Literal["simclr", "vicreg", "barlow"]


def _check_views(z1, z2) -> None:
    """Two views' embeddings: float (B, p) tensors of one shape, B >= 2 (shape checks only: the
    losses run every step, and a finiteness check would wait on the device)."""
    for name, z in (("z1", z1), ("z2", z2)):
        if not isinstance(z, torch.Tensor) or not z.is_floating_point() or z.ndim != 2:
            raise ValueError(f"{name} must be a float (B, p) tensor of embeddings, got "
                             f"{getattr(z, 'dtype', type(z).__name__)} "
                             f"{tuple(getattr(z, 'shape', ()))}")  # fmt: skip
    if z1.shape != z2.shape or len(z1) < 2:
        raise ValueError(f"z1 and z2 must be two views of one batch of B >= 2, got "
                         f"{tuple(z1.shape)} and {tuple(z2.shape)}")  # fmt: skip


def _check_positive(**values: float) -> None:
    for name, v in values.items():
        if not (isinstance(v, int | float) and math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a positive number, got {v!r}")


def simclr_loss(z1: torch.Tensor, z2: torch.Tensor, temperature: float = 0.2) -> torch.Tensor:
    _check_views(z1, z2)
    _check_positive(temperature=temperature)
    z = F.normalize(torch.cat([z1, z2]), dim=1)  # (2B, p)
    sim = z @ z.T / temperature
    sim.fill_diagonal_(-math.inf)
    B = z1.shape[0]
    target = torch.cat([torch.arange(B, 2 * B), torch.arange(0, B)]).to(z.device)
    return F.cross_entropy(sim, target)


def vicreg_loss(z1, z2, sim_w: float = 25.0, var_w: float = 25.0, cov_w: float = 1.0):
    _check_views(z1, z2)
    _check_positive(sim_w=sim_w, var_w=var_w, cov_w=cov_w)
    inv = F.mse_loss(z1, z2)
    var = 0.0
    cov = 0.0
    for z in (z1, z2):
        z = z - z.mean(0)
        std = (z.var(0) + 1e-4).sqrt()
        var = var + F.relu(1 - std).mean() / 2
        c = z.T @ z / (len(z) - 1)
        off = c - torch.diag(torch.diagonal(c))
        cov = cov + off.pow(2).sum() / z.shape[1]
    return sim_w * inv + var_w * var + cov_w * cov


def barlow_twins_loss(z1, z2, lambd: float = 5e-3):
    _check_views(z1, z2)
    _check_positive(lambd=lambd)
    B = z1.shape[0]
    a = (z1 - z1.mean(0)) / (z1.std(0) + 1e-6)
    b = (z2 - z2.mean(0)) / (z2.std(0) + 1e-6)
    c = a.T @ b / B
    on = (torch.diagonal(c) - 1).pow(2).sum()
    off = (c - torch.diag(torch.diagonal(c))).pow(2).sum()
    return on + lambd * off


LOSSES: dict[str, Callable[..., torch.Tensor]] = {
    "simclr": simclr_loss,
    "vicreg": vicreg_loss,
    "barlow": barlow_twins_loss,
}


class MLPEncoder(nn.Module):
    """Flatten -> [Linear, BatchNorm, ReLU] x depth -> Linear: (B, ...) inputs to (B, out)."""

    def __init__(self, in_dim: int, hidden: int = 256, out_dim: int = 64, depth: int = 2):
        super().__init__()
        for name, v in (("in_dim", in_dim), ("hidden", hidden), ("out_dim", out_dim)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
            raise ValueError(f"depth must be an integer >= 0, got {depth!r}")
        layers, d = [nn.Flatten()], in_dim
        for _ in range(depth):
            layers += [nn.Linear(d, hidden), nn.BatchNorm1d(hidden), nn.ReLU()]
            d = hidden
        layers.append(nn.Linear(d, out_dim))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class SmallCNN(nn.Module):
    """[Conv 3x3, BatchNorm, ReLU] per width (stride 1, then 2), then a Linear layer to
    ``out_dim`` features: (B, C, H, W) images to (B, out_dim).

    ``image_size=None`` pools the last feature map globally (any image size); an int flattens the
    last feature map of ``image_size`` x ``image_size`` inputs into the linear layer, which keeps
    where in the image a stroke lies. With three 3x3 layers the receptive field is 7 pixels, so
    global pooling sees a bag of local strokes: on held-out MNIST classes such features transfer
    worse than the raw pixels even when trained on the source labels, flattened ones better.
    28x28 inputs go 28 -> 14 -> 7 -> 4 with four widths, 8x8 ones 8 -> 4 -> 2 -> 1."""

    def __init__(
        self,
        in_channels: int = 1,
        widths=(16, 32, 64),
        out_dim: int = 64,
        image_size: int | None = None,
    ):
        super().__init__()
        if not widths:
            raise ValueError("widths: give at least one convolution width")
        sizes = (("in_channels", in_channels), ("out_dim", out_dim),
                 *((f"widths[{i}]", w) for i, w in enumerate(widths)))  # fmt: skip
        if image_size is not None:
            sizes += (("image_size", image_size),)
        for name, v in sizes:
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        layers, c, side = [], in_channels, image_size
        for i, w in enumerate(widths):
            stride = 1 if i == 0 else 2
            layers += [nn.Conv2d(c, w, 3, stride, 1, bias=False), nn.BatchNorm2d(w), nn.ReLU()]
            c = w
            side = None if side is None else (side - 1) // stride + 1
        if side is None:
            layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, out_dim)]
        else:
            layers += [nn.Flatten(), nn.Linear(c * side * side, out_dim)]
        self.image_size = image_size
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net[-1](self.trunk(x))

    def trunk(self, x: torch.Tensor) -> torch.Tensor:
        """The features before the last linear layer: the flattened (or pooled) last feature map,
        where SSL features are usually read (the linear layer acts as part of the projector)."""
        if x.ndim != 4:
            raise ValueError(f"SmallCNN takes (B, C, H, W) images, got shape {tuple(x.shape)}")
        if self.image_size is not None and x.shape[-2:] != (self.image_size, self.image_size):
            raise ValueError(f"this SmallCNN flattens {self.image_size}x{self.image_size} images, "
                             f"got {tuple(x.shape[-2:])}")  # fmt: skip
        return self.net[:-1](x)


def projector(in_dim: int, hidden: int = 256, out_dim: int = 128) -> nn.Module:
    """The SSL head the loss sees; features for evaluation are taken before it."""
    for name, v in (("in_dim", in_dim), ("hidden", hidden), ("out_dim", out_dim)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    return nn.Sequential(
        nn.Linear(in_dim, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Linear(hidden, out_dim)
    )


class ImageAugment(nn.Module):
    """Batched augmentations for small grey images (B, 1, H, W): a random affine warp (rotation,
    scale, translation), contrast/brightness jitter, Gaussian noise and one random erased patch.

    The random numbers come from ``gen`` on its own device (the global CPU generator without one)
    and are moved to the images' device, so a CPU generator gives the same views everywhere."""

    def __init__(
        self,
        rotate_deg: float = 15.0,
        scale: float = 0.15,
        shift: float = 0.15,
        jitter: float = 0.3,
        noise: float = 0.05,
        erase: float = 0.25,
    ):
        super().__init__()
        strengths = {"rotate_deg": rotate_deg, "scale": scale, "shift": shift, "jitter": jitter,
                     "noise": noise, "erase": erase}  # fmt: skip
        for name, v in strengths.items():
            if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        if erase >= 1 or scale >= 1:
            raise ValueError(f"erase and scale must be below 1, got {erase}, {scale}")
        self.rotate, self.scale, self.shift = math.radians(rotate_deg), scale, shift
        self.jitter, self.noise, self.erase = jitter, noise, erase

    def forward(self, x: torch.Tensor, gen: torch.Generator | None = None) -> torch.Tensor:
        B, _, H, W = x.shape
        dev = x.device
        draw_on = gen.device if gen is not None else torch.device("cpu")

        def u(*shape):
            return (torch.rand(*shape, generator=gen, device=draw_on) * 2 - 1).to(dev)

        ang = u(B) * self.rotate
        s = 1 + u(B) * self.scale
        theta = torch.zeros(B, 2, 3, device=dev)
        theta[:, 0, 0], theta[:, 0, 1] = s * torch.cos(ang), -s * torch.sin(ang)
        theta[:, 1, 0], theta[:, 1, 1] = s * torch.sin(ang), s * torch.cos(ang)
        theta[:, :, 2] = u(B, 2) * self.shift * 2
        grid = F.affine_grid(theta, list(x.shape), align_corners=False)
        x = F.grid_sample(x, grid, padding_mode="zeros", align_corners=False)
        contrast = 1 + u(B, 1, 1, 1) * self.jitter
        bright = u(B, 1, 1, 1) * self.jitter * 0.3
        noise = torch.randn(x.shape, generator=gen, device=draw_on).to(dev)
        x = x * contrast + bright + self.noise * noise
        if self.erase > 0:
            h, w = max(1, H // 4), max(1, W // 4)
            top = torch.randint(0, H - h + 1, (B,), generator=gen, device=draw_on).to(dev)
            left = torch.randint(0, W - w + 1, (B,), generator=gen, device=draw_on).to(dev)
            rows = torch.arange(H, device=dev)[None, :, None]
            cols = torch.arange(W, device=dev)[None, None, :]
            box = (
                (rows >= top[:, None, None])
                & (rows < top[:, None, None] + h)
                & (cols >= left[:, None, None])
                & (cols < left[:, None, None] + w)
            )
            erased = torch.rand(B, generator=gen, device=draw_on) < self.erase
            apply = erased.to(dev)[:, None, None]
            x = x.masked_fill((box & apply)[:, None], 0.0)
        return x
