"""Per-class moments of features in O(C^2 + C d) memory, streamed in two passes, mergeable.

Everything the measures and the few-shot bounds need is, per class c: the count n_c, the mean
mu_c, ``tr Sigma_c``, ``tr Sigma_c^2``, ``Theta_c = Var ||x - mu_c||^2``, and per ordered pair
(a, b) the directional quadratic ``Delta_ab^T Sigma_a Delta_ab`` (``Delta_ab = mu_a - mu_b``).
None of them needs a d x d covariance:

- pass 1 sums, per class, the samples (and two folds of alternate samples, for cross-fitting);
- pass 2, with the means fixed, projects each centred sample z = x - mu_a on the C class means,
  ``p = M z``, and adds ``(p_a - p_b)^2 = (z . Delta_ab)^2`` to entry (a, b): an (N, C) product
  per chunk, a (C, C) accumulator. ``||z||^2`` and ``||z||^4`` give tr Sigma and Theta exactly.
- ``tr Sigma^2 = E[(z . z')^2]`` over independent same-class pairs is estimated by the mean of
  ``(z_s . z_t)^2`` over pairs of same-class samples less than ``lags`` apart after a seeded
  shuffle of each chunk (each class also carries its last sample into the next chunk). Each
  pair term has expectation tr Sigma^2 (up to the plug-in mean) when the two samples are
  independent: samples correlated across a whole chunk (e.g. a chunk of augmentations of one
  image) inflate it. It only enters the finite-shot terms of this package's own bound.

All state is a handful of sums (float64), so partial statistics from several processes or data
shards add up: ``merge`` (in process) and ``all_reduce`` (``torch.distributed``, every rank
with the same ``num_classes``) reduce them, after each pass. Memory: 3 C d numbers of sums, and
in pass 2 the means, their centred copy and one carried sample per class (3 C d more) and a
(C, C) matrix; a chunk of k rows adds a (k, C) projection. At C = 1000, d = 2048 that is ~100 MB
(float64) plus ~8 k KB, where per-class covariances would take 34 GB.

The sums live on the device of the first chunk (later chunks are moved there).
"""

from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist


@dataclass(frozen=True)
class ClassStats:
    """Sufficient statistics of C classes in d dimensions for the measures and the bounds.

    Attributes (float64 tensors unless said):
        classes: (C,) int64, the label of each row.
        counts: (C,) samples per class.
        means: (C, d) class means mu_c.
        total_variance: (C,) tr Sigma_c (covariances normalised by n_c).
        frob_sq: (C,) an estimate of tr Sigma_c^2 (see the module docstring).
        directional_quadratic: (C, C) entry [a, b] = ``Delta_ab^T Sigma_a Delta_ab``: the
            variance of class a along its axis to class b, times ``||Delta_ab||^2``.
        fourth: (C,) Theta_c = Var ||x - mu_c||^2.
        fold_means: (2, C, d) class means of the two folds (alternate samples).
    """

    classes: torch.Tensor
    counts: torch.Tensor
    means: torch.Tensor
    total_variance: torch.Tensor
    frob_sq: torch.Tensor
    directional_quadratic: torch.Tensor
    fourth: torch.Tensor
    fold_means: torch.Tensor

    def __post_init__(self):
        # A record users may build from their own moments: shapes that disagree or NaN moments
        # would otherwise come out as NaN measures or an IndexError far from here.
        if not (
            torch.is_tensor(self.means) and self.means.ndim == 2 and self.means.is_floating_point()
        ):
            raise TypeError("ClassStats.means must be a floating (C, d) tensor")
        C, d = self.means.shape
        shapes = {"classes": (C,), "counts": (C,), "total_variance": (C,), "frob_sq": (C,),
                  "fourth": (C,), "directional_quadratic": (C, C),
                  "fold_means": (2, C, d)}  # fmt: skip
        for name, shape in shapes.items():
            got = getattr(self, name)
            if not torch.is_tensor(got) or tuple(got.shape) != shape:
                have = tuple(got.shape) if torch.is_tensor(got) else type(got).__name__
                raise ValueError(f"ClassStats.{name} must have shape {shape} for {C} classes in "
                                 f"{d} dimensions, got {have}")  # fmt: skip
        if bool((self.counts < 1).any()):
            raise ValueError("ClassStats.counts must be >= 1 for every class")
        moments = ("means", "total_variance", "frob_sq", "directional_quadratic", "fourth")
        bad = [n for n in moments if not bool(torch.isfinite(getattr(self, n)).all())]
        if bad:
            raise ValueError(f"ClassStats.{', '.join(bad)} hold NaN or inf")

    @property
    def n_classes(self) -> int:
        return self.means.shape[0]

    @property
    def dim(self) -> int:
        return self.means.shape[1]

    def directional(self) -> torch.Tensor:
        """(C, C) ``Delta_ab^T Sigma_a Delta_ab`` (entry [a, b])."""
        return self.directional_quadratic

    def subset(self, classes) -> "ClassStats":
        """The statistics of some classes only (by label)."""
        labels = self.classes.tolist()
        try:
            idx = torch.tensor([labels.index(int(c)) for c in classes], device=self.means.device)
        except ValueError:
            raise ValueError(f"classes {list(classes)} are not all among {labels}") from None
        return ClassStats(
            self.classes[idx],
            self.counts[idx],
            self.means[idx],
            self.total_variance[idx],
            self.frob_sq[idx],
            self.directional_quadratic[idx][:, idx],
            self.fourth[idx],
            self.fold_means[:, idx],
        )


