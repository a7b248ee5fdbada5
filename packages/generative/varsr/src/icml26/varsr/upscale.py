"""Whole-image super-resolution with any of the package's models, tile by tile.

The models work on fixed tiles (the VAR transformer on its LR side, 8 x 8 by default: 32 x 32
outputs);
``upscale`` cuts an LR image into tiles, super-resolves them in batches and stitches the
results. ``x2`` comes from the same pass as ``x4`` for a HIT model (its x2 prefix decode).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from icml26.testing.checks import integer
from icml26.varsr.data import check_image


def _tiles(x: torch.Tensor, t: int) -> tuple[torch.Tensor, tuple[int, int]]:
    C, H, W = x.shape[1:]
    ph, pw = (-H) % t, (-W) % t
    x = F.pad(x, (0, pw, 0, ph), mode="replicate")
    nh, nw = x.shape[-2] // t, x.shape[-1] // t
    tiles = x.unfold(2, t, t).unfold(3, t, t)  # (B, C, nh, nw, t, t)
    return tiles.permute(0, 2, 3, 1, 4, 5).reshape(-1, C, t, t), (nh, nw)


def _stitch(tiles: torch.Tensor, B: int, grid: tuple[int, int]) -> torch.Tensor:
    nh, nw = grid
    C, t = tiles.shape[1], tiles.shape[-1]
    x = tiles.view(B, nh, nw, C, t, t).permute(0, 3, 1, 4, 2, 5)
    return x.reshape(B, C, nh * t, nw * t)


@torch.no_grad()
def upscale(model, lr: torch.Tensor, tile: int | None = None, batch: int = 256,
            return_scales: bool = False):  # fmt: skip
    """Super-resolve LR image(s) (B, 3, H, W) or (3, H, W) in [0, 1] by 4.

    ``model`` is a :class:`~icml26.varsr.var.VARTransformer` (tiles of its LR side) or any
    callable mapping LR images to 4x images (ESPCN: the whole image at once unless ``tile`` is
    given). Returns (B, 3, 4H, 4W), or with ``return_scales`` (VAR only) {2: x2, 4: x4}."""
    lr = check_image(lr, "lr")
    batch = integer("batch", batch, low=1)
    tile = None if tile is None else integer("tile", tile, low=1)
    if hasattr(model, "generate"):
        if tile not in (None, model.lr_side):
            raise ValueError(
                f"this VAR model works on {model.lr_side} px LR tiles, got tile={tile}"
            )
        tile = model.lr_side
    elif tile is None:  # a fully convolutional model sees the whole image: no seams
        out = torch.cat([model(lr[i : i + 1]) for i in range(len(lr))])
        if return_scales:
            raise ValueError("return_scales needs a VAR model (one pass gives x2 and x4)")
        return out
    B, _, H, W = lr.shape
    tiles, grid = _tiles(lr, tile)
    outs: dict[int, list[torch.Tensor]] = {2: [], 4: []}
    for i in range(0, len(tiles), batch):
        chunk = tiles[i : i + batch]
        if hasattr(model, "generate"):
            res = model.generate(chunk, return_scales=True)
            outs[2].append(res[2])
            outs[4].append(res[4])
        else:
            outs[4].append(model(chunk))
    result = {
        s: _stitch(torch.cat(v), B, grid)[..., : s * H, : s * W] for s, v in outs.items() if v
    }
    if return_scales:
        if 2 not in result:
            raise ValueError("return_scales needs a VAR model (one pass gives x2 and x4)")
        return result
    return result[4]
