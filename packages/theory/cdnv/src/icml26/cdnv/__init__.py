"""icml26.cdnv: directional CDNV, its few-shot bound, and tools to watch them during training.

Paper: Achleshwar Luthra, Yash Salunkhe, Tomer Galanti, "Directional Neural Collapse Explains
Few-Shot Transfer in Self-Supervised Learning" (arXiv 2603.03530, ICML 2026).

Implemented: per-class moments in O(C^2 + C d) memory (two streamed passes, mergeable
across processes; a torchmetrics-style metric and a Lightning callback); the CDNV V and the
directional CDNV V~ (pairwise matrices and averages, plug-in or cross-fitted) and V~ d / V
against its isotropic null; the m-shot nearest-class-centroid error by episodes and two bounds
on it (the authors' published formula and a reconstruction with Cantelli's inequality, see
``bound``); decision-axis cosines between labelings and the bound small V~ puts on them; a
training monitor; SimCLR / VICReg / Barlow Twins trainers and small encoders for offline
images, and a synthetic multitask generator for the demo.
"""

from icml26.cdnv.axes import axis_cosine_bound, decision_axis_cosines
from icml26.cdnv.bound import fewshot_bound, ncc_fewshot_error, pairwise_bound
from icml26.cdnv.callback import CDNVMonitor
from icml26.cdnv.data import MultitaskGenerator, load_digits_images, load_mnist_images
from icml26.cdnv.measures import PairwiseCDNV, cdnv, directional_cdnv
from icml26.cdnv.metric import (
    CDNVMetric,
    collapse_ratio,
    effective_collapse_ratio,
    effective_dim,
)
from icml26.cdnv.ssl import (
    ImageAugment,
    MLPEncoder,
    SmallCNN,
    barlow_twins_loss,
    projector,
    simclr_loss,
    vicreg_loss,
)
from icml26.cdnv.stats import ClassStats, StreamingClassStats, class_stats, exact_class_stats
from icml26.cdnv.train import train_ssl, train_supervised
from icml26.testing.results import package_version

# The version lives in pyproject.toml only (installed metadata, or the source tree's file).
__version__ = package_version("icml26-cdnv", __file__)

__all__ = [
    "CDNVMetric",
    "CDNVMonitor",
    "ClassStats",
    "ImageAugment",
    "MLPEncoder",
    "MultitaskGenerator",
    "PairwiseCDNV",
    "SmallCNN",
    "StreamingClassStats",
    "axis_cosine_bound",
    "barlow_twins_loss",
    "cdnv",
    "class_stats",
    "collapse_ratio",
    "decision_axis_cosines",
    "directional_cdnv",
    "effective_collapse_ratio",
    "effective_dim",
    "exact_class_stats",
    "fewshot_bound",
    "load_digits_images",
    "load_mnist_images",
    "ncc_fewshot_error",
    "pairwise_bound",
    "projector",
    "simclr_loss",
    "train_ssl",
    "train_supervised",
    "vicreg_loss",
]
