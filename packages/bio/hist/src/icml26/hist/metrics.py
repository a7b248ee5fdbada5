"""Metrics of HiST's evaluation: R^2, Pearson and MSE of predicted against measured expression,
on whatever scale they are given (``evaluate`` passes normalised log1p values, the field's
convention, or linear values).

* pooled: over every spot x gene entry of a slide, then averaged over slides;
* per gene: Pearson across the spots of a slide for each gene, averaged over genes (genes with
  no variance on the slide, in prediction or truth, are left out).
"""

import numpy as np


def _pearson(a: np.ndarray, b: np.ndarray, axis=None) -> np.ndarray:
    """Pearson correlation along ``axis``; NaN where either side is constant."""
    varies = (np.ptp(a, axis=axis) > 0) & (np.ptp(b, axis=axis) > 0)
    a = a - a.mean(axis=axis, keepdims=axis is not None)
    b = b - b.mean(axis=axis, keepdims=axis is not None)
    den = np.sqrt((a * a).sum(axis) * (b * b).sum(axis))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(varies, (a * b).sum(axis) / np.where(varies, den, 1), np.nan)


def _pair(pred, true) -> tuple[np.ndarray, np.ndarray]:
    for name, x in (("pred", pred), ("true", true)):
        if np.iscomplexobj(x) or (hasattr(x, "is_complex") and x.is_complex()):
            raise TypeError(f"{name} must hold real numbers, got complex values")
    pred, true = np.asarray(pred, np.float64), np.asarray(true, np.float64)
    if pred.shape != true.shape or pred.ndim != 2:
        raise ValueError(f"pred and true must both be (N, G), got {pred.shape}, {true.shape}")
    if len(pred) < 2:
        raise ValueError(f"pred and true need at least 2 spots (a correlation), got {len(pred)}")
    if not (np.isfinite(pred).all() and np.isfinite(true).all()):
        raise ValueError("pred and true must be finite (NaN or inf found)")
    return pred, true


def gene_pearsons(pred: np.ndarray, true: np.ndarray) -> np.ndarray:
    """(G,) Pearson correlation across the spots of a slide for each gene; a constant prediction
    or truth scores 0 (it carries no information about which spots express the gene)."""
    pred, true = _pair(pred, true)
    return np.nan_to_num(_pearson(pred, true, axis=0), nan=0.0)


def slide_metrics(pred: np.ndarray, true: np.ndarray) -> dict[str, float]:
    """pred, true: (N, G) linear expression of one slide -> pooled R2 and Pearson, per-gene
    Pearson (mean over genes with variance)."""
    pred, true = _pair(pred, true)
    ss_res = ((true - pred) ** 2).sum()
    ss_tot = ((true - true.mean()) ** 2).sum()
    per_gene = _pearson(pred, true, axis=0)
    return {
        "mse": float(((true - pred) ** 2).mean()),
        "r2": float(1 - ss_res / ss_tot) if ss_tot > 0 else float("nan"),
        "pearson": float(_pearson(pred.ravel(), true.ravel())),
        "gene_pearson": float(np.nanmean(per_gene)) if np.isfinite(per_gene).any() else 0.0,
    }


def average(per_slide: list[dict[str, float]]) -> dict[str, float]:
    """Mean of each metric over slides."""
    return {k: float(np.mean([m[k] for m in per_slide])) for k in per_slide[0]}
