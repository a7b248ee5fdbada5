"""The paper's two claims at small scale, as rates over horizons against tuned baselines.

Problems: random Garnet chains (30 states, 8 features) with a target omega (smallest eigenvalue
of Phi^T D Phi) in {0.02, 0.005, 0.001}, gamma in {0.9, 0.99}, two chains each: 12 problems,
batched into one tensor. Horizons T from 1e3 to 1e6, 10 seeds; every arm of a problem runs on
the same sample streams, and one pass to 1e6 gives every horizon (the exponential schedule,
which depends on T, runs once per T and stops there).

- i.i.d. sampling: plain TD(0) with the exponential step size and the problem-independent
  ``eta0 = 1/(1 + gamma)``. Claim: the last iterate attains the optimal ``O(1/T)`` rate without
  omega. Rule: the fitted slope of log(error) against log(T) over ``T >= fit_from`` has a 95%
  bootstrap interval (over seeds) whose upper end is at most ``-1 + rate_slack`` (1/T up to log
  factors).
- Markov sampling (one trajectory per run, started in one fixed state): the paper's
  regularised TD(0), exponential schedule, ``lambda = c / sqrt(T)`` with ``c = 1`` fixed in
  advance, on the same chains and on lazy copies ``(1 - eps) I + eps P`` that mix 10x and 100x
  slower (tau_mix about 50 and 500). Claim: a rate comparable to prior work (``O(1/T)`` up to
  logs) without projection, averaging, omega or tau_mix. Regularised TD converges to the point
  ``theta_lambda`` of ``(A + lambda I) theta = b``, so its error splits into the optimisation
  error ``||V(theta_T) - V(theta_lambda)||_D^2`` (what the schedule controls, measured) and the
  bias floor ``||V(theta_lambda) - V*||_D^2`` (closed form, computed out to T = 1e12). Rule: the
  optimisation error's slope interval ends at or below ``-1 + rate_slack`` and the closed-form
  floor reaches that slope at some T; the horizon T* from which it does, and the error at T_max
  against the best prior-work fix (paired over seeds), are reported beside the verdict.

Baselines at full strength, all reported: constant steps and ``c / (t + t0)`` on grids, best in
hindsight at every T; the omega-aware oracle ``1/(omega (1 - gamma) t)``; tail-averaged constants
and Polyak-averaged ``c / sqrt(t)``; under Markov sampling also projected TD (radius
``||theta*||``, the tightest valid one, known in hindsight) and the mixing-time schedule. The
regularisation constant c is swept on a grid like the baselines' (the method tuned in
hindsight is reported beside the method with c fixed), and every comparison at T_max is paired
over seeds (all arms of a problem share their sample streams).
"""

import math
from dataclasses import dataclass, replace

import numpy as np
from tqdm.auto import tqdm

from icml26.td.baselines import AVERAGED, LAST_ITERATE, PRIOR_WORK, arms
from icml26.td.gym_problems import gymnasium_mrp
from icml26.td.problems import MarkovRewardProcess, boyan_chain, garnet_mdp
from icml26.td.rates import loglog_slope
from icml26.td.td import td0_grid
from icml26.testing.checks import integer
from icml26.testing.command import DemoOptions
from icml26.testing.results import paired_interval, resolve_device


