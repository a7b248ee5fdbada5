"""Closed-form baselines of the ST-from-histology field, on the same inputs as the models.

* :class:`MeanExpression`: every spot gets the training mean of each gene (per-gene Pearson 0
  by definition: it says nothing about *where* a gene is expressed; its MSE is the floor a model
  must beat);
* :class:`RidgeProbe`: ridge regression from image features to normalised log1p expression
  (HEST-Benchmark's linear probe), with three amounts of context:
  ``"spot"`` each spot's own features; ``"neighbours"`` plus the mean features of its lattice
  neighbourhood (the 3 x 3 block of sites around it, itself included: the context a local model
  sees); ``"slide"`` plus the slide's mean and standard deviation of every feature (the
  information HiST's calibration tokens summarise); ``"multiscale"`` all of them at once: the
  spot, the means of its 3 x 3 and 5 x 5 blocks and the slide's statistics (the strongest
  closed-form reference: every scale of context HiST's hierarchy sees, combined linearly).

The ridge penalty is chosen on validation slides (mean per-gene Pearson) from ``alphas``, the
same tuning a trained model gets from early stopping. Features are standardised with the
training statistics; the intercept is not penalised.
"""

from dataclasses import dataclass

import numpy as np

from icml26.hist.data import Slide
from icml26.hist.metrics import gene_pearsons

CONTEXTS = ("spot", "neighbours", "slide", "multiscale")


def neighbourhood_mean(slide: Slide, radius: int = 1) -> np.ndarray:
    """(N, F) mean features over each spot's (2 radius + 1)^2 block of lattice sites (itself
    included; sites without a spot are left out): radius 1 is the 3 x 3 block, 2 the 5 x 5."""
    if isinstance(radius, bool) or not isinstance(radius, int) or radius < 1:
        raise ValueError(f"radius must be an integer >= 1, got {radius!r}")
    c = slide.coords
    grid = np.full(tuple(c.max(0) + 1 + 2 * radius), -1, dtype=np.int64)
    grid[c[:, 0] + radius, c[:, 1] + radius] = np.arange(len(c))
    total = np.zeros_like(slide.features, dtype=np.float64)
    count = np.zeros(len(c))
    for dr in range(-radius, radius + 1):
        for dc in range(-radius, radius + 1):
            j = grid[c[:, 0] + radius + dr, c[:, 1] + radius + dc]
            ok = j >= 0
            total[ok] += slide.features[j[ok]]
            count[ok] += 1
    return (total / count[:, None]).astype(np.float32)


def _slide_stats(x: np.ndarray) -> np.ndarray:
    stats = np.concatenate([x.mean(0), x.std(0)])
    return np.broadcast_to(stats, (len(x), len(stats)))


def _aligned(slides: list[Slide], genes: list[str]) -> list[Slide]:
    return [s if s.genes == genes else s.select_genes(genes) for s in slides]


@dataclass
class MeanExpression:
    """Predicts the per-gene training mean of log1p expression at every spot."""

    target_sum: float | None = 1e4

    def fit(self, slides: list[Slide], validation: list[Slide] | None = None) -> "MeanExpression":
        self.genes = list(slides[0].genes)
        expr = np.concatenate([s.expression(self.target_sum) for s in _aligned(slides, self.genes)])
        self.mean = expr.mean(0)
        return self

    def predict_log1p(self, slide: Slide) -> np.ndarray:
        if not hasattr(self, "mean"):
            raise ValueError("MeanExpression: call fit(slides) before predict_log1p")
        return np.broadcast_to(self.mean, (len(slide), len(self.mean))).copy()


@dataclass
class RidgeProbe:
    """Ridge regression of normalised log1p expression on (contextual) image features."""

    context: str = "spot"
    alphas: tuple[float, ...] = (0.1, 1.0, 10.0, 100.0, 1000.0)
    target_sum: float | None = 1e4

    def __post_init__(self):
        if self.context not in CONTEXTS:
            raise ValueError(f"context must be one of {CONTEXTS}, got {self.context!r}")
        if not self.alphas or any(not a > 0 for a in self.alphas):
            raise ValueError(f"alphas must be positive numbers, got {self.alphas}")

    def design(self, slide: Slide) -> np.ndarray:
        """The probe's input for each spot of ``slide`` (before standardisation)."""
        x = slide.features.astype(np.float64)
        if self.context == "neighbours":
            return np.concatenate([x, neighbourhood_mean(slide)], 1)
        if self.context == "slide":
            return np.concatenate([x, _slide_stats(x)], 1)
        if self.context == "multiscale":
            blocks = [neighbourhood_mean(slide, 1), neighbourhood_mean(slide, 2)]
            return np.concatenate([x, *blocks, _slide_stats(x)], 1)
        return x

    def _solve(self, x: np.ndarray, y: np.ndarray, alpha: float):
        xc, yc = x - x.mean(0), y - y.mean(0)
        coef = np.linalg.solve(xc.T @ xc + alpha * np.eye(x.shape[1]), xc.T @ yc)
        return coef, y.mean(0) - x.mean(0) @ coef

    def fit(self, slides: list[Slide], validation: list[Slide] | None = None) -> "RidgeProbe":
        """Fit on ``slides``; choose the penalty on ``validation`` (None: the middle one)."""
        self.genes = list(slides[0].genes)
        slides = _aligned(slides, self.genes)
        x = np.concatenate([self.design(s) for s in slides])
        y = np.concatenate([s.expression(self.target_sum) for s in slides]).astype(np.float64)
        self.x_mean, self.x_std = x.mean(0), np.where(x.std(0) > 1e-9, x.std(0), 1.0)
        z = (x - self.x_mean) / self.x_std
        if validation:
            validation = _aligned(validation, self.genes)
            scores = {}
            for a in self.alphas:
                self.coef, self.intercept = self._solve(z, y, a)
                scores[a] = np.mean(
                    [
                        gene_pearsons(self.predict_log1p(v), v.expression(self.target_sum)).mean()
                        for v in validation
                    ]
                )
            self.alpha = max(self.alphas, key=lambda a: (scores[a], -a))
            self.validation_scores = scores
        else:
            self.alpha = self.alphas[len(self.alphas) // 2]
        self.coef, self.intercept = self._solve(z, y, self.alpha)
        return self

    def predict_log1p(self, slide: Slide) -> np.ndarray:
        z = (self.design(slide) - self.x_mean) / self.x_std
        return (z @ self.coef + self.intercept).astype(np.float32)
