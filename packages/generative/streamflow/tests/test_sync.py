"""A push never waits for the device.

Without CUDA two checks stand in for CUDA's sync debug mode: (1) the whole stream runs with its
buffer and model on the ``meta`` device, where any read of a tensor's values (``.item()``,
``bool()``, ``nonzero``, ``.tolist()``, a copy to the host) raises; (2) a dispatch hook counts
the aten ops that read device values on the host (``_local_scalar_dense`` behind ``.item()`` /
``bool()`` / ``int()``, ``nonzero`` and friends) during pushes on the CPU. On CUDA, pushes run
under ``torch.cuda.set_sync_debug_mode("error")``.
"""

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from icml26.streamflow import DiffusersDenoiser, PeRFlowWindows, StreamPipeline, unet
from icml26.testing import assert_close

# aten ops whose result a host must wait for (data-dependent output or a scalar read)
SYNCING = {"_local_scalar_dense", "nonzero", "is_nonzero", "item", "equal", "masked_select"}


class CountSyncs(TorchDispatchMode):
    """Records ops that read device values on the host (``SYNCING``), and, when the stream lives
    off the CPU, host-to-device transfers: a tensor built from host data (``lift_fresh``) or a
    copy with a CPU source."""

    def __init__(self, transfers: bool = False):
        super().__init__()
        self.ops, self.transfers = [], transfers

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._schema.name.split("::")[-1]
        if name in SYNCING or (self.transfers and name == "lift_fresh"):
            self.ops.append(func._schema.name)
        elif self.transfers and name in ("_to_copy", "copy_"):
            devices = {a.device.type for a in args if isinstance(a, torch.Tensor)}
            dst = (kwargs or {}).get("device")
            if "cpu" in devices and (len(devices) > 1 or (dst is not None and dst.type != "cpu")):
                self.ops.append(func._schema.name)
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("scheduler", [None, "perflow"])
def test_the_stream_runs_on_the_meta_device(scheduler):
    f = DiffusersDenoiser(unet("tiny", 8, seed=0).to("meta"))
    sched = PeRFlowWindows(4) if scheduler else None
    pipe = StreamPipeline(f, (1, 8, 8), 4, scheduler=sched)
    assert pipe.latents.device.type == "meta"
    outs = [pipe.push(torch.empty(1, 8, 8, device="meta")) for _ in range(6)]
    outs += pipe.flush()
    done = [o for o in outs if o is not None]
    assert len(done) == 6 and all(o.device.type == "meta" for o in done)


def test_push_reads_only_the_host_input_it_validates():
    f = DiffusersDenoiser(unet("tiny", 8, seed=0))
    sched = PeRFlowWindows(4, num_windows=2).drop_first(1)
    pipe = StreamPipeline(f, (1, 8, 8), 3, scheduler=sched)
    noise = torch.randn(5, 1, 8, 8)
    with torch.no_grad(), CountSyncs() as counter:
        for z in noise:
            pipe.push(z)
        n_pushes = list(counter.ops)
        pipe.flush()
    # one read per push: the NaN scan of the user's host tensor; the pipeline itself reads none
    assert n_pushes == ["aten::_local_scalar_dense"] * 5
    assert counter.ops == n_pushes  # draining (no input) reads nothing


def test_the_counter_can_fail():
    with CountSyncs() as counter:
        x = torch.ones(3)
        _ = x.sum().item(), (x > 0).nonzero()
    assert "aten::_local_scalar_dense" in counter.ops and "aten::nonzero" in counter.ops


class Conditional(torch.nn.Module):
    """A conditional denoiser (a 1x1 convolution of the latents plus a condition's offset)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 1, 1)

    def forward(self, x, t, cond):
        return self.conv(x) * (t / 1000).view(-1, 1, 1, 1) + cond[:, :1].view(-1, 1, 1, 1)


@pytest.mark.parametrize("scheduler", ["flow", "perflow"])
@pytest.mark.parametrize("guidance", [None, 3.0])
def test_pushing_from_the_device_reads_and_transfers_nothing(scheduler, guidance):
    # Inputs on the buffer's device: no value read, no tensor built from host data, no copy
    # from the host, in any push (the fill, the steady state and the drain).
    f = DiffusersDenoiser(unet("tiny", 8, seed=0).to("meta"))
    if guidance is not None:
        f = Conditional().to("meta")
    sched = PeRFlowWindows(4) if scheduler == "perflow" else None
    kw = {}
    if guidance is not None:
        kw = dict(guidance_scale=guidance, uncond=torch.zeros(2, device="meta"))
    pipe = StreamPipeline(f, (1, 8, 8), 4, scheduler=sched, device="meta", **kw)
    cond = torch.ones(2, device="meta") if guidance is not None else None
    with CountSyncs(transfers=True) as counter:
        for _ in range(6):
            pipe.push(torch.empty(1, 8, 8, device="meta"), cond)
        pipe.flush()
    assert counter.ops == []


def test_a_flux_stream_builds_nothing_from_host_data(tiny_flux):
    flux = tiny_flux()
    f = DiffusersDenoiser(flux.to("meta"))
    cond = {
        "encoder_hidden_states": torch.zeros(5, 16, device="meta"),
        "pooled_projections": torch.zeros(8, device="meta"),
    }
    pipe = StreamPipeline(f, (4, 8, 8), 3, condition=cond)
    with CountSyncs(transfers=True) as counter:  # the first push builds Flux's position ids
        for _ in range(4):
            pipe.push(torch.empty(4, 8, 8, device="meta"))
    assert counter.ops == []


def test_the_transfer_counter_can_fail():
    with CountSyncs(transfers=True) as counter:
        torch.zeros(2, device="meta").copy_(torch.ones(2))
        torch.tensor([1.0, 2.0], device="meta")
    assert counter.ops == ["aten::copy_", "aten::lift_fresh"]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("backend", ["eager", "compile", "cudagraph"])
@pytest.mark.parametrize("scheduler", ["flow", "perflow"])
def test_cuda_pushes_do_not_synchronise_and_graphs_replay(backend, scheduler):
    from torch._dynamo.utils import counters

    f = DiffusersDenoiser(unet("tiny", 8, seed=0, device="cuda"))
    make = lambda: PeRFlowWindows(4) if scheduler == "perflow" else None  # noqa: E731
    noise = torch.randn(9, 1, 8, 8, device="cuda")
    eager = StreamPipeline(f, (1, 8, 8), 4, scheduler=make()).generate(noise)
    counters.clear()
    pipe = StreamPipeline(f, (1, 8, 8), 4, backend=backend, scheduler=make())
    pipe.warmup(3)  # compile and record outside the checked region
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        outs = [o for z in noise if (o := pipe.push(z)) is not None]
        outs += pipe.flush()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert_close(torch.stack(outs), eager, atol=1e-4, rtol=1e-4)
    if backend == "cudagraph":  # the step ran as a recorded graph, not a fallback
        assert sum(counters["inductor"]["cudagraph_skips"].values()) == 0
