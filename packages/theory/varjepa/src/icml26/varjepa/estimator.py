"""A scikit-learn transformer: ``fit`` pretrains on a table, ``transform`` returns embeddings.

    emb = VarJEPAEmbedder(steps=600).fit(train_frame)
    Z, Z_std = emb.transform(test_frame, return_std=True)   # posterior mean and spread
    clf = make_pipeline(emb, LogisticRegression()).fit(frame, y)

It takes NumPy arrays (all numerical) or pandas DataFrames (numerical and categorical columns,
missing values allowed; see ``FeatureTokenizer``). It passes scikit-learn's ``check_estimator``
except ``check_methods_subset_invariance``: float32 embeddings of a row differ in the last bits
(about 1e-7) with the batch it is computed in, above that check's tolerance.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from icml26.varjepa.evaluate import embed_rows
from icml26.varjepa.model import TJEPA, ModelConfig, VarTJEPA
from icml26.varjepa.tokenizer import FeatureTokenizer
from icml26.varjepa.train import TrainConfig, pretrain


class VarJEPAEmbedder(TransformerMixin, BaseEstimator):
    """Self-supervised embeddings of table rows (Var-T-JEPA by default, or T-JEPA).

    Parameters
    ----------
    model : "vartjepa" or "tjepa"
    dim, depth, heads : encoder widths (see ``ModelConfig``); n_reg : T-JEPA's [REG] tokens
    beta : weight of the KL terms (Var-T-JEPA)
    steps, batch_size, lr : pretraining budget
    pooling : "flatten" (F * dim outputs) or "mean" (dim outputs)
    categorical : names of categorical columns (default: a DataFrame's non-numeric columns)
    handle_unknown : "error" or "missing" for categories unseen in ``fit``
    random_state : seed of initialisation, batches and masks
    device : torch device string
    """

    def __init__(
        self,
        model: str = "vartjepa",
        dim: int = 32,
        depth: int = 2,
        heads: int = 4,
        n_reg: int = 0,
        beta: float = 1.0,
        steps: int = 600,
        batch_size: int = 128,
        lr: float = 1e-3,
        pooling: str = "flatten",
        categorical: list[str] | None = None,
        handle_unknown: str = "error",
        random_state: int | None = None,
        device: str = "cpu",
    ):
        self.model = model
        self.dim, self.depth, self.heads, self.n_reg = dim, depth, heads, n_reg
        self.beta, self.steps, self.batch_size, self.lr = beta, steps, batch_size, lr
        self.pooling, self.categorical, self.handle_unknown = pooling, categorical, handle_unknown
        self.random_state, self.device = random_state, device

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.non_deterministic = self.random_state is None
        return tags

    def _check(self, X, reset: bool):
        if isinstance(X, pd.DataFrame):
            if reset:
                self.n_features_in_ = X.shape[1]
                self.feature_names_in_ = np.asarray([str(c) for c in X.columns], dtype=object)
            elif X.shape[1] != self.n_features_in_:
                raise ValueError(
                    f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                    f"{self.n_features_in_} features as input."
                )
            if len(X) == 0:
                raise ValueError("X has 0 samples; a minimum of 1 is required.")
            return X
        return validate_data(self, X, reset=reset, ensure_all_finite="allow-nan", dtype=np.float64)

    def fit(self, X, y=None):
        """Pretrain on the rows of X (labels are not used)."""
        if self.model not in ("vartjepa", "tjepa"):
            raise ValueError(f"model must be 'vartjepa' or 'tjepa', got {self.model!r}")
        X = self._check(X, reset=True)
        if X.shape[1] < 2:
            raise ValueError(
                f"VarJEPAEmbedder needs at least 2 features to split into context and target; "
                f"got n_features={X.shape[1]}"
            )
        if X.shape[0] < 2:
            raise ValueError(
                f"VarJEPAEmbedder needs at least 2 samples; got n_samples={X.shape[0]}"
            )
        seed = (
            int(self.random_state)
            if self.random_state is not None
            else int(np.random.SeedSequence().generate_state(1)[0] % 2**31)
        )
        self.tokenizer_ = FeatureTokenizer(self.categorical, self.handle_unknown).fit(X)
        rows = self.tokenizer_.transform(X)
        cfg = ModelConfig(
            dim=self.dim,
            depth=self.depth,
            heads=self.heads,
            predictor_dim=self.dim,
            n_reg=self.n_reg,
            pooling=self.pooling,
        )
        torch.manual_seed(seed)
        n_num, cards = len(self.tokenizer_.numerical_), self.tokenizer_.cardinalities
        if self.model == "vartjepa":
            net = VarTJEPA(n_num, cards, cfg, beta=self.beta)
        else:
            net = TJEPA(n_num, cards, cfg)
        self.model_ = net.to(self.device)
        train_cfg = TrainConfig(
            steps=self.steps, batch_size=self.batch_size, lr=self.lr, seed=seed, progress=False
        )
        self.history_ = pretrain(self.model_, rows, train_cfg)
        return self

    def transform(self, X, return_std: bool = False):
        """Embeddings (n, E); with ``return_std`` also the posterior std (Var-T-JEPA only)."""
        check_is_fitted(self, "model_")
        X = self._check(X, reset=False)
        rows = self.tokenizer_.transform(X)
        if return_std and self.model != "vartjepa":
            raise ValueError("return_std=True needs model='vartjepa' (T-JEPA has no posterior)")
        return embed_rows(self.model_, rows, return_std=return_std)

    def get_feature_names_out(self, input_features=None):
        check_is_fitted(self, "model_")
        width = self.dim * (self.n_features_in_ if self.pooling == "flatten" else 1)
        return np.asarray([f"varjepa{i}" for i in range(width)], dtype=object)
