import math

import numpy as np
import pytest
import torch

from icml26.cdnv import (
    StreamingClassStats,
    cdnv,
    class_stats,
    decision_axis_cosines,
    directional_cdnv,
)
from icml26.cdnv.stats import exact_class_stats
from icml26.testing import assert_close


def gaussian_classes(C=4, d=12, n=3000, spread=3.0, scales=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    means = spread * torch.randn(C, d, generator=g, dtype=torch.float64)
    scales = torch.ones(d, dtype=torch.float64) if scales is None else scales
    x = torch.cat(
        [means[c] + scales * torch.randn(n, d, generator=g, dtype=torch.float64) for c in range(C)]
    )
    return x, torch.arange(C).repeat_interleave(n), means


def test_isotropic_classes_have_directional_cdnv_v_over_d():
    d = 16
    x, y, _ = gaussian_classes(d=d, n=20000)
    st = class_stats(x, y)
    V, Vt = cdnv(st), directional_cdnv(st)
    assert_close(Vt.matrix, V.matrix / d, atol=0, rtol=0.05)
    assert Vt.mean == pytest.approx(V.mean / d, rel=0.03)


def test_anisotropic_classes_match_the_population_values():
    d = 6
    scales = torch.linspace(0.2, 2.0, d, dtype=torch.float64)
    x, y, means = gaussian_classes(C=3, d=d, n=40000, scales=scales)
    st = class_stats(x, y)
    Sigma = torch.diag(scales**2)
    for i, j in [(0, 1), (1, 2), (0, 2)]:
        delta = means[i] - means[j]
        d2 = delta @ delta
        u = delta / d2.sqrt()
        assert cdnv(st).matrix[i, j].item() == pytest.approx(
            (2 * Sigma.trace() / d2).item(), rel=0.03
        )
        expected = (2 * u @ Sigma @ u / d2).item()
        assert directional_cdnv(st).matrix[i, j].item() == pytest.approx(expected, rel=0.03)


def test_mean_convention_halves():
    x, y, _ = gaussian_classes()
    st = class_stats(x, y)
    assert cdnv(st, "mean").mean == pytest.approx(cdnv(st).mean / 2)
    assert directional_cdnv(st, "mean").mean == pytest.approx(directional_cdnv(st).mean / 2)
    with pytest.raises(ValueError, match="convention"):
        cdnv(st, "half")


def test_invariant_to_global_scale_and_rotation():
    x, y, _ = gaussian_classes(C=3, d=8, scales=torch.linspace(0.5, 1.5, 8, dtype=torch.float64))
    Q, _ = torch.linalg.qr(torch.randn(8, 8, dtype=torch.float64))
    base = class_stats(x, y)
    moved = class_stats(7.5 * x @ Q + 3.0, y)
    for f in (cdnv, directional_cdnv):
        assert_close(f(moved).matrix, f(base).matrix, atol=1e-10, rtol=1e-8)


def test_streaming_equals_exact_and_accepts_numpy_chunks():
    x, y, _ = gaussian_classes(C=5, d=10, n=700, scales=torch.linspace(0.3, 2.0, 10).double())
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    x, y = x[perm], y[perm]
    exact = exact_class_stats(x, y)
    acc = StreamingClassStats()
    for i in range(0, len(x), 333):
        acc.update(x[i : i + 333].numpy(), y[i : i + 333].numpy())
    acc.second_pass()
    for i in range(0, len(x), 500):  # the second pass may chunk differently
        acc.update(x[i : i + 500], y[i : i + 500])
    stream = acc.finalize()
    for field in ("means", "total_variance", "directional_quadratic", "fourth", "fold_means"):
        assert_close(
            getattr(stream, field), getattr(exact, field), atol=1e-9, rtol=1e-9, name=field
        )
    covs = torch.stack([torch.cov(x[y == c].T, correction=0) for c in range(5)])
    assert_close(exact.frob_sq, covs.pow(2).sum((1, 2)), atol=0, rtol=1e-10)
    delta = exact.means[0] - exact.means[3]
    assert_close(exact.directional_quadratic[0, 3], delta @ covs[0] @ delta, atol=0, rtol=1e-10)
    # tr Sigma^2 is estimated from same-class pairs: unbiased, a few per cent at n = 700
    assert_close(stream.frob_sq, exact.frob_sq, atol=0, rtol=0.1)
    centred = [x[y == c] - x[y == c].mean(0) for c in range(5)]
    fourth = torch.stack([z.pow(2).sum(1).var(correction=0) for z in centred])
    assert_close(stream.fourth, fourth, atol=1e-8, rtol=1e-8)
    # A list of chunks works too; a generator cannot be read twice.
    from icml26.cdnv.stats import chunks

    assert_close(class_stats(chunks(x, y, 100)).means, exact.means)
    with pytest.raises(ValueError, match="re-iterable"):
        class_stats(iter(chunks(x, y, 100)))


def test_partial_statistics_merge_to_the_whole():
    x, y, _ = gaussian_classes(C=4, d=8, n=300)
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(1))
    x, y = x[perm], y[perm]
    shards = [(x[r::3], y[r::3]) for r in range(3)]  # three "ranks"
    accs = [StreamingClassStats(num_classes=4).update(*s) for s in shards]
    for a in accs[1:]:
        accs[0].merge(a)
    for a in accs[1:]:  # every shard gets the reduced pass-1 sums, as all_reduce would give
        a.load_first_pass(accs[0])
    for a, s in zip(accs, shards, strict=True):
        a.second_pass().update(*s)
    for a in accs[1:]:
        accs[0].merge(a)
    merged, whole = accs[0].finalize(), class_stats(x, y)
    for field in ("counts", "means", "total_variance", "directional_quadratic", "fourth"):
        assert_close(getattr(merged, field), getattr(whole, field), atol=1e-9, rtol=1e-9)
    assert_close(merged.frob_sq, exact_class_stats(x, y).frob_sq, atol=0, rtol=0.15)
    for f in (cdnv, directional_cdnv):
        assert f(merged).mean == pytest.approx(f(whole).mean, rel=1e-9)
    # Second passes centred on different means cannot be added.
    a = StreamingClassStats(num_classes=4).update(*shards[0]).second_pass()
    b = StreamingClassStats(num_classes=4).update(*shards[1]).second_pass()
    with pytest.raises(ValueError, match="different means"):
        a.merge(b)


