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
    assert_rejects(lambda: pipe.generate([[0.0]]), ["noises", "list"])  # was "got ()"


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


from icml26.streamflow import PeRFlowWindows, sequential_sample, train_flow_matching  # noqa: E402


def test_the_sequential_baseline_names_a_bad_step_count_or_batch(denoiser):
    assert_rejects(lambda: sequential_sample(denoiser, torch.randn(1, 1, 8, 8), 0), "num_steps")
    assert_rejects(lambda: sequential_sample(denoiser, torch.randn(0, 1, 8, 8), 2), "noise")
    assert_rejects(lambda: PeRFlowWindows(0), "num_steps")
    assert_rejects(lambda: sequential_sample(denoiser, torch.ones(1, 1, 8, 8).long(), 2), "noise")


def test_the_sequential_baseline_runs_float64_noise_in_the_models_dtype(denoiser):
    x = sequential_sample(denoiser, torch.randn(1, 1, 8, 8, dtype=torch.float64), 2)
    assert x.dtype == next(denoiser.parameters()).dtype  # was a raw conv dtype error


@pytest.mark.parametrize(
    "kwargs, name",
    [({"steps": -1}, "steps"), ({"batch_size": 0}, "batch_size"), ({"lr": 0.0}, "lr")],
)
def test_training_names_a_bad_budget(kwargs, name):
    model = unet("tiny", 8, seed=0)
    assert_rejects(lambda: train_flow_matching(model, torch.randn(4, 1, 8, 8), **kwargs), name)
    assert_rejects(lambda: train_flow_matching(model, torch.zeros(0, 1, 8, 8)), "data")


def test_adapters_name_bad_pipes_images_and_configs():
    from icml26.streamflow import VaeDecoder, digits_images, encode_image, flux_mu, from_pipe
    from icml26.streamflow.model import text_to_image

    _, vae, _, _ = text_to_image()
    assert_rejects(lambda: from_pipe(object(), 4), "unet")
    assert_rejects(lambda: VaeDecoder(torch.nn.Linear(2, 2)), "vae")
    assert_rejects(lambda: encode_image(torch.nn.Linear(2, 2), torch.zeros(1, 3, 8, 8)), "vae")
    assert_rejects(lambda: encode_image(vae, torch.zeros(3, 8, 8)), "images")
    assert_rejects(lambda: encode_image(vae, torch.full((1, 3, 8, 8), 255.0)), "[-1, 1]")
    assert_rejects(lambda: flux_mu(0, {}), "image_seq_len")
    assert_rejects(lambda: flux_mu(256, None), "config")
    assert_rejects(lambda: digits_images("gpu0"), "device")


def test_unet_names_a_latent_size_it_cannot_build():
    assert_rejects(lambda: unet("tiny", 0), "sample_size")
    assert_rejects(lambda: unet("tiny", 7), ["sample_size", "multiple of 2"])
    assert_rejects(lambda: unet("tiny", 8, channels=0), "channels")


from hypothesis import given, settings  # noqa: E402

from icml26.testing.strategies import bad_tensors, out_of_range  # noqa: E402

DRAWS = settings(max_examples=25, deadline=None)


@DRAWS
@given(noises=bad_tensors((2, 1, 8, 8)))
def test_noises_of_every_bad_kind_are_named(denoiser, noises):
    """NaN / inf, a wrong rank, integer, boolean or complex values, or no samples."""
    pipe = StreamPipeline(denoiser, (1, 8, 8), 2)
    assert_rejects(lambda: pipe.generate(noises), "noises")


@DRAWS
@given(data=bad_tensors((4, 1, 8, 8)), lr=out_of_range(0.0, None))
def test_training_data_and_learning_rates_of_every_bad_kind_are_named(data, lr):
    model = unet("tiny", 8, seed=0)
    assert_rejects(lambda: train_flow_matching(model, data, steps=1), "data")
    assert_rejects(lambda: train_flow_matching(model, torch.randn(4, 1, 8, 8), lr=lr), "lr")
