"""The m-shot nearest-class-centroid (NCC) error and its bound through directional CDNV.

NCC with m shots: each class's centroid is the mean of m support samples; a query goes to the
nearest centroid. For a query x of class i and a competitor j, with Delta = mu_i - mu_j,
centred query noise e ~ (0, Sigma_i) and centroid errors a_i, a_j (means of m centred samples):

    Z_ij = ||x - mu^_j||^2 - ||x - mu^_i||^2
         = ||Delta||^2 + 2 Delta^T e - 2 Delta^T a_j + 2 e^T (a_i - a_j)
           + (||a_j||^2 - ||a_i||^2)

and the query is misclassified against j when Z_ij <= 0. Exactly,

    E Z_ij / ||Delta||^2 = 1 + (tr Sigma_j - tr Sigma_i) / (m ||Delta||^2)            (mean shift)
    Var(2 Delta^T e)            = 4 Delta^T Sigma_i Delta                               (leading)
    Var(2 Delta^T a_j)          = 4 Delta^T Sigma_j Delta / m                           (A_S)
    Var(2 e^T (a_i - a_j))      = 4 (tr Sigma_i^2 + tr Sigma_i Sigma_j) / m             (A_T)
                               <= 4 (||Sigma_i||_F^2 + ||Sigma_i||_F ||Sigma_j||_F) / m
    Var(||a_j||^2 - ||a_i||^2)  = sum_c [Theta_c + 2 (m - 1) tr Sigma_c^2] / m^3        (A_Q)

with Theta_c = Var ||x - mu_c||^2. The leading term is uncorrelated with the other three, so
(Minkowski) ``Var Z / ||Delta||^4 <= 4 u^T Sigma_i u / ||Delta||^2 + (sqrt A_S + sqrt A_T +
sqrt A_Q)^2`` with the A's normalised by ``||Delta||^4``, and Cantelli's inequality bounds
``P(Z_ij <= 0)``. A union bound over competitors and an average over classes give the multiclass
bound. Averaged over ordered pairs the leading term is exactly ``4 V~`` with V~ in the "mean"
convention (``(u^T Sigma_i u + u^T Sigma_j u) / (2 ||Delta||^2)``), i.e. ``2 V~`` in this package's
default "sum" convention.

RECONSTRUCTED: the paper's theorem text was not available to us. This follows the structure of
the authors' released bound (``compute_new_error_bound`` in DLFundamentals/directional_cdnv_bounds:
leading term 4 V~, three finite-shot terms combined as (sqrt + sqrt + sqrt)^2, the mean-shift
denominator ``(1 + (v_j - v_i)/(m d^2))^2``, the union over competitors averaged over classes),
with every term derived above and computed from the class moments; Cantelli's
``s / (s + mu^2)`` replaces Chebyshev's ``s / mu^2`` (never larger, and at most 1). The finite-shot
terms vanish as 1/m, leaving ``4 V~_ij / (1 + 4 V~_ij)`` per pair, with the per-pair
``V~_ij = u^T Sigma_i u / ||Delta_ij||^2`` of the query's class (the average of the pair's two
ordered entries is V~ in the "mean" convention of ``measures``).

``variant="authors"`` is the authors' formula as published (``compute_new_error_bound`` in
``bound_analysis/new_bound_core.py``, with the per-pair metrics of ``compute_pairwise_metrics``
in their ``eval_utils/geometry.py``), in the same per-pair quantities:

    V_ij   = (tr Sigma_i + tr Sigma_j) / d2          V~_ij = u^T Sigma_i u / d2
    Theta_ij = (E||x_i - mu_i||^4 + E||x_j - mu_j||^4) / d2^2
    A_T = (4/m)(V_ij^2 + V_ij / 4),  A_S = V_ij / m,  A_Q = (Theta_ij + 2 (m - 1) V_ij^2) / m^3
    bound_ij = (4 V~_ij + (sqrt A_T + sqrt A_S + sqrt A_Q)^2) / (1 + (v_j - v_i) / (m d2))^2

i.e. Chebyshev in the classical V, not clamped (it can exceed 1), summed over competitors and
averaged over classes. Differences from their code: population covariances (they divide by
n - 1), and ``fewshot_bound`` scales the union by ``(w - 1)/(C - 1)`` for w-way episodes as for
our variant (their code evaluates 2-way tasks on two classes).
"""

