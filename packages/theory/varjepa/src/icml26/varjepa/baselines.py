"""Every model fitted on top of features, raw or learned, each with its tuning grid.

A *probe* is a supervised model on a representation (the embeddings of a pretrained encoder, or
the raw columns). Each kind has a small grid; the grid point with the best validation score is
kept and scored on the test rows, so every representation, the method's and the baselines', is
tuned the same way:

- ``logreg``: logistic regression on standardised inputs (ridge regression for regression),
  C (alpha) over five decades;
- ``mlp``: scikit-learn's MLP with early stopping, two widths x two weight decays;
- ``gbdt``: LightGBM with early stopping on the validation rows (up to 2000 trees), two leaf
  counts x two learning rates; on raw columns it reads missing values and categories natively;
- ``constant``: the majority class (the mean for regression), the floor every model must beat.

LightGBM stands for the GBDT family (XGBoost, CatBoost): its wheel is small and needs no GPU
libraries, and on tables this size the three are within noise of each other.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score, f1_score, mean_squared_error

PROBES = ("logreg", "mlp", "gbdt", "constant")


def score(y_true, y_pred, task: str) -> dict[str, float]:
    """Classification: accuracy and macro-F1; regression: RMSE (lower is better)."""
    if task not in ("classification", "regression"):
        raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
    if len(y_true) != len(y_pred) or len(y_true) == 0:
        raise ValueError(f"y_true and y_pred must hold as many (>= 1) values, got {len(y_true)} "
                         f"and {len(y_pred)}")  # fmt: skip
    if task == "classification":
        return {
            "accuracy": float(accuracy_score(y_true, y_pred)),
            "macro_f1": float(f1_score(y_true, y_pred, average="macro")),
        }
    return {"rmse": float(np.sqrt(mean_squared_error(y_true, y_pred)))}


def selection_score(scores: dict[str, float]) -> float:
    """Higher is better: macro-F1 for classification, -RMSE for regression."""
    return scores["macro_f1"] if "macro_f1" in scores else -scores["rmse"]


def _grid(kind: str, task: str, seed: int) -> list:
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.neural_network import MLPClassifier, MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    cls = task == "classification"
    if kind == "logreg":
        if cls:
            return [
                # tol 1e-3 (sklearn's default is 1e-4) halves the fit time on wide embeddings;
                # on wa_churn embeddings it moved validation macro-F1 by at most 0.004
                make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=3000, tol=1e-3))
                for c in (0.01, 0.1, 1.0, 10.0)
            ]
        return [make_pipeline(StandardScaler(), Ridge(alpha=a)) for a in (0.1, 1, 10, 100, 1000)]
    if kind == "mlp":
        mlp = MLPClassifier if cls else MLPRegressor
        return [
            make_pipeline(
                StandardScaler(),
                mlp(
                    hidden_layer_sizes=h,
                    alpha=a,
                    early_stopping=True,
                    max_iter=500,
                    n_iter_no_change=20,
                    random_state=seed,
                ),
            )
            for h in ((128,), (256, 128))
            for a in (1e-4, 1e-2)
        ]
    raise ValueError(f"unknown probe {kind!r}; choose from {PROBES}")


@dataclass(frozen=True)
class ProbeResult:
    """The chosen grid point's validation and test scores."""

    kind: str
    params: str
    val: dict[str, float]
    test: dict[str, float]
    model: object = field(default=None, repr=False, compare=False)
    """The fitted estimator of the chosen grid point (None for ``constant``)."""


def _fit_gbdt(X_tr, y_tr, X_va, y_va, task: str, seed: int):
    import lightgbm as lgb

    out = []
    for leaves in (15, 63):
        for lr in (0.03, 0.1):
            kw = dict(
                n_estimators=2000,
                learning_rate=lr,
                num_leaves=leaves,
                random_state=seed,
                n_jobs=1,
                verbose=-1,
            )
            model = (
                lgb.LGBMClassifier(**kw) if task == "classification" else lgb.LGBMRegressor(**kw)
            )
            with warnings.catch_warnings():
                # LightGBM 4.7 renames eval_set to eval_X / eval_y; older releases (>= 4.3 is
                # supported) only know eval_set
                warnings.filterwarnings("ignore", message=".*eval_set.*")
                model.fit(
                    X_tr,
                    y_tr,
                    eval_set=[(X_va, y_va)],
                    callbacks=[lgb.early_stopping(50, verbose=False)],
                )
            out.append(model)
    return out


def fit_probe(kind: str, X_tr, y_tr, X_va, y_va, X_te, y_te, task: str, seed: int = 0):
    """Fit every grid point of ``kind`` on the training rows, keep the best on validation, and
    score it on the test rows. ``X_*`` are arrays (or DataFrames for ``gbdt`` on raw columns)."""
    if kind == "constant":
        if task == "classification":
            values, counts = np.unique(y_tr, return_counts=True)
            const = values[np.argmax(counts)]
        else:
            const = float(np.mean(y_tr))
        va, te = np.full(len(y_va), const), np.full(len(y_te), const)
        return ProbeResult(kind, f"value={const}", score(y_va, va, task), score(y_te, te, task))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if kind == "gbdt":
            models = _fit_gbdt(X_tr, y_tr, X_va, y_va, task, seed)
        else:
            models = [m.fit(X_tr, y_tr) for m in _grid(kind, task, seed)]
    best, best_val = None, None
    for m in models:
        val = score(y_va, m.predict(X_va), task)
        if best_val is None or selection_score(val) > selection_score(best_val):
            best, best_val = m, val
    params = _describe(best)
    return ProbeResult(kind, params, best_val, score(y_te, best.predict(X_te), task), best)


def _describe(model) -> str:
    est = model.steps[-1][1] if hasattr(model, "steps") else model
    keys = ("C", "alpha", "hidden_layer_sizes", "num_leaves", "learning_rate", "best_iteration_")
    parts = [f"{k}={getattr(est, k)}" for k in keys if hasattr(est, k)]
    return ", ".join(parts)


def raw_design(table_features: pd.DataFrame, fit_rows: np.ndarray):
    """Raw columns for the sklearn probes: numerical columns mean-imputed with a missing
    indicator, categorical columns one-hot (unseen categories ignored). Fitted on ``fit_rows``;
    returns a function rows -> array."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.preprocessing import OneHotEncoder

    frame = table_features
    num = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])]
    cat = [c for c in frame.columns if c not in num]
    parts = []
    if num:
        parts.append(("num", SimpleImputer(strategy="mean", add_indicator=True), num))
    if cat:
        onehot = OneHotEncoder(handle_unknown="ignore", sparse_output=False)
        parts.append(("cat", onehot, cat))
    ct = ColumnTransformer(parts)
    cat_frame = frame.copy()
    for c in cat:
        cat_frame[c] = cat_frame[c].astype(str)  # None / NaN become their own category
    ct.fit(cat_frame.iloc[fit_rows])
    return lambda rows: ct.transform(cat_frame.iloc[rows]).astype(np.float64)


def gbdt_frame(table_features: pd.DataFrame) -> pd.DataFrame:
    """Raw columns as LightGBM reads them: numbers as they are (NaN = missing), strings as
    pandas categories."""
    frame = table_features.copy()
    for c in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[c]):
            frame[c] = frame[c].astype("category")
    return frame
