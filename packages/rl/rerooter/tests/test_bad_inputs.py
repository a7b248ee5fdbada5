"""Bad input at the searches ends in a named error, not a silent run."""

import numpy as np
import pytest

from icml26.rerooter.evaluators import check_output
from icml26.testing import assert_rejects

RETURNED = {
    "BootstrapHistory": "bootstrap returns it",
    "SearchResult": "the searches return it",
}
"""Public names a user receives rather than builds (records the package returns): no input."""


def test_an_unnormalised_log_policy_is_named():
    zeros = np.zeros((2, 4))  # log pi = 0 everywhere: probabilities summing to 4
    assert_rejects(lambda: check_output(zeros, np.zeros(2), 2, 4), ["log_pi", "sum to 4", "1"])
    logits = np.array([[2.0, 1.0, 0.0, -1.0]])
    assert_rejects(lambda: check_output(logits, np.zeros(1), 1, 4), ["log_softmax"])
    uniform = np.full((2, 4), np.log(0.25))
    check_output(uniform, np.zeros(2), 2, 4)  # a distribution passes


@pytest.mark.parametrize(
    "log_pi, h, names",
    [
        (np.zeros((2, 3)), np.zeros(2), ["(2, 4)"]),
        (np.full((2, 4), np.nan), np.zeros(2), ["NaN"]),
        (np.full((2, 4), np.log(0.25)), np.array([0.0, np.inf]), ["infinite"]),
    ],
)
def test_wrong_shapes_and_values_are_named(log_pi, h, names):
    assert_rejects(lambda: check_output(log_pi, h, 2, 4), names)
