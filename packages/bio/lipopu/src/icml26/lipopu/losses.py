"""Positive-unlabeled risks: BCE (unlabeled as negative), nnPU, PU-AUC and the LipoPU ranking risk.

Every PU risk takes the scores (logits) of a labeled-positive sample ``P`` and of an unlabeled
sample ``U`` drawn from the marginal of all pockets (the case-control setting of du Plessis et al.
2015 and Kiryo et al. 2017: under a censoring design where a fraction c of the positives carry a
label, ``U`` is the whole training set, labeled pockets included, and ``prior`` is P(y = 1) there).

Losses ``l`` act on a margin z (large z = correct): the sigmoid loss ``l(z) = sigmoid(-z)`` (Kiryo's
choice; symmetric, ``l(z) + l(-z) = 1``) and the logistic loss ``l(z) = log(1 + exp(-z))``.
A PU risk returns ``PURisk(objective, risk)``: ``objective`` is what to backpropagate (with the
non-negative correction's gradient step when it applies), ``risk`` is the corrected value. Neither
synchronises the device: the correction is a ``torch.where``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

LossName = Literal["sigmoid", "logistic"]


def sigmoid_loss(z: Tensor) -> Tensor:
    """``l(z) = sigmoid(-z)``: bounded and symmetric (``l(z) + l(-z) = 1``)."""
    return torch.sigmoid(-z)


def logistic_loss(z: Tensor) -> Tensor:
    """``l(z) = log(1 + exp(-z))``, computed stably."""
    return F.softplus(-z)


SURROGATES: dict[str, Callable[[Tensor], Tensor]] = {
    "sigmoid": sigmoid_loss,
    "logistic": logistic_loss,
}


class PURisk(NamedTuple):
    """A PU risk: ``objective`` to backpropagate, ``risk`` the (corrected) risk value and
    ``corrected`` (bool tensor) whether the non-negative correction's step was taken."""

    objective: Tensor
    risk: Tensor
    corrected: Tensor


# --- validation (at the API boundary: shapes, priors, NaN) -----------------------------------


def _check_scores(name: str, scores: Tensor, *, min_size: int = 1) -> None:
    if not isinstance(scores, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(scores).__name__}")
    if scores.ndim != 1:
        raise ValueError(
            f"{name} must be 1-D (one score per pocket), got shape {tuple(scores.shape)}"
        )
    if scores.numel() < min_size:
        raise ValueError(
            f"{name} is empty: a PU risk needs at least {min_size} score(s) there"
            if scores.numel() == 0
            else f"{name} needs at least {min_size} scores, got {scores.numel()}"
        )
    if not scores.is_floating_point():
        raise TypeError(f"{name} must be a floating tensor, got {scores.dtype}")
    if not bool(torch.isfinite(scores).all()):
        raise ValueError(f"{name} holds NaN or infinite scores")


def check_prior(prior: float, name: str = "prior") -> float:
    """The class prior P(y = 1) as a float strictly inside (0, 1), or a ValueError."""
    try:
        value = float(prior)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number in (0, 1), got {prior!r}") from None
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must lie strictly inside (0, 1), got {prior!r}")
    return value


def _surrogate(loss: str) -> Callable[[Tensor], Tensor]:
    if loss not in SURROGATES:
        raise ValueError(f"loss must be one of {sorted(SURROGATES)}, got {loss!r}")
    return SURROGATES[loss]


# --- the risks ---------------------------------------------------------------------------------


def bce_risk(scores: Tensor, observed: Tensor, *, validate: bool = True) -> Tensor:
    """The supervised baseline: binary cross-entropy with every unlabeled pocket as a negative.

    ``scores``: (N,) logits; ``observed``: (N,) 0/1, 1 for a labeled positive.
    """
    if validate:
        _check_scores("scores", scores)
        if observed.shape != scores.shape:
            raise ValueError(
                f"observed must have the shape of scores {tuple(scores.shape)}, "
                f"got {tuple(observed.shape)}"
            )
        if not bool(((observed == 0) | (observed == 1)).all()):
            raise ValueError("observed must hold 0/1 labels (1: a labeled positive)")
    return F.binary_cross_entropy_with_logits(scores, observed.to(scores.dtype))


