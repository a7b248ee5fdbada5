"""Linear TD(0), vectorised over problems, step-size schedules and independent runs.

The update (paper, TD(0) with linear function approximation):

    delta_t     = r_t + gamma * phi_t'^T theta_t - phi_t^T theta_t
    theta_{t+1} = theta_t + eta_t * (delta_t * phi_t - lambda * theta_t)

``lambda = 0`` is standard TD(0) (the i.i.d. algorithm); ``lambda > 0`` is the paper's
regularised TD(0) for Markovian sampling, with ``lambda`` of order ``1/sqrt(T)``. Prior work's
fixes for Markovian sampling are options of an ``Arm``: projection onto a ball (Bhandari et al.,
2018) and iterate averaging (the mean of the last half, or Polyak-Ruppert over all iterates).

``td0_grid`` advances M problems x K arms x R runs as one (M, K, R, d) tensor up to the largest
checkpoint and reads the iterates (or averages) at every checkpoint, so one pass gives a whole
error-against-T curve (the checkpoints of a run read one sample stream). Runs with the same index
share their samples across arms (common random numbers). ``td0_sweep`` is the one-problem,
one-horizon form.

The sweep runs on the device of the problems' tensors (``problem.to("cuda")``). The uniforms are
drawn on the CPU from one seeded generator and then moved, so a seed gives the same samples on
every device and the CPU results do not depend on where they would have been drawn.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch
from tqdm.auto import tqdm

from icml26.td.problems import MarkovRewardProcess, check_problem, stationary_distribution
from icml26.td.schedules import StepSizeSchedule

Sampling = Literal["iid", "markov"]
Average = Literal["last", "tail", "polyak"]
_CHUNK = 512  # steps of samples and step sizes drawn at once


@dataclass(frozen=True)
class Arm:
    """One line of a sweep: a step-size schedule and what is done with its iterates.

    Args:
        schedule: gives ``eta_t``. A schedule built for a horizon T (``ExponentialStepSize``)
            stops there: past T its step is 0, and every later checkpoint reports its result at T.
        reg: ``lambda`` of the regularised update (the paper's Markov-sampling algorithm).
        radius: projected TD (Bhandari et al., 2018): after each step theta is projected onto
            the ball ``||theta|| <= radius``. None: no projection.
        average: ``"last"`` the last iterate; ``"tail"`` the mean of the last ``ceil(t/2)``
            iterates; ``"polyak"`` the Polyak-Ruppert mean of all t iterates.
    """

    schedule: StepSizeSchedule
    reg: float = 0.0
    radius: float | None = None
    average: Average = "last"

    def __post_init__(self):
        if not isinstance(self.schedule, StepSizeSchedule):
            raise TypeError(
                f"schedule must be a StepSizeSchedule, got {type(self.schedule).__name__}"
            )
        if not (
            isinstance(self.reg, int | float)
            and not isinstance(self.reg, bool)
            and math.isfinite(self.reg)
            and self.reg >= 0
        ):
            raise ValueError(f"reg must be a finite number >= 0, got {self.reg!r}")
        if self.radius is not None and not (
            isinstance(self.radius, int | float) and math.isfinite(self.radius) and self.radius > 0
        ):
            raise ValueError(f"radius must be None or a finite number > 0, got {self.radius!r}")
        if self.average not in ("last", "tail", "polyak"):
            raise ValueError(f"average must be 'last', 'tail' or 'polyak', got {self.average!r}")

    @property
    def stop(self) -> int | None:
        """The horizon the schedule was built for, if any."""
        return getattr(self.schedule, "horizon", None)


def _check_runs(runs, sampling):
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be an integer >= 1, got {runs!r}")
    if sampling not in ("iid", "markov"):
        raise ValueError(f"sampling must be 'iid' or 'markov', got {sampling!r}")


def _arm_table(problems, arms) -> list[list[Arm]]:
    """``arms`` as M rows of K arms: one shared list, or one list per problem."""
    if len(arms) == 0:
        raise ValueError("arms is empty")
    if all(isinstance(a, Arm) for a in arms):
        return [list(arms)] * len(problems)
    table = [list(row) for row in arms]
    if len(table) != len(problems) or not all(
        all(isinstance(a, Arm) for a in row) for row in table
    ):
        raise ValueError(
            f"arms must be a list of Arm (shared by every problem) or {len(problems)} lists of "
            "Arm, one per problem"
        )
    if len({len(row) for row in table}) != 1 or len(table[0]) == 0:
        raise ValueError("every problem needs the same, non-zero number of arms")
    return table


def _check_checkpoints(checkpoints) -> list[int]:
    cps = list(checkpoints)
    if not cps or any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in cps):
        raise ValueError(f"checkpoints must be integers >= 1, got {checkpoints!r}")
    if cps != sorted(set(cps)):
        raise ValueError(f"checkpoints must be strictly increasing, got {cps}")
    return cps


def td0_grid(
    problems: Sequence[MarkovRewardProcess],
    arms: Sequence[Arm] | Sequence[Sequence[Arm]],
    checkpoints: Sequence[int],
    runs: int,
    sampling: Sampling = "iid",
    seed: int = 0,
    progress: bool = False,
    start_state: int | None = None,
) -> torch.Tensor:
    """Run TD(0) for every problem and arm on shared sample streams, read at every checkpoint.

    Args:
        problems: M chains with the same number of states and features, on one device (each
            has its own discount and its own sample streams).
        arms: K arms shared by every problem, or M lists of K arms (one per problem, for
            schedules or radii that depend on the problem).
        checkpoints: increasing horizons; the run lasts ``max(checkpoints)`` steps.
        runs: R independent runs (sample streams) per problem.
        sampling: ``"iid"`` draws ``s ~ mu`` afresh each step (then ``s' ~ P(s, .)``);
            ``"markov"`` follows one trajectory per run, started from ``mu``.
        seed: seeds the sample streams.
        progress: show a tqdm bar.
        start_state: ``"markov"`` only: every trajectory starts in this state instead of a
            draw from ``mu``, so the chain must mix before its samples look stationary (what
            the mixing-time analyses pay for). None: start from ``mu``.

    Returns:
        (C, M, K, R, d) float64 iterates (or averages) at each checkpoint, on the problems'
        device. An arm whose schedule stops at T reports its result at T at every checkpoint
        >= T; a stop that is not a checkpoint is an error. Diverged runs give non-finite
        entries; they are not hidden.
    """
    cps, table = _check_grid(problems, arms, checkpoints, runs, sampling, start_state)
    batch = _Batch.of(problems, table, cps)
    gen = torch.Generator().manual_seed(seed)
    dev = batch.phi.device

    def uniform(*shape: int) -> torch.Tensor:
        return torch.rand(*shape, generator=gen, dtype=torch.float64).to(dev)

    M, K = batch.lam.shape
    horizon = cps[-1]
    theta = torch.zeros(M, K, runs, batch.phi.shape[-1], dtype=torch.float64, device=dev)
    csum = torch.zeros_like(theta) if batch.averaging else None
    last_at, sum_at = {}, {}
    state = torch.searchsorted(batch.cdf_mu, uniform(M, runs))  # (M, R)
    if start_state is not None:  # the uniforms above are still drawn: the same streams follow
        state = torch.full_like(state, start_state)
    bar = tqdm(
        total=horizon, disable=not progress, desc=f"TD(0) {sampling} T={horizon}", leave=False
    )
    t = 0
    while t < horizon:
        n = min(_CHUNK, horizon - t)
        etas = batch.step_sizes(t, n)
        s, s_next, state = _draw_transitions(batch, sampling, state, n, runs, uniform)
        for done in _td_updates(batch, theta, csum, etas, s, s_next):
            if t + done in batch.snaps:
                if t + done in cps:
                    last_at[t + done] = theta.clone()
                if csum is not None:
                    sum_at[t + done] = csum.clone()
        t += n
        bar.update(n)
    bar.close()
    return _read_checkpoints(batch, cps, last_at, sum_at)


def _check_grid(problems, arms, checkpoints, runs, sampling, start_state):
    """td0_grid's inputs, checked: the checkpoints and the (M, K) arm table."""
    _check_problems(problems)
    _check_runs(runs, sampling)
    if start_state is not None and (
        isinstance(start_state, bool)
        or not isinstance(start_state, int)
        or not 0 <= start_state < problems[0].n_states
    ):
        raise ValueError(
            f"start_state must be None or a state in [0, {problems[0].n_states}), got "
            f"{start_state!r}"
        )
    cps = _check_checkpoints(checkpoints)
    table = _arm_table(problems, arms)
    for row in table:
        for a in row:
            if a.stop is not None and a.stop not in cps:
                raise ValueError(
                    f"{a.schedule.label}: the schedule stops at T={a.stop}, which is not a "
                    f"checkpoint {cps}"
                )
    return cps, table


def _check_problems(problems: Sequence[MarkovRewardProcess]) -> None:
    if len(problems) == 0:
        raise ValueError("problems is empty")
    for p in problems:
        if not isinstance(p, MarkovRewardProcess):
            raise TypeError(f"problems must be MarkovRewardProcess objects, got {type(p).__name__}")
    first = problems[0]
    for p in problems[1:]:
        if (p.n_states, p.n_features, p.device) != (first.n_states, first.n_features, first.device):
            raise ValueError(
                "problems batched together need the same number of states and features and the "
                f"same device; got {p.name} ({p.n_states}, {p.n_features}, {p.device}) and "
                f"{first.name} ({first.n_states}, {first.n_features}, {first.device})"
            )


@dataclass
class _Batch:
    """M problems and their K arms as stacked tensors, and what each arm reads when."""

    P: torch.Tensor  # (M, S, S)
    r: torch.Tensor  # (M, S)
    phi: torch.Tensor  # (M, S, d)
    gamma: torch.Tensor  # (M, 1, 1)
    cdf_P: torch.Tensor  # (M, S, S), rows end above every uniform draw
    cdf_mu: torch.Tensor  # (M, S)
    flat: list  # the M * K arms, problem-major
    lam: torch.Tensor  # (M, K) regularisation
    stops: torch.Tensor  # (M, K) the step an arm stops at (horizon + 1: never)
    rad: torch.Tensor | None  # (M, K, 1, 1) projection radii, None when no arm projects
    averaging: bool
    snaps: set  # steps at which iterates (or their sums) are read
    schedules: dict

    @classmethod
    def of(cls, problems, table, cps) -> "_Batch":
        dev = problems[0].device
        f64 = dict(dtype=torch.float64, device=dev)
        P = torch.stack([p.P for p in problems])
        mu = torch.stack([p.mu for p in problems])
        flat = [a for row in table for a in row]
        M, K = len(problems), len(table[0])
        cdf_P = P.cumsum(-1)
        cdf_P[..., -1] = 1.0 + 1e-12  # rows end above every uniform draw despite rounding
        cdf_mu = mu.cumsum(-1)
        cdf_mu[..., -1] = 1.0 + 1e-12
        rad = torch.tensor([math.inf if a.radius is None else a.radius for a in flat], **f64)
        modes = [a.average for a in flat]
        # the sum of iterates is read at each checkpoint c and, for tail averages, at c // 2
        snaps = set(cps) | ({c // 2 for c in cps if c // 2 > 0} if "tail" in modes else set())
        return cls(
            P=P,
            r=torch.stack([p.r for p in problems]),
            phi=torch.stack([p.phi for p in problems]),
            gamma=torch.tensor([p.gamma for p in problems], **f64)[:, None, None],
            cdf_P=cdf_P,
            cdf_mu=cdf_mu,
            flat=flat,
            lam=torch.tensor([a.reg for a in flat], **f64).view(M, K),
            stops=torch.tensor([a.stop or cps[-1] + 1 for a in flat], device=dev).view(M, K),
            rad=rad.view(M, K, 1, 1) if any(a.radius is not None for a in flat) else None,
            averaging=any(m != "last" for m in modes),
            snaps=snaps,
            schedules={id(a.schedule): a.schedule for a in flat},
        )

    def step_sizes(self, t: int, n: int) -> torch.Tensor:
        """(n, M, K) step sizes of steps t..t+n-1: 0 past an arm's stop."""
        M, K = self.lam.shape
        dev = self.lam.device
        seg = {k: s.segment(t, t + n).to(dev) for k, s in self.schedules.items()}
        etas = torch.stack([seg[id(a.schedule)] for a in self.flat], 1).view(n, M, K)
        steps = torch.arange(t, t + n, device=dev)[:, None, None]
        return torch.where(steps < self.stops, etas, 0.0)


def _draw_transitions(batch: _Batch, sampling: Sampling, state, n: int, R: int, uniform):
    """n steps of (s_t, s_t') for every problem and run, (n, M, R) each, and the chain's state
    after them (``"markov"`` follows it; ``"iid"`` draws s ~ mu afresh)."""
    M = batch.cdf_mu.shape[0]
    m_idx = torch.arange(M, device=batch.cdf_mu.device)
    if sampling == "iid":
        s = torch.searchsorted(batch.cdf_mu, uniform(n, M, R).permute(1, 0, 2).reshape(M, n * R))
        s = s.view(M, n, R).permute(1, 0, 2).contiguous()  # (n, M, R)
        rows = batch.cdf_P[m_idx[None, :, None], s]  # (n, M, R, S)
        return s, torch.searchsorted(rows, uniform(n, M, R, 1)).squeeze(-1), state
    s = torch.empty(n, M, R, dtype=torch.long, device=batch.cdf_mu.device)
    u = uniform(n, M, R, 1)
    for i in range(n):  # a trajectory is sequential: s_{t+1} ~ P(s_t, .)
        s[i] = state
        state = torch.searchsorted(batch.cdf_P[m_idx[:, None], state], u[i]).squeeze(-1)
    return s, torch.cat([s[1:], state[None]], 0), state


def _td_updates(batch: _Batch, theta, csum, etas, s, s_next):
    """The TD(0) updates of one chunk, in place on ``theta`` (M, K, R, d) (and the running sum
    ``csum``); yields the number of steps done after each, so the caller can read the iterates."""
    m_idx = torch.arange(batch.phi.shape[0], device=batch.phi.device)
    mi = m_idx[None, :, None]
    phi_s = batch.phi[mi, s][:, :, None]  # (n, M, 1, R, d)
    # gamma phi_t' - phi_t, so delta_t = r_t + theta^T (gamma phi_t' - phi_t)
    dphi = batch.gamma[None, :, :, :, None] * batch.phi[mi, s_next][:, :, None] - phi_s
    r_s = batch.r[mi, s][:, :, None]  # (n, M, 1, R)
    reg = bool((batch.lam > 0).any())
    decay = 1.0 - etas * batch.lam if reg else None
    for i in range(len(etas)):
        delta = r_s[i] + (theta * dphi[i]).sum(-1)  # (M, K, R)
        if reg:  # theta_{t+1} = (1 - eta_t lambda) theta_t + eta_t delta_t phi_t
            theta.mul_(decay[i][..., None, None])
        theta.addcmul_((etas[i][..., None] * delta)[..., None], phi_s[i])
        if batch.rad is not None:  # Pi_R(theta) = theta min(1, R / ||theta||)
            norm = theta.norm(dim=-1, keepdim=True)
            theta.mul_((batch.rad / norm).clamp(max=1.0).nan_to_num(1.0))
        if csum is not None:
            csum.add_(theta)
        yield i + 1


def _read_checkpoints(batch: _Batch, cps: list[int], last_at: dict, sum_at: dict) -> torch.Tensor:
    """(C, M, K, R, d): each arm's last iterate, Polyak average or tail average at each
    checkpoint; an arm that stopped at T reports its result at T from there on."""
    M, K = batch.lam.shape
    dev = batch.lam.device
    modes = [a.average for a in batch.flat]
    is_tail = torch.tensor([m == "tail" for m in modes], device=dev).view(M, K, 1, 1)
    is_polyak = torch.tensor([m == "polyak" for m in modes], device=dev).view(M, K, 1, 1)
    out = []
    for c in cps:
        res = last_at[c]
        if batch.averaging:
            res = torch.where(is_polyak, sum_at[c] / c, res)
            if "tail" in modes:
                h = c // 2
                tail = (sum_at[c] - (sum_at[h] if h > 0 else 0.0)) / (c - h)
                res = torch.where(is_tail, tail, res)
        out.append(res)
    out = torch.stack(out)  # (C, M, K, R, d)
    for ci, c in enumerate(cps):
        for j, a in enumerate(batch.flat):
            if a.stop is not None and a.stop < c:
                m, k = divmod(j, K)
                out[ci, m, k] = out[cps.index(a.stop), m, k]
    return out


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
    """Run TD(0) for every schedule on the same ``runs`` sample streams, for ``horizon`` steps.

    Args:
        problem: the chain, rewards, features and discount.
        schedules: K step-size schedules; each gives ``eta_0 .. eta_{horizon-1}``.
        horizon: T, the number of updates.
        runs: R independent runs per schedule.
        sampling: ``"iid"`` or ``"markov"`` (see ``td0_grid``).
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
    regs = [reg] * K if isinstance(reg, int | float) else list(reg)
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
    if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
        raise ValueError(f"horizon must be an integer >= 1, got {horizon!r}")
    for s in schedules:
        if isinstance(s, StepSizeSchedule) and getattr(s, "horizon", horizon) != horizon:
            raise ValueError(
                f"{s.label}: the schedule was built for horizon {s.horizon}, the run has {horizon}"
            )
    arms = [
        Arm(s, g, rad, "polyak" if p else "tail" if tl else "last")
        for s, g, rad, tl, p in zip(schedules, regs, radii, tails, polyaks, strict=True)
    ]
    return td0_grid([problem], arms, [horizon], runs, sampling, seed, progress)[0, 0]


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