from collections.abc import Sequence
from typing import Literal

import numpy as np
import torch

from icml26.cdnv.measures import squared_distances
from icml26.cdnv.stats import ClassStats, check_float_features

Variant = Literal["ours", "authors"]


def _authors_pairwise(stats: ClassStats, m: float, d2s: torch.Tensor) -> torch.Tensor:
    """The authors' per-pair bound (module docstring), unclamped; diagonal not yet zeroed."""
    v = stats.total_variance
    V = (v[:, None] + v[None, :]) / d2s
    v_tilde = stats.directional() / d2s.pow(2)  # [i, j] = u^T Sigma_i u / d2
    m4 = stats.fourth + v.pow(2)  # E||x - mu||^4 = Var||x - mu||^2 + (tr Sigma)^2
    theta = (m4[:, None] + m4[None, :]) / d2s.pow(2)
    a_t = (4 / m) * (V.pow(2) + 0.25 * V)
    a_s = V / m
    a_q = (theta + 2 * (m - 1) * V.pow(2)) / m**3
    spread = 4 * v_tilde + (a_t.sqrt() + a_s.sqrt() + a_q.sqrt()).pow(2)
    return spread / (1 + (v[None, :] - v[:, None]) / (m * d2s)).pow(2)


def pairwise_bound(stats: ClassStats, shots: int, variant: Variant = "ours") -> torch.Tensor:
    """(C, C) bound on P(class-i query is closer to class j's m-shot centroid); diagonal 0.

    ``variant="ours"`` (Cantelli, exact finite-shot moments, at most 1) or ``"authors"`` (their
    published Chebyshev form, unclamped); see the module docstring.
    """
    if isinstance(shots, bool) or not isinstance(shots, int) or shots < 1:
        raise ValueError(f"shots must be an integer >= 1, got {shots!r}")
    if variant not in ("ours", "authors"):
        raise ValueError(f"variant must be 'ours' or 'authors', got {variant!r}")
    m = float(shots)
    d2 = squared_distances(stats)  # (C, C), plug-in
    C = stats.n_classes
    off = ~torch.eye(C, dtype=torch.bool, device=d2.device)
    d2s = torch.where(off, d2, 1.0)
    if variant == "authors":
        return torch.where(off, _authors_pairwise(stats, m, d2s), torch.zeros_like(d2s))
    d4 = d2s.pow(2)
    v = stats.total_variance
    lead = 4 * stats.directional() / d4  # [i, j] = 4 u^T Sigma_i u / ||Delta_ij||^2
    q_j = stats.directional().T  # [i, j] = Delta_ij^T Sigma_j Delta_ij
    tr_sq = stats.frob_sq
    # tr Sigma_i Sigma_j <= ||Sigma_i||_F ||Sigma_j||_F (Cauchy-Schwarz): keeps the statistics
    # O(C^2 + C d) instead of O(C d^2) and the bound an upper bound.
    tr_prod = tr_sq.sqrt()[:, None] * tr_sq.sqrt()[None, :]
    a_s = 4 * q_j / m / d4
    a_t = 4 * (tr_sq[:, None] + tr_prod) / m / d4
    quartic = stats.fourth + 2 * (m - 1) * tr_sq  # (C,)
    a_q = (quartic[:, None] + quartic[None, :]) / m**3 / d4
    spread = lead + (a_s.sqrt() + a_t.sqrt() + a_q.sqrt()).pow(2)
    mean = 1 + (v[None, :] - v[:, None]) / (m * d2s)
    cantelli = spread / (spread + mean.pow(2))
    bound = torch.where(mean > 0, cantelli, torch.ones_like(cantelli))
    return torch.where(off, bound, torch.zeros_like(bound))


def _check_shot_list(shots: Sequence) -> None:
    """A list of shots gives a list of results: an empty one (or a string) gives nothing."""
    if isinstance(shots, str) or len(shots) == 0:
        raise ValueError(f"shots must be a positive int or a non-empty list of them, got {shots!r}")