def nnpu_risk(
    scores_p: Tensor,
    scores_u: Tensor,
    prior: float,
    *,
    loss: LossName = "sigmoid",
    beta: float = 0.0,
    gamma: float = 1.0,
    validate: bool = True,
) -> PURisk:
    """Non-negative PU risk (Kiryo et al. 2017, eq. 5 and Algorithm 1).

    ``R = pi E_P[l(f)] + max(0, E_U[l(-f)] - pi E_P[l(-f)])``. The second term estimates the
    negative-class risk (1 - pi) E_N[l(-f)] >= 0; when its estimate falls below ``-beta`` a
    flexible model is memorising hidden positives as negatives, and the step is taken on
    ``-gamma`` times that term instead (gradient ascent on it), as Algorithm 1 does.

    ``scores_p``: (n_p,) logits of labeled positives; ``scores_u``: (n_u,) logits of the
    unlabeled sample (the marginal); ``prior``: P(y = 1).
    """
    l = _surrogate(loss)
    if validate:
        _check_scores("scores_p", scores_p)
        _check_scores("scores_u", scores_u)
        prior = check_prior(prior)
    positive = prior * l(scores_p).mean()
    negative = l(-scores_u).mean() - prior * l(-scores_p).mean()
    corrected = negative < -beta
    objective = torch.where(corrected, -gamma * negative, positive + negative)
    risk = positive + negative.clamp(min=0.0)
    return PURisk(objective, risk, corrected)


def upu_risk(
    scores_p: Tensor, scores_u: Tensor, prior: float, *, loss: LossName = "sigmoid"
) -> Tensor:
    """The unbiased PU risk (du Plessis et al. 2015): nnPU's risk without the max(0, .)."""
    l = _surrogate(loss)
    _check_scores("scores_p", scores_p)
    _check_scores("scores_u", scores_u)
    prior = check_prior(prior)
    return prior * l(scores_p).mean() + l(-scores_u).mean() - prior * l(-scores_p).mean()


def pu_auc_risk(
    scores_p: Tensor,
    scores_u: Tensor,
    *,
    loss: LossName = "sigmoid",
    validate: bool = True,
) -> Tensor:
    """PU-AUC risk (Sakai, Niu & Sugiyama 2018, eq. 10): ``E_P E_U [l(f(x_p) - f(x_u))]``.

    With a symmetric loss (the sigmoid, the default) it is an affine function of the PN-AUC
    risk, so minimising it ranks positives above negatives without knowing the prior; with the
    logistic loss it keeps a positive-pair term, ``(1 - pi) R_PN + pi E_PP'[l]``. It depends on
    score differences only: adding a constant to every score leaves it unchanged. Pairs: all
    (n_p x n_u).
    """
    l = _surrogate(loss)
    if validate:
        _check_scores("scores_p", scores_p)
        _check_scores("scores_u", scores_u)
    return l(scores_p[:, None] - scores_u[None, :]).mean()  # (n_p, n_u) pairs


def lipopu_risk(
    scores_p: Tensor,
    scores_u: Tensor,
    prior: float,
    *,
    loss: LossName = "logistic",
    beta: float = 0.0,
    gamma: float = 1.0,
    validate: bool = True,
) -> PURisk:
    """The LipoPU objective: a pairwise PU ranking risk with the non-negative correction.

    Reconstructed (the paper's body is not public) from its abstract, "ranking-based PU with a
    non-negative correction", and its two ancestors. The target is the PN ranking risk
    ``R_rank = E_{p~P} E_{n~N} [l(f(x_p) - f(x_n))]``. Because the unlabeled marginal is
    ``p_U = pi p_P + (1 - pi) p_N``, any expectation over negatives is
    ``E_N[g] = (E_U[g] - pi E_P'[g]) / (1 - pi)``, so

        R_rank = ( E_P E_U [l(f_p - f_u)] - pi E_P E_P' [l(f_p - f_p')] ) / (1 - pi),

    estimated from all (p, u) pairs and all ordered pairs of distinct positives (p != p').
    The numerator estimates (1 - pi) R_rank >= 0, yet can go negative when the model spreads the
    labeled positives apart and pushes hidden positives in U down; as in nnPU it is clamped at
    zero, and when it falls below ``-beta`` the step is taken on ``-gamma`` times it
    (``beta=inf``: never; the plain unbiased estimate of the ranking risk).

    With the sigmoid loss the positive-pair term is the constant 1/2 and the risk is an affine
    map of PU-AUC (Sakai et al.); the logistic loss (default) is where the correction matters.
    ``scores_p``: (n_p >= 2,) labeled positives; ``scores_u``: (n_u,) unlabeled sample.
    """
    l = _surrogate(loss)
    if validate:
        _check_scores("scores_p", scores_p, min_size=2)
        _check_scores("scores_u", scores_u)
        prior = check_prior(prior)
    n_p = scores_p.numel()
    pu = l(scores_p[:, None] - scores_u[None, :]).mean()  # (n_p, n_u) pairs
    pp = l(scores_p[:, None] - scores_p[None, :])  # (n_p, n_p); the diagonal is p = p'
    pp = (pp.sum() - torch.diagonal(pp).sum()) / (n_p * (n_p - 1))
    numerator = pu - prior * pp
    corrected = numerator < -beta
    objective = torch.where(corrected, -gamma * numerator, numerator) / (1.0 - prior)
    risk = numerator.clamp(min=0.0) / (1.0 - prior)
    return PURisk(objective, risk, corrected)


