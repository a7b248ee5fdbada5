"""Images, patches and degradations for x2 / x4 super-resolution, all offline.

Training images ship inside scikit-image (``skimage.data``) and scikit-learn
(``load_sample_images``); no download. The held-out images are astronaut, coffee, chelsea, camera
and rocket; ``cat`` is chelsea again and is left out of training. Grayscale images are repeated
to three channels. Low-resolution inputs are made by antialiased bicubic downsampling
(``torch.nn.functional.interpolate(..., antialias=True)``), rounded to 8 bits like a saved image.
Metrics follow the super-resolution convention: PSNR and SSIM on the luma channel (ITU-R BT.601
Y of ``skimage.color.rgb2ycbcr``) with ``scale`` pixels shaved from each border.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

HELD_OUT = ("astronaut", "coffee", "chelsea", "camera", "rocket")
TRAIN = (
    "immunohistochemistry", "brick", "grass", "gravel", "hubble_deep_field", "moon", "coins",
    "horse", "clock", "retina", "cell", "page", "text", "sklearn:china.jpg", "sklearn:flower.jpg",
)  # fmt: skip
"""Training images: ``skimage.data`` names, ``sklearn:<file>`` for scikit-learn's samples."""


def load_image(name: str) -> torch.Tensor:
    """An offline image as float RGB in [0, 1], shape (3, H, W): a ``skimage.data`` image that
    ships in scikit-image's wheel (``"astronaut"``) or ``"sklearn:<file>"`` (``china.jpg``,
    ``flower.jpg``)."""
    if not isinstance(name, str):
        raise TypeError(
            f"name must be an image name such as 'astronaut', got {type(name).__name__}"
        )
    if name.startswith("sklearn:"):
        from sklearn.datasets import load_sample_images

        bunch = load_sample_images()
        files = [f.rsplit("/", 1)[-1] for f in bunch.filenames]
        key = name.split(":", 1)[1]
        if key not in files:
            raise ValueError(f"scikit-learn has no sample image {key!r} (it has {files})")
        arr = bunch.images[files.index(key)]
    else:
        import skimage.data

        not_images = ("data_dir", "download_all", "file_hash", "lbp_frontal_face_cascade_filename")
        loader = getattr(skimage.data, name, None) if name not in not_images else None
        if name not in skimage.data.__all__ or loader is None or not callable(loader):
            raise ValueError(f"skimage.data has no image {name!r}")
        try:
            arr = loader()
        except Exception as e:  # images outside the wheel need pooch and a network
            raise ValueError(f"skimage.data.{name} cannot be loaded offline: {e}") from None
        if not isinstance(arr, np.ndarray):
            raise ValueError(f"skimage.data.{name} is not an image ({type(arr).__name__})")
    return to_image(arr, name)


def to_image(arr, name: str = "image") -> torch.Tensor:
    """An image array (H, W) grey or (H, W, 3/4) RGB(A); bool, uint8, uint16 or float in
    [0, 1]) -> float RGB in [0, 1], shape (3, H, W)."""
    arr = np.asarray(arr)
    if arr.dtype == bool:
        arr = arr.astype(np.uint8) * 255
    if arr.ndim == 2:
        arr = np.repeat(arr[..., None], 3, axis=2)
    if arr.ndim != 3 or arr.shape[2] < 3:
        raise ValueError(f"{name}: expected a grayscale or RGB(A) image, got shape {arr.shape}")
    x = torch.from_numpy(np.array(arr[..., :3], copy=True)).permute(2, 0, 1).float()
    if arr.dtype == np.uint16:
        return x / 65535.0
    if arr.dtype == np.uint8:
        return x / 255.0
    # a float image must already be in [0, 1]: clamping 0..255 floats would whiten the image
    return check_image(x, name)[0]


RANGE_SLACK = 1e-4
"""How far outside [0, 1] an image may stray (rounding of a resampled image) and pass."""