def fewshot_bound(
    stats: ClassStats,
    shots: int | Sequence[int],
    ways: int | None = None,
    variant: Variant = "ours",
) -> float | list[float]:
    """Upper bound on the expected m-shot NCC error of ``ways``-way episodes over the classes of
    ``stats`` (default: all classes in every episode).

    ``(1/C) sum_i min(1, (w - 1)/(C - 1) sum_{j != i} bound_ij)``: the union bound over the
    w - 1 competitors of a random episode, in expectation (E min(1, S) <= min(1, E S)). A list
    of shots gives a list of bounds. ``variant="authors"`` uses their per-pair formula and, as
    their code does, no clamp at 1.
    """
    if isinstance(shots, Sequence):
        _check_shot_list(shots)
        return [fewshot_bound(stats, m, ways, variant) for m in shots]
    C = stats.n_classes
    w = C if ways is None else ways
    if not 2 <= w <= C:
        raise ValueError(f"ways must lie in [2, {C}], got {ways}")
    per_class = pairwise_bound(stats, shots, variant).sum(1) * (w - 1) / (C - 1)
    if variant == "ours":
        per_class = per_class.clamp_max(1.0)
    return per_class.mean().item()


def ncc_fewshot_error(
    features,
    labels,
    shots: int | Sequence[int],
    episodes: int = 200,
    ways: int | None = None,
    queries: int | None = None,
    seed: int = 0,
) -> float | list[float]:
    """Empirical m-shot nearest-class-centroid error, averaged over random episodes.

    Each episode picks ``ways`` classes (default: all), ``shots`` support samples per class, and
    ``queries`` query samples per class (default: all the rest), builds the centroids from the
    support and classifies the queries by Euclidean distance. A list of shots gives a list.
    Distances are computed on the device of ``features``; the episodes are drawn on the CPU from
    ``seed``, so every device sees the same episodes.
    """
    if isinstance(shots, Sequence):
        _check_shot_list(shots)
        return [
            ncc_fewshot_error(features, labels, m, episodes, ways, queries, seed) for m in shots
        ]
    x = torch.as_tensor(
        np.asarray(features) if not isinstance(features, torch.Tensor) else features
    )
    y = torch.as_tensor(np.asarray(labels) if not isinstance(labels, torch.Tensor) else labels)
    x = check_float_features(x).detach().to(dtype=torch.float64)
    y = y.detach().to(x.device).long()
    if x.ndim != 2 or y.ndim != 1 or len(x) != len(y):
        raise ValueError(
            f"features must be (N, d) and labels (N,), got {tuple(x.shape)}, {tuple(y.shape)}"
        )
    if not torch.isfinite(x).all():
        raise ValueError("features contain NaN or inf")
    if isinstance(shots, bool) or not isinstance(shots, int) or shots < 1:
        raise ValueError(f"shots must be an integer >= 1, got {shots!r}")
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    classes, counts = torch.unique(y, return_counts=True)
    ways = len(classes) if ways is None else ways
    if not 2 <= ways <= len(classes):
        raise ValueError(f"ways must lie in [2, {len(classes)}], got {ways}")
    need = shots + (queries or 1)
    if counts.min() < need:
        c = int(classes[counts.argmin()])
        raise ValueError(
            f"class {c} has {int(counts.min())} samples; {shots} shots + queries need {need}"
        )
    index = {int(c): (y == c).nonzero().squeeze(1) for c in classes}
    gen = torch.Generator().manual_seed(seed)
    wrong = total = 0
    for _ in range(episodes):
        chosen = classes[torch.randperm(len(classes), generator=gen)[:ways].to(x.device)]
        centroids, q_x, q_y = [], [], []
        for k, c in enumerate(chosen.tolist()):
            idx = index[c][torch.randperm(len(index[c]), generator=gen).to(x.device)]
            centroids.append(x[idx[:shots]].mean(0))
            rest = idx[shots:] if queries is None else idx[shots : shots + queries]
            q_x.append(x[rest])
            q_y.append(torch.full((len(rest),), k, device=x.device))
        dist = torch.cdist(torch.cat(q_x), torch.stack(centroids))
        pred = dist.argmin(1)
        truth = torch.cat(q_y)
        wrong += int((pred != truth).sum())
        total += len(truth)
    return wrong / total