@dataclass(frozen=True)
class DemoConfig(DemoOptions):
    """Exponential step sizes against tuned schedules and prior work's fixes: rates over T.

    ``--quick``: two problems, T up to 1e4: finishes in seconds (a smoke test, no verdict)."""

    seed: int = 0
    """Seeds the Garnet chains and the sample streams."""
    runs: int = 10
    """Independent runs (seeds) per arm and problem."""
    n_states: int = 30
    """Garnet chain size."""
    n_features: int = 8
    """Feature dimension d."""
    gammas: tuple[float, ...] = (0.9, 0.99)
    """Discounts."""
    omegas: tuple[float, ...] = (0.02, 0.005, 0.001)
    """Target smallest eigenvalues of Phi^T D Phi (at most ~1/d)."""
    chains: int = 3
    """Independent random Garnet chains per (gamma, omega)."""
    lazy_eps: tuple[float, ...] = (0.07, 0.007)
    """Markov: every chain also runs as its lazy copy (1 - eps) I + eps P, which mixes about
    1/eps times slower (tau_mix about 50 and 500 here)."""
    start_state: int | None = 0
    """Markov: every trajectory starts in this state (None: drawn from stationarity)."""
    horizons: tuple[int, ...] = (1000, 3000, 10_000, 30_000, 100_000, 300_000, 1_000_000)
    """Horizons T (one pass to the largest; the exponential schedule runs once per T)."""
    fit_from: int = 10_000
    """Slopes are fitted over the horizons >= this (the rate, not the burn-in)."""
    rate_slack: float = 0.2
    """i.i.d. rule: the slope's interval must end at or below -1 + rate_slack."""
    eta0_grid: tuple[float, ...] = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
    """The exponential schedule's eta0 swept at the largest T (sensitivity)."""
    constant_grid: tuple[float, ...] = (1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3, 1.0)
    """Constant steps (plain and tail-averaged), best in hindsight at every T."""
    inverse_time_c: tuple[float, ...] = (1, 3, 10, 30, 100, 300, 1e3, 3e3, 1e4, 3e4, 1e5)
    """c of the c / (t + t0) grid."""
    inverse_time_first_step: tuple[float, ...] = (0.03, 0.3)
    """The first step c / t0 of the c / (t + t0) grid (t0 = c / first step)."""
    polyak_sqrt_grid: tuple[float, ...] = (0.03, 0.1, 0.3, 1.0, 3.0)
    """c of c / sqrt(t + 1) with Polyak-Ruppert averaging."""
    projected_grid: tuple[float, ...] = (1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3)
    """Constant steps of projected TD with Polyak-Ruppert averaging (Markov)."""
    mixing_grid: tuple[float, ...] = (0.1, 0.3, 1.0, 3.0, 10.0)
    """c of the mixing-time schedule c / (tau_mix log(t + 2) sqrt(t + 1)), averaged (Markov)."""
    reg_scales: tuple[float, ...] = (0.03, 0.1, 0.3, 1.0, 3.0)
    """Markov: lambda = c / sqrt(T) for each c (the method's grid, tuned in hindsight like the
    baselines' for the comparison at T_max)."""
    reg_scale: float = 1.0
    """Markov: the c of the method's lambda = c / sqrt(T), fixed in advance (must be in
    reg_scales)."""
    beta: float = 1.0
    """Exponential schedule: eta_T = eta0 * beta / T."""
    floor_horizon: float = 1e12
    """Markov: the closed-form bias floor is computed out to this T (where the rate shows)."""
    long_horizons: bool = False
    """The long study: T up to 1e7 (slopes fitted from 1e5) on the first chain of each omega at
    the first gamma, as drawn and lazy (the first eps), 5 runs, without the eta0 sweep (about
    an hour on 2 CPU cores, most of it the Markov pass)."""
    extra_problems: bool = True
    """Also run Boyan's chain and FrozenLake (Markov, T = 1e5)."""
    plot: bool = True
    """Save the PNG plots."""

    def quick_settings(self) -> dict:
        return dict(
            gammas=(0.9,),
            omegas=(0.02, 0.002),
            chains=1,
            lazy_eps=(0.1,),
            horizons=(300, 1000, 3000, 10_000),
            fit_from=1000,
        )

    def validate(self) -> None:
        integer("n_states", self.n_states, low=2)  # before start_state, which is read against it
        if self.runs < 2:
            raise ValueError(f"runs must be >= 2 (intervals need two seeds), got {self.runs}")
        if not self.horizons or any(T < 2 for T in self.horizons):
            raise ValueError(f"horizons must be integers >= 2, got {self.horizons}")
        if sum(self.fit_from <= T for T in self.horizons) < 2:
            raise ValueError(
                f"fit_from={self.fit_from} leaves fewer than two horizons to fit a slope over"
            )
        if self.reg_scale not in self.reg_scales:
            raise ValueError(f"reg_scale {self.reg_scale} must be one of reg_scales")
        if self.chains < 1 or not self.gammas or not self.omegas:
            raise ValueError("needs at least one chain, one gamma and one omega")
        if any(not 0 < e < 1 for e in self.lazy_eps):
            raise ValueError(f"lazy_eps must lie in (0, 1), got {self.lazy_eps}")
        if self.start_state is not None and not 0 <= self.start_state < self.n_states:
            raise ValueError(
                f"start_state must be None or a state in [0, {self.n_states}), got "
                f"{self.start_state}"
            )
        if self.floor_horizon < max(self.horizons):
            raise ValueError("floor_horizon must be at least the largest horizon")


