"""Class-distance normalised variance (CDNV) and its directional version.

For classes i != j with means mu, covariances Sigma, ``Delta_ij = mu_i - mu_j`` and
``u = Delta_ij / ||Delta_ij||``:

    V_ij  = (tr Sigma_i + tr Sigma_j) / ||Delta_ij||^2                (CDNV, Galanti et al. 2022)
    V~_ij = (u^T Sigma_i u + u^T Sigma_j u) / ||Delta_ij||^2          (directional CDNV)

Convention: ``convention="sum"`` (default) is the formula above; ``convention="mean"`` divides
both by 2, as Galanti et al. (2022) write the CDNV. The few-shot bound's leading term is
``4 u^T Sigma_i u / ||Delta_ij||^2`` for each ordered pair (i the query's class); averaged over the
pair's two orders it is ``4 V~`` in the "mean" convention, ``2 V~`` in the "sum" one. On isotropic
classes (Sigma = s^2 I) V~ = V / d under either convention.

Plug-in means inflate ``||Delta||^2`` by about ``tr Sigma_i / n_i + tr Sigma_j / n_j``.
``cross_fit=True`` replaces ``||Delta||^2`` by ``<Delta^(1), Delta^(2)>``, the inner product of the
mean differences of two disjoint halves of each class, whose expectation is exactly
``||Delta||^2``.
"""

from typing import Literal, NamedTuple

import torch

from icml26.cdnv.stats import ClassStats

Convention = Literal["sum", "mean"]


class PairwiseCDNV(NamedTuple):
    """A (C, C) matrix of a pairwise measure (diagonal NaN-free zeros) and its average over
    unordered pairs i < j."""

    matrix: torch.Tensor
    mean: float


def squared_distances(stats: ClassStats, cross_fit: bool = False) -> torch.Tensor:
    """(C, C) ``||mu_i - mu_j||^2`` (plug-in or cross-fitted); raises on a non-positive entry."""
    # Through (C, C) Gram matrices of centred means, never a (C, C, d) difference tensor:
    # <a_i - a_j, b_i - b_j> = a_i.b_i + a_j.b_j - a_i.b_j - a_j.b_i.
    centre = stats.means.mean(0)
    if cross_fit:
        a, b = stats.fold_means[0] - centre, stats.fold_means[1] - centre
    else:
        a = b = stats.means - centre
    G = a @ b.T
    g = torch.diagonal(G)
    d2 = g[:, None] + g[None, :] - G - G.T
    C = stats.n_classes
    off = ~torch.eye(C, dtype=torch.bool, device=d2.device)
    scale = stats.total_variance.max().clamp_min(1e-300)
    bad = off & (d2 <= 1e-12 * scale)
    if bad.any():
        i, j = (int(t) for t in bad.nonzero()[0])
        ci, cj = int(stats.classes[i]), int(stats.classes[j])
        how = "cross-fitted squared distance is not positive" if cross_fit else "identical means"
        raise ValueError(
            f"classes {ci} and {cj}: {how}, so the CDNV ratio is undefined"
            + (" (too few samples to cross-fit; use cross_fit=False)" if cross_fit else "")
        )
    return torch.where(off, d2, torch.zeros_like(d2))


def _check(stats: ClassStats, convention: str) -> None:
    if stats.n_classes < 2:
        raise ValueError(f"need at least 2 classes, got {stats.n_classes}")
    if convention not in ("sum", "mean"):
        raise ValueError(f"convention must be 'sum' or 'mean', got {convention!r}")
    if (stats.counts < 2).any():
        c = int(stats.classes[(stats.counts < 2).nonzero()[0, 0]])
        raise ValueError(f"class {c} has a single sample: its covariance is undefined")


def _pack(num: torch.Tensor, d2: torch.Tensor, convention: str) -> PairwiseCDNV:
    C = d2.shape[0]
    off = ~torch.eye(C, dtype=torch.bool, device=d2.device)
    mat = torch.where(off, num / torch.where(off, d2, 1.0), 0.0)
    if convention == "mean":
        mat = mat / 2
    iu = torch.triu_indices(C, C, 1, device=d2.device)
    return PairwiseCDNV(mat, mat[iu[0], iu[1]].mean().item())


def cdnv(
    stats: ClassStats, convention: Convention = "sum", cross_fit: bool = False
) -> PairwiseCDNV:
    """The CDNV ``V_ij`` for all pairs, (C, C), and its average over pairs."""
    _check(stats, convention)
    v = stats.total_variance
    return _pack(v[:, None] + v[None, :], squared_distances(stats, cross_fit), convention)


def directional_variances(stats: ClassStats) -> torch.Tensor:
    """(C, C) ``Delta_ij^T Sigma_i Delta_ij`` (entry [i, j]): the variance of class i along the
    axis separating it from class j, times ``||Delta_ij||^2``."""
    return stats.directional()


def directional_cdnv(
    stats: ClassStats, convention: Convention = "sum", cross_fit: bool = False
) -> PairwiseCDNV:
    """The directional CDNV ``V~_ij`` for all pairs, (C, C), and its average over pairs."""
    _check(stats, convention)
    d2 = squared_distances(stats, cross_fit)
    plug_d2 = squared_distances(stats, False)
    q = directional_variances(stats)  # Delta^T Sigma_i Delta (plug-in Delta)
    # u^T Sigma u = Delta^T Sigma Delta / ||Delta||^2 with the direction from the plug-in means.
    off = ~torch.eye(stats.n_classes, dtype=torch.bool, device=d2.device)
    along = torch.where(off, q / torch.where(off, plug_d2, 1.0), 0.0)
    return _pack(along + along.T, d2, convention)
