"""Vectorised steps for rectified-flow samplers with a per-sample step index (StreamFlow's
time-step batching).

A stream batch holds samples at different steps, so every coefficient of the update is gathered
per sample from a (num_steps,) table by the (B,) step indices ``k``. Two schedules:

- ``BatchedFlowScheduler``: the flow-matching Euler step ``x <- x + (sigma_{k+1} - sigma_k) v``
  on diffusers' ``FlowMatchEulerDiscreteScheduler`` schedule (shift, dynamic shifting ``mu``,
  custom sigmas), read from a diffusers scheduler so a user's sampler and the stream agree step
  for step.
- ``PeRFlowWindows``: piecewise rectified flow (PeRFlow, Yan et al. 2024), the model family
  StreamFlow accelerates. Time is cut into K windows [t_s, t_e); a step at time t_c first looks up
  its window, then turns the model output into a velocity towards the window's end. StreamFlow's
  Algorithm 1 does that lookup for every sample of the batch at once; here it is a vectorised
  comparison against the window ends, and the window's alpha-bar products are gathered per
  sample. The step follows the PeRFlow scheduler (``scheduler_perflow.py`` of
  magic-research/piecewise-rectified-flow) for its three parameterisations:
  ``velocity`` (the output is the velocity), ``ddim_eps`` and ``diff_eps`` (the output is a noise
  prediction of a DDPM-style model; the window end is ``lambda_t x + eta_t eps``).
"""

import itertools
import math
import numbers
from collections.abc import Sequence

import numpy as np
import torch

__all__ = ["BatchedFlowScheduler", "PeRFlowWindows", "flux_mu", "perflow_windows"]


def check_steps(num_steps) -> int:
    if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 1:
        raise ValueError(f"num_steps must be an integer >= 1, got {num_steps!r}")
    return num_steps


