"""Bad input at ASBM's public entry points ends in a named error, not a silent run."""

import pytest
import torch

from icml26.asbm import ASBM
from icml26.asbm.sde import BrownianSDE, GaussianEnergy
from icml26.testing import assert_rejects


def _asbm(**kw):
    return ASBM((2,), BrownianSDE(0.5), GaussianEnergy(1.0), hidden=16, **kw)


@pytest.mark.parametrize("sim_steps", [0, -3, 2.5, True])
def test_sim_steps_must_be_a_positive_integer(sim_steps):
    assert_rejects(lambda: _asbm(sim_steps=sim_steps), ["sim_steps", ">= 1"])


@pytest.mark.parametrize(
    "stage, kwargs, name",
    [
        ("fit_forward", {"buffer_size": 0}, "buffer_size"),
        ("fit_forward", {"batch_size": 0}, "batch_size"),
        ("fit_forward", {"corrector_buffer": 0}, "corrector_buffer"),
        ("fit_backward", {"steps": 0}, "steps"),
        ("fit_backward", {"buffer_size": 0}, "buffer_size"),
        ("fit_backward", {"resimulate_every": 0}, "resimulate_every"),
    ],
)
def test_training_sizes_must_be_positive(stage, kwargs, name):
    model = _asbm(sim_steps=4)
    data = torch.randn(32, 2)
    assert_rejects(lambda: getattr(model, stage)(data, **kwargs, progress=False), [name])


from icml26.asbm import mmd, ot_pairing, sb_pairing, sliced_w2  # noqa: E402

X = torch.randn(10, 2)


@pytest.mark.parametrize(
    "y, name",
    [
        (torch.randn(12, 3), "share the sample shape"),
        (torch.full((10, 2), float("nan")), "y holds NaN"),
        (torch.randn(1, 2), "y must hold >= 2"),
        (torch.zeros(10, 2, dtype=torch.long), "y must hold >= 2 float"),
    ],
)
def test_metrics_name_bad_sample_sets(y, name):
    assert_rejects(lambda: mmd(X, y), name)
    assert_rejects(lambda: sliced_w2(X, y), name)


def test_pairings_name_bad_minibatches():
    assert_rejects(lambda: ot_pairing(X, torch.randn(10, 3)), "x0 and x1")
    assert_rejects(lambda: ot_pairing(X, torch.randn(8, 2)), "as many samples")
    assert_rejects(lambda: sb_pairing(X, X, 0.0, torch.Generator()), "sigma")
