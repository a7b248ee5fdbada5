"""icml26.cdnv: directional CDNV, its few-shot bound, and tools to watch them during training.

Paper: Achleshwar Luthra, Yash Salunkhe, Tomer Galanti, "Directional Neural Collapse Explains
Few-Shot Transfer in Self-Supervised Learning" (arXiv 2603.03530, ICML 2026).

Implemented: streaming per-class moments (one pass, chunked second moments, a fourth-moment
term); the CDNV V and the directional CDNV V~ (pairwise matrices and averages, plug-in or
cross-fitted); the m-shot nearest-class-centroid error by episodes and a bound on it with leading
term 4 V~ and finite-shot terms vanishing as 1/m (RECONSTRUCTED, see ``bound``); decision-axis
cosines between labelings; a training monitor; SimCLR / VICReg / Barlow Twins trainers on small
offline images and a synthetic multitask generator for the demo.
"""

from icml26.cdnv._results import package_version
from icml26.cdnv.axes import decision_axis_cosines
from icml26.cdnv.bound import fewshot_bound, ncc_fewshot_error, pairwise_bound
from icml26.cdnv.callback import CDNVMonitor
from icml26.cdnv.data import MultitaskGenerator, load_digits_images, load_mnist_images
from icml26.cdnv.measures import PairwiseCDNV, cdnv, directional_cdnv
from icml26.cdnv.ssl import (
    ImageAugment,
    MLPEncoder,
    barlow_twins_loss,
    projector,
    simclr_loss,
    train_ssl,
    vicreg_loss,
)
from icml26.cdnv.stats import ClassStats, StreamingClassStats, class_stats

# The version lives in pyproject.toml only (installed metadata, or the source tree's file).
__version__ = package_version("icml26-cdnv", __file__)

__all__ = [
    "CDNVMonitor",
    "ClassStats",
    "ImageAugment",
    "MLPEncoder",
    "MultitaskGenerator",
    "PairwiseCDNV",
    "StreamingClassStats",
    "barlow_twins_loss",
    "cdnv",
    "class_stats",
    "decision_axis_cosines",
    "directional_cdnv",
    "fewshot_bound",
    "load_digits_images",
    "load_mnist_images",
    "ncc_fewshot_error",
    "pairwise_bound",
    "projector",
    "simclr_loss",
    "train_ssl",
    "vicreg_loss",
]
