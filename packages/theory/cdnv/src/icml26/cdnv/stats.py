"""Per-class first, second and fourth moments of features, accumulated in one streaming pass.

Everything the measures and the few-shot bound need is a function of, per class c:
the count n_c, the mean mu_c, the covariance Sigma_c (population, 1/n), and
``Theta_c = Var ||x - mu_c||^2`` (the fourth-moment term of the bound). One pass over the
data accumulates, per class and in float64, shifted raw sums

    n, sum y, sum y y^T, sum ||y||^2 y, sum ||y||^4        with y = x - s_c

where the shift s_c is the first sample of class c seen (it keeps the raw sums small, so
subtracting them loses no precision). Samples also go alternately to two folds, whose means
give the cross-fitted squared distances. Chunks of any size can be fed (``update``), so a data
set that does not fit in memory streams through.

The sums live on the device of the first chunk (later chunks are moved there), so features that
are on a GPU are reduced there; the statistics come back on that device.
"""

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class ClassStats:
    """Sufficient statistics of C classes in d dimensions for the measures and the bound.

    Attributes (float64 tensors):
        classes: (C,) the label of each row.
        counts: (C,) samples per class.
        means: (C, d) class means mu_c.
        total_variance: (C,) tr Sigma_c (covariances normalised by n_c).
        frob_sq: (C,) tr Sigma_c^2 = ||Sigma_c||_F^2.
        mean_quadratic: (C, C, C) entry [k, a, b] = (mu_a - m)^T Sigma_k (mu_b - m), m the mean
            of the class means: every directional variance Delta_ab^T Sigma_k Delta_ab follows
            from it without keeping the d x d covariances.
        fourth: (C,) Theta_c = Var ||x - mu_c||^2.
        fold_means: (2, C, d) class means of the two folds (alternate samples).
        covs: (C, d, d) covariances, or None when they were not kept (large C d^2).
    """

    classes: torch.Tensor
    counts: torch.Tensor
    means: torch.Tensor
    total_variance: torch.Tensor
    frob_sq: torch.Tensor
    mean_quadratic: torch.Tensor
    fourth: torch.Tensor
    fold_means: torch.Tensor
    covs: torch.Tensor | None = None

    @property
    def n_classes(self) -> int:
        return self.means.shape[0]

    @property
    def dim(self) -> int:
        return self.means.shape[1]

    def directional(self, k: int | None = None) -> torch.Tensor:
        """(C, C) ``Delta_ab^T Sigma_k Delta_ab`` for class k; with k=None, entry [a, b] uses
        Sigma_a (the variance of class a along its axis to b)."""
        P = self.mean_quadratic
        if k is not None:
            d = torch.diagonal(P[k])
            return d[:, None] + d[None, :] - 2 * P[k]
        idx = torch.arange(self.n_classes, device=P.device)
        diag = torch.diagonal(P, dim1=1, dim2=2)  # (k, a): P[k, a, a]
        own = P[idx, idx, :]  # [a, b] = P[a, a, b]
        return diag[idx, idx][:, None] + diag - 2 * own

    def subset(self, classes) -> "ClassStats":
        """The statistics of some classes only (by label)."""
        labels = self.classes.tolist()
        try:
            idx = torch.tensor([labels.index(int(c)) for c in classes], device=self.means.device)
        except ValueError:
            raise ValueError(f"classes {list(classes)} are not all among {labels}") from None
        P = self.mean_quadratic[idx][:, idx][:, :, idx]
        return ClassStats(
            self.classes[idx],
            self.counts[idx],
            self.means[idx],
            self.total_variance[idx],
            self.frob_sq[idx],
            P,
            self.fourth[idx],
            self.fold_means[:, idx],
            None if self.covs is None else self.covs[idx],
        )


def _to_tensor(x, name: str, ndim: int) -> torch.Tensor:
    if isinstance(x, np.ndarray):
        x = torch.from_numpy(x)
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a numpy array or torch tensor, got {type(x).__name__}")
    if x.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {tuple(x.shape)}")
    return x


