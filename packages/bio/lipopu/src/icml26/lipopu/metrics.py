"""Ranking metrics on true labels: AUROC, AUPRC, precision at recall 0.5, protein-level AUROC."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.metrics import average_precision_score, precision_recall_curve, roc_auc_score

from icml26.lipopu.model import protein_score


def precision_at_recall(y: np.ndarray, scores: np.ndarray, recall: float = 0.5) -> float:
    """The best precision among thresholds that reach at least ``recall`` of the positives."""
    precision, rec, _ = precision_recall_curve(y, scores)
    return float(precision[rec >= recall].max())


def ranking_metrics(
    y: np.ndarray, scores: np.ndarray, protein: np.ndarray | None = None
) -> dict[str, float]:
    """``y`` (N,) true 0/1 labels, ``scores`` (N,) higher = more likely positive; with
    ``protein`` (N,) ids, also the AUROC of proteins scored by their best pocket (SLiPP's rule)."""
    y, scores = np.asarray(y), np.asarray(scores, dtype=float)
    if y.shape != scores.shape or y.ndim != 1:
        raise ValueError(f"y and scores must be 1-D of one length, got {y.shape}, {scores.shape}")
    if not 0 < y.sum() < len(y):
        raise ValueError("ranking metrics need both positive and negative pockets")
    out = {
        "auroc": float(roc_auc_score(y, scores)),
        "auprc": float(average_precision_score(y, scores)),
        "precision_at_recall_0.5": precision_at_recall(y, scores, 0.5),
    }
    if protein is not None:
        _, index = np.unique(np.asarray(protein), return_inverse=True)
        idx = torch.as_tensor(index)
        best = protein_score(torch.as_tensor(scores), idx, "max").numpy()
        has = protein_score(torch.as_tensor(y, dtype=torch.float64), idx, "max").numpy()
        if 0 < has.sum() < len(has):
            out["protein_auroc"] = float(roc_auc_score(has, best))
    return out
