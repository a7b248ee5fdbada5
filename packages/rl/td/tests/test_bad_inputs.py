"""Bad input at TD's public entry points ends in a named error, not a silent run."""

import pytest
import torch

from icml26.td import LinearTD
from icml26.td.gym_problems import gymnasium_mrp, gymnasium_transitions
from icml26.testing import assert_rejects

RETURNED = {
    "Slope": "the slope fit returns it",
}
"""Public names a user receives rather than builds (records the package returns): no input."""


def test_linear_td_stops_at_its_horizon():
    td = LinearTD(2, 0.5, horizon=3, eta0=0.5)
    for _ in range(3):
        td.update(torch.eye(2)[0], 1.0, torch.eye(2)[1])
    assert_rejects(lambda: td.update(torch.eye(2)[0], 1.0, torch.eye(2)[1]), ["3 updates", "T"])
    assert LinearTD(2, 0.5, schedule=0.1).eta == 0.1  # a constant step has no horizon


@pytest.mark.parametrize("make", [gymnasium_transitions, gymnasium_mrp])
def test_a_continuous_environment_is_named_not_tabular(make):
    assert_rejects(lambda: make("CartPole-v1"), ["CartPole-v1", "not tabular", "Discrete"])


@pytest.mark.parametrize(
    "args, names",
    [((0, 0.5), ["dim"]), ((2, 1.0), ["gamma"]), ((2, 0.5), ["horizon"])],
)
def test_linear_td_constructor(args, names):
    assert_rejects(lambda: LinearTD(*args), names)
