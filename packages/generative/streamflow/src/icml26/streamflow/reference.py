"""PeRFlow's own sequential sampler, one time step at a time: the reference the stream's
vectorised windows are held to.

``PeRFlowSequential`` follows ``PeRFlowScheduler`` of magic-research/piecewise-rectified-flow
(src/scheduler_perflow.py) step for step: a Python loop finds the window of a scalar time, scalar
arithmetic makes the window coefficients, and ``dt`` comes from searching the timestep list. It
shares no code with :class:`~icml26.streamflow.scheduler.PeRFlowWindows`.
"""

import numpy as np
import torch


class PeRFlowSequential:
    """PeRFlow's scheduler for a batch at ONE time step (DDPM betas: scaled_linear
    0.00085 -> 0.012 over 1000 steps, as PeRFlow-accelerated Stable Diffusion uses)."""

    def __init__(self, num_steps: int, num_windows: int = 4, prediction_type: str = "ddim_eps"):
        betas = torch.linspace(0.00085**0.5, 0.012**0.5, 1000, dtype=torch.float32) ** 2
        self.alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        w = [1.0 * i / num_windows for i in range(1, num_windows + 1)][::-1]
        self.starts, self.ends = w, [*w[1:], 0]
        self.prediction_type = prediction_type
        ts = []
        for i in range(num_windows):
            n = num_steps // num_windows + (1 if i < num_steps % num_windows else 0)
            ts.append(np.linspace(self.starts[i], self.ends[i], num=n, endpoint=False))
        self.timesteps = torch.from_numpy((np.concatenate(ts) * 1000).astype(np.int64))

    def window(self, tp) -> tuple[float, float]:
        """The (start, end) of the window a scalar time belongs to."""
        idx = 0
        while (tp - 0.1 * (1.0 / 1000)) <= self.ends[idx]:
            idx += 1
        return self.starts[idx], self.ends[idx]

    def step(self, out: torch.Tensor, timestep: torch.Tensor, sample: torch.Tensor):
        """One step of every sample from the scalar integer ``timestep``."""
        if self.prediction_type == "velocity":
            v = out
        else:
            t_c = timestep / 1000
            s, e = self.window(t_c)
            t_s, t_e = torch.ones_like(t_c) * s, torch.ones_like(t_c) * e
            a_s = self.alphas_cumprod[(t_s * 1000 - 1).long()]
            a_e = self.alphas_cumprod[torch.clamp((t_e * 1000 - 1).long(), min=0)]
            if self.prediction_type == "ddim_eps":
                lam_s = (a_e / a_s) ** 0.5
                eta_s = (1 - a_e) ** 0.5 - (a_e / a_s * (1 - a_s)) ** 0.5
            else:
                gamma = (a_s / a_e) ** 0.5
                lam_s, eta_s = 1 / gamma, -1 * (1 - gamma**2) ** 0.5 / gamma
            lam_t = (lam_s * (t_e - t_s)) / (lam_s * (t_c - t_s) + (t_e - t_c))
            eta_t = (eta_s * (t_e - t_c)) / (lam_s * (t_c - t_s) + (t_e - t_c))
            v = (lam_t * sample + eta_t * out - sample) / (t_e - t_c)
        idx = torch.argwhere(torch.where(self.timesteps == timestep, 1, 0))
        prev = self.timesteps[idx + 1] if (idx + 1) < len(self.timesteps) else 0
        return sample + ((prev - timestep) / 1000) * v

    def add_noise(self, image: torch.Tensor, noise: torch.Tensor, timestep) -> torch.Tensor:
        """DDPM's forward process at an integer timestep (alphas_cumprod indexed from 0)."""
        a = self.alphas_cumprod[int(timestep) - 1]
        return a**0.5 * image + (1 - a) ** 0.5 * noise

    def sample(
        self, model, noise: torch.Tensor, condition=None, image=None, start: int = 0
    ) -> torch.Tensor:
        """The sequential loop: every sample of ``noise`` (B, ...) through all steps; with
        ``image``, image-to-image as diffusers' img2img pipelines run a scheduler: the steps from
        ``start`` on, from ``add_noise(image, noise, timesteps[start])``."""
        steps = self.timesteps[start:]
        x = noise if image is None else self.add_noise(image, noise, steps[0])
        with torch.no_grad():
            for t in steps.to(noise.device):
                tt = t.expand(len(x))
                out = model(x, tt, condition) if condition is not None else model(x, tt)
                x = self.step(out, t, x)
        return x
