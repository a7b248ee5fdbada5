import numpy as np
import pytest
import torch

from icml26.hist import add_sentinels, to_lattice
from icml26.hist.lattice import estimate_step, unique_sites


def test_square_grid_maps_to_its_indices_despite_jitter_and_offset():
    rng = np.random.default_rng(0)
    rc = np.array([(r, c) for r in range(7) for c in range(9) if (r * 9 + c) % 4])
    xy = np.stack([rc[:, 1], rc[:, 0]], 1) * 272.0 + [1000.0, 250.0]
    xy += rng.uniform(-30, 30, xy.shape)  # scanner jitter below a tenth of a pitch
    lat = to_lattice(xy)  # pitch inferred
    assert lat.step == pytest.approx((272, 272), rel=0.05)
    np.testing.assert_array_equal(lat.coords, rc - rc.min(0))
    assert not lat.moved.any()


def test_hexagonal_grid_maps_to_an_offset_lattice():
    pitch = 100.0
    pts, expect = [], []
    for r in range(6):
        for c in range(8):
            pts.append(((c + (r % 2) / 2) * pitch, r * pitch * np.sqrt(3) / 2))
            expect.append((r, c))
    lat = to_lattice(np.array(pts), pitch, hexagonal=True)
    np.testing.assert_array_equal(lat.coords, np.array(expect))
    assert estimate_step(np.array(pts), hexagonal=True) == pytest.approx(pitch)


def test_anisotropic_square_grid_gets_a_pitch_per_axis():
    rc = np.array([(r, c) for r in range(12) for c in range(20)])
    xy = np.stack([rc[:, 1] * 255.0, rc[:, 0] * 288.0], 1)
    assert estimate_step(xy) == pytest.approx((255, 288))
    lat = to_lattice(xy)
    np.testing.assert_array_equal(lat.coords, rc)
    assert not lat.moved.any()


def test_duplicates_follow_the_documented_rule_and_input_order_does_not_matter():
    # three spots claim site (1, 1); the one nearest its centre keeps it, the others move to
    # the nearest free sites (ties: smaller row, then col)
    xy = np.array([[0, 0], [1, 0], [0, 1], [1.0, 1.0], [1.2, 1.0], [0.8, 1.05]]) * 10
    lat = to_lattice(xy, 10.0)
    assert tuple(lat.coords[3]) == (1, 1) and not lat.moved[3]
    assert lat.moved[4] and lat.moved[5]
    assert tuple(lat.coords[4]) == (1, 2)  # (row, col): x = 1.2 pitches -> right
    assert tuple(lat.coords[5]) == (2, 1)  # nearest free to (row 1.05, col 0.8)
    assert len({tuple(c) for c in lat.coords}) == len(xy)
    for seed in range(3):
        perm = np.random.default_rng(seed).permutation(len(xy))
        np.testing.assert_array_equal(to_lattice(xy[perm], 10.0).coords, lat.coords[perm])


@pytest.mark.parametrize(
    ("xy", "msg"),
    [
        (np.zeros((0, 2)), "empty"),
        (np.zeros((3, 3)), "shape"),
        (np.array([[0.0, np.nan], [1, 1]]), "NaN"),
    ],
)
def test_bad_positions_are_clear_errors(xy, msg):
    with pytest.raises(ValueError, match=msg):
        to_lattice(xy, 1.0)


def test_bad_step_is_a_clear_error():
    with pytest.raises(ValueError, match="step"):
        to_lattice(np.ones((3, 2)) * np.arange(3)[:, None], -1.0)


def test_sentinels_frame_the_canvas_on_the_dyadic_grid():
    coords = torch.tensor([[0, 0], [5, 2], [3, 9]])
    out, sentinel = add_sentinels(coords, levels=3)
    assert sentinel.tolist() == [False] * 3 + [True, True]
    assert out[:3].tolist() == (coords + 1).tolist()
    assert out[3].tolist() == [0, 0]
    far = out[4]
    assert ((far + 1) % 4 == 0).all() and (far > out[:3].max(0).values).all()
    assert len(unique_sites(out)[0]) == 5


def test_unique_sites_matches_torch_unique():
    c = torch.randint(-5, 9, (200, 2))
    u, inv = unique_sites(c)
    ru, rinv = torch.unique(c, dim=0, return_inverse=True)
    assert torch.equal(u, ru) and torch.equal(inv, rinv)
