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
- Markov sampling (one trajectory per run): the paper's regularised TD(0), exponential schedule,
  ``lambda = 1/sqrt(T)``. Claim: a rate comparable to prior work without projection, averaging,
  omega or tau_mix. Rule: its slope interval reaches as low as that of the best prior-work fix
  (projected TD, Polyak-Ruppert / tail averaging, the mixing-time-aware schedule; every family
  tuned on a grid in hindsight, separately at every T).

Baselines at full strength, all reported: constant steps and ``c / (t + t0)`` on grids, best in
hindsight at every T; the omega-aware oracle ``1/(omega (1 - gamma) t)``; tail-averaged constants
and Polyak-averaged ``c / sqrt(t)``; under Markov sampling also projected TD (radius
``||theta*||``, the tightest valid one, known in hindsight) and the mixing-time schedule. The
regularisation constant is swept (``lambda = c / sqrt(T)``) and the bias floor
``||V(theta_lambda) - V*||_D^2`` of the regularised fixed point is reported next to each run.
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
from icml26.testing.command import DemoOptions
from icml26.testing.results import (
    resolve_device,
)


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
    chains: int = 2
    """Random Garnet chains per (gamma, omega)."""
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
    reg_scales: tuple[float, ...] = (0.1, 0.3, 1.0, 3.0)
    """Markov: lambda = c / sqrt(T) for each c (the sweep)."""
    reg_scale: float = 1.0
    """Markov: the c of the method's lambda = c / sqrt(T), fixed in advance (must be in
    reg_scales)."""
    beta: float = 1.0
    """Exponential schedule: eta_T = eta0 * beta / T."""
    extra_problems: bool = True
    """Also run Boyan's chain, a lazy (slow-mixing) Garnet and FrozenLake (Markov, T = 1e5)."""
    plot: bool = True
    """Save the PNG plots."""

    def quick_settings(self) -> dict:
        return dict(
            gammas=(0.9,),
            omegas=(0.02, 0.002),
            chains=1,
            horizons=(300, 1000, 3000, 10_000),
            fit_from=1000,
        )

    def validate(self) -> None:
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
    )  # (H, M, K, R, d)
    fit = [i for i, T in enumerate(horizons) if cfg.fit_from <= T]
    fit_T = [horizons[i] for i in fit]
    out = {}
    for m, k in enumerate(keys):
        p = problems[k]
        err = p.value_error(theta[:, m]).cpu().numpy()  # (H, K, R)
        pe = _Errors(err, names, families, horizons)
        own_T, family, best = pe.own_T, pe.family, pe.best

        method = "exponential" if sampling == "iid" else f"reg-exponential c={cfg.reg_scale:g}"
        rec = {
            "gamma": p.gamma,
            "omega": p.omega,
            "tau_mix": taus[k],
            "theta_star_norm": p.theta_star.norm().item(),
            "method": [_summary(e) for e in own_T(method)],
            "method slope": _slope_dict(fit_T, own_T(method)[fit]),
            "best last-iterate": best(LAST_ITERATE),
            "best last-iterate slope": _slope_dict(fit_T, family(LAST_ITERATE)[fit]),
            "oracle": [_summary(err[h, pe.col["oracle"]]) for h in range(len(horizons))],
            "best constant": best(("constant",)),
            "best c/(t+t0)": best(("c/(t+t0)",)),
            "best averaged": best(AVERAGED),
            "eta0 sweep": {
                f"{e:g}": _summary(err[-1, pe.col[f"eta0 {e:g}"]]) for e in cfg.eta0_grid
            },
            "constant sweep": {
                f"{e:g}": _summary(err[-1, pe.col[f"constant {e:g}"]]) for e in cfg.constant_grid
            },
        }
        if sampling == "markov":
            rec["best prior work"] = best(PRIOR_WORK)
            rec["best prior work slope"] = _slope_dict(fit_T, family(PRIOR_WORK)[fit])
            for fam in ("projected", "mixing-time"):
                rec[f"best {fam}"] = best((fam,))
            rec["no reg"] = [_summary(e) for e in own_T("exponential, no reg")]
            rec["no reg slope"] = _slope_dict(fit_T, own_T("exponential, no reg")[fit])
            rec["reg sweep"] = {}
            for c in cfg.reg_scales:
                e = own_T(f"reg-exponential c={c:g}")
                floors = [
                    p.value_error(p.regularised_fixed_point(c / math.sqrt(T))).item()
                    for T in horizons
                ]
                rec["reg sweep"][f"{c:g}"] = {
                    "error": [_summary(x) for x in e],
                    "bias floor": floors,
                    "slope": _slope_dict(fit_T, e[fit]),
                }
            rec["bias floor"] = rec["reg sweep"][f"{cfg.reg_scale:g}"]["bias floor"]
        out[k] = rec
    return out


def _extra_problems(cfg: DemoConfig, base: MarkovRewardProcess, T: int, device: str) -> dict:
    """Boyan's chain, a lazy Garnet and FrozenLake under Markov sampling at horizon T."""
    extra = {
        "boyan chain": boyan_chain(0.9, device=device),
        "lazy garnet (eps=0.1)": base.lazy(0.1),
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


def experiment(cfg: DemoConfig) -> dict:
    """Run both studies; return the raw measurements (what ``verdict`` reads)."""
    cfg = cfg.resolved()
    cfg.validate()
    device = resolve_device(cfg.device)
    problems = _problems(cfg, device)
    horizons = sorted(cfg.horizons)
    studies = {s: _study(cfg, problems, s) for s in ("iid", "markov")}
    extras = {}
    if cfg.extra_problems:
        extras = _extra_problems(
            cfg, next(iter(problems.values())), min(horizons[-1], 100_000), device
        )
    return {
        "horizons": horizons,
        "fit horizons": [T for T in horizons if cfg.fit_from <= T],
        "runs": cfg.runs,
        "rate_slack": cfg.rate_slack,
        "reg_scale": cfg.reg_scale,
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
