"""Vectorised Euler steps for rectified-flow / flow-matching samplers with per-sample time steps.

diffusers' ``FlowMatchEulerDiscreteScheduler`` steps a whole batch at one time step:
``x <- x + (sigma_{k+1} - sigma_k) v(x, t_k)``. ``BatchedFlowScheduler`` takes the same sigma
schedule (it asks diffusers for it, so the two agree by construction and a test checks it) but a
(B,) tensor of step indices, so every sample of one model call can sit at its own step (StreamFlow's
time-step batching, Alg. 1 without PeRFlow windows).
"""

import torch
from diffusers import FlowMatchEulerDiscreteScheduler


class BatchedFlowScheduler:
    """Euler steps with a per-sample step index ``k`` (B,) on diffusers' flow-matching schedule."""

    def __init__(self, num_steps: int, shift: float = 1.0, num_train_timesteps: int = 1000):
        if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 1:
            raise ValueError(f"num_steps must be an integer >= 1, got {num_steps!r}")
        ref = FlowMatchEulerDiscreteScheduler(num_train_timesteps=num_train_timesteps, shift=shift)
        ref.set_timesteps(num_steps)
        self.num_steps = num_steps
        self.sigmas = ref.sigmas.float().clone()  # (num_steps + 1,), ends at 0
        self.timesteps = ref.timesteps.float().clone()  # (num_steps,)
        self.dt = self.sigmas[1:] - self.sigmas[:-1]  # (num_steps,), negative
        self.shift, self.num_train_timesteps = shift, num_train_timesteps

    def to(self, device) -> "BatchedFlowScheduler":
        self.sigmas, self.timesteps, self.dt = (
            t.to(device) for t in (self.sigmas, self.timesteps, self.dt)
        )
        return self

    def timestep(self, k: torch.Tensor) -> torch.Tensor:
        """The model's time input for step indices k (B,)."""
        return self.timesteps[k]

    def step(self, v: torch.Tensor, k: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """``x + dt_k v`` with a per-sample ``dt_k`` (k (B,) long, x and v (B, ...))."""
        dt = self.dt[k].view(-1, *([1] * (x.dim() - 1))).to(x.dtype)
        return x + dt * v
