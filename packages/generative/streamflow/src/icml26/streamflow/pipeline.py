"""StreamFlow's pipeline ("stream") batching with a static ring buffer.

N in-flight samples sit at stages 0..N-1. ``push(noise)`` puts fresh noise into the free slot at
stage 0, runs ONE model call over all N slots with per-sample time steps, takes every sample one
Euler step further, and returns the sample that just left stage N-1 (``None`` while the pipeline
fills). M images cost M + N - 1 model calls instead of M N; the first image arrives after N calls.

The buffer is preallocated: slots never move; a (N,) stage vector says where each sample is
(-1: empty). Every call has the same shapes, so ``backend="compile"`` (``torch.compile``) or
``"cudagraph"`` (CUDA graphs through torch.compile's "reduce-overhead" mode) replays one static
graph; classifier-free guidance runs the
conditional and unconditional branches as one batch of 2N and combines them before the Euler step.
"""

from collections.abc import Callable
from typing import Literal

import torch
from torch import nn

from icml26.streamflow.scheduler import BatchedFlowScheduler

Denoiser = Callable[..., torch.Tensor]


class DiffusersDenoiser(nn.Module):
    """Adapts a diffusers ``UNet2DModel`` / ``UNet2DConditionModel`` / transformer denoiser to
    ``f(x (B, C, H, W), t (B,), cond=None) -> velocity``."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x, t, cond=None):
        if cond is None:
            out = self.model(x, t, return_dict=False)
        else:
            out = self.model(x, t, encoder_hidden_states=cond, return_dict=False)
        return out[0]


def _check_latent(x: torch.Tensor, shape, name: str = "noise") -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if tuple(x.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(x.shape)}")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name} contains NaN or inf")
    return x


class StreamPipeline:
    """Stream batching of a flow-matching denoiser over ``num_steps`` Euler steps.

    Args:
        model: ``f(x, t, cond=None) -> velocity`` (wrap diffusers models in DiffusersDenoiser).
        latent_shape: (C, H, W) of one sample.
        num_steps: N, the sampling steps = the number of in-flight samples.
        guidance_scale: classifier-free guidance weight (needs conditions and ``uncond``, the
            unconditional embedding shaped like one condition); None: no guidance.
        backend: ``"eager"``, ``"compile"`` (torch.compile of the fused step) or ``"cudagraph"``.
        device: where the ring buffer lives; None: the model's device (its first parameter's, for
            an ``nn.Module``), else the CPU.
        decode: optional function applied to every emitted latent (a VAE decoder).
    """

    def __init__(
        self,
        model: Denoiser,
        latent_shape,
        num_steps: int,
        guidance_scale: float | None = None,
        backend: Literal["eager", "compile", "cudagraph"] = "eager",
        device: str | torch.device | None = None,
        dtype: torch.dtype = torch.float32,
        uncond: torch.Tensor | None = None,
        decode: Callable | None = None,
        scheduler: BatchedFlowScheduler | None = None,
    ):
        if backend not in ("eager", "compile", "cudagraph"):
            raise ValueError(f"backend must be eager, compile or cudagraph, got {backend!r}")
        if device is None:
            device = model_device(model)
        if backend == "cudagraph" and torch.device(device).type != "cuda":
            raise ValueError("backend='cudagraph' needs a CUDA device")
        if guidance_scale is not None and uncond is None:
            raise ValueError("guidance_scale needs the unconditional embedding `uncond`")
        self.scheduler = (scheduler or BatchedFlowScheduler(num_steps)).to(device)
        if self.scheduler.num_steps != num_steps:
            raise ValueError(
                f"the scheduler has {self.scheduler.num_steps} steps, num_steps={num_steps}"
            )
        self.model, self.N = model, num_steps
        self.shape, self.device, self.dtype = tuple(latent_shape), torch.device(device), dtype
        if uncond is not None:
            uncond = uncond.to(self.device)
        self.guidance_scale, self.uncond, self.decode = guidance_scale, uncond, decode
        self.latents = torch.zeros(self.N, *self.shape, device=device, dtype=dtype)
        self.stage = torch.full((self.N,), -1, dtype=torch.long, device=device)
        self.cond = None  # (N, ...) per-slot conditions, allocated on the first conditional push
        self.calls = 0
        self._step = self._fused_step
        if backend == "compile":
            self._step = torch.compile(self._fused_step, dynamic=False)
        elif backend == "cudagraph":
            # torch.compile's "reduce-overhead" mode records the static step as a CUDA graph and
            # replays it; the ring buffer's fixed shapes are what make that possible.
            self._step = torch.compile(self._fused_step, mode="reduce-overhead", dynamic=False)
        self.backend = backend
        self._graph = None

    # One model call over all slots + the Euler update: the unit that compile/cudagraph capture.
    def _fused_step(self, latents, stage, cond):
        active = stage >= 0
        k = stage.clamp(0, self.N - 1)
        t = self.scheduler.timestep(k)
        if self.guidance_scale is None:
            v = self.model(latents, t, cond) if cond is not None else self.model(latents, t)
        else:
            unc = self.uncond.to(cond.dtype).expand(len(latents), *self.uncond.shape)
            both = self.model(
                torch.cat([latents, latents]), torch.cat([t, t]), torch.cat([cond, unc])
            )
            v_c, v_u = both.chunk(2)
            v = v_u + self.guidance_scale * (v_c - v_u)
        dt = torch.where(active, self.scheduler.dt[k], torch.zeros_like(self.scheduler.dt[k]))
        return latents + dt.view(-1, *([1] * len(self.shape))).to(latents.dtype) * v

    def push(self, noise: torch.Tensor | None, condition: torch.Tensor | None = None):
        """Add one sample (noise (C, H, W), or None to only advance) and advance every sample one
        step; return the sample that finished, decoded if a decoder was given, else None."""
        free = (self.stage < 0).nonzero()
        if noise is not None:
            noise = _check_latent(noise, self.shape)
            if len(free) == 0:
                raise RuntimeError("no free slot: the pipeline is full")  # cannot happen: see below
            slot = int(free[0])
            self.latents[slot] = noise.to(self.device, self.dtype)
            self.stage[slot] = 0
            if condition is not None:
                if self.cond is None:
                    self.cond = torch.zeros(
                        self.N, *condition.shape, device=self.device, dtype=self.dtype
                    )
                self.cond[slot] = condition.to(self.device, self.dtype)
        if not (self.stage >= 0).any():
            return None
        with torch.no_grad():
            self.latents.copy_(self._step(self.latents, self.stage, self.cond))
        self.calls += 1
        done = (self.stage == self.N - 1).nonzero()
        out = None
        if len(done):
            slot = int(done[0])
            out = self.latents[slot].clone()
            self.stage[slot] = -1  # freed: the next push reuses it, so N slots always suffice
        self.stage[self.stage >= 0] += 1
        if out is not None and self.decode is not None:
            with torch.no_grad():
                out = self.decode(out[None])[0]
        return out

    def flush(self) -> list[torch.Tensor]:
        """Advance without new input until every in-flight sample is out (in order)."""
        outs = []
        while (self.stage >= 0).any():
            o = self.push(None)
            if o is not None:
                outs.append(o)
        return outs

    def generate(
        self, noises: torch.Tensor, conditions: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Stream ``noises`` (M, C, H, W) through the pipeline; returns (M, ...) in input order."""
        if noises.dim() != len(self.shape) + 1:
            raise ValueError(
                f"noises must be (M, {', '.join(map(str, self.shape))}), got {tuple(noises.shape)}"
            )
        outs = []
        for i, z in enumerate(noises):
            o = self.push(z, None if conditions is None else conditions[i])
            if o is not None:
                outs.append(o)
        outs += self.flush()
        return torch.stack(outs)

    def warmup(self, calls: int = 2) -> None:
        """Run the static step a few times (compiles / tunes) without touching the state."""
        latents, stage = self.latents.clone(), torch.arange(self.N, device=self.device)
        with torch.no_grad():
            for _ in range(calls):
                self._step(latents, stage, self.cond)


def model_device(model) -> torch.device:
    """The device of a denoiser: its first parameter's for an ``nn.Module``, else the CPU."""
    p = next(model.parameters(), None) if isinstance(model, nn.Module) else None
    return p.device if p is not None else torch.device("cpu")


def sequential_sample(
    model: Denoiser, noise: torch.Tensor, num_steps: int, condition: torch.Tensor | None = None
) -> torch.Tensor:
    """The naive diffusers-style loop (the baseline): ``scheduler.step`` per step, on the noise's
    device."""
    from diffusers import FlowMatchEulerDiscreteScheduler

    sched = FlowMatchEulerDiscreteScheduler()
    sched.set_timesteps(num_steps, device=noise.device)
    x = noise
    with torch.no_grad():
        for t in sched.timesteps:
            tt = t.expand(len(x)).to(x.device)
            v = model(x, tt, condition) if condition is not None else model(x, tt)
            x = sched.step(v, t, x, return_dict=False)[0]
    return x
