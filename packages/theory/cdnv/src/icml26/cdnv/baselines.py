"""The references an SSL encoder's geometry is judged against (DESIGN "Evidence", item 4).

An encoder's V~ d / V or few-shot error means something only next to what the same measurement
gives without learning: the raw pixels, the same network at its seeded initialisation (the
random encoder: architecture alone), and, for the multitask decision axes, the whitened input
(the simplest linear map that untangles correlated directions). ``oracle_lda`` is the other
end: the held-out classes' own discriminant axes, the near-perfect representation a rule about
transfer must accept.
"""

import torch
from torch import nn


def raw_pixels(images: torch.Tensor) -> torch.Tensor:
    """Images ``(n, ...)`` as feature rows ``(n, prod(...))``: the no-learning reference."""
    if not isinstance(images, torch.Tensor) or images.ndim < 2:
        raise ValueError(f"images: expected a tensor of shape (n, ...), got {_describe(images)}")
    return images.flatten(1)


@torch.no_grad()
def untrained_features(encoder: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``encoder``'s features of ``x`` in eval mode, before any training: the architecture's share
    of the geometry. Call it on the seeded network every objective then starts from."""
    was_training = encoder.training
    try:
        return encoder.eval()(x)
    finally:
        encoder.train(was_training)


def whiten(x: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """PCA-whitened rows of ``x`` ``(n, d)``: centred, rotated to the covariance's eigenbasis and
    scaled to unit variance (directions with variance below ``eps`` are scaled by 1/sqrt(eps))."""
    if not isinstance(x, torch.Tensor) or x.ndim != 2 or len(x) < 2:
        raise ValueError(f"x: expected a tensor of shape (n >= 2, d), got {_describe(x)}")
    if not torch.isfinite(x).all():
        raise ValueError("x holds NaN or infinite values")
    centred = x - x.mean(0)
    evals, evecs = torch.linalg.eigh(centred.T @ centred / len(centred))
    return centred @ evecs / evals.clamp_min(eps).sqrt()


def _describe(x) -> str:
    return f"shape {tuple(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__


def oracle_lda(features: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Features projected on the (C - 1) discriminant axes of linear discriminant analysis fitted
    on ``labels`` themselves (scikit-learn, eigen solver with Ledoit-Wolf shrinkage): a
    near-perfect representation of these classes, which no transfer encoder could build without
    their labels. A rule about "features that transfer" must pass it."""
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    if not isinstance(features, torch.Tensor) or features.ndim != 2 or len(features) < 2:
        raise ValueError(f"features: expected a tensor of shape (n >= 2, d), got "
                         f"{_describe(features)}")  # fmt: skip
    if not isinstance(labels, torch.Tensor) or labels.shape != features.shape[:1]:
        raise ValueError(f"labels: expected a tensor of shape ({len(features)},), got "
                         f"{_describe(labels)}")  # fmt: skip
    x, y = features.detach().cpu().double().numpy(), labels.cpu().numpy()
    lda = LinearDiscriminantAnalysis(solver="eigen", shrinkage="auto").fit(x, y)
    return torch.tensor(lda.transform(x), dtype=features.dtype, device=features.device)