def _summary(e: np.ndarray) -> dict:
    """Mean and standard error over seeds; None (diverged) when not finite."""
    with np.errstate(invalid="ignore", over="ignore"):
        mean, se = float(e.mean()), float(e.std(ddof=1) / math.sqrt(len(e)))
    ok = math.isfinite(mean) and math.isfinite(se)
    return {"mean": mean if ok else None, "se": se if ok else None}


def _slope_dict(horizons, errors) -> dict | None:
    try:
        s = loglog_slope(horizons, errors)
    except ValueError:  # diverged: no rate
        return None
    return {"slope": s.slope, "low": s.low, "high": s.high}


def _best_of(cands: list[tuple[str, dict]]) -> tuple[str, dict]:
    """The candidate with the lowest mean error (a diverged one is never the best)."""
    return min(cands, key=lambda c: math.inf if c[1]["mean"] is None else c[1]["mean"])


class _Errors:
    """One problem's errors (H, K, R) by arm name, and the readings the demo takes of them."""

    def __init__(self, err: np.ndarray, names: list[str], families: dict, horizons: list[int]):
        self.err, self.names, self.families, self.horizons = err, names, families, horizons
        self.col = {n: j for j, n in enumerate(names)}

    def own_T(self, prefix: str) -> np.ndarray:
        """(H, R): the arm built for each horizon T, read at T."""
        return np.stack(
            [self.err[h, self.col[f"{prefix} T={T}"]] for h, T in enumerate(self.horizons)]
        )

    def family(self, fams) -> np.ndarray:
        """(H, F, R): every arm of the families."""
        return self.err[:, [self.col[n] for n in self.names if self.families[n] in fams]]

    def best(self, fams) -> list[dict]:
        """The families' best arm in hindsight at each T: name, mean, se."""
        rows = []
        for h in range(len(self.horizons)):
            cands = [
                (n, _summary(self.err[h, self.col[n]]))
                for n in self.names
                if self.families[n] in fams
            ]
            name, best = _best_of(cands)
            rows.append({"name": name, **best})
        return rows


def _paired(err: np.ndarray, ref: np.ndarray) -> dict | None:
    """The error ratio of two arms on the same seeds (R,): geometric mean and its paired 95%
    interval (Student t on the per-seed log ratios); None when either diverged."""
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.log(err) - np.log(ref)
    if not np.isfinite(d).all():
        return None
    mean, low, high = paired_interval(d)
    return {"ratio": math.exp(mean), "low": math.exp(low), "high": math.exp(high)}


