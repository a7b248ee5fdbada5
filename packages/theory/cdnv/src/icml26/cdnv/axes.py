"""Decision axes of several labelings of the same features, and how orthogonal they are.

For independent balanced labelings, small directional CDNV across tasks forces their decision
axes (the class-mean differences) to be nearly orthogonal (Luthra et al., arXiv 2603.03530).
"""

import numpy as np
import torch

from icml26.cdnv.stats import check_float_features


def _features(features) -> torch.Tensor:
    """(N, d) floating, finite features in float64 (bool or integer ones are refused: they are
    almost always labels passed by mistake)."""
    x = torch.as_tensor(
        np.asarray(features) if not isinstance(features, torch.Tensor) else features
    )
    check_float_features(x)
    if not bool(torch.isfinite(x).all()):
        raise ValueError("features contain NaN or inf")
    return x.detach().to(dtype=torch.float64)


def _labelings(labelings, x: torch.Tensor) -> torch.Tensor:
    """(N, K) labelings on the device of ``x``, from an array or a list of label vectors."""
    if isinstance(labelings, list | tuple):
        labelings = torch.stack(
            [
                torch.as_tensor(
                    t if isinstance(t, torch.Tensor) else np.asarray(t), device=x.device
                )
                for t in labelings
            ],
            1,
        )
    L = torch.as_tensor(
        np.asarray(labelings) if not isinstance(labelings, torch.Tensor) else labelings
    )
    L = L.to(x.device)
    if L.ndim == 1:
        L = L[:, None]
    if x.ndim != 2 or L.shape[0] != x.shape[0]:
        raise ValueError(
            f"features (N, d) and labelings (N, K) must have the same N; got "
            f"{tuple(x.shape)} and {tuple(L.shape)}"
        )
    return L


def decision_axis_cosines(features, labelings) -> torch.Tensor:
    """(K, K) ``|cos(Delta_s, Delta_t)|`` between the decision axes of K binary labelings.

    ``labelings`` is (N, K) (or a list of K label vectors) with two classes each; the decision
    axis of a labeling is the difference of its two class means. Computed on the device of
    ``features``.
    """
    x = _features(features)
    L = _labelings(labelings, x)
    axes = []
    for k in range(L.shape[1]):
        vals = torch.unique(L[:, k])
        if len(vals) != 2:
            raise ValueError(f"labeling {k} must have exactly 2 classes, has {len(vals)}")
        axes.append(x[L[:, k] == vals[1]].mean(0) - x[L[:, k] == vals[0]].mean(0))
    A = torch.stack(axes)
    norms = A.norm(dim=1, keepdim=True)
    if (norms == 0).any():
        raise ValueError("a labeling has identical class means: its decision axis is undefined")
    A = A / norms
    return (A @ A.T).abs()


def axis_cosine_bound(features, labelings) -> torch.Tensor:
    """(K, K) upper bound on ``|cos|`` between decision axes from the directional CDNV of each task.

    DERIVED HERE (the paper's own argument was not available to us). Take binary labelings s
    (classes a, b; axis ``Delta_s``, ``u_s = Delta_s / ||Delta_s||``) and t. Inside class a, t
    splits the samples in proportions ``p_a, 1 - p_a`` with mean difference ``Delta_t^a``; the law
    of total variance gives ``u_s^T Sigma_a u_s >= p_a (1 - p_a) (u_s . Delta_t^a)^2``, and the
    same in b. With ``q = min(p_a (1 - p_a), p_b (1 - p_b))`` and the within-class axis
    ``Delta_t^(s) = (Delta_t^a + Delta_t^b) / 2``, convexity gives

        V~_s >= q cos^2(Delta_s, Delta_t^(s)) ||Delta_t^(s)||^2 / ||Delta_s||^2

    with ``V~_s = (u_s^T Sigma_a u_s + u_s^T Sigma_b u_s) / (2 ||Delta_s||^2)`` (the "mean"
    convention), i.e. ``|cos(Delta_s, Delta_t^(s))| <= sqrt(V~_s / q) ||Delta_s|| /
    ||Delta_t^(s)||``: exact on any data. For balanced, independent labelings (q = 1/4)
    ``Delta_t^(s)`` is the decision axis ``Delta_t`` itself, so the bound is
    ``2 sqrt(V~_s) ||Delta_s|| / ||Delta_t||`` on the decision axes' cosine; for nearly balanced,
    nearly independent labelings it holds for the decision axes up to that difference. Entry
    [s, t] is the smaller of the (s, t) and (t, s) bounds, capped at 1. Tight when every class
    is spread only along the other task's axis.
    """
    x = _features(features)
    L = _labelings(labelings, x)
    K = L.shape[1]
    sides = []
    for k in range(K):
        vals = torch.unique(L[:, k])
        if len(vals) != 2:
            raise ValueError(f"labeling {k} must have exactly 2 classes, has {len(vals)}")
        sides.append((L[:, k] == vals[1], L[:, k] == vals[0]))
    out = torch.ones(K, K, dtype=torch.float64, device=x.device)
    for s_ in range(K):
        a, b = sides[s_]
        delta = x[a].mean(0) - x[b].mean(0)
        d2 = delta @ delta
        if d2 == 0:
            raise ValueError(f"labeling {s_} has identical class means")
        u = delta / d2.sqrt()
        xa, xb = x[a], x[b]
        spread = ((xa - xa.mean(0)) @ u).pow(2).mean() + ((xb - xb.mean(0)) @ u).pow(2).mean()
        v_tilde = spread / (2 * d2)
        for t in range(K):
            if t == s_:
                continue
            within, q = [], 1.0
            for cls in (a, b):
                plus, minus = cls & sides[t][0], cls & sides[t][1]
                if not plus.any() or not minus.any():
                    within = None  # t is constant inside a class of s: no bound from this side
                    break
                p = plus.sum() / cls.sum()
                q = min(q, float(p * (1 - p)))
                within.append(x[plus].mean(0) - x[minus].mean(0))
            if within is None:
                continue
            axis = (within[0] + within[1]) / 2
            norm = axis.norm()
            if norm > 0:
                out[s_, t] = (v_tilde / q).sqrt() * d2.sqrt() / norm
    return torch.minimum(out, out.T).clamp_max(1.0)
