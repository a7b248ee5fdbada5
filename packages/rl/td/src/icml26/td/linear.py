"""TD(0) from sampled transitions: for environments, replay buffers and training loops.

``td0_sweep`` runs the paper's experiments on a known chain ``P``. A learner rarely has ``P``; it
has transitions ``(phi(s), r, phi(s'))``. The same update (paper, linear TD(0); the regularised
form is its Markov-sampling algorithm):

    delta_i     = r_i + gamma * (1 - done_i) * phi(s'_i)^T theta - phi(s_i)^T theta
    theta_{t+1} = theta_t + eta_t * (mean_i delta_i * phi(s_i) - lambda * theta_t)

over a batch of B transitions (B = 1 is the textbook update), with ``eta_t`` from any schedule
of ``icml26.td.schedules`` (the exponential one by default) or a constant.

- ``td0_update``: the functional form, one step on a batch; returns the new theta and the
  TD errors.
- ``LinearTD``: the learner holding theta, the step counter and the schedule; ``update`` takes a
  batch of transitions (from a gymnasium environment, a replay buffer, a dataset...).

``done`` marks transitions whose next state is terminal (no bootstrap). For the continuing form
of an episodic task, which the paper analyses, pass the reset state as ``s'`` and ``done = 0``
(``gymnasium_transitions`` does this).
"""

from __future__ import annotations

import torch

from icml26.td.schedules import ExponentialStepSize, StepSizeSchedule
from icml26.testing.checks import number


def _tensor(name: str, x, **kw) -> torch.Tensor:
    """``torch.as_tensor(x, **kw)``, or a TypeError that names the argument (a string reward
    was "new(): invalid data type 'str'")."""
    try:
        return torch.as_tensor(x, **kw)
    except (TypeError, ValueError, RuntimeError) as e:
        raise TypeError(f"{name} must be numbers (a tensor or array), got {x!r:.60}: {e}") from None


def _batch(phi, r, phi_next, done) -> tuple[torch.Tensor, ...]:
    phi = _tensor("phi", phi)
    if phi.ndim == 1:  # one transition
        phi = phi[None]
    if phi.ndim != 2 or phi.shape[0] == 0:
        raise ValueError(f"phi must be (B, d) features of B >= 1 states, got {tuple(phi.shape)}")
    B, d = phi.shape
    phi_next = _tensor("phi_next", phi_next, device=phi.device, dtype=phi.dtype)
    if phi_next.shape[-1:] != (d,) or phi_next.numel() != B * d:
        raise ValueError(f"phi_next must be ({B}, {d}) like phi, got {tuple(phi_next.shape)}")
    phi_next = phi_next.reshape(B, d)
    r = _tensor("r", r, device=phi.device, dtype=phi.dtype).reshape(-1)
    done = (
        torch.zeros(B, device=phi.device, dtype=phi.dtype)
        if done is None
        else _tensor("done", done, device=phi.device).reshape(-1).to(phi.dtype)
    )
    if phi_next.shape[0] != B or r.shape[0] != B or done.shape[0] != B:
        raise ValueError(
            f"a batch of {B} transitions needs phi_next ({B}, {d}), r ({B},) and done ({B},); "
            f"got {tuple(phi_next.shape)}, {tuple(r.shape)}, {tuple(done.shape)}"
        )
    for name, x in (("phi", phi), ("phi_next", phi_next), ("r", r)):
        if not torch.isfinite(x).all():
            raise ValueError(f"{name} holds NaN or inf")
    return phi, r, phi_next, done


def td0_update(
    theta: torch.Tensor,
    phi,
    r,
    phi_next,
    gamma: float,
    eta: float,
    done=None,
    reg: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One TD(0) step on a batch: (new theta (d,), TD errors delta (B,)).

    ``phi``, ``phi_next``: (B, d) features of the states and next states (or (d,) for one);
    ``r``: (B,) rewards; ``done``: (B,) 1 where ``s'`` is terminal; ``reg``: lambda of the
    regularised update. Computed in ``theta``'s dtype on ``theta``'s device.
    """
    gamma = number("gamma", gamma, low=0, below=1)
    eta = number("eta", eta, above=0)
    reg = number("reg", reg, low=0)
    phi, r, phi_next, done = _batch(
        _tensor("phi", phi, device=theta.device, dtype=theta.dtype), r, phi_next, done
    )
    if phi.shape[1] != theta.shape[-1]:
        raise ValueError(f"features have d = {phi.shape[1]}, theta has {theta.shape[-1]}")
    delta = r + gamma * (1 - done) * (phi_next @ theta) - phi @ theta  # (B,)
    step = (delta[:, None] * phi).mean(0) - reg * theta  # (d,)
    return theta + eta * step, delta


class LinearTD:
    """Linear TD(0) learning ``V(s) = phi(s)^T theta`` from batches of sampled transitions.

    Args:
        dim: the feature dimension d.
        gamma: discount in [0, 1).
        schedule: the step sizes: a ``StepSizeSchedule`` (e.g. ``ExponentialStepSize(eta0, T)``,
            the paper's, which needs only the number of updates T), a float for a constant step,
            or None for ``ExponentialStepSize(eta0, horizon)``.
        horizon: the number of updates T, used when ``schedule`` is None.
        eta0: the initial step of the default exponential schedule.
        reg: lambda of the regularised update (the paper's choice for Markov sampling is of order
            ``1/sqrt(T)``; 0 for i.i.d. samples).
        device, dtype: where theta lives (float64 by default).
    """

    def __init__(
        self,
        dim: int,
        gamma: float,
        schedule: StepSizeSchedule | float | None = None,
        horizon: int | None = None,
        eta0: float = 0.5,
        reg: float = 0.0,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float64,
    ):
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim must be an integer >= 1, got {dim!r}")
        gamma = number("gamma", gamma, low=0, below=1)
        reg = number("reg", reg, low=0)
        if schedule is None:
            if horizon is None:
                raise ValueError(
                    "give the number of updates (horizon=T) for the exponential schedule, or a "
                    "schedule / constant step"
                )
            schedule = ExponentialStepSize(eta0, horizon)
        self.schedule = schedule
        self.gamma, self.reg = float(gamma), float(reg)
        self.theta = torch.zeros(dim, device=device, dtype=dtype)
        self.t = 0  # updates made so far

    @property
    def eta(self) -> float:
        """The step size of the next update."""
        if isinstance(self.schedule, int | float):
            return float(self.schedule)
        horizon = getattr(self.schedule, "horizon", None)
        if horizon is not None and self.t >= horizon:
            raise ValueError(
                f"LinearTD made its {horizon} updates: the exponential schedule is defined for "
                "t < T; create a LinearTD with a larger horizon for a longer run"
            )
        return self.schedule(self.t)

    def update(self, phi, r, phi_next, done=None) -> torch.Tensor:
        """One TD(0) step on a batch of transitions; returns the TD errors (B,)."""
        self.theta, delta = td0_update(
            self.theta, phi, r, phi_next, self.gamma, self.eta, done, self.reg
        )
        self.t += 1
        return delta

    def value(self, phi) -> torch.Tensor:
        """``V = phi @ theta`` for features (..., d)."""
        return torch.as_tensor(phi, device=self.theta.device, dtype=self.theta.dtype) @ self.theta
