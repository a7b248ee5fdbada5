import pytest
import torch

from icml26.cdnv.baselines import raw_pixels, untrained_features, whiten


def test_whitened_rows_have_identity_covariance():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(500, 4, generator=g, dtype=torch.float64) @ torch.tensor(
        [[3.0, 1, 0, 0], [0, 1, 0, 0], [0, 0, 0.2, 0], [1, 0, 0, 2]], dtype=torch.float64
    )
    w = whiten(x)
    cov = w.T @ w / len(w)
    assert torch.allclose(cov, torch.eye(4, dtype=torch.float64), atol=1e-8)


def test_raw_pixels_flattens_and_untrained_features_restore_the_mode():
    assert raw_pixels(torch.zeros(3, 1, 8, 8)).shape == (3, 64)
    enc = torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.Dropout(0.5))
    enc.train()
    a, b = untrained_features(enc, torch.ones(5, 4)), untrained_features(enc, torch.ones(5, 4))
    assert torch.equal(a, b)  # eval mode: dropout off
    assert enc.training and not a.requires_grad


@pytest.mark.parametrize(
    "call",
    [
        lambda: raw_pixels(torch.zeros(5)),
        lambda: raw_pixels([[0.0]]),
        lambda: whiten(torch.zeros(1, 3)),
        lambda: whiten(torch.tensor([[0.0, float("nan")], [1.0, 2.0]])),
    ],
)
def test_bad_inputs_are_named(call):
    with pytest.raises(ValueError, match=r"x|images"):
        call()
