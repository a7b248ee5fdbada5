"""Bad input at the public API ends in a ValueError / TypeError that names the argument."""

import warnings

import numpy as np
import pytest

from icml26.hist import Slide
from icml26.hist.cli import load_slides, main
from icml26.testing import assert_rejects

RETURNED = {
    "TrainResult": "train returns it",
}
"""Public names a user receives rather than builds (records the package returns): no input."""


def _slide(counts):
    n = len(counts)
    xy = np.stack([np.arange(n), np.zeros(n)], 1).astype(float)
    return Slide("s", xy, np.zeros((n, 4)), counts, [f"g{j}" for j in range(counts.shape[1])])


def test_non_integer_counts_warn_that_they_look_normalised():
    counts = np.log1p(np.arange(12, dtype=float).reshape(4, 3))
    with pytest.warns(UserWarning, match="use-raw"):
        _slide(counts)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _slide(np.arange(12, dtype=float).reshape(4, 3))  # integer-valued floats are counts


@pytest.mark.parametrize("bad", [-1.0, np.nan])
def test_negative_or_missing_counts_are_refused(bad):
    counts = np.ones((4, 3))
    counts[1, 1] = bad
    assert_rejects(lambda: _slide(counts), "counts")


def test_a_garbage_h5ad_names_the_file(tmp_path, capsys):
    bad = tmp_path / "slide.h5ad"
    bad.write_text("not hdf5")
    assert_rejects(lambda: load_slides([str(bad)]), "slide.h5ad")
    assert main(["train", "--out", str(tmp_path / "run"), "--data", str(bad), "--steps", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "slide.h5ad" in err[0]


def test_ridge_probe_names_an_unknown_context_or_penalty():
    from icml26.hist import RidgeProbe
    from icml26.hist.linear import neighbourhood_mean

    assert_rejects(lambda: RidgeProbe("global"), "context")
    assert_rejects(lambda: RidgeProbe("multiscale", alphas=(0.0,)), "alphas")
    slide = _slide(np.ones((4, 3)))
    for radius in (0, 1.5, True):
        assert_rejects(lambda r=radius: neighbourhood_mean(slide, r), "radius")
