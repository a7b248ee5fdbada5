"""LipoPU: pocket-centric positive-unlabeled learning for lipid-binding prediction (ICML 2026).

No paper body or code is public; this package reconstructs the method from its abstract and its
ancestors, and marks each reconstructed choice where it is made:
- PU risks (``losses``): nnPU (Kiryo et al. 2017), PU-AUC (Sakai et al. 2018), the LipoPU
  objective (a pairwise PU ranking risk with nnPU's non-negative correction; reconstructed) and
  BCE with unlabeled pockets as negatives (the supervised baseline); one prior per lipid category.
- The pocket representation (``model``): gated attention-MIL (Ilse et al. 2018) over the
  pocket's residues, concatenated with fpocket descriptors; residue-level attention.
- Pockets of real structures (``structure``): fpocket-rs pockets, residue bags from biotite.
"""

from icml26.lipopu.data import (
    CATEGORIES,
    DESCRIPTORS,
    PocketTable,
    Split,
    Standardiser,
    composition_bags,
    find_slipp,
    grouped_split,
    load_slipp,
    scar_labels,
    synthetic_cohort,
)
from icml26.lipopu.losses import (
    PURisk,
    bce_risk,
    lipopu_risk,
    multilabel_objective,
    nnpu_risk,
    pu_auc_risk,
    pu_objective,
    upu_risk,
)
from icml26.lipopu.model import (
    AMINO_ACIDS,
    MILOutput,
    PocketAttentionMIL,
    PocketModelConfig,
    protein_score,
)
from icml26.lipopu.predict import PocketPrediction, load_predictor, predict, save_predictor
from icml26.lipopu.structure import (
    DescriptorMap,
    Pocket,
    ResidueBag,
    ligand_overlap,
    pockets,
    read_structure,
    residue_bag,
)
from icml26.lipopu.train import (
    CompositionBags,
    FitResult,
    StructureBags,
    TrainConfig,
    fit,
    predict_scores,
)

__all__ = [
    "AMINO_ACIDS",
    "CATEGORIES",
    "DESCRIPTORS",
    "CompositionBags",
    "DescriptorMap",
    "FitResult",
    "MILOutput",
    "PURisk",
    "Pocket",
    "PocketAttentionMIL",
    "PocketModelConfig",
    "PocketPrediction",
    "PocketTable",
    "ResidueBag",
    "Split",
    "Standardiser",
    "StructureBags",
    "TrainConfig",
    "bce_risk",
    "composition_bags",
    "find_slipp",
    "fit",
    "grouped_split",
    "ligand_overlap",
    "lipopu_risk",
    "load_predictor",
    "load_slipp",
    "multilabel_objective",
    "nnpu_risk",
    "pockets",
    "predict",
    "predict_scores",
    "protein_score",
    "pu_auc_risk",
    "pu_objective",
    "read_structure",
    "residue_bag",
    "save_predictor",
    "scar_labels",
    "synthetic_cohort",
    "upu_risk",
]