RISKS = ("bce", "nnpu", "pu_auc", "lipopu")
"""The four training objectives, by name."""


def pu_objective(
    name: str,
    scores_p: Tensor,
    scores_u: Tensor,
    observed_u: Tensor,
    prior: float,
    *,
    loss: LossName | None = None,
    beta: float = 0.0,
    stats: list | None = None,
    validate: bool = True,
) -> Tensor:
    """The tensor to backpropagate for objective ``name`` on one (P, U) batch.

    BCE sees the same two samples with their observed labels (P: 1; U: 1 where the pocket is a
    labeled positive, else 0), so every objective gets the same data and budget. ``loss`` picks
    the PU risks' surrogate (None: each risk's default, sigmoid for nnPU and PU-AUC, logistic
    for LipoPU); ``beta`` is the correction's threshold (nnPU and LipoPU); when ``stats`` is a
    list, the correction's flag (a bool tensor) is appended to it.
    """
    kw = {"validate": validate} | ({"loss": loss} if loss is not None else {})
    if name == "bce":
        scores = torch.cat([scores_p, scores_u])
        observed = torch.cat([torch.ones_like(scores_p), observed_u.to(scores_p.dtype)])
        return bce_risk(scores, observed, validate=validate)
    if name in ("nnpu", "lipopu"):
        risk = (nnpu_risk if name == "nnpu" else lipopu_risk)(
            scores_p, scores_u, prior, beta=beta, **kw
        )
        if stats is not None:
            stats.append(risk.corrected)
        return risk.objective
    if name == "pu_auc":
        return pu_auc_risk(scores_p, scores_u, **kw)
    raise ValueError(f"objective must be one of {RISKS}, got {name!r}")


def multilabel_objective(
    name: str,
    scores_p: Tensor,
    observed_p: Tensor,
    scores_u: Tensor,
    observed_u: Tensor,
    priors: Tensor | list[float],
    *,
    loss: LossName | None = None,
    beta: float = 0.0,
    stats: list | None = None,
    validate: bool = True,
) -> Tensor:
    """One objective per lipid category, summed: ``sum_k R_k(f_k; P_k, U)``.

    ``scores_p`` / ``observed_p``: (n_p, K) logits and 0/1 labels of the positive sample (rows
    labeled for at least one category); ``scores_u`` / ``observed_u``: (n_u, K) of the unlabeled
    sample (the marginal); ``priors``: (K,) P(y_k = 1). Category k's positives are the rows of
    the positive sample labeled k, its unlabeled sample the whole U sample, and the categories'
    risks are independent: for a PU objective a pocket labeled for category A enters category B
    exactly as an unlabeled pocket does, one of the marginal sample whose hidden share of B is
    the prior. BCE (the baseline) takes U rows not labeled k as negatives of k (P-sample rows of
    other categories are not used for k). With K = 1 this is ``pu_objective``.
    """
    for what, s, o in (("p", scores_p, observed_p), ("u", scores_u, observed_u)):
        if s.ndim != 2 or o.shape != s.shape:
            raise ValueError(
                f"scores_{what} and observed_{what} must both be (n, K), got {tuple(s.shape)} "
                f"and {tuple(o.shape)}"
            )
    if scores_p.shape[1] != scores_u.shape[1]:
        raise ValueError("scores_p and scores_u must have the same number of categories")
    priors = [check_prior(p, f"priors[{k}]") for k, p in enumerate(list(priors))]
    if len(priors) != scores_p.shape[1]:
        raise ValueError(
            f"priors needs one value per category ({scores_p.shape[1]}), got {len(priors)}"
        )
    total = scores_p.new_zeros(())
    for k, prior in enumerate(priors):
        labeled = observed_p[:, k].bool()
        if validate and int(labeled.sum()) < 2:
            raise ValueError(
                f"category {k} has {int(labeled.sum())} labeled positives in scores_p; need >= 2"
            )
        total = total + pu_objective(
            name,
            scores_p[labeled, k],
            scores_u[:, k],
            observed_u[:, k],
            prior,
            loss=loss,
            beta=beta,
            stats=stats,
            validate=validate,
        )
    return total
