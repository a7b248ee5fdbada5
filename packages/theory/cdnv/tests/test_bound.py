import pytest
import torch

from icml26.cdnv import class_stats, fewshot_bound, ncc_fewshot_error, pairwise_bound


def classes(C=5, d=10, n=600, spread=1.2, seed=0, heavy=False):
    g = torch.Generator().manual_seed(seed)
    means = spread * torch.randn(C, d, generator=g, dtype=torch.float64)
    scales = torch.linspace(0.3, 1.2, d, dtype=torch.float64)
    noise = torch.randn(C * n, d, generator=g, dtype=torch.float64)
    if heavy:  # Student-t(5) noise: a real fourth-moment term
        chi = torch.distributions.Chi2(torch.tensor(5.0)).sample((C * n, 1)).double()
        noise = noise / (chi / 5).sqrt()
    x = means.repeat_interleave(n, 0) + scales * noise
    return x, torch.arange(C).repeat_interleave(n)


@pytest.mark.parametrize("heavy", [False, True])
@pytest.mark.parametrize("spread", [2.0, 3.0])
def test_both_bounds_are_above_the_empirical_error_for_every_m(heavy, spread):
    x, y = classes(spread=spread, heavy=heavy)
    st = class_stats(x, y)
    shots = [1, 2, 5, 10, 20]
    for ways in (2, 5):
        errs = ncc_fewshot_error(x, y, shots, episodes=60, ways=ways, queries=50)
        for variant in ("ours", "authors"):
            bounds = fewshot_bound(st, shots, ways=ways, variant=variant)
            for m, e, b in zip(shots, errs, bounds, strict=True):
                assert b >= e, f"{variant}, {ways}-way, m={m}: bound {b:.4f} < error {e:.4f}"
            if variant == "ours":
                # below 1 here, so the comparison is not won by the clamp
                assert max(bounds) < 1.0, f"{ways}-way bound {max(bounds):.3f} is vacuous"
            else:
                # theirs is unclamped and above 1 at small m; at m = 20 it is below 1 in every
                # case here, so those comparisons can fail
                assert bounds[-1] < 1.0, f"authors' {ways}-way bound vacuous at m = 20"


def test_authors_variant_is_their_published_formula():
    """Pair (0, 1) recomputed from the samples with the authors' per-pair metrics."""
    x, y = classes(C=2, spread=2.0, heavy=True)
    st = class_stats(x, y)
    m = 5
    xs = [x[y == c] for c in (0, 1)]
    mu = [a.mean(0) for a in xs]
    cov = [torch.cov(a.T, correction=0) for a in xs]
    v = [torch.trace(c) for c in cov]
    m4 = [(a - b).norm(dim=1).pow(4).mean() for a, b in zip(xs, mu, strict=True)]
    delta = mu[1] - mu[0]
    d2 = delta @ delta
    u = delta / d2.sqrt()
    V = (v[0] + v[1]) / d2
    v_tilde = u @ cov[0] @ u / d2
    theta = (m4[0] + m4[1]) / d2**2
    a_t, a_s = 4 / m * (V**2 + V / 4), V / m
    a_q = (theta + 2 * (m - 1) * V**2) / m**3
    want = (4 * v_tilde + (a_t.sqrt() + a_s.sqrt() + a_q.sqrt()) ** 2) / (
        1 + (v[1] - v[0]) / (m * d2)
    ) ** 2
    got = pairwise_bound(st, m, variant="authors")
    assert got[0, 1].item() == pytest.approx(want.item(), rel=1e-6)
    assert got[0, 0] == 0
    # unclamped, summed over competitors, averaged over classes
    assert fewshot_bound(st, m, variant="authors") == pytest.approx(got.sum(1).mean().item())
    with pytest.raises(ValueError, match="variant"):
        pairwise_bound(st, m, variant="paper")


