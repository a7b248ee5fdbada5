"""Baselines: bicubic upsampling and ESPCN (Shi et al. 2016), the regression CNN that anchors
PSNR: three convolutions on the LR image and a sub-pixel (pixel-shuffle) upsampling, trained with
MSE on the same patches as the VAR models. It predicts a residual over bicubic, a common and
strictly stronger variant of the original."""

from __future__ import annotations

import torch
import torch.nn as nn

from icml26.varsr.data import bicubic_up, check_image


class ESPCN(nn.Module):
    """LR (B, 3, h, w) in [0, 1] -> SR (B, 3, s h, s w): bicubic + a sub-pixel CNN residual."""

    def __init__(self, scale: int = 4, channels: int = 64):
        super().__init__()
        if scale < 2:
            raise ValueError(f"scale must be >= 2, got {scale}")
        self.scale = scale
        self.body = nn.Sequential(
            nn.Conv2d(3, channels, 5, padding=2), nn.Tanh(),
            nn.Conv2d(channels, channels // 2, 3, padding=1), nn.Tanh(),
            nn.Conv2d(channels // 2, 3 * scale**2, 3, padding=1), nn.PixelShuffle(scale),
        )  # fmt: skip

    def forward(self, lr: torch.Tensor) -> torch.Tensor:
        lr = check_image(lr, "lr").to(self.body[0].weight.dtype)  # images convert losslessly
        return (bicubic_up(lr, self.scale) + self.body(lr * 2 - 1)).clamp(0, 1)
