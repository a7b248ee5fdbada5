"""Sampling, the scheduler, training and the timings run where the model lives (cpu, and cuda
when present)."""

import copy

import pytest
import torch

from icml26.streamflow import (
    BatchedFlowScheduler,
    DiffusersDenoiser,
    StreamPipeline,
    digits_images,
    sequential_sample,
    train_flow_matching,
    unet,
)
from icml26.streamflow.bench import measure
from icml26.streamflow.study import _plain_fp32 as _no_tf32
from icml26.testing import assert_close


@pytest.fixture(autouse=True)
def _plain_fp32():
    # CUDA convolutions default to TF32, whose rounding differs between batch sizes; the
    # comparisons below are about the samplers, not about TF32.
    with _no_tf32():
        yield


def test_stream_and_sequential_on_the_device_give_the_cpu_images(device):
    cpu = DiffusersDenoiser(unet("tiny", 8, seed=0))
    f = copy.deepcopy(cpu).to(device)
    noise = torch.randn(3, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    ref = torch.cat([sequential_sample(cpu, z[None], 2) for z in noise])
    seq = torch.cat([sequential_sample(f, z[None].to(device), 2) for z in noise])
    pipe = StreamPipeline(f, (1, 8, 8), 2)  # the buffer follows the model
    out = pipe.generate(noise)  # CPU noise is moved into the buffer
    assert pipe.latents.device.type == device and out.device.type == device
    assert seq.device.type == device
    assert_close(out, seq, atol=1e-5, rtol=0)
    assert_close(out.cpu(), ref, atol=1e-4, rtol=1e-4)


def test_scheduler_and_guidance_on_the_device(device):
    s = BatchedFlowScheduler(4).to(device)
    k = torch.tensor([0, 2, 3], device=device)
    out = s.step(torch.ones(3, 1, 2, 2, device=device), k, torch.zeros(3, 1, 2, 2, device=device))
    assert out.device.type == device
    ref = BatchedFlowScheduler(4)
    assert_close(out.cpu(), ref.dt[k.cpu()].view(3, 1, 1, 1).expand(3, 1, 2, 2))

    class Cond(torch.nn.Module):
        def forward(self, x, t, cond):
            return x * 0 + cond.view(-1, 1, 1, 1)

    # a parameter-free model: the device is given; the CPU `uncond` is moved to it
    pipe = StreamPipeline(
        Cond(), (1, 2, 2), 3, guidance_scale=2.0, uncond=torch.zeros(1), device=device
    )
    out = pipe.generate(torch.zeros(2, 1, 2, 2), conditions=torch.ones(2, 1))
    assert out.device.type == device
    assert_close(out.cpu(), torch.full((2, 1, 2, 2), -2.0), atol=1e-6, rtol=0)


def test_training_and_timing_on_the_device(device):
    model = unet("tiny", 8, seed=0, device=device)
    data = digits_images(device)
    assert data.device.type == device
    losses = train_flow_matching(model, data[:64], steps=2, batch_size=8, progress=False)
    assert len(losses) == 2 and all(torch.isfinite(torch.tensor(losses)))
    assert next(model.parameters()).device.type == device
    res = measure(DiffusersDenoiser(model), (1, 8, 8), N=2, M=2, repeats=1)
    assert res["max |stream - sequential|"] <= 1e-5
    assert all(r["images/s"] > 0 for r in res["rows"].values())
