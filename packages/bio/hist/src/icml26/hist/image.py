"""From an H&E image to a slide the models can read: spot patches, pseudo-spots, encoders.

* :func:`spot_patches` cuts one patch per spot (one spot diameter, resampled) from an image
  array, as Visium / legacy-ST users hold it (Space Ranger's full-resolution pixel coordinates);
* :func:`pseudo_spots` tiles the tissue of an H&E-only image with a spot lattice (hexagonal as
  Visium, or square), so a trained model predicts expression where nothing was measured;
* :func:`embed_patches` turns patches into per-spot features: the fixed colour / texture
  featuriser by default, any torch module (a pathology foundation model's image encoder), or a
  timm model by name (``pip install timm``; timm loads the pretrained weights from its cache or
  downloads them);
* :func:`slide_from_image` chains them into a :class:`~icml26.hist.data.Slide` without counts.
"""

import numpy as np

from icml26.hist.data import Slide, featurise_patches
from icml26.testing.checks import integer, number

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def _as_image(image) -> np.ndarray:
    img = np.asarray(image)
    if img.ndim != 3 or img.shape[2] not in (3, 4):
        raise ValueError(f"image must be (H, W, 3) or (H, W, 4), got shape {img.shape}")
    img = img[..., :3]
    if img.dtype != np.uint8:
        if np.issubdtype(img.dtype, np.integer):  # e.g. 16-bit scans: rescale, never clip
            img = img.astype(np.float64) * 255.0 / np.iinfo(img.dtype).max
        elif img.max() <= 1.0:  # floats in [0, 1], as scanpy stores hires images
            img = img * 255.0
        img = np.clip(np.rint(img), 0, 255).astype(np.uint8)
    return img


def spot_patches(image, xy, diameter_px: float, size: int = 32) -> np.ndarray:
    """(N, size, size, 3) uint8: the square of side ``diameter_px`` centred on each spot of
    ``xy`` ((N, 2) pixel x, y), box-resampled; pixels outside the image read as white."""
    from PIL import Image

    img = _as_image(image)
    xy = np.asarray(xy, dtype=np.float64)
    if xy.ndim != 2 or xy.shape[1] != 2 or not np.isfinite(xy).all():
        raise ValueError(f"xy must be finite (N, 2) pixel coordinates, got {xy.shape}")
    number("diameter_px", diameter_px, above=0)
    integer("size", size, low=1)
    r = diameter_px / 2
    pad = int(np.ceil(r)) + 1
    padded = np.pad(img, ((pad, pad), (pad, pad), (0, 0)), constant_values=255)
    pil = Image.fromarray(padded)
    out = [
        np.asarray(
            pil.crop(
                (int(x - r) + pad, int(y - r) + pad, int(x + r) + pad, int(y + r) + pad)
            ).resize((size, size), Image.BOX)
        )
        for x, y in xy
    ]
    return np.stack(out).astype(np.uint8) if out else np.zeros((0, size, size, 3), np.uint8)


def pseudo_spots(
    image,
    pitch_px: float,
    diameter_px: float | None = None,
    hexagonal: bool = True,
    max_background: float = 0.8,
) -> tuple[np.ndarray, np.ndarray]:
    """Spot centres tiling ``image`` on a lattice of pitch ``pitch_px`` (Visium: rows
    ``pitch * sqrt(3) / 2`` apart, alternate rows offset by half a pitch), kept where at most
    ``max_background`` of the spot's pixels are near-white background.
    Returns (xy (N, 2) pixel x, y; sites (N, 2) integer lattice row, col)."""
    img = _as_image(image)
    if not pitch_px > 0:
        raise ValueError(f"pitch_px must be > 0, got {pitch_px}")
    diameter_px = diameter_px or pitch_px / 2
    h, w = img.shape[:2]
    dy = pitch_px * np.sqrt(3) / 2 if hexagonal else pitch_px
    rows = np.arange(int(h // dy) + 1)
    xy, sites = [], []
    for r in rows:
        offset = pitch_px / 2 if hexagonal and r % 2 else 0.0
        cols = np.arange(int((w - offset) // pitch_px) + 1)
        for c in cols:
            x, y = offset + c * pitch_px, r * dy
            if x < w and y < h:
                xy.append((x, y))
                sites.append((r, c))
    xy, sites = np.array(xy, dtype=np.float64), np.array(sites, dtype=np.int64)
    patches = spot_patches(img, xy, diameter_px, size=16).astype(np.float64) / 255
    background = (patches.min(-1) > 0.85).mean((1, 2))
    keep = background <= max_background
    if not keep.any():
        raise ValueError("no tissue found: every pseudo-spot is background")
    return xy[keep], sites[keep]


def embed_patches(patches: np.ndarray, encoder=None, batch_size: int = 64, device="cpu"):
    """(N, F) float32 per-spot features from (N, P, P, 3) uint8 patches.

    ``encoder``: None (the fixed featuriser, 24 numbers), a torch module mapping ImageNet-
    normalised (B, 3, P, P) floats to (B, F) (resize patches to what it expects with
    :func:`spot_patches`'s ``size``), or a timm model name, built with ``num_classes=0``."""
    if encoder is None:
        return featurise_patches(patches)
    import torch

    if isinstance(encoder, str):
        try:
            import timm
        except ImportError:
            raise ValueError(
                f"encoder {encoder!r} is a timm name but timm is not installed (pip install timm)"
            ) from None
        try:
            encoder = timm.create_model(encoder, pretrained=True, num_classes=0)
        except RuntimeError as e:  # an unknown name, or weights that cannot be loaded
            raise ValueError(f"timm could not build encoder {encoder!r}: {e}") from None
    if not isinstance(encoder, torch.nn.Module):
        raise ValueError(f"encoder must be None, a torch module or a timm name, got {encoder!r}")
    p = np.asarray(patches)
    if p.ndim != 4 or p.shape[-1] != 3:
        raise ValueError(f"patches must have shape (N, P, P, 3), got {p.shape}")
    mean = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    encoder = encoder.to(device).eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(p), batch_size):
            x = torch.as_tensor(p[start : start + batch_size]).permute(0, 3, 1, 2).float() / 255
            f = encoder(((x - mean) / std).to(device))
            out.append(f.reshape(len(x), -1).float().cpu().numpy())
    return np.concatenate(out).astype(np.float32)


def slide_from_image(
    image,
    pitch_px: float,
    diameter_px: float | None = None,
    hexagonal: bool = True,
    encoder=None,
    patch_size: int = 32,
    name: str = "image",
) -> Slide:
    """A slide without counts from an H&E-only image: pseudo-spots on its tissue, a patch per
    spot, features from ``encoder`` (see :func:`embed_patches`)."""
    xy, sites = pseudo_spots(image, pitch_px, diameter_px, hexagonal)
    patches = spot_patches(image, xy, diameter_px or pitch_px / 2, patch_size)
    return Slide(name, xy, embed_patches(patches, encoder), hexagonal=hexagonal, sites=sites)