def test_passes_must_see_the_same_samples():
    x, y, _ = gaussian_classes(C=3, d=4, n=50)
    acc = StreamingClassStats().update(x, y).second_pass().update(x[:-10], y[:-10])
    with pytest.raises(ValueError, match="feed the same samples to both passes"):
        acc.finalize()
    with pytest.raises(ValueError, match="second_pass"):
        StreamingClassStats().update(x, y).finalize()
    with pytest.raises(ValueError, match="not seen in the first pass"):
        StreamingClassStats().update(x, y).second_pass().update(x[:2], torch.tensor([7, 7]))
    with pytest.raises(ValueError, match="outside"):
        StreamingClassStats(num_classes=2).update(x, y)


def test_cross_fitting_removes_the_distance_inflation():
    # Few samples, large variance: plug-in ||Delta||^2 is inflated by ~ tr Sigma (2/n), so the
    # plug-in V is biased low; cross-fitting is unbiased for ||Delta||^2.
    d, n, reps = 50, 20, 200
    plug, cross, truth = [], [], []
    for r in range(reps):
        x, y, means = gaussian_classes(C=2, d=d, n=n, spread=0.3, seed=r)
        st = class_stats(x, y)
        d2 = (means[0] - means[1]).pow(2).sum().item()
        truth.append(2 * d / d2)
        plug.append(1 / cdnv(st).matrix[0, 1].item())
        try:
            cross.append(1 / cdnv(st, cross_fit=True).matrix[0, 1].item())
        except ValueError:
            cross.append(0.0)  # a non-positive cross-fitted distance: counts as 1/V = 0
    inv_truth = np.mean([1 / t for t in truth])
    assert np.mean(plug) > 1.5 * inv_truth  # inflated
    assert np.mean(cross) == pytest.approx(inv_truth, rel=0.25)


