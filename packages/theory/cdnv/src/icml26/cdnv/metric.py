"""A torchmetrics-style metric for the class geometry of embeddings: ``update`` / ``compute`` /
``reset``, partial statistics summed across ``torch.distributed`` ranks.

The directional quadratics need the class means before the spreads around them, so the metric
takes two passes over the same samples (``StreamingClassStats``); memory stays O(C^2 + C d)
however many samples stream through::

    metric = CDNVMetric(num_classes=100)
    for x, y in loader: metric.update(model(x), y)
    metric.second_pass()
    for x, y in loader: metric.update(model(x), y)
    values = metric.compute()          # {"V": ..., "V~": ..., "V~ d / V": ..., ...}

or ``metric.measure(loader, embed=model)``, which runs both passes. Under torchrun each rank
feeds its own shard (e.g. a ``DistributedSampler``) and ``second_pass`` / ``compute`` all-reduce
the sums, so every rank returns the same values.
"""

from collections.abc import Callable, Iterable, Sequence

import torch

from icml26.cdnv.bound import fewshot_bound
from icml26.cdnv.measures import Convention, cdnv, directional_cdnv
from icml26.cdnv.stats import ClassStats, StreamingClassStats


def collapse_ratio(stats: ClassStats, convention: Convention = "sum") -> float:
    """``V~ d / V``: the directional CDNV relative to its isotropic null.

    For isotropic classes (Sigma = s^2 I) V~ = V / d, so the ratio is 1; below 1 the classes
    are narrower along their decision axes than on average (directional collapse), above 1
    wider. The convention cancels. Computed from the pair averages (mean V~ over mean V)."""
    return directional_cdnv(stats, convention).mean * stats.dim / cdnv(stats, convention).mean


def effective_dim(stats: ClassStats) -> float:
    """The classes' effective dimension: the mean over classes of the participation ratio
    ``(tr Sigma_c)^2 / tr Sigma_c^2`` (k for a class spread evenly over k directions, d for an
    isotropic one), from the statistics' estimate of ``tr Sigma_c^2``."""
    if not isinstance(stats, ClassStats):
        raise TypeError(f"stats: expected the ClassStats that class_stats returns, got "
                        f"{type(stats).__name__}")  # fmt: skip
    ratio = stats.total_variance**2 / stats.frob_sq.clamp_min(torch.finfo(torch.float64).tiny)
    return float(ratio.clamp(1.0, float(stats.dim)).mean())


def effective_collapse_ratio(stats: ClassStats, convention: Convention = "sum") -> float:
    """``V~ d_eff / V``: ``collapse_ratio`` with the classes' effective dimension in place of the
    nominal one. Features of different widths (784 pixels, a 2048-d feature map, 3 LDA axes)
    spread their classes over a few tens of directions whatever d is, and ``V~ d / V`` grows with
    the unused ones; this ratio is 1 for classes spread evenly over the directions they use, below
    1 when they are narrower along their decision axes."""
    d_eff = effective_dim(stats)  # checks stats first
    return directional_cdnv(stats, convention).mean * d_eff / cdnv(stats, convention).mean


class CDNVMetric:
    """V, V~, ``V~ d / V`` and the m-shot bounds (ours and the authors') of streamed embeddings.

    Args:
        num_classes: labels lie in [0, num_classes) (every rank needs the same rows).
        shots: m values for the bounds.
        convention: "sum" or "mean" (see ``measures``).
        sync: all-reduce over ``torch.distributed`` when a process group is initialised.
        dim, device: the feature dimension and the sums' device, needed up front by a rank
            that may see no samples (NCCL reduces CUDA tensors: give that rank's device).
    """

    def __init__(
        self,
        num_classes: int,
        shots: Sequence[int] = (1, 5),
        convention: Convention = "sum",
        sync: bool = True,
        dim: int | None = None,
        device: str | torch.device | None = None,
    ):
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
            raise ValueError(f"num_classes must be an integer >= 2, got {num_classes!r}")
        if not shots or min(shots) < 1:
            raise ValueError(f"shots must be a non-empty sequence of m >= 1, got {shots!r}")
        if convention not in ("sum", "mean"):
            raise ValueError(f"convention must be 'sum' or 'mean', got {convention!r}")
        self.num_classes, self.shots, self.convention = num_classes, tuple(shots), convention
        self.sync, self.dim, self.device = sync, dim, device
        self.reset()

    def reset(self) -> None:
        self._acc = StreamingClassStats(self.num_classes, self.dim, device=self.device)
        self._reduced: ClassStats | None = None  # compute() reduces once, then reuses

    @property
    def phase(self) -> int:
        """1 while the means accumulate, 2 after ``second_pass``."""
        return self._acc.phase

    def update(self, features: torch.Tensor, labels: torch.Tensor) -> None:
        if self._reduced is not None:
            raise ValueError("compute() was called: reset() before feeding new samples")
        self._acc.update(features, labels)

    def second_pass(self) -> None:
        """End the first pass (summing it over ranks) and start the second. Every rank must call
        it (and ``compute``), also a rank whose shard is empty (give ``dim`` then)."""
        if self.sync:
            self._acc.all_reduce()
        self._acc.second_pass()

    def stats(self) -> ClassStats:
        """The reduced class statistics (after the second pass)."""
        if self._acc.phase != 2:
            raise ValueError("call second_pass() and feed the same samples again before compute()")
        if self._reduced is None:  # all-reducing twice would multiply the sums by the ranks
            if self.sync:
                self._acc.all_reduce()
            self._reduced = self._acc.finalize()
        return self._reduced

    def compute(self) -> dict[str, float]:
        st = self.stats()
        out = {
            "V": cdnv(st, self.convention).mean,
            "V~": directional_cdnv(st, self.convention).mean,
            "V~ d / V": collapse_ratio(st, self.convention),
        }
        try:  # too few samples per class (after a sharded pass) leaves cross-fitting undefined
            out["V~ (cross-fit)"] = directional_cdnv(st, self.convention, cross_fit=True).mean
        except ValueError:
            out["V~ (cross-fit)"] = float("nan")
        for variant in ("ours", "authors"):
            bounds = fewshot_bound(st, list(self.shots), variant=variant)
            for m, b in zip(self.shots, bounds, strict=True):
                out[f"{m}-shot bound ({variant})"] = b
        return out

    @torch.no_grad()
    def measure(
        self,
        batches: Iterable,
        embed: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ) -> dict[str, float]:
        """Both passes over ``batches`` (re-iterable ``(inputs, labels)`` pairs), embedding the
        inputs with ``embed`` (e.g. a model) when given; returns ``compute()``."""
        if iter(batches) is batches:
            raise ValueError("batches must be re-iterable (a DataLoader or list): two passes")
        self.reset()
        for _ in range(2):
            for xb, yb in batches:
                self.update(embed(xb) if embed is not None else xb, yb)
            if self.phase == 1:
                self.second_pass()
        return self.compute()
