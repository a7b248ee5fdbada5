"""Offline data: 2-D toys, 8x8 digits (scikit-learn), 24x24 faces (scikit-image's LFW subset).

Every set is made on the CPU (so a seed gives the same points everywhere) and returned on
``device``.
"""

import math

import numpy as np
import torch


def _standardise(x: np.ndarray) -> torch.Tensor:
    x = torch.tensor(x, dtype=torch.float32)
    return (x - x.mean(0)) / x.std(0).mean()


def moons(
    n: int, noise: float = 0.05, seed: int = 0, device: str | torch.device = "cpu"
) -> torch.Tensor:
    from sklearn.datasets import make_moons

    return _standardise(make_moons(n, noise=noise, random_state=seed)[0]).to(device)


def eight_gaussians(n: int, seed: int = 0, device: str | torch.device = "cpu") -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    k = torch.randint(0, 8, (n,), generator=g)
    centres = torch.stack([torch.cos(k * math.pi / 4), torch.sin(k * math.pi / 4)], 1) * 2.0
    return ((centres + 0.1 * torch.randn(n, 2, generator=g)) / 1.5).to(device)


def checkerboard(n: int, seed: int = 0, device: str | torch.device = "cpu") -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x1 = torch.rand(n, generator=g) * 4 - 2
    x2 = torch.rand(n, generator=g) - torch.randint(0, 2, (n,), generator=g) * 2.0
    x2 = x2 + (torch.floor(x1) % 2)
    return (torch.stack([x1, x2], 1) / 1.2).to(device)


TOYS = {"moons": moons, "8gaussians": eight_gaussians, "checkerboard": checkerboard}


def digits(device: str | torch.device = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """1797 images (N, 1, 8, 8) scaled to [-1, 1], and labels."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.tensor(d.data, dtype=torch.float32).view(-1, 1, 8, 8) / 8.0 - 1.0
    return x.to(device), torch.tensor(d.target, device=device)


def lfw(device: str | torch.device = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """scikit-image's LFW subset: 200 images cropped to (N, 1, 24, 24) and scaled to [-1, 1],
    and labels (1 for the first 100, which are faces; 0 for the 100 background patches)."""
    from skimage.data import lfw_subset

    x = torch.tensor(np.asarray(lfw_subset()), dtype=torch.float32)[:, :24, :24]
    x = (x - x.min()) / (x.max() - x.min())
    labels = (torch.arange(len(x)) < 100).long()
    return (x * 2 - 1).unsqueeze(1).to(device), labels.to(device)


def faces(device: str | torch.device = "cpu") -> torch.Tensor:
    """The 100 faces of scikit-image's LFW subset, (100, 1, 24, 24) in [-1, 1]."""
    x, is_face = lfw(device)
    return x[is_face.bool()]


def load_array(path, device: str | torch.device = "cpu") -> torch.Tensor:
    """Your own data: a ``.npy`` file holding one (N, ...) float array, N >= 2 samples
    (loaded without pickle). Standardise it first: the prior is N(0, I)."""
    from pathlib import Path

    path = Path(path)
    if path.suffix != ".npy":
        raise ValueError(f"{path}: expected a .npy file of shape (N, ...)")
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    try:
        arr = np.load(path, allow_pickle=False)
    except ValueError as e:
        raise ValueError(f"{path}: not a plain numeric .npy array ({e})") from None
    if arr.ndim < 2 or arr.shape[0] < 2 or not np.issubdtype(arr.dtype, np.number):
        raise ValueError(f"{path}: need a numeric (N, ...) array with N >= 2, got {arr.dtype} "
                         f"{arr.shape}")  # fmt: skip
    x = torch.as_tensor(arr, dtype=torch.float32)
    if not torch.isfinite(x).all():
        raise ValueError(f"{path}: holds NaN or inf")
    return x.to(device)