def test_identical_means_are_a_clear_error():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(200, 3, generator=g, dtype=torch.float64)
    x = torch.cat([x, x])  # class 1 is an exact copy of class 0: identical means
    y = torch.arange(2).repeat_interleave(200)
    st = class_stats(x, y)
    for f in (cdnv, directional_cdnv):
        with pytest.raises(ValueError, match="classes 0 and 1: identical means"):
            f(st)


def test_single_sample_class_is_rejected():
    x = torch.randn(7, 3, dtype=torch.float64)
    y = torch.tensor([0, 0, 0, 1, 1, 1, 2])
    with pytest.raises(ValueError, match="class 2 has a single sample"):
        cdnv(class_stats(x, y))


@pytest.mark.parametrize(
    "features,labels,match",
    [
        (torch.randn(5, 3), torch.zeros(4), "rows"),
        (torch.randn(5), torch.zeros(5), "dimension"),
        (torch.full((4, 2), math.nan), torch.zeros(4), "NaN"),
        (torch.randn(4, 2), torch.tensor([0.5, 1, 1, 0]), "integers"),
        (torch.empty(0, 3), torch.empty(0), "empty"),
    ],
)
def test_bad_input(features, labels, match):
    with pytest.raises(ValueError, match=match):
        class_stats(features, labels)


def test_decision_axis_cosines():
    g = torch.Generator().manual_seed(0)
    z = torch.randint(0, 2, (5000, 3), generator=g)
    x = torch.cat([z.double() * 2 - 1, torch.zeros(5000, 2)], 1) + 0.1 * torch.randn(
        5000, 5, generator=g
    )
    C = decision_axis_cosines(x, z)
    assert_close(torch.diagonal(C), torch.ones(3, dtype=torch.float64))
    assert C[~torch.eye(3, dtype=bool)].max() < 0.1  # axis-aligned tasks: orthogonal axes
    mixed = x[:, :1] + x[:, 1:2]
    assert decision_axis_cosines(mixed, z[:, :2])[0, 1] > 0.99  # one axis for both: |cos| = 1
    with pytest.raises(ValueError, match="exactly 2 classes"):
        decision_axis_cosines(x, torch.zeros(5000, 1))


def test_collapse_ratio_is_one_for_isotropic_classes_and_the_metric_reports_it():
    from icml26.cdnv import CDNVMetric, collapse_ratio

    x, y, _ = gaussian_classes(C=4, d=16, n=5000)
    st = class_stats(x, y)
    assert collapse_ratio(st) == pytest.approx(1.0, abs=0.05)
    assert collapse_ratio(st, "mean") == pytest.approx(collapse_ratio(st))
    # Means that differ in 4 of 16 coordinates, classes narrow in exactly those: collapse.
    g = torch.Generator().manual_seed(1)
    means = torch.zeros(4, 16, dtype=torch.float64)
    means[:, :4] = 3 * torch.randn(4, 4, generator=g, dtype=torch.float64)
    scales = torch.ones(16, dtype=torch.float64)
    scales[:4] = 0.05
    ys = torch.arange(4).repeat_interleave(3000)
    xs = means[ys] + scales * torch.randn(len(ys), 16, generator=g, dtype=torch.float64)
    st_s = class_stats(xs, ys)
    assert collapse_ratio(st_s) < 0.01
    metric = CDNVMetric(num_classes=4, shots=(1, 5))
    with pytest.raises(ValueError, match="second_pass"):
        metric.compute()
    values = metric.measure([(xs[i : i + 999], ys[i : i + 999]) for i in range(0, len(xs), 999)])
    assert values["V~ d / V"] == pytest.approx(collapse_ratio(st_s), rel=1e-9)
    assert set(values) >= {
        "V",
        "V~",
        "V~ (cross-fit)",
        "1-shot bound (ours)",
        "5-shot bound (authors)",
    }
    with pytest.raises(ValueError, match="num_classes"):
        CDNVMetric(1)


