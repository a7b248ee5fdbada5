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
) -> torch.Tensor:
    """The naive per-batch loop (the baseline): every sample of ``noise`` (B, ...) at the same
    step, one model call per step. Default: diffusers' ``FlowMatchEulerDiscreteScheduler.step``
    itself; with ``scheduler`` (a :class:`BatchedFlowScheduler` or :class:`PeRFlowWindows`), its
    step with a homogeneous step index. ``condition``: (B, ...) tensor or dict of them."""
    num_steps = check_steps(num_steps)
    if not isinstance(noise, torch.Tensor) or noise.ndim < 2 or len(noise) == 0:
        raise ValueError(f"noise must be a (B, ...) tensor with B >= 1, got "
                         f"{tuple(getattr(noise, 'shape', ()))}")  # fmt: skip
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
