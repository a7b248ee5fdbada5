"""Decision axes of several labelings of the same features, and how orthogonal they are.

For independent balanced labelings, small directional CDNV across tasks forces their decision
axes (the class-mean differences) to be nearly orthogonal (Luthra et al., arXiv 2603.03530).
"""

import numpy as np
import torch


def decision_axis_cosines(features, labelings) -> torch.Tensor:
    """(K, K) ``|cos(Delta_s, Delta_t)|`` between the decision axes of K binary labelings.

    ``labelings`` is (N, K) (or a list of K label vectors) with two classes each; the decision
    axis of a labeling is the difference of its two class means. Computed on the device of
    ``features``.
    """
    x = torch.as_tensor(
        np.asarray(features) if not isinstance(features, torch.Tensor) else features
    )
    x = x.detach().to(dtype=torch.float64)
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
