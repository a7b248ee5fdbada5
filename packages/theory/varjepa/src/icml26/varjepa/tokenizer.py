"""Per-feature tokens for tables: the preprocessing tabular users expect, then one token per column.

``FeatureTokenizer`` is fitted on training rows (a DataFrame or an array) and turns any rows into
an :class:`EncodedRows`: standardised numerical values with a missing mask, and integer codes for
categorical columns. ``FeatureEmbedding`` maps those to ``(B, F, d)`` tokens, one per column, as
T-JEPA does (Thimonier et al., ICLR 2025): a numerical value x_j becomes ``x_j w_j + b_j``, a
categorical value looks up its column's own embedding table.

Missing values, as documented in the README:
- numerical NaN: the value is set to 0 (the training mean after standardising) and the column's
  learned *missing* vector is added to its token; the decoder's likelihood skips it;
- categorical None / NaN: code 0, the column's *missing* category, a token like any other.
Unseen categories at ``transform`` time raise ValueError naming the column and the values
(``handle_unknown="error"``, the default) or are mapped to code 0 (``handle_unknown="missing"``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
import torch
from torch import nn

from icml26.testing.checks import integer


@dataclass(frozen=True)
class EncodedRows:
    """Rows ready for the model. ``num`` (n, F_num) float32 standardised (0 where missing),
    ``num_missing`` (n, F_num) bool, ``cat`` (n, F_cat) int64 codes (0 = missing/unknown)."""

    num: torch.Tensor
    num_missing: torch.Tensor
    cat: torch.Tensor

    def __post_init__(self):
        # Rows a user may build by hand: shapes and dtypes always (free), values on the CPU only
        # (a scan of a device tensor would wait on the device at every batch).
        for name in ("num", "num_missing", "cat"):
            t = getattr(self, name)
            if not torch.is_tensor(t) or t.ndim != 2:
                raise TypeError(f"EncodedRows.{name} must be a 2-D tensor (rows, columns)")
        if not self.num.is_floating_point():
            raise TypeError(f"EncodedRows.num must be floating point, got {self.num.dtype}")
        if self.num_missing.dtype != torch.bool or self.num_missing.shape != self.num.shape:
            raise ValueError(f"EncodedRows.num_missing must be bool of num's shape "
                             f"{tuple(self.num.shape)}, got {self.num_missing.dtype} "
                             f"{tuple(self.num_missing.shape)}")  # fmt: skip
        if self.cat.dtype != torch.int64:
            raise TypeError(f"EncodedRows.cat must be int64 codes, got {self.cat.dtype}")
        if self.cat.shape[0] != self.num.shape[0]:
            raise ValueError(f"EncodedRows: num has {self.num.shape[0]} rows, cat "
                             f"{self.cat.shape[0]}")  # fmt: skip
        if self.num.device.type == "cpu" and not bool(torch.isfinite(self.num).all()):
            raise ValueError("EncodedRows.num holds NaN or inf: missing values are 0 in num and "
                             "True in num_missing")  # fmt: skip
        if self.cat.device.type == "cpu" and bool((self.cat < 0).any()):
            raise ValueError("EncodedRows.cat holds negative codes (0 is the missing category)")

    def __len__(self) -> int:
        return self.num.shape[0]

    def __getitem__(self, idx) -> EncodedRows:
        return EncodedRows(self.num[idx], self.num_missing[idx], self.cat[idx])

    def to(self, device) -> EncodedRows:
        return EncodedRows(self.num.to(device), self.num_missing.to(device), self.cat.to(device))


def _refuse_numbers_as_text(frame: pd.DataFrame, columns) -> None:
    """A column of text that all parses as numbers (a CSV read with a stray quote, a number
    column with thousands separators gone) would become one category per value: refuse it."""
    for c in columns:
        values = frame[c].dropna()
        if isinstance(frame[c].dtype, pd.CategoricalDtype) or values.map(type).eq(bool).all():
            continue  # declared categories, or booleans: categorical on purpose
        if len(values) and pd.to_numeric(values.astype(str), errors="coerce").notna().all():
            raise ValueError(
                f"column {c!r} holds numbers stored as text (e.g. {values.iloc[0]!r}): convert it "
                f"with pd.to_numeric, or name it in categorical= if the numbers are codes"
            )


class FeatureTokenizer:
    """Fit on training rows, then encode any rows; numerical columns first, then categorical.

    ``categorical`` names the categorical columns; by default a DataFrame's object, string,
    category and boolean-as-object columns are categorical and numeric dtypes are numerical; a
    NumPy array is all numerical.
    """

    def __init__(
        self,
        categorical: list[str] | None = None,
        handle_unknown: Literal["error", "missing"] = "error",
    ):
        if handle_unknown not in ("error", "missing"):
            raise ValueError(f"handle_unknown must be 'error' or 'missing', got {handle_unknown!r}")
        self.categorical = categorical
        self.handle_unknown = handle_unknown

    # -- fitting ---------------------------------------------------------------------------

    @staticmethod
    def _frame(X) -> pd.DataFrame:
        if isinstance(X, pd.DataFrame):
            return X
        arr = np.asarray(X)
        if arr.ndim != 2:
            raise ValueError(f"X must be 2-D (rows, columns), got shape {arr.shape}")
        if not np.issubdtype(arr.dtype, np.number):
            raise TypeError(f"an array X must be numeric, got dtype {arr.dtype}; pass a DataFrame")
        return pd.DataFrame(arr.astype(float), columns=[f"x{j}" for j in range(arr.shape[1])])

    def fit(self, X) -> FeatureTokenizer:
        frame = self._frame(X)
        if frame.shape[0] == 0 or frame.shape[1] == 0:
            raise ValueError(f"cannot fit a tokenizer on an empty table {frame.shape}")
        if self.categorical is not None:
            missing = set(self.categorical) - set(frame.columns)
            if missing:
                raise ValueError(f"categorical columns {sorted(missing)} are not in X")
            cat_cols = list(self.categorical)
        else:
            cat_cols = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
            _refuse_numbers_as_text(frame, cat_cols)
        self.columns_ = [str(c) for c in frame.columns]
        self.numerical_ = [str(c) for c in frame.columns if c not in cat_cols]
        self.categorical_ = [str(c) for c in cat_cols]
        num = self._numeric(frame, self.numerical_)
        if num.size and np.isinf(num).any():
            raise ValueError("numerical columns hold inf; replace it with NaN (missing) or a value")
        with np.errstate(all="ignore"):
            mean = np.nanmean(num, axis=0) if num.size else np.zeros(0)
            std = np.nanstd(num, axis=0) if num.size else np.ones(0)
        self.mean_ = np.nan_to_num(mean, nan=0.0)  # an all-missing column stays at 0
        self.scale_ = np.where(np.isfinite(std) & (std > 1e-12), std, 1.0)
        self.categories_ = []
        for c in self.categorical_:
            values = frame[c].dropna().astype(str).unique().tolist()
            self.categories_.append(sorted(values))
        return self

    @staticmethod
    def _numeric(frame: pd.DataFrame, cols: list[str]) -> np.ndarray:
        try:
            return frame[cols].to_numpy(dtype=float) if cols else np.zeros((len(frame), 0))
        except (TypeError, ValueError) as e:
            raise ValueError(f"numerical columns {cols} hold non-numbers: {e}") from None

    @property
    def cardinalities(self) -> list[int]:
        """Number of known categories of each categorical column (code 0 excluded)."""
        self._check_fitted()
        return [len(c) for c in self.categories_]

    @property
    def n_features(self) -> int:
        self._check_fitted()
        return len(self.numerical_) + len(self.categorical_)

    def _check_fitted(self):
        if not hasattr(self, "columns_"):
            raise RuntimeError("FeatureTokenizer is not fitted: call fit(X) first")

    # -- encoding --------------------------------------------------------------------------

    def transform(self, X) -> EncodedRows:
        self._check_fitted()
        frame = self._frame(X)
        if not isinstance(X, pd.DataFrame):
            if frame.shape[1] != len(self.columns_):
                raise ValueError(
                    f"X has {frame.shape[1]} columns; the tokenizer was fitted on "
                    f"{len(self.columns_)}"
                )
            frame.columns = self.columns_
        frame.columns = [str(c) for c in frame.columns]
        absent = [c for c in self.columns_ if c not in frame.columns]
        if absent:
            raise ValueError(f"X lacks the fitted columns {absent}")
        num = self._numeric(frame, self.numerical_)
        if num.size and np.isinf(num).any():
            raise ValueError("numerical columns hold inf; replace it with NaN (missing) or a value")
        missing = np.isnan(num)
        z = np.where(missing, 0.0, (num - self.mean_) / self.scale_)
        codes = np.zeros((len(frame), len(self.categorical_)), dtype=np.int64)
        for j, (c, cats) in enumerate(zip(self.categorical_, self.categories_, strict=True)):
            col = frame[c]
            present = col.notna().to_numpy()
            index = pd.Index(cats)
            got = index.get_indexer(col[present].astype(str))
            unseen = got < 0
            if unseen.any():
                if self.handle_unknown == "error":
                    values = sorted(set(col[present].astype(str)[unseen]))[:5]
                    raise ValueError(
                        f"column {c!r} holds categories unseen when fitting: {values}; "
                        "refit, or use handle_unknown='missing' to map them to the missing code"
                    )
                got = np.where(unseen, -1, got)
            codes[present, j] = got + 1  # unseen (-1) -> 0, the missing/unknown code
        return EncodedRows(
            torch.as_tensor(z, dtype=torch.float32),
            torch.as_tensor(missing),
            torch.as_tensor(codes),
        )

    def fit_transform(self, X) -> EncodedRows:
        return self.fit(X).transform(X)

    def inverse_categories(self, codes) -> pd.DataFrame:
        """Categorical codes (n, F_cat) back to their values; code 0 becomes None."""
        self._check_fitted()
        codes = np.asarray(codes)
        if codes.ndim != 2 or codes.shape[1] != len(self.categorical_):
            raise ValueError(f"codes must be (n, {len(self.categorical_)}), got {codes.shape}")
        out = {}
        for j, (c, cats) in enumerate(zip(self.categorical_, self.categories_, strict=True)):
            if codes[:, j].min(initial=0) < 0 or codes[:, j].max(initial=0) > len(cats):
                raise ValueError(f"column {c!r}: codes must be in [0, {len(cats)}]")
            table = np.array([None, *cats], dtype=object)
            out[c] = table[codes[:, j]]
        return pd.DataFrame(out)

    def state(self) -> dict:
        """A JSON-able description, enough to rebuild the fitted tokenizer."""
        self._check_fitted()
        return {
            "columns": self.columns_,
            "numerical": self.numerical_,
            "categorical": self.categorical_,
            "mean": self.mean_.tolist(),
            "scale": self.scale_.tolist(),
            "categories": self.categories_,
            "handle_unknown": self.handle_unknown,
        }

    @classmethod
    def from_state(cls, state: dict) -> FeatureTokenizer:
        tok = cls(categorical=state["categorical"], handle_unknown=state["handle_unknown"])
        tok.columns_, tok.numerical_ = state["columns"], state["numerical"]
        tok.categorical_, tok.categories_ = state["categorical"], state["categories"]
        tok.mean_, tok.scale_ = np.asarray(state["mean"]), np.asarray(state["scale"])
        return tok


class FeatureEmbedding(nn.Module):
    """``EncodedRows`` -> tokens (B, F, d): numerical ``x w_j + b_j`` (+ missing vector), then one
    embedding table per categorical column (row 0 of each is its missing/unknown category)."""

    def __init__(self, n_numerical: int, cardinalities: list[int], dim: int):
        super().__init__()
        integer("n_numerical", n_numerical, low=0)
        integer("dim", dim, low=1)
        for j, k in enumerate(cardinalities):
            integer(f"cardinalities[{j}] (categorical column {j})", k, low=1)
        self.n_numerical, self.cardinalities, self.dim = n_numerical, list(cardinalities), dim
        self.num_weight = nn.Parameter(torch.randn(n_numerical, dim) / dim**0.5)
        self.num_bias = nn.Parameter(torch.randn(n_numerical, dim) / dim**0.5)
        self.num_missing = nn.Parameter(torch.randn(n_numerical, dim) / dim**0.5)
        sizes = [k + 1 for k in self.cardinalities]
        self.register_buffer(
            "cat_offset",
            torch.tensor([0, *np.cumsum(sizes)[:-1].tolist()], dtype=torch.long)[: len(sizes)],
            persistent=False,
        )
        self.cat_embed = nn.Embedding(max(sum(sizes), 1), dim)
        nn.init.normal_(self.cat_embed.weight, std=dim**-0.5)

    @property
    def n_features(self) -> int:
        return self.n_numerical + len(self.cardinalities)

    def forward(self, rows: EncodedRows) -> torch.Tensor:
        num = rows.num.unsqueeze(-1) * self.num_weight + self.num_bias  # (B, F_num, d)
        num = num + rows.num_missing.unsqueeze(-1).to(num.dtype) * self.num_missing
        cat = self.cat_embed(rows.cat + self.cat_offset)  # (B, F_cat, d)
        return torch.cat([num, cat], dim=1)  # (B, F, d)