class StreamingClassStats:
    """Accumulate ``ClassStats`` over chunks: ``update(features, labels)`` then ``finalize()``.

    Rows are buffered per class and folded into the sums ``flush_rows`` at a time, so the d x d
    second-moment update is amortised over many rows even when a chunk holds few rows of each
    class. For d > 256 the d x d second moments are accumulated in float32 (twice as fast and half
    the memory; the data are shifted by a sample of their class, so the relative error of the
    covariances stays near 1e-6); everything else is float64.
    """

    def __init__(self, dim: int | None = None, flush_rows: int = 1024):
        self.dim = dim
        self.flush_rows = flush_rows
        self.device: torch.device | None = None  # that of the first chunk
        self._acc: dict[int, dict] = {}

    def update(self, features, labels) -> "StreamingClassStats":
        """Add a chunk: features (N, d), integer labels (N,)."""
        x = _to_tensor(features, "features", 2).detach()
        if self.device is None:
            self.device = x.device
        x = x.to(self.device, torch.float64)
        y = _to_tensor(labels, "labels", 1).detach().to(self.device)
        if x.shape[0] != y.shape[0]:
            raise ValueError(f"features has {x.shape[0]} rows but labels has {y.shape[0]}")
        if y.is_floating_point() and not torch.equal(y, y.round()):
            raise ValueError("labels must be integers")
        if not torch.isfinite(x).all():
            raise ValueError("features contain NaN or inf")
        if self.dim is None:
            self.dim = x.shape[1]
        elif x.shape[1] != self.dim:
            raise ValueError(f"features have {x.shape[1]} columns, earlier chunks had {self.dim}")
        y = y.long()
        order = torch.argsort(y, stable=True)
        ys, xs = y[order], x[order]
        classes, counts = torch.unique_consecutive(ys, return_counts=True)
        for c, xc in zip(classes.tolist(), torch.split(xs, counts.tolist()), strict=True):
            acc = self._acc.get(c)
            if acc is None:
                d = self.dim
                acc = self._acc[c] = dict(
                    shift=xc[0].clone(),
                    n=0,
                    s1=x.new_zeros(d),
                    s2=None,
                    s3=x.new_zeros(d),
                    s4=0.0,
                    fold_sum=x.new_zeros(2, d),
                    fold_n=[0, 0],
                    buffer=[],
                    buffered=0,
                )
            acc["buffer"].append(xc)
            acc["buffered"] += len(xc)
            if acc["buffered"] >= self.flush_rows:
                self._flush(acc)
        return self

    def _flush(self, acc: dict) -> None:
        if not acc["buffered"]:
            return
        z = torch.cat(acc["buffer"]) - acc["shift"]
        acc["buffer"], acc["buffered"] = [], 0
        sq = z.pow(2).sum(1)
        acc["s1"] += z.sum(0)
        zg = z.float() if z.shape[1] > 256 else z  # float32 above d = 256: see the docstring
        if acc["s2"] is None:
            acc["s2"] = zg.T @ zg
        else:
            acc["s2"].addmm_(zg.T, zg)  # in place: no d x d temporary per flush
        acc["s3"] += (sq[:, None] * z).sum(0)
        acc["s4"] += sq.pow(2).sum().item()
        # Alternate samples between the two folds, continuing across flushes.
        parity = (torch.arange(len(z), device=z.device) + acc["n"]) % 2
        for f in (0, 1):
            acc["fold_sum"][f] += z[parity == f].sum(0)
            acc["fold_n"][f] += int((parity == f).sum())
        acc["n"] += len(z)

    def finalize(self, keep_covariances: bool | None = None) -> ClassStats:
        """The statistics of everything seen so far. ``keep_covariances`` (default: when
        C d^2 <= 5e7) also returns the d x d covariances."""
        if not self._acc:
            raise ValueError("no samples were seen")
        for acc in self._acc.values():
            self._flush(acc)
        classes = sorted(self._acc)
        C, d = len(classes), self.dim
        if keep_covariances is None:
            keep_covariances = C * d * d <= 5e7
        dev = self.device
        counts = torch.tensor([self._acc[c]["n"] for c in classes], device=dev)
        shifted_means = torch.stack([self._acc[c]["s1"] / self._acc[c]["n"] for c in classes])
        means = shifted_means + torch.stack([self._acc[c]["shift"] for c in classes])
        centred = means - means.mean(0)  # directional quadratics are shift-invariant; centring
        # the means first avoids cancellation when they sit far from the origin
        total_variance, frob_sq, fourth, quad, covs = [], [], [], [], []
        fold_means = torch.zeros(2, C, d, dtype=torch.float64, device=dev)
        for k, c in enumerate(classes):
            a = self._acc[c]
            n = a["n"]
            m = shifted_means[k]  # mean of y = x - shift
            second = a["s2"].div_(n)  # E[y y^T], in place: the d x d buffers are the memory here
            m_s = m.to(second.dtype)
            e_sq = torch.trace(second).item()
            m_second_m = (m_s @ (second @ m_s)).item()
            # E||y - m||^4 from raw moments of y:
            #   ||y - m||^2 = ||y||^2 - 2 y.m + ||m||^2, squared and averaged.
            mm = (m @ m).item()
            e4 = (
                a["s4"] / n
                - 4 * ((a["s3"] / n) @ m).item()
                + 4 * m_second_m
                + 2 * mm * e_sq
                - 4 * mm * mm
                + mm * mm
            )
            cov = second.addr_(m_s, m_s, alpha=-1.0)  # Sigma = E[y y^T] - m m^T
            a["s2"] = None
            v = e_sq - mm
            total_variance.append(v)
            frob_sq.append(cov.pow(2).sum().item())
            fourth.append(max(e4 - v * v, 0.0))
            cm = centred.to(cov.dtype)
            quad.append((cm @ cov @ cm.T).double())
            if keep_covariances:
                covs.append(cov.double())
            for f in (0, 1):
                fold_means[f, k] = a["fold_sum"][f] / max(a["fold_n"][f], 1) + a["shift"]
        f64 = dict(dtype=torch.float64, device=dev)
        return ClassStats(
            classes=torch.tensor(classes, device=dev),
            counts=counts,
            means=means,
            total_variance=torch.tensor(total_variance, **f64),
            frob_sq=torch.tensor(frob_sq, **f64),
            mean_quadratic=torch.stack(quad),
            fourth=torch.tensor(fourth, **f64),
            fold_means=fold_means,
            covs=torch.stack(covs) if keep_covariances else None,
        )


