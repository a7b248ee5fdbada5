"""HiST: a hierarchical sparse transformer from H&E spot features to spatial transcriptomics.

arXiv 2606.14251. See :mod:`icml26.hist.model` for what was implemented and adapted.
"""

from icml26.hist.attention import (
    RelativePositionBias,
    edge_softmax,
    global_edges,
    local_attention_edges,
    local_edges,
    plan_windows,
    token_attention,
    window_attention,
)
from icml26.hist.baselines import BaselineConfig, FullAttention, KNNAttention, SpotMLP
from icml26.hist.data import Slide, featurise_patches, load_her2st, load_her2st_subset
from icml26.hist.genes import highly_expressed_genes, highly_variable_genes
from icml26.hist.image import embed_patches, pseudo_spots, slide_from_image, spot_patches
from icml26.hist.lattice import Lattice, add_sentinels, to_lattice
from icml26.hist.linear import MeanExpression, RidgeProbe
from icml26.hist.metrics import gene_pearsons, slide_metrics
from icml26.hist.model import DenseGridHiST, HiST, HiSTConfig, SpotModel
from icml26.hist.sampling import PixelShuffleUp, SparseDown, coarsen
from icml26.hist.synthetic import SyntheticWorld, make_cohort, make_slide
from icml26.hist.train import (
    TrainConfig,
    TrainResult,
    evaluate,
    load_checkpoint,
    predict,
    predict_anndata,
    predict_log1p,
    train,
)

__all__ = [
    "BaselineConfig",
    "DenseGridHiST",
    "FullAttention",
    "HiST",
    "HiSTConfig",
    "KNNAttention",
    "Lattice",
    "MeanExpression",
    "PixelShuffleUp",
    "RelativePositionBias",
    "RidgeProbe",
    "Slide",
    "SparseDown",
    "SpotMLP",
    "SpotModel",
    "SyntheticWorld",
    "TrainConfig",
    "TrainResult",
    "add_sentinels",
    "coarsen",
    "edge_softmax",
    "embed_patches",
    "evaluate",
    "featurise_patches",
    "gene_pearsons",
    "global_edges",
    "highly_expressed_genes",
    "highly_variable_genes",
    "load_checkpoint",
    "load_her2st",
    "load_her2st_subset",
    "local_attention_edges",
    "local_edges",
    "make_cohort",
    "make_slide",
    "plan_windows",
    "predict",
    "predict_anndata",
    "predict_log1p",
    "pseudo_spots",
    "slide_from_image",
    "slide_metrics",
    "spot_patches",
    "to_lattice",
    "token_attention",
    "train",
    "window_attention",
]
