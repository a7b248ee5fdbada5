"""Bad input at the public API ends in a ValueError / TypeError that names the argument."""

import pytest
import torch

from icml26.streamflow import BatchedFlowScheduler, DiffusersDenoiser, StreamPipeline, unet
from icml26.testing import assert_rejects


@pytest.fixture(scope="module")
def denoiser():
    return DiffusersDenoiser(unet("tiny", 8, seed=0))


def test_generate_with_no_samples_is_named(denoiser):
    pipe = StreamPipeline(denoiser, (1, 8, 8), 2)
    assert_rejects(lambda: pipe.generate(torch.zeros(0, 1, 8, 8)), "noises")


def test_a_latent_shape_the_model_cannot_take_is_named_at_construction(denoiser):
    assert_rejects(lambda: StreamPipeline(denoiser, (4, 8, 8), 2), "latent_shape")
    pipe = StreamPipeline(denoiser, (1, 8, 8), 2)
    assert_rejects(lambda: pipe.generate(torch.zeros(2, 4, 8, 8)), "noises")


@pytest.mark.parametrize(
    "sigmas",
    [[0.2, 0.5, 1.0], [1.0, 1.0, 0.5], [1.0, 0.5, 0.0], [2.0, 1.0, 0.5], [1.0, float("nan"), 0.1]],
)
def test_custom_sigmas_must_run_from_noise_to_data(sigmas):
    assert_rejects(lambda: BatchedFlowScheduler(3, sigmas=sigmas), "sigmas")
    BatchedFlowScheduler(3, sigmas=[1.0, 0.6, 0.2])  # decreasing within (0, 1]: accepted
