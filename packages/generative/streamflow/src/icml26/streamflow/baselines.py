"""The samplers a stream is timed and checked against: the naive loop (every sample of a batch at
the same step, one model call per step) at batch 1, N and M, as ``bench`` runs them; its images
are what the stream must reproduce. PeRFlow's own step-at-a-time scheduler, the reference of the
windowed one, lives in ``reference.py``."""

import torch

from icml26.streamflow.pipeline import Condition, Denoiser
from icml26.streamflow.scheduler import check_steps


def sequential_sample(
    model: Denoiser,
    noise: torch.Tensor,
    num_steps: int,
    condition: Condition | None = None,
    scheduler=None,
    guidance_scale: float | None = None,
    uncond: Condition | None = None,
) -> torch.Tensor:
    """The naive per-batch loop (the baseline): every sample of ``noise`` (B, ...) at the same
    step, one model call per step. Default: diffusers' ``FlowMatchEulerDiscreteScheduler.step``
    itself; with ``scheduler`` (a :class:`BatchedFlowScheduler` or :class:`PeRFlowWindows`), its
    step with a homogeneous step index. ``condition``: (B, ...) tensor or dict of them.
    ``guidance_scale`` with ``uncond`` (shaped like ``condition``): classifier-free guidance,
    both branches as one batch of 2B per step, as diffusers' pipelines run it."""
    num_steps = check_steps(num_steps)
    if not isinstance(noise, torch.Tensor) or noise.ndim < 2 or len(noise) == 0:
        raise ValueError(f"noise must be a (B, ...) tensor with B >= 1, got "
                         f"{tuple(getattr(noise, 'shape', ()))}")  # fmt: skip
    if not noise.is_floating_point():
        raise TypeError(f"noise must be a floating-point tensor, got {noise.dtype}")
    if guidance_scale is not None and (condition is None or uncond is None):
        raise ValueError("guidance_scale needs both condition and uncond")
    weight = next(model.parameters(), None) if isinstance(model, torch.nn.Module) else None
    if weight is not None and weight.is_floating_point():
        noise = noise.to(weight.dtype)  # the model's dtype, as StreamPipeline.generate runs it
    model = _guided(model, guidance_scale, condition, uncond)
    x = noise
    if scheduler is None:
        from diffusers import FlowMatchEulerDiscreteScheduler

        sched = FlowMatchEulerDiscreteScheduler()
        sched.set_timesteps(num_steps, device=noise.device)
        with torch.no_grad():
            for t in sched.timesteps:
                tt = t.expand(len(x)).to(x.device)
                v = model(x, tt, condition) if condition is not None else model(x, tt)
                x = sched.step(v, t, x, return_dict=False)[0]
        return x
    if scheduler.num_steps != num_steps:
        raise ValueError(f"the scheduler has {scheduler.num_steps} steps, num_steps={num_steps}")
    scheduler = scheduler.to(noise.device)
    with torch.no_grad():
        for i in range(num_steps):
            k = torch.full((len(x),), i, dtype=torch.long, device=x.device)
            t = scheduler.timestep(k)
            out = model(x, t, condition) if condition is not None else model(x, t)
            x = scheduler.step(out.to(x.dtype), k, x)
    return x


def _guided(model: Denoiser, scale: float | None, condition, uncond) -> Denoiser:
    """``model`` with classifier-free guidance folded in: ``f(x, t, cond)`` runs the conditional
    and unconditional branches as one batch and returns ``u + scale (c - u)``."""
    if scale is None:
        return model

    def both(c, u):
        if isinstance(c, torch.Tensor):
            return torch.cat([c, u])
        return {k: torch.cat([c[k], u[k]]) for k in c}

    def f(x, t, cond):
        out = model(torch.cat([x, x]), torch.cat([t, t]), both(cond, uncond))
        o_c, o_u = out.chunk(2)
        return o_u + scale * (o_c - o_u)

    return f
