from itertools import pairwise

import pytest
import torch

from icml26.entquant.baselines import BASELINES, hqq, rtn


def test_rtn_error_falls_with_bits_and_counts_scales_and_zeros():
    w = torch.randn(16, 128)
    errs = [float((rtn(w, b).w_hat - w).norm()) for b in (2, 3, 4, 8)]
    assert all(a > b for a, b in pairwise(errs))
    assert rtn(w, 3).bits_per_param == 3 + 32 / 64
    assert rtn(w, 4, group_size=128).bits_per_param == 4.25
    # a group's max is reproduced within one grid step (the zero point is an integer code)
    g, ref = rtn(w, 8).w_hat.reshape(-1, 64), w.reshape(-1, 64)
    step = (ref.amax(1) - ref.amin(1)) / 255
    assert ((g.amax(1) - ref.amax(1)).abs() <= step * 1.01).all()


def test_hqq_beats_or_matches_rtn_at_three_bits():
    w = torch.distributions.StudentT(4.0).sample((32, 256))
    assert float((hqq(w, 3).w_hat - w).abs().mean()) <= 1.02 * float(
        (rtn(w, 3).w_hat - w).abs().mean()
    )


def test_every_baseline_returns_the_shape_and_a_rate():
    w = torch.randn(8, 128)
    for name in ("RTN-2", "HQQ-2"):
        res = BASELINES[name](w)
        assert res.w_hat.shape == w.shape and 2 < res.bits_per_param < 3


def test_groups_must_divide_the_matrix():
    with pytest.raises(ValueError, match="groups of 64"):
        rtn(torch.randn(3, 7), 4)
