"""H&E image -> pseudo-spots -> patches -> features -> a slide a trained model predicts on."""

import numpy as np
import pytest
import torch

from icml26.hist import HiST, HiSTConfig
from icml26.hist.image import embed_patches, pseudo_spots, slide_from_image, spot_patches
from icml26.hist.train import predict_anndata


def _image():
    """White background with a pink tissue disc (radius 60) centred at (100, 80)."""
    img = np.full((160, 220, 3), 250, np.uint8)
    yy, xx = np.mgrid[:160, :220]
    disc = (xx - 100) ** 2 + (yy - 80) ** 2 < 60**2
    img[disc] = (200, 120, 180)
    return img, disc


def test_patches_are_centred_and_padded_white():
    img = np.zeros((50, 50, 3), np.uint8)
    img[20:30, 20:30] = 255
    p = spot_patches(img, [[25, 25], [0, 0]], diameter_px=10, size=10)
    assert p.shape == (2, 10, 10, 3)
    assert (p[0] == 255).all()  # the white square exactly
    assert (p[1][:5, :5] == 255).all() and (p[1][5:, 5:] == 0).all()  # off the edge: white


def test_pseudo_spots_cover_the_tissue_on_a_hexagonal_lattice():
    img, _ = _image()
    xy, sites = pseudo_spots(img, pitch_px=10)
    radius = np.hypot(xy[:, 0] - 100, xy[:, 1] - 80)
    assert (radius < 60 + 2.5).all()  # background spots are dropped (spot radius 2.5 px)
    lattice = [
        (5.0 * (r % 2) + 10.0 * c, r * 10 * np.sqrt(3) / 2) for r in range(19) for c in range(22)
    ]
    well_inside = {(round(x, 3), round(y, 3)) for x, y in lattice if np.hypot(x - 100, y - 80) < 55}
    assert well_inside <= {(round(x, 3), round(y, 3)) for x, y in xy}  # tissue sites all kept
    # about the disc's area in spots (pitch 10: one spot per 10 * 10 * sqrt(3)/2 px^2)
    assert len(xy) == pytest.approx(np.pi * 60**2 / (100 * np.sqrt(3) / 2), rel=0.1)
    odd = sites[:, 0] % 2 == 1
    assert np.allclose(xy[odd, 0] % 10, 5) and np.allclose(xy[~odd, 0] % 10, 0)
    with pytest.raises(ValueError, match="no tissue"):
        pseudo_spots(np.full((40, 40, 3), 255, np.uint8), pitch_px=10)


def test_any_torch_module_is_an_encoder_and_the_slide_predicts():
    img, _ = _image()
    encoder = torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(2), torch.nn.Flatten())
    slide = slide_from_image(img, pitch_px=10, encoder=encoder, patch_size=8)
    assert slide.features.shape == (len(slide), 12) and slide.counts is None
    # ImageNet-normalised input: the mean colour of a tissue patch, channel by channel
    red = (200 / 255 - 0.485) / 0.229
    assert np.median(slide.features[:, 0]) == pytest.approx(red, abs=0.05)
    default = embed_patches(spot_patches(img, slide.xy[:3], 5, 8))
    assert default.shape == (3, 24)  # the fixed featuriser
    torch.manual_seed(0)
    model = HiST(HiSTConfig(12, 4, dim=16, heads=2))
    adata = predict_anndata(model, slide)
    assert adata.shape == (len(slide), 4)
    with pytest.raises(ValueError, match="encoder must be"):
        embed_patches(spot_patches(img, slide.xy[:2], 5, 8), encoder=3)
    # 16-bit images are rescaled, not clipped to white
    wide = (img.astype(np.uint16) * 257).astype(np.uint16)
    np.testing.assert_array_equal(
        spot_patches(wide, slide.xy[:3], 5, 8), spot_patches(img, slide.xy[:3], 5, 8)
    )
