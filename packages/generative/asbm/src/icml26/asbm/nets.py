"""Networks: any ``nn.Module`` taking ``(t, x)`` works; an MLP and a small UNet are provided.

``t`` is (B,) in [0, 1]; ``x`` is (B, *shape); the output has ``out_mult`` times the channels of x
(``out_mult=2`` for the bridge model, which predicts x0 and x1).
"""

import math

import torch
from torch import nn

from icml26.asbm.checks import check_shape, positive_int


def time_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal features of t (B,) in [0, 1] -> (B, dim), frequencies 1 ... 1000 (log-spaced)."""
    half = dim // 2
    freqs = torch.exp(torch.linspace(0.0, math.log(1000.0), half, device=t.device))
    ang = t[:, None].float() * freqs[None]
    return torch.cat([torch.sin(ang), torch.cos(ang)], 1)


class MLP(nn.Module):
    """(t, x) -> output of shape (B, out_mult * prod(shape)), reshaped like x (channels x out_mult).

    ``time=False`` makes a plain x -> output net (the corrector h(x1))."""

    def __init__(
        self,
        shape,
        hidden: int = 256,
        depth: int = 3,
        out_mult: int = 1,
        time: bool = True,
        t_dim: int = 32,
    ):
        super().__init__()
        shape = check_shape(shape)
        hidden, out_mult = positive_int(hidden, "hidden"), positive_int(out_mult, "out_mult")
        depth, t_dim = positive_int(depth, "depth", 0), positive_int(t_dim, "t_dim", 2)
        self.init_config = {
            "kind": "mlp",
            "shape": list(shape),
            "hidden": hidden,
            "depth": depth,
            "out_mult": out_mult,
            "time": time,
            "t_dim": t_dim,
        }
        self.shape = tuple(shape)
        self.out_mult, self.time, self.t_dim = out_mult, time, t_dim
        d = math.prod(self.shape)
        layers, width = [], d + (t_dim if time else 0)
        for _ in range(depth):
            layers += [nn.Linear(width, hidden), nn.SiLU()]
            width = hidden
        layers.append(nn.Linear(width, out_mult * d))
        self.net = nn.Sequential(*layers)

    def forward(self, t: torch.Tensor | None, x: torch.Tensor) -> torch.Tensor:
        h = x.flatten(1)
        if self.time:
            h = torch.cat([h, time_embedding(t, self.t_dim)], 1)
        out = self.net(h)
        B = x.shape[0]
        if self.out_mult == 1:
            return out.view(B, *self.shape)
        return (
            out.view(B, self.out_mult * self.shape[0], *self.shape[1:])
            if len(self.shape) > 1
            else out.view(B, self.out_mult * self.shape[0])
        )


class _Block(nn.Module):
    def __init__(self, c_in: int, c_out: int, t_dim: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, padding=1)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1)
        self.t = nn.Linear(t_dim, c_out)
        self.norm1, self.norm2 = nn.GroupNorm(8, c_out), nn.GroupNorm(8, c_out)
        self.skip = nn.Conv2d(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x, temb):
        h = torch.nn.functional.silu(self.norm1(self.conv1(x)))
        h = h + self.t(temb)[:, :, None, None]
        h = torch.nn.functional.silu(self.norm2(self.conv2(h)))
        return h + self.skip(x)


class TinyUNet(nn.Module):
    """A two-level UNet for small images (B, C, H, W) with H, W even (8x8 digits, 24x24 faces)."""

    def __init__(self, channels: int = 1, width: int = 32, out_mult: int = 1, t_dim: int = 32):
        super().__init__()
        channels, out_mult = positive_int(channels, "channels"), positive_int(out_mult, "out_mult")
        t_dim = positive_int(t_dim, "t_dim", 2)
        if positive_int(width, "width") % 8:
            raise ValueError(f"width must be a multiple of 8 (GroupNorm's 8 groups), got {width}")
        self.channels = channels
        self.init_config = {
            "kind": "unet",
            "channels": channels,
            "width": width,
            "out_mult": out_mult,
            "t_dim": t_dim,
        }
        self.t_dim = t_dim
        self.temb = nn.Sequential(
            nn.Linear(t_dim, 4 * t_dim), nn.SiLU(), nn.Linear(4 * t_dim, t_dim)
        )
        self.inp = nn.Conv2d(channels, width, 3, padding=1)
        self.down1 = _Block(width, width, t_dim)
        self.down2 = _Block(width, 2 * width, t_dim)
        self.mid = _Block(2 * width, 2 * width, t_dim)
        self.up1 = _Block(4 * width, width, t_dim)
        self.up2 = _Block(2 * width, width, t_dim)
        self.out = nn.Conv2d(width, out_mult * channels, 3, padding=1)

    def forward(self, t: torch.Tensor | None, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor) or x.ndim != 4 or x.shape[1] != self.channels:
            got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"x must be (B, {self.channels}, H, W) images, got {got}")
        if x.shape[2] % 2 or x.shape[3] % 2:
            raise ValueError(
                f"x needs an even height and width (one 2x pooling), got {x.shape[2:]}"
            )
        if t is None:  # a time-free use (the corrector h(x1), the one-step generator)
            t = torch.zeros(len(x), device=x.device)
        temb = self.temb(time_embedding(t, self.t_dim))
        h0 = self.down1(self.inp(x), temb)  # (B, w, H, W)
        h1 = self.down2(torch.nn.functional.avg_pool2d(h0, 2), temb)  # (B, 2w, H/2, W/2)
        h = self.mid(h1, temb)
        h = self.up1(torch.cat([h, h1], 1), temb)
        h = torch.nn.functional.interpolate(h, scale_factor=2, mode="nearest")
        h = self.up2(torch.cat([h, h0], 1), temb)
        return self.out(h)
