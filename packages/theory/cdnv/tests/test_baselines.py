import pytest
import torch

from icml26.cdnv.baselines import oracle_lda, raw_pixels, untrained_features, whiten


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


def test_oracle_lda_separates_the_classes_it_was_fitted_on():
    g = torch.Generator().manual_seed(0)
    labels = torch.arange(4).repeat_interleave(50)
    x = torch.randn(200, 30, generator=g) + 6.0 * torch.nn.functional.one_hot(labels, 30)
    z = oracle_lda(x, labels)
    assert z.shape == (200, 3) and z.dtype == x.dtype
    means = torch.stack([z[labels == c].mean(0) for c in range(4)])
    nearest = torch.cdist(z, means).argmin(1)
    assert (nearest == labels).float().mean() > 0.95


@pytest.mark.parametrize(
    "call",
    [
        lambda: raw_pixels(torch.zeros(5)),
        lambda: raw_pixels([[0.0]]),
        lambda: whiten(torch.zeros(1, 3)),
        lambda: whiten(torch.tensor([[0.0, float("nan")], [1.0, 2.0]])),
        lambda: oracle_lda(torch.zeros(3), torch.zeros(3)),
        lambda: oracle_lda(torch.zeros(4, 2), torch.zeros(3)),
    ],
)
def test_bad_inputs_are_named(call):
    with pytest.raises(ValueError, match=r"x|images|features|labels"):
        call()
