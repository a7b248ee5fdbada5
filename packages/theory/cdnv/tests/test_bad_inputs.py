"""Bad input at the public API ends in a ValueError / TypeError that names the argument."""

import numpy as np
import pytest
import torch

from icml26.cdnv import class_stats, ncc_fewshot_error
from icml26.cdnv.measure_cli import MeasureConfig, run_measure
from icml26.testing import assert_rejects

RETURNED = {
    "ClassStats": "class_stats returns it",
}
"""Public names a user receives rather than builds (records the package returns): no input."""

LABELS = torch.tensor([0, 0, 1, 1])


@pytest.mark.parametrize("dtype", [torch.bool, torch.int64, torch.uint8])
def test_features_must_be_floating_point(dtype):
    x = torch.ones(4, 3, dtype=dtype)
    assert_rejects(lambda: class_stats(x, LABELS), "features")
    assert_rejects(lambda: ncc_fewshot_error(x, LABELS, [1], 2), "features")


def test_non_finite_features_and_mismatched_rows_are_named():
    x = torch.zeros(4, 3)
    x[1, 1] = float("nan")
    assert_rejects(lambda: class_stats(x, LABELS), "features")
    assert_rejects(lambda: class_stats(torch.zeros(5, 3), LABELS), "labels")


def test_measure_names_what_is_wrong_with_the_file(tmp_path):
    text = tmp_path / "notes.npz"
    text.write_text("hello")  # was reported as "pickled (object) data"
    message = str(assert_rejects(lambda: run_measure(MeasureConfig(path=text)), "path"))
    assert "not a .npz file" in message and "pickle" not in message
    np.savez(tmp_path / "nolabels.npz", features=np.zeros((4, 3)))
    message = str(
        assert_rejects(lambda: run_measure(MeasureConfig(path=tmp_path / "nolabels.npz")), "path")
    )
    assert "['labels']" in message and "is not a file" not in message
    assert_rejects(lambda: run_measure(MeasureConfig(path=tmp_path / "absent.npz")), "path")