def _floor(p: MarkovRewardProcess, c: float, cfg: DemoConfig) -> dict:
    """The closed-form bias floor of lambda = c / sqrt(T) on a log grid out to
    ``floor_horizon``: its local slopes, the slope at T_max and the first T from which every
    local slope is at most ``-1 + rate_slack`` (None: not within the grid)."""
    T_max = max(cfg.horizons)
    grid = np.unique(np.append(np.logspace(3, math.log10(cfg.floor_horizon), 37), T_max))
    F = np.array([p.value_error(p.regularised_fixed_point(c / math.sqrt(T))).item() for T in grid])
    slopes = np.diff(np.log(F)) / np.diff(np.log(grid))  # between consecutive grid points
    ok = slopes <= -1 + cfg.rate_slack
    # the first grid point from which the floor stays at the rate (suffix of True)
    tail = len(ok) - int(np.argmin(ok[::-1])) if not ok.all() else 0
    at_max = int(np.searchsorted(grid, T_max))
    return {
        "T": grid.tolist(),
        "floor": F.tolist(),
        "slope at T_max": float(slopes[max(at_max - 1, 0)]),
        "rate from T": None if tail >= len(ok) or not ok[-1] else float(grid[tail]),
    }


def _study(cfg: DemoConfig, problems: dict, sampling: str) -> dict:
    """One pass over every problem for one sampling scheme; per-problem measurements."""
    horizons = sorted(cfg.horizons)
    keys = list(problems)
    taus = {k: problems[k].mixing_time(0.25) for k in keys}
    table = [arms(cfg, problems[k], sampling, taus[k]) for k in keys]
    names = [n for n, _, _ in table[0]]
    families = {n: f for n, f, _ in table[0]}
    theta = td0_grid(
        [problems[k] for k in keys],
        [[a for _, _, a in rows] for rows in table],
        horizons,
        cfg.runs,
        sampling,
        seed=cfg.seed + (0 if sampling == "iid" else 1),
        progress=True,
        start_state=None if sampling == "iid" else cfg.start_state,
    )  # (H, M, K, R, d)
    out = {}
    for m, k in enumerate(tqdm(keys, desc=f"{sampling} readings", leave=False)):
        p = problems[k]
        pe = _Errors(p.value_error(theta[:, m]).cpu().numpy(), names, families, horizons)
        rec = _record(cfg, p, pe, sampling, taus[k])
        rec["lazy eps"] = float(k.rsplit("lazy=", 1)[1]) if "lazy=" in k else None
        if sampling == "markov":
            rec |= _markov_record(cfg, p, pe, theta[:, m])
        out[k] = rec
    return out


def _fit(cfg: DemoConfig, horizons: list[int]) -> tuple[list[int], list[int]]:
    fit = [i for i, T in enumerate(horizons) if cfg.fit_from <= T]
    return fit, [horizons[i] for i in fit]


def _record(cfg: DemoConfig, p, pe: "_Errors", sampling: str, tau: int) -> dict:
    """What every problem reports: the method's errors and slope, the tuned baselines, the
    sweeps at T_max, and the method against the best tuned last iterate, paired, at T_max."""
    fit, fit_T = _fit(cfg, pe.horizons)
    method = "exponential" if sampling == "iid" else f"reg-exponential c={cfg.reg_scale:g}"
    err, col = pe.err, pe.col
    best_last = pe.best(LAST_ITERATE)
    return {
        "gamma": p.gamma,
        "omega": p.omega,
        "tau_mix": tau,
        "theta_star_norm": p.theta_star.norm().item(),
        "method": [_summary(e) for e in pe.own_T(method)],
        "method slope": _slope_dict(fit_T, pe.own_T(method)[fit]),
        "best last-iterate": best_last,
        "best last-iterate slope": _slope_dict(fit_T, pe.family(LAST_ITERATE)[fit]),
        "method vs best last-iterate at T_max": _paired(
            pe.own_T(method)[-1], err[-1, col[best_last[-1]["name"]]]
        ),
        "oracle": [_summary(err[h, col["oracle"]]) for h in range(len(pe.horizons))],
        "best constant": pe.best(("constant",)),
        "best c/(t+t0)": pe.best(("c/(t+t0)",)),
        "best averaged": pe.best(AVERAGED),
        "eta0 sweep": {f"{e:g}": _summary(err[-1, col[f"eta0 {e:g}"]]) for e in cfg.eta0_grid},
        "constant sweep": {
            f"{e:g}": _summary(err[-1, col[f"constant {e:g}"]]) for e in cfg.constant_grid
        },
    }