def _to_tensor(x, name: str, ndim: int) -> torch.Tensor:
    if isinstance(x, np.ndarray):
        if x.dtype == object:
            raise TypeError(f"{name} must be a numeric array, got dtype object")
        x = torch.from_numpy(x)
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a numpy array or torch tensor, got {type(x).__name__}")
    if x.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {tuple(x.shape)}")
    if name == "features":
        check_float_features(x)
    return x


def check_float_features(x: torch.Tensor) -> torch.Tensor:
    """``x`` if floating point, else a TypeError: bool or integer "features" are almost always
    labels or indices passed by mistake (cast with ``.float()`` where they really are features)."""
    if not x.is_floating_point():
        raise TypeError(f"features must be floating point (embeddings), got {x.dtype}; cast "
                        "with .float() if integer values really are the features")  # fmt: skip
    return x


_PASS1 = ("n", "s1", "fold_s", "fold_n")
_PASS2 = ("n2", "s2", "s4", "dq", "pair_s", "pair_n")


class StreamingClassStats:
    """Two-pass, mergeable accumulator of ``ClassStats``.

    ::

        acc = StreamingClassStats(num_classes=C)
        for x, y in loader: acc.update(x, y)   # pass 1: counts, means, folds
        acc.all_reduce()                       # under torch.distributed (optional)
        acc.second_pass()
        for x, y in loader: acc.update(x, y)   # pass 2: spreads around the means
        acc.all_reduce()
        stats = acc.finalize()

    With ``num_classes`` the labels must lie in [0, num_classes) (classes never seen are left
    out of the result); without it any integer labels work and the classes are discovered in
    pass 1 (``all_reduce`` then needs ``num_classes``, so every rank has the same rows). With
    ``num_classes`` and ``dim`` the sums exist before any sample (on ``device``, default the CPU;
    the first chunk moves them to its device), so a rank whose shard is empty can still reduce.
    ``lags`` sets how many earlier same-class samples each sample is paired with for the
    ``tr Sigma^2`` estimate.
    """

    def __init__(
        self,
        num_classes: int | None = None,
        dim: int | None = None,
        lags: int = 16,
        device: str | torch.device | None = None,
    ):
        if num_classes is not None and num_classes < 1:
            raise ValueError(f"num_classes must be >= 1, got {num_classes}")
        if lags < 1:
            raise ValueError(f"lags must be >= 1, got {lags}")
        self.num_classes, self.dim, self.lags = num_classes, dim, lags
        self.device: torch.device | None = None  # that of the first chunk
        self._seen = False
        self.phase = 1
        self._labels: list[int] = list(range(num_classes)) if num_classes else []
        self._row: dict[int, int] = {c: c for c in self._labels}
        self._state: dict[str, torch.Tensor] = {}
        # Pairs for tr Sigma^2 are taken in a seeded random order inside each chunk, so samples
        # that arrive next to a near-copy of themselves (augmentations, sorted data) do not pair.
        self._gen = torch.Generator().manual_seed(0)
        if num_classes is not None and dim is not None:
            # A rank that sees no samples still holds the sums all_reduce needs.
            self.device = torch.device(device or "cpu")
            self._alloc(num_classes, dim)

    # -- bookkeeping -------------------------------------------------------------------------
    def _alloc(self, C: int, d: int) -> None:
        z = dict(dtype=torch.float64, device=self.device)
        self._state = dict(
            n=torch.zeros(C, **z),
            s1=torch.zeros(C, d, **z),
            fold_s=torch.zeros(2, C, d, **z),
            fold_n=torch.zeros(2, C, **z),
        )

    def _grow(self, new: int) -> None:
        s = self._state
        s["n"] = torch.cat([s["n"], s["n"].new_zeros(new)])
        s["s1"] = torch.cat([s["s1"], s["s1"].new_zeros(new, self.dim)])
        s["fold_s"] = torch.cat([s["fold_s"], s["fold_s"].new_zeros(2, new, self.dim)], 1)
        s["fold_n"] = torch.cat([s["fold_n"], s["fold_n"].new_zeros(2, new)], 1)

    def _rows(self, y: torch.Tensor) -> torch.Tensor:
        """Row index of every label, adding unseen labels in pass 1 (without num_classes)."""
        if self.num_classes is not None:
            if (y < 0).any() or (y >= self.num_classes).any():
                bad = int(y[(y < 0) | (y >= self.num_classes)][0])
                raise ValueError(f"label {bad} is outside [0, num_classes={self.num_classes})")
            return y
        uniq, inv = torch.unique(y, return_inverse=True)
        rows = []
        for c in uniq.tolist():
            if c not in self._row:
                if self.phase == 2:
                    raise ValueError(f"label {c} was not seen in the first pass")
                self._row[c] = len(self._labels)
                self._labels.append(c)
                self._grow(1)
            rows.append(self._row[c])
        return torch.tensor(rows, device=y.device)[inv]

    def _check_chunk(self, features, labels) -> tuple[torch.Tensor, torch.Tensor]:
        x = _to_tensor(features, "features", 2).detach()
        if not self._seen:  # the sums follow the first chunk's device
            self._seen = True
            if self.device != x.device:
                self.device = x.device
                self._state = {k: v.to(x.device) for k, v in self._state.items()}
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
        if not self._state:
            self._alloc(len(self._labels), self.dim)
        return x, y.long()

    # -- the two passes ----------------------------------------------------------------------
    def update(self, features, labels) -> "StreamingClassStats":
        """Add a chunk: features (N, d), integer labels (N,), to the current pass."""
        x, y = self._check_chunk(features, labels)
        if len(x) == 0:
            return self
        rows = self._rows(y)
        if self.phase == 1:
            self._update_means(x, rows)
        else:
            self._update_spread(x, rows)
        return self

    def _update_means(self, x: torch.Tensor, rows: torch.Tensor) -> None:
        s, C = self._state, len(self._labels)
        order = torch.argsort(rows, stable=True)
        r, xs = rows[order], x[order]
        # Position of each sample among its class's samples so far: alternate samples go to the
        # two folds, continuing across chunks.
        counts = torch.bincount(r, minlength=C)
        start = torch.cumsum(counts, 0) - counts
        rank = torch.arange(len(r), device=r.device) - start[r]
        fold = ((rank + s["n"][r].long()) % 2).long()
        s["n"] += counts.to(s["n"].dtype)
        s["s1"].index_add_(0, r, xs)
        s["fold_s"].view(2 * C, -1).index_add_(0, fold * C + r, xs)
        s["fold_n"].view(-1).index_add_(0, fold * C + r, torch.ones_like(xs[:, 0]))

    def second_pass(self) -> "StreamingClassStats":
        """Fix the means (from everything pass 1 saw, after any ``all_reduce``) and start pass
        2: feed the same samples again."""
        if self.phase != 1:
            raise ValueError("second_pass() was already called")
        if not self._state or float(self._state["n"].sum()) == 0:
            raise ValueError("no samples were seen in the first pass")
        s = self._state
        n = s["n"].clamp_min(1)[:, None]
        self._means = s["s1"] / n
        # Projections on the centred means: the quadratics are shift-invariant and centring
        # avoids cancellation when the means sit far from the origin.
        self._proj = self._means - self._means.mean(0)
        C, z = len(self._labels), dict(dtype=torch.float64, device=self.device)
        s.update(
            n2=torch.zeros(C, **z),
            s2=torch.zeros(C, **z),
            s4=torch.zeros(C, **z),
            dq=torch.zeros(C, C, **z),
            pair_s=torch.zeros(C, **z),
            pair_n=torch.zeros(C, **z),
        )
        self._carry = torch.zeros(C, self.dim, **z)
        self._has_carry = torch.zeros(C, dtype=torch.bool, device=self.device)
        self.phase = 2
        return self

    def _update_spread(self, x: torch.Tensor, rows: torch.Tensor) -> None:
        s = self._state
        z = x - self._means[rows]
        sq = z.pow(2).sum(1)
        s["n2"].index_add_(0, rows, torch.ones_like(sq))
        s["s2"].index_add_(0, rows, sq)
        s["s4"].index_add_(0, rows, sq.pow(2))
        p = z @ self._proj.T  # (k, C): z . (mu_b - mean of means)
        own = p.gather(1, rows[:, None])  # z . (mu_a - mean of means)
        s["dq"].index_add_(0, rows, (own - p).pow(2))  # (z . Delta_ab)^2
        # tr Sigma^2: pairs of same-class samples within `lags` of each other, the carried
        # sample of each class first in its group.
        carried = self._has_carry.nonzero().squeeze(1)
        carried = carried[torch.isin(carried, rows)]
        shuffle = torch.randperm(len(z), generator=self._gen).to(z.device)
        zz = torch.cat([self._carry[carried], z[shuffle]])
        rr = torch.cat([carried, rows[shuffle]])
        order = torch.argsort(rr, stable=True)
        zz, rr = zz[order], rr[order]
        for lag in range(1, min(self.lags, len(rr) - 1) + 1):
            same = rr[lag:] == rr[:-lag]
            if not same.any():
                continue
            # Row-wise dot products as one batched matmul: no (k, d) temporary, no masked copy.
            dots = torch.einsum("id,id->i", zz[lag:], zz[:-lag])[same]
            s["pair_s"].index_add_(0, rr[lag:][same], dots.pow(2))
            s["pair_n"].index_add_(0, rr[lag:][same], torch.ones_like(dots))
        ends = torch.ones_like(rr, dtype=torch.bool)
        ends[:-1] = rr[1:] != rr[:-1]  # the last sample of each class group
        self._carry[rr[ends]] = zz[ends]
        self._has_carry[rr[ends]] = True

    # -- reduction ---------------------------------------------------------------------------
    def _current(self) -> tuple[str, ...]:
        return _PASS1 if self.phase == 1 else _PASS2

    def merge(self, other: "StreamingClassStats") -> "StreamingClassStats":
        """Add another accumulator's sums of the current pass (same classes, same phase)."""
        if other.phase != self.phase or other._labels != self._labels or other.dim != self.dim:
            raise ValueError(
                "merge needs accumulators in the same pass with the same classes and dimension"
            )
        if self.phase == 2 and not torch.equal(self._means, other._means.to(self.device)):
            raise ValueError(
                "merge: the second passes are centred on different means; reduce the first "
                "passes first (merge or all_reduce) and load_first_pass() the result everywhere"
            )
        for k in self._current():
            self._state[k] += other._state[k].to(self.device)
        return self

    def load_first_pass(self, other: "StreamingClassStats") -> "StreamingClassStats":
        """Replace this accumulator's first-pass sums by ``other``'s (e.g. the merge of every
        shard), so all shards centre their second pass on the same means."""
        if self.phase != 1 or other.phase != 1:
            raise ValueError("load_first_pass: both accumulators must still be in the first pass")
        if other._labels != self._labels or other.dim != self.dim:
            raise ValueError("load_first_pass needs the same classes and dimension")
        self._state = {k: other._state[k].clone().to(self.device) for k in _PASS1}
        return self

    def all_reduce(self, group=None) -> "StreamingClassStats":
        """Sum the current pass's statistics over the ranks of ``torch.distributed``
        (a no-op when no process group is initialised)."""
        if not (dist.is_available() and dist.is_initialized()):
            return self
        if self.num_classes is None:
            raise ValueError("all_reduce needs num_classes, so every rank holds the same rows")
        if not self._state:
            raise ValueError("dim is unknown on a rank that saw no samples: pass dim=")
        for k in self._current():
            dist.all_reduce(self._state[k], group=group)
        return self

    def finalize(self) -> ClassStats:
        """The statistics (after pass 2)."""
        if self.phase != 2:
            raise ValueError("call second_pass() and feed the samples again before finalize()")
        s = self._state
        if not torch.equal(s["n"], s["n2"]):
            k = int((s["n"] != s["n2"]).nonzero()[0, 0])
            raise ValueError(
                f"class {self._labels[k]}: {int(s['n'][k])} samples in the first pass, "
                f"{int(s['n2'][k])} in the second; feed the same samples to both passes"
            )
        present = (s["n"] > 0).nonzero().squeeze(1)
        labels = torch.tensor(self._labels, device=self.device)[present]
        order = torch.argsort(labels)
        idx = present[order]
        n = s["n"][idx]
        v = s["s2"][idx] / n
        fourth = (s["s4"][idx] / n - v.pow(2)).clamp_min(0.0)
        pair_n = s["pair_n"][idx]
        frob = torch.where(pair_n > 0, s["pair_s"][idx] / pair_n.clamp_min(1), v.pow(2))
        fold_n = s["fold_n"][:, idx].clamp_min(1)[..., None]
        return ClassStats(
            classes=labels[order],
            counts=n.long(),
            means=self._means[idx],
            total_variance=v,
            frob_sq=frob,
            directional_quadratic=s["dq"][idx][:, idx] / n[:, None],
            fourth=fourth,
            fold_means=s["fold_s"][:, idx] / fold_n,
        )


