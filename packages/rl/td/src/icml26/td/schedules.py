"""Step-size schedules for TD(0): the paper's exponential schedule and the baselines.

Every schedule maps a step index ``t = 0, 1, ...`` to ``eta_t`` (``schedule(t)``) and gives the
whole sequence of a run as a tensor (``schedule.values(horizon)``, shape (horizon,)).
"""

import math
import warnings
from abc import ABC, abstractmethod

import torch
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LRScheduler


def _positive(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite positive number, got {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")
    return float(value)


def _horizon(value, name: str = "horizon") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return value


def _index(t) -> int:
    if isinstance(t, bool) or not isinstance(t, int) or t < 0:
        raise ValueError(f"t must be an integer >= 0, got {t!r}")
    return t


class StepSizeSchedule(ABC):
    """A step-size sequence ``eta_t``, t = 0, 1, ..."""

    label: str = "schedule"

    @abstractmethod
    def values(self, horizon: int) -> torch.Tensor:
        """``eta_0 .. eta_{horizon-1}`` as a float64 tensor of shape (horizon,)."""

    def __call__(self, t: int) -> float:
        """``eta_t`` (subclasses with a closed form answer in O(1))."""
        return self.values(_index(t) + 1)[t].item()

    def segment(self, start: int, stop: int) -> torch.Tensor:
        """``eta_start .. eta_{stop-1}`` (float64): what a long run asks for, chunk by chunk.
        Subclasses with a closed form compute only those steps."""
        return self.values(stop)[start:]

    def _steps(self, start: int, stop: int) -> torch.Tensor:
        if not 0 <= start < stop:
            raise ValueError(f"a segment needs 0 <= start < stop, got {start}, {stop}")
        return torch.arange(start, stop, dtype=torch.float64)


class ConstantStepSize(StepSizeSchedule):
    """``eta_t = eta``: converges linearly to a noise ball of radius O(eta)."""

    def __init__(self, eta: float):
        self.eta = _positive(eta, "eta")
        self.label = f"constant {self.eta:g}"

    def values(self, horizon: int) -> torch.Tensor:
        return torch.full((_horizon(horizon),), self.eta, dtype=torch.float64)

    def __call__(self, t: int) -> float:
        _index(t)
        return self.eta

    def segment(self, start: int, stop: int) -> torch.Tensor:
        return torch.full_like(self._steps(start, stop), self.eta)


class InverseSqrtStepSize(StepSizeSchedule):
    """``eta_t = eta0 / sqrt(t + 1)``: the problem-independent decay of robust SA analyses."""

    def __init__(self, eta0: float):
        self.eta0 = _positive(eta0, "eta0")
        self.label = f"1/sqrt(t) {self.eta0:g}"

    def values(self, horizon: int) -> torch.Tensor:
        return self.segment(0, _horizon(horizon))

    def segment(self, start: int, stop: int) -> torch.Tensor:
        return self.eta0 / (self._steps(start, stop) + 1).sqrt()


class InverseTimeStepSize(StepSizeSchedule):
    """``eta_t = c / (t + t0)``: the classical 1/t family. With ``c`` and ``t0`` tuned on a grid in
    hindsight it is the strongest decaying schedule a practitioner could pick (the omega-aware
    ``OracleStepSize`` is one member, with constants from a worst-case analysis)."""

    def __init__(self, c: float, t0: float):
        self.c = _positive(c, "c")
        self.t0 = _positive(t0, "t0")
        self.label = f"c/(t+t0) c={self.c:g} t0={self.t0:g}"

    def values(self, horizon: int) -> torch.Tensor:
        return self.segment(0, _horizon(horizon))

    def segment(self, start: int, stop: int) -> torch.Tensor:
        return self.c / (self._steps(start, stop) + self.t0)

    def __call__(self, t: int) -> float:
        return self.c / (_index(t) + self.t0)


class MixingTimeStepSize(StepSizeSchedule):
    """``eta_t = c / (tau_mix * log(t + 2) * sqrt(t + 1))``: the mixing-time-aware schedule of
    unprojected TD(0) with Polyak-Ruppert averaging under Markovian sampling (Lee et al., COLT
    2026, "A single stepsize suffices for unprojected linear TD(0)": ``eta_t ~ 1/(tau_mix log(t)
    sqrt(t))``, no omega). The shift of t (so the first step is finite) and the constant ``c``
    are ours; use it with Polyak-Ruppert averaging, as that analysis does. It needs tau_mix,
    which the paper's schedule does not."""

    def __init__(self, c: float, tau_mix: float):
        self.c = _positive(c, "c")
        self.tau_mix = _positive(tau_mix, "tau_mix")
        self.label = f"mixing-time c={self.c:g} tau={self.tau_mix:g}"

    def values(self, horizon: int) -> torch.Tensor:
        return self.segment(0, _horizon(horizon))

    def segment(self, start: int, stop: int) -> torch.Tensor:
        t = self._steps(start, stop)
        return self.c / (self.tau_mix * (t + 2).log() * (t + 1).sqrt())

    def __call__(self, t: int) -> float:
        t = _index(t)
        return self.c / (self.tau_mix * math.log(t + 2) * math.sqrt(t + 1))


class OracleStepSize(StepSizeSchedule):
    """The omega-aware ``1/(omega (1 - gamma) t)`` decay, with the constants of Bhandari et al.
    (2018, Thm. 2(c)): ``eta_t = beta / (lam + t)``, ``beta = 2 / (omega (1 - gamma))``,
    ``lam = 16 / (omega (1 - gamma)^2)``. It needs omega, which practice does not have.
    """

    def __init__(self, omega: float, gamma: float):
        self.omega = _positive(omega, "omega")
        if not 0 <= gamma < 1:
            raise ValueError(f"gamma must lie in [0, 1), got {gamma}")
        self.gamma = gamma
        self.beta = 2.0 / (self.omega * (1 - gamma))
        self.lam = 16.0 / (self.omega * (1 - gamma) ** 2)
        self.label = "oracle 1/(omega(1-gamma)t)"

    def values(self, horizon: int) -> torch.Tensor:
        return self.segment(0, _horizon(horizon))

    def segment(self, start: int, stop: int) -> torch.Tensor:
        return self.beta / (self.lam + self._steps(start, stop))

    def __call__(self, t: int) -> float:
        return self.beta / (self.lam + _index(t))


class ExponentialStepSize(LRScheduler, StepSizeSchedule):
    """The paper's schedule: ``eta_t = eta0 * alpha^t`` with ``alpha = (beta / T)^(1/T)``.

    It needs the horizon T, not omega nor the mixing time: the step decays geometrically from
    ``eta0`` to ``eta0 * beta / T`` at the end of the run.

    Also a ``torch.optim.lr_scheduler.LRScheduler``: pass an optimizer and call ``step()`` once
    per update, as with any scheduler. ``eta0`` then sets every group's initial learning rate
    (``eta0=None`` keeps the optimizer's own learning rates and decays each by ``alpha^t``).
    """

    def __init__(
        self,
        eta0: float | None,
        horizon: int,
        beta: float = 1.0,
        optimizer: Optimizer | None = None,
        last_epoch: int = -1,
    ):
        self.horizon = _horizon(horizon)
        self.beta = _positive(beta, "beta")
        if self.beta > self.horizon:
            raise ValueError(
                f"beta must be <= horizon (the step must decay), got {beta} > {horizon}"
            )
        if eta0 is None and optimizer is None:
            raise ValueError("eta0 is required unless an optimizer supplies the learning rates")
        self.eta0 = None if eta0 is None else _positive(eta0, "eta0")
        self.alpha = (self.beta / self.horizon) ** (1.0 / self.horizon)
        self.label = f"exponential {self.eta0:g}" if self.eta0 is not None else "exponential"
        if optimizer is not None:
            if self.eta0 is not None:
                for group in optimizer.param_groups:
                    group["lr"] = self.eta0
                    group["initial_lr"] = self.eta0
            super().__init__(optimizer, last_epoch)
        else:
            self.optimizer = None

    def values(self, horizon: int | None = None) -> torch.Tensor:
        horizon = self.horizon if horizon is None else _horizon(horizon)
        if self.eta0 is None:
            raise ValueError("this schedule takes its learning rates from the optimizer")
        return self.segment(0, horizon)

    def segment(self, start: int, stop: int) -> torch.Tensor:
        """``eta0 * alpha^t`` for t in [start, stop); past the horizon it keeps decaying."""
        if self.eta0 is None:
            raise ValueError("this schedule takes its learning rates from the optimizer")
        return self.eta0 * torch.exp(self._steps(start, stop) * math.log(self.alpha))

    def __call__(self, t: int) -> float:
        """``eta_t = eta0 * alpha^t``, the same number as ``values(T)[t]``."""
        if self.eta0 is None:
            raise ValueError("this schedule takes its learning rates from the optimizer")
        return self.eta0 * math.exp(_index(t) * math.log(self.alpha))

    def get_lr(self) -> list[float]:
        return [base * self.alpha ** max(self.last_epoch, 0) for base in self.base_lrs]

    def _get_closed_form_lr(self) -> list[float]:
        return self.get_lr()

    def step(self, epoch: int | None = None) -> None:
        if self.optimizer is None:
            raise RuntimeError(
                "step() drives an optimizer's learning rate; this ExponentialStepSize has none. "
                "Pass optimizer=... or use schedule(t) / schedule.values(T)"
            )
        if self.last_epoch + 1 > self.horizon:
            warnings.warn(
                f"ExponentialStepSize stepped past its horizon ({self.horizon}); the learning "
                "rate keeps decaying geometrically",
                stacklevel=2,
            )
        super().step(epoch)


def exponential_step_size(t: int, horizon: int, eta0: float, beta: float = 1.0) -> float:
    """The paper's step size as a plain function of the step t and the horizon T:
    ``eta_t = eta0 * (beta / T)^(t / T)``. For loops that compute their own learning rate."""
    horizon = _horizon(horizon)
    eta0, beta = _positive(eta0, "eta0"), _positive(beta, "beta")
    if beta > horizon:
        raise ValueError(f"beta must be <= horizon (the step must decay), got {beta} > {horizon}")
    return eta0 * (beta / horizon) ** (_index(t) / horizon)
