"""PeRFlow windows in a stream batch, held to PeRFlow's own sequential scheduler (a scalar port of
the authors' ``PeRFlowScheduler``, ``icml26.streamflow.reference``, which shares no code with the
vectorised windows)."""

import pytest
import torch

from icml26.streamflow import DiffusersDenoiser, PeRFlowWindows, StreamPipeline, unet
from icml26.streamflow.reference import PeRFlowSequential
from icml26.streamflow.scheduler import perflow_windows
from icml26.testing import assert_close


@pytest.fixture(scope="module")
def denoiser():
    return DiffusersDenoiser(unet("tiny", 8, seed=0))


@pytest.mark.parametrize("prediction_type", ["ddim_eps", "diff_eps", "velocity"])
@pytest.mark.parametrize(("num_steps", "num_windows"), [(4, 4), (6, 4), (8, 4), (5, 2), (7, 3)])
def test_stream_with_perflow_windows_equals_perflow_sequential(
    denoiser, prediction_type, num_steps, num_windows
):
    noise = torch.randn(7, 1, 8, 8, generator=torch.Generator().manual_seed(num_steps))
    port = PeRFlowSequential(num_steps, num_windows, prediction_type)
    ref = torch.cat([port.sample(denoiser, z[None]) for z in noise])
    sched = PeRFlowWindows(num_steps, num_windows, prediction_type)
    assert sched.timesteps.tolist() == port.timesteps.float().tolist()
    out = StreamPipeline(denoiser, (1, 8, 8), num_steps, scheduler=sched).generate(noise)
    assert_close(out, ref, atol=1e-5 * ref.abs().max().item(), rtol=1e-5)


def test_vectorised_window_lookup_matches_the_loop():
    sched, port = PeRFlowWindows(8), PeRFlowSequential(8)
    # boundaries, their neighbours within PeRFlow's tolerance, and interior points
    t = torch.tensor([1.0, 0.875, 0.75, 0.75 + 5e-5, 0.7499, 0.5, 0.26, 0.25, 0.125, 0.001])
    starts, ends = sched.lookup_windows(t)
    for tp, s, e in zip(t, starts, ends, strict=True):
        assert (s.item(), e.item()) == pytest.approx(port.window(tp))
    assert perflow_windows(4) == ([1.0, 0.75, 0.5, 0.25], [0.75, 0.5, 0.25, 0.0])


def test_bad_perflow_settings():
    with pytest.raises(ValueError, match="num_windows"):
        PeRFlowWindows(2, num_windows=4)
    with pytest.raises(ValueError, match="prediction_type"):
        PeRFlowWindows(4, prediction_type="epsilon")
    with pytest.raises(ValueError, match="beta_schedule"):
        PeRFlowWindows(4, beta_schedule="cosine")


def test_from_scheduler_reads_a_perflow_config():
    class PeRFlowScheduler:  # the authors' class, as a diffusers config would load it
        def __init__(self):
            self.config = dict(num_time_windows=2, prediction_type="diff_eps",
                               beta_schedule="linear", beta_start=0.0001, beta_end=0.02,
                               num_train_timesteps=1000)  # fmt: skip

    s = PeRFlowWindows.from_scheduler(PeRFlowScheduler(), 4)
    assert (s.num_windows, s.prediction_type) == (2, "diff_eps")
    assert s.timesteps.tolist() == [1000.0, 750.0, 500.0, 250.0]
    betas = torch.linspace(0.0001, 0.02, 1000)
    assert_close(s.alphas_cumprod, torch.cumprod(1 - betas, 0), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("prediction_type", ["ddim_eps", "velocity"])
@pytest.mark.parametrize("start", [1, 3])
def test_perflow_image_to_image_equals_the_sequential_img2img(denoiser, prediction_type, start):
    """A stream of frames (image-to-image, the real-time use): the last steps of PeRFlow's
    schedule from each frame noised by DDPM's forward process at the first kept step."""
    g = torch.Generator().manual_seed(start)
    frames, noise = torch.randn(5, 1, 8, 8, generator=g), torch.randn(5, 1, 8, 8, generator=g)
    port = PeRFlowSequential(8, 4, prediction_type)
    ref = torch.cat(
        [
            port.sample(denoiser, z[None], image=f[None], start=start)
            for z, f in zip(noise, frames, strict=True)
        ]
    )
    sched = PeRFlowWindows(8, 4, prediction_type)
    sched.drop_first(start)
    pipe = StreamPipeline(denoiser, (1, 8, 8), 8 - start, scheduler=sched)
    out = pipe.generate(noise, images=frames)
    assert_close(out, ref, atol=1e-5 * ref.abs().max().item(), rtol=1e-5)
    # the first kept step sees the frame, not pure noise: a different frame, a different image
    other = pipe.generate(noise, images=frames.flip(0))
    assert (other - out).abs().max() > 1e-3


def test_from_pipe_streams_a_perflow_pipeline_image_to_image(denoiser):
    """strength keeps Stable Diffusion img2img's int(n strength) steps (2 of 5 at 0.5)."""
    from types import SimpleNamespace

    from icml26.streamflow import from_pipe

    class PeRFlowScheduler:  # the authors' class, as a diffusers config would load it
        def __init__(self):
            self.config = dict(num_time_windows=4, prediction_type="ddim_eps")

    pipe = SimpleNamespace(unet=denoiser.model, vae=None, vae_scale_factor=1,
                           scheduler=PeRFlowScheduler())  # fmt: skip
    stream = from_pipe(pipe, 5, height=8, width=8, strength=0.5, decode=False)
    assert stream.N == 2
    g = torch.Generator().manual_seed(9)
    frames, noise = torch.randn(3, 1, 8, 8, generator=g), torch.randn(3, 1, 8, 8, generator=g)
    port = PeRFlowSequential(5, 4, "ddim_eps")
    ref = torch.cat(
        [
            port.sample(denoiser, z[None], image=f[None], start=3)
            for z, f in zip(noise, frames, strict=True)
        ]
    )
    assert_close(stream.generate(noise, images=frames), ref, atol=1e-5, rtol=1e-5)