def _balanced_design(K=3, reps=400, d=6, noise=0.3, seed=0):
    """Every cell of K binary labelings equally often (exactly balanced and independent)."""
    g = torch.Generator().manual_seed(seed)
    cells = torch.cartesian_prod(*[torch.tensor([0, 1])] * K).repeat(reps, 1)  # (2^K reps, K)
    axes = torch.randn(K, d, generator=g, dtype=torch.float64)
    x = (cells.double() * 2 - 1) @ axes / 2
    return x + noise * torch.randn(x.shape, generator=g, dtype=torch.float64), cells, axes


def test_axis_cosine_bound_holds_on_a_balanced_design_and_is_tight_without_noise():
    from icml26.cdnv import axis_cosine_bound

    for seed in range(3):
        x, z, _ = _balanced_design(seed=seed)
        cos, bound = decision_axis_cosines(x, z), axis_cosine_bound(x, z)
        off = ~torch.eye(3, dtype=torch.bool)
        assert (cos[off] <= bound[off] + 1e-12).all()
        assert (bound[off] < 1).all()  # informative, not capped
    # No noise: each class varies only along the other tasks' axes; with 2 tasks the bound
    # is attained.
    x, z, _ = _balanced_design(K=2, noise=0.0)
    assert_close(axis_cosine_bound(x, z)[0, 1], decision_axis_cosines(x, z)[0, 1], atol=1e-12)
    # Unequal cells (t is 30/70 inside each class of s): the bound on the decision axes'
    # cosine holds up to the imbalance's sampling noise.
    g = torch.Generator().manual_seed(5)
    z = torch.stack([torch.rand(20000, generator=g) < p for p in (0.5, 0.3, 0.6)], 1).long()
    axes = torch.randn(3, 6, generator=g, dtype=torch.float64)
    x = (z.double() * 2 - 1) @ axes / 2 + 0.3 * torch.randn(20000, 6, generator=g).double()
    cos, bound = decision_axis_cosines(x, z), axis_cosine_bound(x, z)
    assert (cos[off] <= bound[off] + 0.01).all()
    # Nearly orthogonal axes with narrow classes: a bound well below 1.
    x, z, _ = _balanced_design(K=2, d=40, noise=0.05)
    assert axis_cosine_bound(x, z)[0, 1] < 0.6


def test_effective_collapse_ratio_is_one_for_classes_spread_over_a_subspace():
    from icml26.cdnv import collapse_ratio, effective_collapse_ratio, effective_dim

    # Isotropic classes in 8 of 64 coordinates: the nominal ratio reads 8x too high.
    g = torch.Generator().manual_seed(2)
    ys = torch.arange(4).repeat_interleave(3000)
    means = torch.zeros(4, 64, dtype=torch.float64)
    means[:, :8] = 3 * torch.randn(4, 8, generator=g, dtype=torch.float64)
    scales = torch.zeros(64, dtype=torch.float64)
    scales[:8] = 1.0
    x = means[ys] + scales * torch.randn(len(ys), 64, generator=g, dtype=torch.float64)
    st = class_stats(x, ys)
    assert effective_dim(st) == pytest.approx(8.0, rel=0.05)
    assert effective_collapse_ratio(st) == pytest.approx(1.0, abs=0.1)
    assert collapse_ratio(st) == pytest.approx(8.0, rel=0.1)
    # The same classes made narrow along the 3-d span of their mean differences: collapse.
    q, _ = torch.linalg.qr((means[1:] - means[0])[:, :8].T)  # (8, 3) orthonormal
    narrow = torch.eye(8, dtype=torch.float64) - 0.95 * q @ q.T
    x[:, :8] = means[ys][:, :8] + (x[:, :8] - means[ys][:, :8]) @ narrow
    assert effective_collapse_ratio(class_stats(x, ys)) < 0.2