def _bcast(c: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """A (B,) coefficient shaped to broadcast over x (B, ...)."""
    return c.view(-1, *([1] * (x.dim() - 1)))


class _Tables:
    """Per-step tables on one device; ``to`` moves them all."""

    _tables: tuple[str, ...] = ()  # every tensor attribute
    _step_tables: tuple[str, ...] = ()  # those indexed by the step (cut by drop_first)

    def to(self, device):
        for name in self._tables:
            setattr(self, name, getattr(self, name).to(device))
        return self

    def drop_first(self, start: int):
        """The schedule from step ``start`` on (image-to-image: fewer steps from a noised image)."""
        if not 0 <= start < self.num_steps:
            raise ValueError(f"start must be in [0, {self.num_steps}), got {start}")
        for name in self._step_tables:
            setattr(self, name, getattr(self, name)[start:])
        self.num_steps -= start
        return self


class BatchedFlowScheduler(_Tables):
    """Euler steps with a per-sample step index ``k`` (B,) on diffusers' flow-matching schedule.

    Args:
        num_steps: sampling steps.
        shift: the schedule's time shift (SD3 uses 3.0).
        num_train_timesteps: the model's time scale (the time input is ``sigma * this``).
        sigmas: custom sigmas (num_steps,) instead of the shifted linear ones.
        mu: the dynamic-shifting parameter (Flux computes it from the image's token count); needs
            ``use_dynamic_shifting``.
        use_dynamic_shifting: shift by ``exp(mu)`` as Flux does.

    A diffusers scheduler instance (with its config) is taken by :meth:`from_diffusers`.
    """

    _tables = _step_tables = ("sigmas", "timesteps", "dt")

    def __init__(
        self,
        num_steps: int,
        shift: float = 1.0,
        num_train_timesteps: int = 1000,
        sigmas: Sequence[float] | None = None,
        mu: float | None = None,
        use_dynamic_shifting: bool = False,
    ):
        from diffusers import FlowMatchEulerDiscreteScheduler

        if mu is not None and not use_dynamic_shifting:
            raise ValueError("mu is the dynamic-shifting parameter: pass use_dynamic_shifting=True")
        ref = FlowMatchEulerDiscreteScheduler(
            num_train_timesteps=num_train_timesteps,
            shift=shift,
            use_dynamic_shifting=use_dynamic_shifting,
        )
        self._read(ref, check_steps(num_steps), sigmas, mu)

    @classmethod
    def from_diffusers(
        cls,
        scheduler,
        num_steps: int,
        sigmas: Sequence[float] | None = None,
        mu: float | None = None,
    ) -> "BatchedFlowScheduler":
        """The schedule a diffusers ``FlowMatchEulerDiscreteScheduler`` (any config: shift,
        dynamic shifting, Karras / exponential / beta sigmas) sets for ``num_steps``; the
        scheduler itself is not modified (a copy is set)."""
        import copy

        from diffusers import FlowMatchEulerDiscreteScheduler

        if not isinstance(scheduler, FlowMatchEulerDiscreteScheduler):
            raise TypeError(
                "scheduler must be a diffusers FlowMatchEulerDiscreteScheduler (or use "
                f"PeRFlowWindows for PeRFlow models), got {type(scheduler).__name__}"
            )
        if scheduler.config.get("stochastic_sampling", False):
            raise ValueError(
                "stochastic_sampling re-noises every step; the stream implements the "
                "deterministic Euler step only"
            )
        dynamic = scheduler.config.get("use_dynamic_shifting", False)
        if dynamic and mu is None:
            raise ValueError("this scheduler uses dynamic shifting: pass mu (see `flux_mu`)")
        if mu is not None and not dynamic:
            raise ValueError("mu is given but this scheduler does not use dynamic shifting")
        self = cls.__new__(cls)
        self._read(copy.deepcopy(scheduler), check_steps(num_steps), sigmas, mu)
        return self

    def _read(self, ref, num_steps, sigmas, mu):
        if sigmas is not None:
            sigmas = [float(s) for s in sigmas]
            if len(sigmas) != num_steps:
                raise ValueError(
                    f"sigmas must have num_steps={num_steps} values, got {len(sigmas)}"
                )
            if not all(math.isfinite(v) and 0 < v <= 1 for v in sigmas) or any(
                b >= a for a, b in itertools.pairwise(sigmas)
            ):
                raise ValueError(f"sigmas must decrease strictly within (0, 1] (noise to data), "
                                 f"got {sigmas}")  # fmt: skip
            ref.set_timesteps(sigmas=sigmas, mu=mu)
        else:
            ref.set_timesteps(num_steps, mu=mu)
        self.num_steps = num_steps
        self.sigmas = ref.sigmas.float().clone()  # (num_steps + 1,), ends at the terminal sigma
        self.timesteps = ref.timesteps.float().clone()  # (num_steps,)
        self.dt = self.sigmas[1:] - self.sigmas[:-1]  # (num_steps,), negative
        self.shift = ref.config.shift
        self.num_train_timesteps = ref.config.num_train_timesteps

    def timestep(self, k: torch.Tensor) -> torch.Tensor:
        """The model's time input for step indices k (B,)."""
        return self.timesteps[k]

    def scale_noise(self, image: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """The noised image the first step starts from: ``sigma_0 noise + (1 - sigma_0) image``
        (diffusers' ``scale_noise``)."""
        s = self.sigmas[0].to(image.dtype)
        return s * noise + (1.0 - s) * image

    def step(self, model_output: torch.Tensor, k: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """``x + dt_k v`` with a per-sample ``dt_k`` (k (B,) long, x and v (B, ...)); computed in
        float32 and cast back, as diffusers' step does for half-precision latents."""
        out = x.float() + _bcast(self.dt[k], x) * model_output.float()
        return out.to(x.dtype)


def flux_mu(image_seq_len: int, config) -> float:
    """Flux's dynamic-shift parameter for an image of ``image_seq_len`` packed tokens."""
    if isinstance(image_seq_len, bool) or not isinstance(image_seq_len, numbers.Integral):
        raise ValueError(f"image_seq_len must be a positive int (tokens), got {image_seq_len!r}")
    if image_seq_len < 1:
        raise ValueError(f"image_seq_len must be a positive int (tokens), got {image_seq_len!r}")
    if not hasattr(config, "get"):
        raise TypeError(f"config must be the scheduler's config (a mapping), got {type(config)}")
    base_len, max_len = config.get("base_image_seq_len", 256), config.get("max_image_seq_len", 4096)
    base, top = config.get("base_shift", 0.5), config.get("max_shift", 1.15)
    m = (top - base) / (max_len - base_len)
    return image_seq_len * m + base - m * base_len


def perflow_windows(num_windows: int, t_noise: float = 1.0, t_clean: float = 0.0):
    """Window starts and ends, from noise to clean: K equal windows, e.g. K = 4 gives starts
    (1, .75, .5, .25) and ends (.75, .5, .25, 0)."""
    if not t_clean < t_noise:
        raise ValueError(f"t_clean must be below t_noise, got {t_clean} and {t_noise}")
    starts = [i / num_windows for i in range(num_windows, 0, -1)]
    return starts, [*starts[1:], t_clean]


class PeRFlowWindows(_Tables):
    """PeRFlow's piecewise-linear flow with per-sample windows (StreamFlow, Algorithm 1).

    Args:
        num_steps: sampling steps, split over the windows as PeRFlow does (the first
            ``num_steps % num_windows`` windows get one step more); at least ``num_windows``.
        num_windows: K, the number of time windows the model was trained on.
        prediction_type: ``"ddim_eps"`` and ``"diff_eps"`` (the model predicts noise, as
            PeRFlow-accelerated Stable Diffusion does) or ``"velocity"``.
        beta_start, beta_end, beta_schedule, num_train_timesteps: the DDPM noise schedule of
            the eps-parameterised model (``scaled_linear`` 0.00085 -> 0.012 for Stable Diffusion).

    The model's time input is the integer time ``1000 t`` (PeRFlow's convention: 1000 at the
    start of the first window).
    """

    _tables = ("timesteps", "next_timesteps", "alphas_cumprod", "starts", "ends")
    _step_tables = ("timesteps", "next_timesteps")
    PREDICTIONS = ("ddim_eps", "diff_eps", "velocity")

    def __init__(
        self,
        num_steps: int,
        num_windows: int = 4,
        prediction_type: str = "ddim_eps",
        beta_start: float = 0.00085,
        beta_end: float = 0.012,
        beta_schedule: str = "scaled_linear",
        num_train_timesteps: int = 1000,
        t_noise: float = 1.0,
        t_clean: float = 0.0,
    ):
        check_steps(num_steps)
        if isinstance(num_windows, bool) or not isinstance(num_windows, int) or num_windows < 1:
            raise ValueError(f"num_windows must be an integer >= 1, got {num_windows!r}")
        if num_steps < num_windows:
            # PeRFlow silently raises the step count to K; a stream's width must not change.
            raise ValueError(f"num_steps ({num_steps}) must be >= num_windows ({num_windows})")
        if prediction_type not in self.PREDICTIONS:
            raise ValueError(
                f"prediction_type must be one of {self.PREDICTIONS}, got {prediction_type!r}"
            )
        T = num_train_timesteps
        if beta_schedule == "linear":
            betas = torch.linspace(beta_start, beta_end, T, dtype=torch.float32)
        elif beta_schedule == "scaled_linear":
            betas = torch.linspace(beta_start**0.5, beta_end**0.5, T, dtype=torch.float32) ** 2
        elif beta_schedule == "squaredcos_cap_v2":
            f = lambda t: math.cos((t + 0.008) / 1.008 * math.pi / 2) ** 2  # noqa: E731
            betas = torch.tensor(
                [min(1 - f((i + 1) / T) / f(i / T), 0.999) for i in range(T)], dtype=torch.float32
            )
        else:
            raise ValueError(
                "beta_schedule must be linear, scaled_linear or squaredcos_cap_v2, got "
                f"{beta_schedule!r}"
            )
        self.alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.window_starts, self.window_ends = perflow_windows(num_windows, t_noise, t_clean)
        # As tensors that live with the other tables: a step builds no tensor from host data.
        self.starts = torch.tensor(self.window_starts, dtype=torch.float32)
        self.ends = torch.tensor(self.window_ends, dtype=torch.float32)
        self.precision = 1.0 / T
        # PeRFlow's schedule: per window, an endpoint-free linspace from its start to its end,
        # in integer model time.
        per = [num_steps // num_windows + (i < num_steps % num_windows) for i in range(num_windows)]
        ts = np.concatenate(
            [
                np.linspace(s, e, num=n, endpoint=False)
                for s, e, n in zip(self.window_starts, self.window_ends, per, strict=True)
            ]
        )
        timesteps = torch.from_numpy((ts * T).astype(np.int64))
        self.timesteps = timesteps.float()  # (num_steps,) model time, e.g. 1000, 750, 500, 250
        self.next_timesteps = torch.cat([timesteps[1:], timesteps.new_zeros(1)]).float()
        self.num_steps, self.num_windows = num_steps, num_windows
        self.prediction_type, self.num_train_timesteps = prediction_type, T

    @classmethod
    def from_scheduler(cls, scheduler, num_steps: int) -> "PeRFlowWindows":
        """From a PeRFlow scheduler instance (the authors' ``PeRFlowScheduler``): its config's
        windows, parameterisation and noise schedule."""
        cfg = scheduler.config
        if cfg.get("trained_betas") is not None:
            raise ValueError("a PeRFlow scheduler with trained_betas is not supported")
        return cls(
            num_steps,
            num_windows=cfg.get("num_time_windows", 4),
            prediction_type=cfg.get("prediction_type", "ddim_eps"),
            beta_start=cfg.get("beta_start", 0.00085),
            beta_end=cfg.get("beta_end", 0.012),
            beta_schedule=cfg.get("beta_schedule", "scaled_linear"),
            num_train_timesteps=cfg.get("num_train_timesteps", 1000),
            t_noise=cfg.get("t_noise", 1.0),
            t_clean=cfg.get("t_clean", 0.0),
        )

    def timestep(self, k: torch.Tensor) -> torch.Tensor:
        """The model's time input for step indices k (B,)."""
        return self.timesteps[k]

    def lookup_windows(self, t_c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Window (start, end) of every time point t_c (B,) in [0, 1], in one vectorised pass.

        A time belongs to the first window whose end lies below it, up to a tenth of a training
        step (PeRFlow's tolerance: 0.75 + 1e-5 still belongs to [0.75, 0.5))."""
        ends = self.ends.to(t_c.device)  # a no-op once the scheduler is on t_c's device
        idx = ((t_c[:, None] - 0.1 * self.precision) <= ends[None, :]).sum(1)
        idx = idx.clamp(max=self.num_windows - 1)
        return self.starts.to(t_c.device)[idx], ends[idx]

    def scale_noise(self, image: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """The noised image the first step starts from (image-to-image): PeRFlow's
        ``add_noise``, DDPM's forward process at the first kept timestep t_0,
        ``sqrt(abar) image + sqrt(1 - abar) noise`` with ``abar = alphas_cumprod[t_0 - 1]``,
        for every parameterisation (as the authors' scheduler does)."""
        ac = self.alphas_cumprod.to(image.device)[self.timesteps[0].long() - 1].to(image.dtype)
        return ac.sqrt() * image + (1 - ac).sqrt() * noise

    def step(self, model_output: torch.Tensor, k: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """One PeRFlow step for every sample at its own step k (B,): window lookup, the model
        output turned into a velocity to the window's end, then ``x + dt v``."""
        t = self.timesteps[k]
        dt = _bcast((self.next_timesteps[k] - t) / self.num_train_timesteps, x)
        # In float32 whatever the latents' dtype, cast back at the end (as diffusers' steps do).
        xf, out = x.float(), model_output.float()
        if self.prediction_type == "velocity":
            return (xf + dt * out).to(x.dtype)
        t_c = t / self.num_train_timesteps
        t_s, t_e = self.lookup_windows(t_c)
        T = self.num_train_timesteps
        ac_s = self.alphas_cumprod[(t_s * T - 1).long()]
        ac_e = self.alphas_cumprod[(t_e * T - 1).long().clamp(min=0)]
        if self.prediction_type == "ddim_eps":
            lam_s = (ac_e / ac_s) ** 0.5
            eta_s = (1 - ac_e) ** 0.5 - (ac_e / ac_s * (1 - ac_s)) ** 0.5
        else:  # diff_eps
            gamma = (ac_s / ac_e) ** 0.5
            lam_s = 1 / gamma
            eta_s = -((1 - gamma**2) ** 0.5) / gamma
        denom = lam_s * (t_c - t_s) + (t_e - t_c)
        lam_t = lam_s * (t_e - t_s) / denom
        eta_t = eta_s * (t_e - t_c) / denom
        # The velocity that reaches the window's end from here (PeRFlow's step).
        win_end = _bcast(lam_t, x) * xf + _bcast(eta_t, x) * out
        v = (win_end - xf) / _bcast(t_e - t_c, x)
        return (xf + dt * v).to(x.dtype)