def class_stats(features, labels=None, *, chunk_size: int = 8192) -> ClassStats:
    """Per-class moments of ``features`` (N, d) with integer ``labels`` (N,), in one pass.

    ``features`` may also be an iterable of ``(features_chunk, labels_chunk)`` pairs (with
    ``labels=None``), e.g. a DataLoader over embeddings, for data that does not fit in memory.
    """
    acc = StreamingClassStats()
    if labels is None:
        if isinstance(features, torch.Tensor | np.ndarray):
            raise ValueError("labels is required when features is an array")
        for xb, yb in features:
            acc.update(xb, yb)
        return acc.finalize()
    x = _to_tensor(features, "features", 2)
    y = _to_tensor(labels, "labels", 1)
    if x.shape[0] == 0:
        raise ValueError("features is empty")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"features has {x.shape[0]} rows but labels has {y.shape[0]}")
    for i in range(0, x.shape[0], chunk_size):
        acc.update(x[i : i + chunk_size], y[i : i + chunk_size])
    return acc.finalize()


def chunks(features, labels, size: int) -> Iterable[tuple[torch.Tensor, torch.Tensor]]:
    """Split arrays into (features, labels) chunks of ``size`` rows (a helper for streaming)."""
    for i in range(0, len(features), size):
        yield features[i : i + size], labels[i : i + size]
