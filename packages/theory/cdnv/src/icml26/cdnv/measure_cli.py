"""``icml26-cdnv measure FEATURES.npz``: V, V~, V~ d / V and both few-shot bounds of saved
features.

The file holds arrays ``features`` (N, d) and ``labels`` (N,) (``numpy.savez``): embeddings from
any model. Nothing is unpickled (``allow_pickle=False``).
"""

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import tyro

from icml26.cdnv.bound import fewshot_bound, ncc_fewshot_error
from icml26.cdnv.measures import cdnv, directional_cdnv
from icml26.cdnv.metric import collapse_ratio
from icml26.cdnv.stats import class_stats
from icml26.testing.command import DeviceOption
from icml26.testing.results import resolve_device


@dataclass(frozen=True)
class MeasureConfig(DeviceOption):
    """Measure V, V~, few-shot NCC error and its bound on features saved with numpy.savez."""

    path: tyro.conf.Positional[Path]
    """An .npz file with arrays 'features' (N, d) and 'labels' (N,)."""
    shots: tuple[int, ...] = (1, 5, 20)
    episodes: int = 100
    convention: str = "sum"
    """'sum' (default) or 'mean' (Galanti et al. 2022: divided by 2)."""

    def __post_init__(self):
        if isinstance(self.path, str):  # from Python, a plain string path is what users pass
            object.__setattr__(self, "path", Path(self.path))
        if not isinstance(self.path, Path):
            raise TypeError(f"path must be a path to an .npz file, got {type(self.path).__name__}")


def run_measure(cfg: MeasureConfig) -> dict:
    device = resolve_device(cfg.device)
    if not cfg.path.is_file():
        raise ValueError(f"path: {cfg.path} does not exist")
    with open(cfg.path, "rb") as f:
        magic = f.read(4)
    if magic != b"PK\x03\x04":  # an .npz is a zip archive; anything else is not one
        raise ValueError(f"path: {cfg.path} is not a .npz file (write one with "
                         "np.savez(path, features=..., labels=...))")  # fmt: skip
    try:
        with np.load(cfg.path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in ("features", "labels") if k in data.files}
            held = sorted(data.files)
    except (OSError, ValueError, zipfile.BadZipFile) as e:  # object arrays would need pickle
        raise ValueError(f"path: {cfg.path} is not a readable .npz file ({e})") from None
    missing = [k for k in ("features", "labels") if k not in arrays]
    if missing:
        raise ValueError(f"path: {cfg.path} lacks the array(s) {missing} (it holds {held})")
    features, labels = arrays["features"], arrays["labels"]
    features = torch.as_tensor(features, device=device)
    labels = torch.as_tensor(labels, device=device)
    stats = class_stats(features, labels)
    out = {
        "classes": stats.n_classes,
        "V": cdnv(stats, cfg.convention).mean,
        "V~": directional_cdnv(stats, cfg.convention).mean,
        "V (cross-fit)": cdnv(stats, cfg.convention, cross_fit=True).mean,
        "V~ (cross-fit)": directional_cdnv(stats, cfg.convention, cross_fit=True).mean,
        "V~ d / V": collapse_ratio(stats),
        "shots": list(cfg.shots),
        "error": ncc_fewshot_error(features, labels, list(cfg.shots), cfg.episodes),
        "bound": fewshot_bound(stats, list(cfg.shots)),
        "bound (authors)": fewshot_bound(stats, list(cfg.shots), variant="authors"),
        "device": str(stats.means.device),
    }
    print(json.dumps(out, indent=2))
    return out
