"""Context and target columns: disjoint, of the sizes they claim, different per row."""

import pytest
import torch

from icml26.varjepa import sample_masks


@pytest.mark.parametrize("n_features", [2, 3, 13, 64])
def test_masks_are_disjoint_and_sized(n_features):
    g = torch.Generator().manual_seed(n_features)
    for _ in range(20):
        m = sample_masks(32, n_features, g, context_share=(0.2, 0.6), target_share=(0.2, 0.4))
        n_c, n_t = m.context.shape[1], m.target.shape[1]
        assert m.context.shape[0] == m.target.shape[0] == 32
        assert n_c >= 1 and n_t >= 1 and n_c + n_t <= n_features
        if n_features >= 13:  # the shares hold once rounding allows them to
            assert round(0.2 * n_features) <= n_c <= round(0.6 * n_features)
            assert round(0.2 * n_features) <= n_t <= round(0.4 * n_features)
        for c, t in zip(m.context.tolist(), m.target.tolist(), strict=True):
            assert len(set(c)) == n_c and len(set(t)) == n_t  # no repeats
            assert not set(c) & set(t)
            assert all(0 <= j < n_features for j in c + t)
            assert c == sorted(c) and t == sorted(t)


def test_masks_differ_per_row_and_cover_every_column():
    m = sample_masks(500, 10, torch.Generator().manual_seed(0))
    assert len({tuple(r) for r in m.target.tolist()}) > 20
    seen_c, seen_t = (
        torch.bincount(m.context.flatten(), minlength=10),
        torch.bincount(m.target.flatten(), minlength=10),
    )
    assert (seen_c > 0).all() and (seen_t > 0).all()
    # every column is equally likely to be a target (up to sampling noise)
    share = seen_t.float() / seen_t.sum()
    assert (share - 0.1).abs().max() < 0.03


def test_masks_are_reproducible_from_the_generator():
    a = sample_masks(8, 12, torch.Generator().manual_seed(3))
    b = sample_masks(8, 12, torch.Generator().manual_seed(3))
    assert torch.equal(a.context, b.context) and torch.equal(a.target, b.target)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_features": 1}, "at least 2 features"),
        ({"batch": 0}, "batch"),
        ({"context_share": (0.5, 0.2)}, "context_share"),
        ({"target_share": (0.0, 0.3)}, "target_share"),
        ({"target_share": (0.3, 1.0)}, "target_share"),
    ],
)
def test_bad_mask_settings_are_clear_errors(kwargs, match):
    args = {"batch": 4, "n_features": 6, "generator": torch.Generator()} | kwargs
    with pytest.raises(ValueError, match=match):
        sample_masks(**args)