def test_bound_decreases_with_shots_to_the_directional_limit():
    x, y = classes(spread=3.0)
    st = class_stats(x, y)
    b = fewshot_bound(st, [1, 5, 50, 5000], ways=2)
    assert b[0] > b[1] > b[2] > b[3]
    # As m grows, each pair tends to 4 u^T Sigma_i u / d2 / (1 + that) (Cantelli, leading term).
    P = pairwise_bound(st, 10**8)
    d2 = (st.means[0] - st.means[1]).pow(2).sum()
    lead = 4 * st.directional()[0, 1] / d2**2
    assert P[0, 1].item() == pytest.approx((lead / (1 + lead)).item(), rel=1e-4)


def test_far_apart_classes_have_a_small_bound_above_the_error():
    # Far-apart classes: the bound is small, and the error smaller still.
    x, y = classes(C=2, spread=6.0)
    st = class_stats(x, y)
    assert fewshot_bound(st, 5) < 0.05
    assert ncc_fewshot_error(x, y, 5, episodes=50) <= fewshot_bound(st, 5)


def test_ncc_error_on_separable_and_inseparable_data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(400, 2, generator=g)
    y = torch.arange(2).repeat_interleave(200)
    assert ncc_fewshot_error(x + 100 * y[:, None], y, 3, episodes=20) == 0.0
    chance = ncc_fewshot_error(x, y, 5, episodes=200)
    assert 0.4 < chance < 0.6


def test_bad_arguments():
    x, y = classes(C=3, n=10)
    with pytest.raises(ValueError, match="shots"):
        ncc_fewshot_error(x, y, 0)
    with pytest.raises(ValueError, match="class 0 has 10 samples"):
        ncc_fewshot_error(x, y, 10)
    with pytest.raises(ValueError, match="ways"):
        ncc_fewshot_error(x, y, 2, ways=5)
    with pytest.raises(ValueError, match="shots"):
        fewshot_bound(class_stats(x, y), 0)
    with pytest.raises(ValueError, match="ways"):
        fewshot_bound(class_stats(x, y), 2, ways=1)


def test_the_pair_variance_in_our_bound_covers_a_monte_carlo_variance():
    """Simulate Z = ||x - mu^_j||^2 - ||x - mu^_i||^2 (query of class i, m-shot centroids): its
    mean is the bound's exact mean and its variance is at most the bound's (Minkowski-combined)
    variance, and not far below it. A wrong variance term fails one side or the other."""
    g = torch.Generator().manual_seed(3)
    d, m, n = 6, 3, 200_000
    scales = [torch.linspace(0.4, 1.4, d, dtype=torch.float64), torch.full((d,), 0.8).double()]
    mu = [torch.zeros(d, dtype=torch.float64), 1.5 * torch.ones(d, dtype=torch.float64)]
    x = torch.cat([mu[c] + scales[c] * torch.randn(n, d, generator=g).double() for c in (0, 1)])
    st = class_stats(x, torch.arange(2).repeat_interleave(n))  # ~population moments
    d2 = (st.means[0] - st.means[1]).pow(2).sum()
    v = st.total_variance
    mean = 1 + (v[1] - v[0]) / (m * d2)  # E Z / ||Delta||^2
    b = pairwise_bound(st, m)[0, 1]
    spread = b * mean**2 / (1 - b)  # invert Cantelli: b = s / (s + mean^2)
    T = 200_000
    q = mu[0] + scales[0] * torch.randn(T, d, generator=g).double()
    c0 = mu[0] + scales[0] * torch.randn(T, m, d, generator=g).double().mean(1)
    c1 = mu[1] + scales[1] * torch.randn(T, m, d, generator=g).double().mean(1)
    z = ((q - c1).pow(2).sum(1) - (q - c0).pow(2).sum(1)) / d2
    assert z.mean().item() == pytest.approx(mean.item(), abs=4 * z.std().item() / T**0.5)
    var = z.var().item()
    assert var <= spread.item() * 1.02  # an upper bound (up to Monte Carlo noise)
    assert var >= spread.item() / 3  # and not a vacuous one