def check_image(x: torch.Tensor, name: str = "image", multiple: int = 1) -> torch.Tensor:
    """Validate a float image batch (B, 3, H, W) or image (3, H, W) in [0, 1]; H, W divisible by
    ``multiple``. Returns it as (B, 3, H, W)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be floating point in [0, 1], got {x.dtype} "
                        "(divide uint8 images by 255)")  # fmt: skip
    if x.ndim == 3:
        x = x[None]
    if x.ndim != 4 or x.shape[1] != 3:
        raise ValueError(f"{name} must have shape (B, 3, H, W) or (3, H, W), got {tuple(x.shape)}")
    if x.shape[0] == 0 or x.shape[-1] == 0 or x.shape[-2] == 0:
        raise ValueError(f"{name} is empty: shape {tuple(x.shape)} (need at least one image of at "
                         "least 1 x 1 pixels)")  # fmt: skip
    if x.shape[-1] % multiple or x.shape[-2] % multiple:
        raise ValueError(f"{name}'s height and width must be divisible by {multiple}, got "
                         f"{tuple(x.shape[-2:])}")  # fmt: skip
    if not torch.isfinite(x).all():
        raise ValueError(f"{name} contains NaN or inf")
    lo, hi = float(x.min()), float(x.max())
    if lo < -RANGE_SLACK or hi > 1 + RANGE_SLACK:
        hint = " (an 8-bit image as float? divide by 255)" if hi > 1 else ""
        raise ValueError(f"{name} must hold values in [0, 1], got [{lo:.4g}, {hi:.4g}]{hint}")
    return x


def downsample(x: torch.Tensor, scale: int) -> torch.Tensor:
    """Antialiased bicubic downsampling by an integer ``scale``, rounded to 8-bit levels."""
    x = check_image(x, multiple=_check_scale(scale))
    y = F.interpolate(x, scale_factor=1 / scale, mode="bicubic", antialias=True,
                      align_corners=False)  # fmt: skip
    return (y.clamp(0, 1) * 255).round() / 255


def _check_scale(scale) -> int:
    if isinstance(scale, bool) or not isinstance(scale, int) or scale < 1:
        raise ValueError(f"scale must be a positive integer, got {scale!r}")
    return scale


def bicubic_up(x: torch.Tensor, scale: int) -> torch.Tensor:
    """Bicubic upsampling by ``scale`` (the baseline and the DPO rejected answer)."""
    x = check_image(x)
    _check_scale(scale)
    return F.interpolate(x, scale_factor=scale, mode="bicubic", align_corners=False).clamp(0, 1)


def crop_to(x: torch.Tensor, multiple: int) -> torch.Tensor:
    """Crop H and W down to multiples of ``multiple`` (top-left)."""
    H, W = x.shape[-2:]
    return x[..., : H - H % multiple, : W - W % multiple]


def patches(images: list[torch.Tensor], size: int = 32, stride: int | None = None) -> torch.Tensor:
    """Non-overlapping (or ``stride``-spaced) ``size`` x ``size`` patches: (N, 3, size, size)."""
    stride = stride or size
    out = []
    for x in images:
        p = x.unfold(1, size, stride).unfold(2, size, stride)  # (3, nh, nw, size, size)
        out.append(p.permute(1, 2, 0, 3, 4).reshape(-1, 3, size, size))
    return torch.cat(out)


@dataclass(frozen=True)
class PatchData:
    """Training patches (HR) and held-out full images."""

    train: torch.Tensor
    """(N, 3, size, size) high-resolution training patches."""
    test: dict[str, torch.Tensor]
    """Held-out name -> (3, H, W), cropped to a multiple of 4."""


def load_data(size: int = 32, flat_std: float = 0.02) -> PatchData:
    """Patches of the training images, dropping near-constant ones (std < ``flat_std``: blank
    background teaches nothing), and the held-out images."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 4 or size % 4:
        raise ValueError(f"size must be a positive multiple of 4 (the x4 scale), got {size!r}")
    if not (isinstance(flat_std, (int, float)) and 0 <= flat_std < math.inf):
        raise ValueError(f"flat_std must be a finite number >= 0, got {flat_std!r}")
    train = patches([crop_to(load_image(n), size) for n in TRAIN], size)
    keep = train.flatten(1).std(1) >= flat_std
    test = {n: crop_to(load_image(n), 4) for n in HELD_OUT}
    return PatchData(train[keep], test)


def luma(x: torch.Tensor) -> np.ndarray:
    """BT.601 luma in [16, 235] of an RGB image (3, H, W) in [0, 1], as skimage computes it."""
    from skimage.color import rgb2ycbcr

    return rgb2ycbcr(x.permute(1, 2, 0).double().numpy())[..., 0]


SSIM_WINDOW = 11
"""The side of skimage's Gaussian SSIM window at sigma 1.5 (truncated at 3.5 sigma)."""


def _shaved_luma(sr: torch.Tensor, hr: torch.Tensor, scale: int) -> tuple[np.ndarray, np.ndarray]:
    """Luma of HR and of the 8-bit rounded SR image, ``scale`` pixels shaved from each border."""
    if sr.shape != hr.shape:
        raise ValueError(f"sr and hr differ in shape: {tuple(sr.shape)} vs {tuple(hr.shape)}")
    hr = check_image(hr, "hr")  # sr is clamped below: a model may overshoot [0, 1] a little
    if len(hr) != 1:
        raise ValueError(f"sr and hr must be one image (3, H, W), got a batch of {len(hr)}")
    hr, sr = hr[0], sr.reshape(hr.shape[1:])
    if not bool(torch.isfinite(sr).all()):
        raise ValueError("sr holds NaN or inf")
    _check_scale(scale)
    if min(sr.shape[-2:]) - 2 * scale < SSIM_WINDOW:
        raise ValueError(f"the images ({tuple(sr.shape[-2:])}) are too small: {scale} pixels are "
                         f"shaved from each border and SSIM's Gaussian window needs "
                         f"{SSIM_WINDOW} x {SSIM_WINDOW} left")  # fmt: skip
    sr = (sr.clamp(0, 1) * 255).round() / 255
    return luma(hr)[scale:-scale, scale:-scale], luma(sr)[scale:-scale, scale:-scale]


def psnr_ssim(sr: torch.Tensor, hr: torch.Tensor, scale: int) -> tuple[float, float]:
    """PSNR and SSIM on luma with ``scale`` pixels shaved from each border (8-bit rounded SR)."""
    from skimage.metrics import peak_signal_noise_ratio, structural_similarity

    a, b = _shaved_luma(sr, hr, scale)
    return (float(peak_signal_noise_ratio(a, b, data_range=255)),
            # the super-resolution convention: Gaussian window, sigma 1.5 (Wang et al. 2004)
            float(structural_similarity(a, b, data_range=255, gaussian_weights=True, sigma=1.5,
                                        use_sample_covariance=False)))  # fmt: skip


def ms_ssim_y(sr: torch.Tensor, hr: torch.Tensor, scale: int) -> float | None:
    """MS-SSIM (``pytorch-msssim``, 5 scales) on luma with ``scale`` pixels shaved; None when the
    image is too small for 5 scales of the 11-pixel window (under 161 px after the shave)."""
    from pytorch_msssim import ms_ssim

    a, b = _shaved_luma(sr, hr, scale)
    if min(a.shape) < 161:
        return None
    t = [torch.from_numpy(v.copy()).float()[None, None] for v in (a, b)]
    return float(ms_ssim(t[0], t[1], data_range=255))
