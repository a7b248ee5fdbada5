"""Linear TD(0), vectorised over independent runs and step-size schedules.

The update (paper, TD(0) with linear function approximation):

    delta_t     = r_t + gamma * phi_t'^T theta_t - phi_t^T theta_t
    theta_{t+1} = theta_t + eta_t * (delta_t * phi_t - lambda * theta_t)

``lambda = 0`` is standard TD(0) (the i.i.d. algorithm); ``lambda > 0`` is the paper's
regularised TD(0) for Markovian sampling, with ``lambda`` of order ``1/sqrt(T)``. The last
iterate is returned; ``tail_average=True`` returns the mean of the last half of the iterates
instead (the tail-averaging baseline).

All K schedules x R runs advance together as one (K, R, d) tensor. Runs with the same index
share their samples across schedules (common random numbers), so schedules are compared on the
same trajectories.

The sweep runs on the device of the problem's tensors (``problem.to("cuda")``). The uniforms are
drawn on the CPU from one seeded generator and then moved, so a seed gives the same samples on
every device and the CPU results do not depend on where they would have been drawn.
"""

import math
from collections.abc import Sequence
from typing import Literal

import torch
from tqdm.auto import tqdm

from icml26.td.problems import MarkovRewardProcess, check_problem, stationary_distribution
from icml26.td.schedules import StepSizeSchedule

Sampling = Literal["iid", "markov"]
_CHUNK = 512  # steps of i.i.d. samples drawn at once


def _check_run_args(horizon, runs, sampling, reg):
    if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
        raise ValueError(f"horizon must be an integer >= 1, got {horizon!r}")
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be an integer >= 1, got {runs!r}")
    if sampling not in ("iid", "markov"):
        raise ValueError(f"sampling must be 'iid' or 'markov', got {sampling!r}")
    for value in reg:
        if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
            raise ValueError(f"reg must be a finite number >= 0, got {value!r}")


