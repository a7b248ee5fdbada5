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