def class_stats(features, labels=None, *, chunk_size: int = 8192, lags: int = 16) -> ClassStats:
    """Per-class moments of ``features`` (N, d) with integer ``labels`` (N,), in two passes.

    ``features`` may also be a re-iterable of ``(features_chunk, labels_chunk)`` pairs (with
    ``labels=None``), e.g. a DataLoader over embeddings that does not fit in memory; it is
    iterated twice.
    """
    acc = StreamingClassStats(lags=lags)
    if labels is None:
        if isinstance(features, torch.Tensor | np.ndarray):
            raise ValueError("labels is required when features is an array")
        if iter(features) is features:
            raise ValueError(
                "features must be re-iterable (a list or DataLoader of chunks, not a generator): "
                "the statistics take two passes"
            )
        for xb, yb in features:
            acc.update(xb, yb)
        acc.second_pass()
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
    acc.second_pass()
    for i in range(0, x.shape[0], chunk_size):
        acc.update(x[i : i + chunk_size], y[i : i + chunk_size])
    return acc.finalize()


def chunks(features, labels, size: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Split arrays into (features, labels) chunks of ``size`` rows (a helper for streaming)."""
    return [(features[i : i + size], labels[i : i + size]) for i in range(0, len(features), size)]


def exact_class_stats(features, labels) -> ClassStats:
    """The same statistics through each class's d x d covariance, one class at a time: exact
    ``tr Sigma^2``, O(d^2 + C^2 + C d) memory, O(N d^2 + C^2 d^2) time, all samples in memory.
    The reference the tests compare against."""
    x = _to_tensor(features, "features", 2).detach().double()
    y = _to_tensor(labels, "labels", 1).detach().to(x.device).long()
    if len(y) != len(x):
        raise ValueError(f"labels ({len(y)}) and features ({len(x)}) differ in length")
    classes = torch.unique(y)
    means = torch.stack([x[y == c].mean(0) for c in classes])
    centred = means - means.mean(0)
    tv, frob, fourth, dq, counts, folds = [], [], [], [], [], []
    for k, c in enumerate(classes):
        xc = x[y == c]
        z = xc - means[k]
        cov = z.T @ z / len(z)
        tv.append(torch.trace(cov))
        frob.append(cov.pow(2).sum())
        sq = z.pow(2).sum(1)
        fourth.append(sq.var(correction=0))
        delta = centred[k] - centred  # (C, d): Delta_kb
        dq.append(((delta @ cov) * delta).sum(1))
        counts.append(float(len(z)))
        folds.append(torch.stack([xc[0::2].mean(0), xc[1::2].mean(0) if len(xc) > 1 else xc[0]]))
    return ClassStats(
        classes=classes,
        counts=torch.tensor(counts, device=x.device).long(),
        means=means,
        total_variance=torch.stack(tv),
        frob_sq=torch.stack(frob),
        directional_quadratic=torch.stack(dq),
        fourth=torch.stack(fourth),
        fold_means=torch.stack(folds, 1),
    )