def td0_sweep(
    problem: MarkovRewardProcess,
    schedules: Sequence[StepSizeSchedule],
    horizon: int,
    runs: int,
    sampling: Sampling = "iid",
    reg: float | Sequence[float] = 0.0,
    seed: int = 0,
    tail_average: bool | Sequence[bool] = False,
    progress: bool = False,
    radius: float | Sequence[float | None] | None = None,
    polyak: bool | Sequence[bool] = False,
) -> torch.Tensor:
    """Run TD(0) for every schedule on the same ``runs`` sample streams.

    Args:
        problem: the chain, rewards, features and discount.
        schedules: K step-size schedules; each gives ``eta_0 .. eta_{horizon-1}``.
        horizon: T, the number of updates.
        runs: R independent runs per schedule.
        sampling: ``"iid"`` draws ``s ~ mu`` afresh each step (then ``s' ~ P(s, .)``);
            ``"markov"`` follows one trajectory per run, started from ``mu``.
        reg: the regularisation ``lambda`` (one value, or one per schedule).
        seed: seeds the sample streams.
        tail_average: return the mean of the last ``ceil(T/2)`` iterates (one flag, or one per
            schedule) instead of the last iterate.
        progress: show a tqdm bar.
        radius: projected TD (Bhandari et al., 2018): after each step theta is projected onto
            the ball ``||theta|| <= radius`` (one value, or one per schedule; None: no projection).
        polyak: return the Polyak-Ruppert average of all T iterates (one flag, or one per
            schedule) instead of the last iterate.

    Returns:
        (K, R, d) float64 tensor of final (or averaged) iterates, on ``problem``'s device.
        Runs that diverge give non-finite entries; they are not hidden.
    """
    K = len(schedules)
    if K == 0:
        raise ValueError("schedules is empty")
    regs = [float(reg)] * K if isinstance(reg, int | float) else [float(x) for x in reg]
    tails = [tail_average] * K if isinstance(tail_average, bool) else list(tail_average)
    radii = [radius] * K if radius is None or isinstance(radius, int | float) else list(radius)
    polyaks = [polyak] * K if isinstance(polyak, bool) else list(polyak)
    if len(regs) != K or len(tails) != K or len(radii) != K or len(polyaks) != K:
        raise ValueError(
            f"reg, tail_average, radius and polyak must be one value or {K} values (one per "
            "schedule)"
        )
    if any(t and p for t, p in zip(tails, polyaks, strict=True)):
        raise ValueError("a schedule averages its tail or all its iterates, not both")
    for value in radii:
        if value is not None and not (
            isinstance(value, int | float) and math.isfinite(value) and value > 0
        ):
            raise ValueError(f"radius must be None or a finite number > 0, got {value!r}")
    _check_run_args(horizon, runs, sampling, regs)
    for s in schedules:
        if not isinstance(s, StepSizeSchedule):
            raise TypeError(f"schedules must be StepSizeSchedule objects, got {type(s).__name__}")
        if getattr(s, "horizon", horizon) != horizon:
            raise ValueError(
                f"{s.label}: the schedule was built for horizon {s.horizon}, the run has {horizon}"
            )

    P, r, phi, gamma, mu = problem.P, problem.r, problem.phi, problem.gamma, problem.mu
    d = phi.shape[1]
    R = runs
    dev = P.device
    # The schedules are computed on the CPU, so every device steps with the same etas.
    etas = torch.stack([s.values(horizon) for s in schedules], 1).to(dev)  # (T, K)
    lam = torch.tensor(regs, dtype=torch.float64, device=dev)[:, None, None]  # (K, 1, 1)
    tail_mask = torch.tensor(tails, device=dev)[:, None, None]  # (K, 1, 1)
    polyak_mask = torch.tensor(polyaks, device=dev)[:, None, None]  # (K, 1, 1)
    project = any(x is not None for x in radii)
    rad = torch.tensor(
        [math.inf if x is None else float(x) for x in radii], dtype=torch.float64, device=dev
    )[:, None, None]  # (K, 1, 1)
    tail_start = horizon // 2
    gen = torch.Generator().manual_seed(seed)

    def uniform(*shape: int) -> torch.Tensor:
        return torch.rand(*shape, generator=gen, dtype=torch.float64).to(dev)

    cdf_P = P.cumsum(1)
    cdf_P[:, -1] = 1.0 + 1e-12  # rows end above every uniform draw despite rounding
    cdf_mu = mu.cumsum(0)
    cdf_mu[-1] = 1.0 + 1e-12

    theta = torch.zeros(K, R, d, dtype=torch.float64, device=dev)
    tail_sum = torch.zeros_like(theta)
    all_sum = torch.zeros_like(theta) if any(polyaks) else None
    state = torch.searchsorted(cdf_mu, uniform(R))
    bar = tqdm(
        total=horizon, disable=not progress, desc=f"TD(0) {sampling} T={horizon}", leave=False
    )
    t = 0
    while t < horizon:
        n = min(_CHUNK, horizon - t)
        if sampling == "iid":
            s = torch.searchsorted(cdf_mu, uniform(n, R))
        else:
            s = torch.empty(n, R, dtype=torch.long, device=dev)
            u = uniform(n, R)
            for i in range(n):  # a trajectory is sequential: s_{t+1} ~ P(s_t, .)
                s[i] = state
                state = torch.searchsorted(cdf_P[state], u[i : i + 1].T).squeeze(1)
        if sampling == "iid":
            u = uniform(n, R, 1)
            s_next = torch.searchsorted(cdf_P[s], u).squeeze(-1)  # (n, R)
        else:
            s_next = torch.cat([s[1:], state[None]], 0)
        phi_s, phi_next, r_s = phi[s], phi[s_next], r[s]  # (n, R, d), (n, R, d), (n, R)
        for i in range(n):
            # delta_t = r_t + gamma phi_t'^T theta_t - phi_t^T theta_t        (K, R)
            delta = r_s[i] + (theta * (gamma * phi_next[i] - phi_s[i])).sum(-1)
            # theta_{t+1} = theta_t + eta_t (delta_t phi_t - lambda theta_t)
            theta = theta + etas[t + i][:, None, None] * (delta[..., None] * phi_s[i] - lam * theta)
            if project:  # Pi_R(theta) = theta min(1, R / ||theta||)
                norm = theta.norm(dim=-1, keepdim=True)
                theta = theta * (rad / norm).clamp(max=1.0).nan_to_num(1.0)
            if t + i + 1 > tail_start:
                tail_sum += theta
            if all_sum is not None:
                all_sum += theta
        t += n
        bar.update(n)
    bar.close()
    tail_mean = tail_sum / (horizon - tail_start)
    out = torch.where(tail_mask, tail_mean, theta)
    if all_sum is not None:
        out = torch.where(polyak_mask, all_sum / horizon, out)
    return out


def td0(
    P,
    r,
    phi,
    gamma: float,
    schedule: StepSizeSchedule,
    horizon: int,
    runs: int = 1,
    sampling: Sampling = "iid",
    reg: float = 0.0,
    seed: int = 0,
    mu=None,
    tail_average: bool = False,
) -> torch.Tensor:
    """Linear TD(0) on the chain ``P`` (S, S) with rewards ``r`` (S,) and features ``phi`` (S, d).

    ``mu`` (S,) defaults to the stationary distribution of ``P``. Returns the last iterates,
    shape (runs, d) (or the tail averages with ``tail_average=True``), on ``P``'s device. See
    ``td0_sweep`` for the arguments and for running several schedules on the same samples.
    """
    P_, r_, phi_, mu_ = check_problem(P, r, phi, gamma, mu)
    if mu_ is None:
        mu_ = stationary_distribution(P_)
    problem = MarkovRewardProcess(P_, r_, phi_, gamma, mu_)
    return td0_sweep(problem, [schedule], horizon, runs, sampling, reg, seed, tail_average)[0]
