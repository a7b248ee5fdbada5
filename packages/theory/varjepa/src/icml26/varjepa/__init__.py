"""Var-JEPA: A Variational Formulation of the Joint-Embedding Predictive Architecture (Gögl & Yau,
arXiv 2603.20111), tabular instance (Var-T-JEPA), with T-JEPA (Thimonier et al., ICLR 2025) as the
baseline it is compared with.

Implemented: per-feature tokens for numerical and categorical columns with missing values; the
context/target column sampler; T-JEPA (EMA target encoder, predictor with mask tokens, optional
[REG] tokens); Var-T-JEPA (Gaussian encoders q(z_C | x_C), q(z_T | x_T), conditional prior
p(z_T | z_C), per-column decoders, one ELBO with beta on the KL terms); probes, RankMe, a
scikit-learn embedder, a torchrun-ready trainer with safetensors checkpoints.

Reconstructed, since neither the paper's body nor its code is public: the per-column latents, the
decoder (shared trunk, per-column Gaussian / categorical heads), which posterior serves as the
representation (the context encoder on the whole row), and every width and schedule.
"""

from icml26.testing.results import package_version
from icml26.varjepa.baselines import PROBES, ProbeResult, fit_probe, score
from icml26.varjepa.data import Split, Table, load_table, read_csv, split_table, table_from_frame
from icml26.varjepa.elbo import (
    ElboTerms,
    elbo_terms,
    gaussian_kl,
    gaussian_log_likelihood,
    reparameterize,
)
from icml26.varjepa.estimator import VarJEPAEmbedder
from icml26.varjepa.evaluate import embed_rows, rankme, uncertainty_calibration
from icml26.varjepa.masks import ContextTargetMasks, sample_masks
from icml26.varjepa.model import TJEPA, ModelConfig, VarTJEPA, load_pretrained
from icml26.varjepa.tokenizer import EncodedRows, FeatureEmbedding, FeatureTokenizer
from icml26.varjepa.train import TrainConfig, pretrain

__version__ = package_version("icml26-varjepa", __file__)

__all__ = [
    "PROBES",
    "TJEPA",
    "ContextTargetMasks",
    "ElboTerms",
    "EncodedRows",
    "FeatureEmbedding",
    "FeatureTokenizer",
    "ModelConfig",
    "ProbeResult",
    "Split",
    "Table",
    "TrainConfig",
    "VarJEPAEmbedder",
    "VarTJEPA",
    "__version__",
    "elbo_terms",
    "embed_rows",
    "fit_probe",
    "gaussian_kl",
    "gaussian_log_likelihood",
    "load_pretrained",
    "load_table",
    "pretrain",
    "rankme",
    "read_csv",
    "reparameterize",
    "sample_masks",
    "score",
    "split_table",
    "table_from_frame",
    "uncertainty_calibration",
]