def _markov_record(cfg: DemoConfig, p, pe: "_Errors", theta) -> dict:
    """Markov only: prior work's fixes, the regularisation sweep with each c's bias floor, the
    method's error split into optimisation error and closed-form floor, the method tuned in
    hindsight over c, and both against the best prior-work fix, paired, at T_max."""
    fit, fit_T = _fit(cfg, pe.horizons)
    best_prior = pe.best(PRIOR_WORK)
    prior_at_max = pe.err[-1, pe.col[best_prior[-1]["name"]]]
    rec = {
        "best prior work": best_prior,
        "best prior work slope": _slope_dict(fit_T, pe.family(PRIOR_WORK)[fit]),
        "best projected": pe.best(("projected",)),
        "best mixing-time": pe.best(("mixing-time",)),
        "no reg": [_summary(e) for e in pe.own_T("exponential, no reg")],
        "no reg slope": _slope_dict(fit_T, pe.own_T("exponential, no reg")[fit]),
        "reg sweep": {},
    }
    for c in cfg.reg_scales:
        e = pe.own_T(f"reg-exponential c={c:g}")
        rec["reg sweep"][f"{c:g}"] = {
            "error": [_summary(x) for x in e],
            "bias floor": [
                p.value_error(p.regularised_fixed_point(c / math.sqrt(T))).item()
                for T in pe.horizons
            ],
            "slope": _slope_dict(fit_T, e[fit]),
        }
    c = cfg.reg_scale
    rec["bias floor"] = rec["reg sweep"][f"{c:g}"]["bias floor"]
    # the optimisation error: each T's iterates against that T's regularised fixed point
    opt = np.stack(
        [
            p.value_error(
                theta[h, pe.col[f"reg-exponential c={c:g} T={T}"]],
                to=p.regularised_fixed_point(c / math.sqrt(T)),
            )
            .cpu()
            .numpy()
            for h, T in enumerate(pe.horizons)
        ]
    )  # (H, R)
    rec["optimisation error"] = [_summary(e) for e in opt]
    rec["optimisation error slope"] = _slope_dict(fit_T, opt[fit])
    rec["floor"] = _floor(p, c, cfg)
    # the method with c tuned in hindsight at each T, as the baselines are
    by_c = np.stack([pe.own_T(f"reg-exponential c={x:g}") for x in cfg.reg_scales], 1)
    tuned = [
        min(
            ((f"c={x:g}", _summary(by_c[h, i])) for i, x in enumerate(cfg.reg_scales)),
            key=lambda kv: math.inf if kv[1]["mean"] is None else kv[1]["mean"],
        )
        for h in range(len(pe.horizons))
    ]
    rec["tuned method"] = [{"name": n, **v} for n, v in tuned]
    rec["tuned method slope"] = _slope_dict(fit_T, by_c[fit])
    best_c = cfg.reg_scales.index(float(tuned[-1][0].removeprefix("c=")))
    rec["method vs best prior work at T_max"] = _paired(
        pe.own_T(f"reg-exponential c={c:g}")[-1], prior_at_max
    )
    rec["tuned method vs best prior work at T_max"] = _paired(by_c[-1, best_c], prior_at_max)
    return rec


