"""Bad input at SANTA's public entry points ends in a named error, not a silent run."""

import pytest

from icml26.santa import enable_santa, tiny_llama
from icml26.testing import assert_rejects

RETURNED = {
    "SantaOutput": "santa_decode returns it",
}
"""Public names a user receives rather than builds (records the package returns): no input."""


@pytest.fixture(scope="module")
def model():
    return tiny_llama(seed=0, layers=1)


@pytest.mark.parametrize(
    "kwargs, names",
    [
        ({"block_n": 0}, ["block_n", ">= 1"]),
        ({"block_n": "x"}, ["block_n", "'x'"]),
        ({"block_n": True}, ["block_n"]),
        ({"num_samples": 0}, ["num_samples"]),
        ({"mode": "stratified"}, ["mode", "tile_fixed"]),
        ({"seed": 1.5}, ["seed"]),
    ],
)
def test_enable_santa_rejects_bad_settings(model, kwargs, names):
    assert_rejects(lambda: enable_santa(model, **kwargs), names)
