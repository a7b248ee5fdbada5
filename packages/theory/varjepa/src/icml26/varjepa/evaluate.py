"""Measuring representations: effective rank (RankMe), embeddings in batches, and whether
Var-T-JEPA's predicted variance tracks its prediction error."""

from __future__ import annotations

import numpy as np
import torch
from scipy import stats as sps

from icml26.varjepa.masks import sample_masks
from icml26.varjepa.model import TJEPA, VarTJEPA
from icml26.varjepa.tokenizer import EncodedRows


def rankme(embeddings: torch.Tensor | np.ndarray, eps: float = 1e-7) -> float:
    """RankMe (Garrido et al., ICML 2023): exp of the entropy of the normalised singular values of
    the (n, D) embedding matrix. Between 1 (collapsed to a line) and min(n, D)."""
    z = torch.as_tensor(np.asarray(embeddings), dtype=torch.float64)
    if z.ndim != 2 or min(z.shape) == 0:
        raise ValueError(f"rankme needs a non-empty (n, D) matrix, got shape {tuple(z.shape)}")
    if not torch.isfinite(z).all():
        raise ValueError("rankme: embeddings hold NaN or inf")
    s = torch.linalg.svdvals(z)
    p = s / s.sum().clamp_min(eps) + eps
    return float(torch.exp(-(p * p.log()).sum()))


@torch.no_grad()
def check_model_rows(model, rows, kinds: tuple[type, ...] = (TJEPA, VarTJEPA)) -> None:
    """A TypeError naming ``model`` or ``rows`` when they are not what training and embedding
    take: a model of ``kinds`` and the ``EncodedRows`` of ``FeatureTokenizer.transform``."""
    if not isinstance(model, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise TypeError(f"model must be a {names}, got {type(model).__name__}")
    if not isinstance(rows, EncodedRows):
        kind = type(rows).__name__
        raise TypeError(f"rows must be EncodedRows (FeatureTokenizer.transform), got {kind}")


def embed_rows(
    model: TJEPA | VarTJEPA,
    rows: EncodedRows,
    batch: int = 1024,
    return_std: bool = False,
    encoder: str | None = None,
):
    """``model.embed`` over all rows in batches, as NumPy (n, E) (and the std for Var-T-JEPA).
    ``encoder`` picks the context or target encoder (default: each model's own default)."""
    check_model_rows(model, rows)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a positive int, got {batch!r}")
    kw = {} if encoder is None else {"encoder": encoder}
    device = next(model.parameters()).device
    model.eval()
    means, stds = [], []
    for i in range(0, len(rows), batch):
        part = rows[i : i + batch].to(device)
        if return_std:
            if not isinstance(model, VarTJEPA):
                raise TypeError("return_std needs a VarTJEPA (T-JEPA has no posterior)")
            mu, sd = model.embed(part, return_std=True, **kw)
            stds.append(sd.cpu())
        else:
            mu = model.embed(part, **kw)
        means.append(mu.cpu())
    mean = torch.cat(means).numpy().astype(np.float64)
    return (mean, torch.cat(stds).numpy().astype(np.float64)) if return_std else mean


@torch.no_grad()
def uncertainty_calibration(
    model: VarTJEPA, rows: EncodedRows, seed: int = 0, draws: int = 4
) -> dict[str, float]:
    """Spearman correlation, over held-out (row, target column) pairs, between the predictor's
    variance and its squared error against the target posterior mean, under random masks.

    Positive and clearly above 0: the predicted uncertainty means something. Also returns the
    correlation within groups of one column under one mask draw (ranks computed per group, then
    pooled): that removes what is explained by some columns being harder to predict, and by one
    draw giving every row fewer context columns than another (the sizes are drawn per batch).
    """
    check_model_rows(model, rows, (VarTJEPA,))
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise ValueError(f"draws must be a positive int, got {draws!r}")
    gen = torch.Generator().manual_seed(seed)
    device = next(model.parameters()).device
    var_all, err_all, group_all = [], [], []
    for draw in range(draws):
        masks = sample_masks(len(rows), model.n_features, gen)
        var, err = model.prediction_uncertainty(rows.to(device), masks.to(device))
        var_all.append(var.flatten().cpu())
        err_all.append(err.flatten().cpu())
        group_all.append(masks.target.flatten() + draw * model.n_features)
    var, err, group = (torch.cat(t).numpy() for t in (var_all, err_all, group_all))
    pooled = float(sps.spearmanr(var, err).statistic)
    rv, re = np.empty_like(var), np.empty_like(err)
    for g in np.unique(group):
        sel = group == g
        rv[sel] = sps.rankdata(var[sel]) / sel.sum()
        re[sel] = sps.rankdata(err[sel]) / sel.sum()
    within = (
        float(np.corrcoef(rv, re)[0, 1]) if len(np.unique(group)) < len(group) else float("nan")
    )
    return {"spearman": pooled, "spearman_within_column": within, "pairs": len(var)}