def _extra_problems(cfg: DemoConfig, T: int, device: str) -> dict:
    """Boyan's chain and FrozenLake under Markov sampling at horizon T."""
    extra = {
        "boyan chain": boyan_chain(0.9, device=device),
        "FrozenLake tiles": gymnasium_mrp("FrozenLake-v1", 0.9, features="tiles", device=device),
    }
    sub = replace(cfg, horizons=(T,), eta0_grid=(), reg_scales=(cfg.reg_scale,))
    out = {}
    for name, p in tqdm(extra.items(), desc="extra problems"):
        rows = arms(sub, p, "markov", p.mixing_time(0.25))
        err = p.value_error(
            td0_grid([p], [a for _, _, a in rows], [T], cfg.runs, "markov", cfg.seed + 2)[0, 0]
        )
        err = err.cpu().numpy()  # (K, R)
        means = {n: _summary(err[j])["mean"] for j, (n, _, _) in enumerate(rows)}
        best = {
            label: min(
                (means[n] for n, f, _ in rows if f in fams and means[n] is not None), default=None
            )
            for label, fams in (("last", LAST_ITERATE), ("prior", PRIOR_WORK))
        }
        out[name] = {
            "omega": p.omega,
            "gamma": p.gamma,
            "regularised exponential": means[f"reg-exponential c={cfg.reg_scale:g} T={T}"],
            "bias floor": p.value_error(
                p.regularised_fixed_point(cfg.reg_scale / math.sqrt(T))
            ).item(),
            "exponential, no reg": means[f"exponential, no reg T={T}"],
            "oracle": means["oracle"],
            "best last-iterate": best["last"],
            "best prior work": best["prior"],
        }
    return out


def _problems(cfg: DemoConfig, device: str) -> dict[str, MarkovRewardProcess]:
    problems = {}
    for g in cfg.gammas:
        for o in cfg.omegas:
            for c in range(cfg.chains):
                p = garnet_mdp(
                    cfg.n_states, cfg.n_features, g, cfg.seed + c, omega=o, device=device
                )
                problems[f"gamma={g:g} omega={o:g} chain={c}"] = p
    return problems


def _lazy(cfg: DemoConfig, problems: dict) -> dict[str, MarkovRewardProcess]:
    """The chains followed by their slow-mixing lazy copies (Markov sampling)."""
    out = dict(problems)
    for eps in cfg.lazy_eps:
        out |= {f"{k} lazy={eps:g}": p.lazy(eps) for k, p in problems.items()}
    return out


def experiment(cfg: DemoConfig) -> dict:
    """Run both studies; return the raw measurements (what ``verdict`` reads)."""
    cfg = cfg.resolved()
    if cfg.long_horizons:
        cfg = replace(
            cfg,
            horizons=tuple(sorted(set(cfg.horizons) | {3_000_000, 10_000_000})),
            fit_from=100_000,
            gammas=cfg.gammas[:1],
            chains=1,
            lazy_eps=cfg.lazy_eps[:1],
            runs=min(cfg.runs, 5),
            eta0_grid=(),
            extra_problems=False,
        )
    cfg.validate()
    device = resolve_device(cfg.device)
    problems = _problems(cfg, device)
    horizons = sorted(cfg.horizons)
    studies = {
        "iid": _study(cfg, problems, "iid"),
        "markov": _study(cfg, _lazy(cfg, problems), "markov"),
    }
    extras = {}
    if cfg.extra_problems:
        extras = _extra_problems(cfg, min(horizons[-1], 100_000), device)
    return {
        "horizons": horizons,
        "fit horizons": [T for T in horizons if cfg.fit_from <= T],
        "runs": cfg.runs,
        "rate_slack": cfg.rate_slack,
        "reg_scale": cfg.reg_scale,
        "start_state": cfg.start_state,
        "floor_horizon": cfg.floor_horizon,
        "grids": {
            "eta0 (exponential, sensitivity at T_max)": list(cfg.eta0_grid),
            "constant": list(cfg.constant_grid),
            "c/(t+t0): c": list(cfg.inverse_time_c),
            "c/(t+t0): first step c/t0": list(cfg.inverse_time_first_step),
            "polyak c/sqrt(t)": list(cfg.polyak_sqrt_grid),
            "projected polyak constant": list(cfg.projected_grid),
            "mixing-time c": list(cfg.mixing_grid),
            "lambda = c/sqrt(T): c": list(cfg.reg_scales),
        },
        "studies": studies,
        "extra problems (markov)": extras,
        "device": str(device),
    }
