"""Quality vs number of sampling steps for ASBM, independent CFM and minibatch OT-CFM, on 2-D moons
and on 8x8 digits (64-D), with path straightness and a one-step distilled ASBM generator.

``experiment`` trains and measures; ``verdict`` (pure) compares the one-step MMDs, one row per
claim and data set.
"""

import json
import math
import time
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path

import torch

from icml26.asbm._results import (
    as_smoke,
    claim_row,
    demo_command,
    resolve_device,
    summarise,
    write_results,
)
from icml26.asbm.asbm import ASBM
from icml26.asbm.baselines import FlowMatching
from icml26.asbm.data import TOYS, digits
from icml26.asbm.gaussian import gaussian_stage1
from icml26.asbm.metrics import frechet_distance, mmd, sliced_w2, straightness, train_feature_net
from icml26.asbm.sde import BrownianSDE, GaussianEnergy

PACKAGE = "icml26-asbm"


@dataclass(frozen=True)
class DemoConfig:
    """ASBM vs CFM vs OT-CFM: quality vs sampling steps on 2-D and 64-D digits."""

    quick: bool = False
    """Small budgets, the 2-D problem only: well under 30 s."""
    out: Path | None = None
    """Run folder (default runs/asbm/<timestamp>)."""
    seed: int = 0
    toy: str = "moons"
    """2-D data set: moons, 8gaussians or checkerboard."""
    sigma: float = 0.5
    """Brownian reference noise (the entropic regularisation is sigma^2)."""
    prior_scale: float = 1.0
    """The prior nu = N(0, s^2 I), E(x) = ||x||^2 / 2 s^2."""
    steps: tuple[int, ...] = (1, 2, 4, 8, 32)
    """Sampling steps (= network evaluations) to sweep."""
    rounds: int = 4
    """Stage-1 rounds: adjoint matching, then (rounds - 1) x (corrector matching, adjoint
    matching)."""
    adjoint_steps: int = 400
    corrector_steps: int = 400
    corrector_buffer: int = 16384
    """Simulated pairs per corrector buffer (a fresh one every 250 steps)."""
    bridge_steps: int = 1200
    """Stage-2 gradient steps."""
    distill_steps: int = 500
    sim_steps: int = 30
    """Euler-Maruyama steps of the forward SDE."""
    hidden_2d: int = 256
    hidden_digits: int = 256
    n_eval: int = 1000
    """Samples per evaluation (2-D); digits use the held-out set's size."""
    digits: bool = True
    """Also run the 64-D digits comparison."""
    device: str = "auto"
    """auto (CUDA when present), cpu, cuda, cuda:N"""

    @property
    def budget(self) -> int:
        """Gradient steps ASBM takes in all; each baseline gets the same number."""
        return (self.rounds * self.adjoint_steps + (self.rounds - 1) * self.corrector_steps
                + self.bridge_steps)  # fmt: skip

    def resolved(self) -> "DemoConfig":
        if not self.quick:
            return self
        return replace(
            self,
            rounds=2,
            adjoint_steps=150,
            corrector_steps=100,
            corrector_buffer=4096,
            bridge_steps=500,
            distill_steps=200,
            sim_steps=20,
            n_eval=600,
            digits=False,
            steps=(1, 4, 32),
        )


def _evaluate(sample, test, steps, feature_net=None) -> dict:
    rows = {}
    for s in steps:
        x, traj = sample(s)
        row = {"mmd": mmd(x, test), "sw2": sliced_w2(x, test), "straightness": straightness(traj)}
        if feature_net is not None:
            row["frechet (proxy)"] = frechet_distance(feature_net, x, test)
        rows[str(s)] = row  # str keys: the dict is stored as JSON as it is
    return rows


def _problem(name, train, test, cfg, hidden, feature_net=None) -> tuple[dict, dict]:
    """Train ASBM and both baselines on one data set, on the device of ``train``; (measurements,
    sample grids). Sampling draws from a seeded CPU generator, moved to that device."""
    shape = tuple(train.shape[1:])
    energy = GaussianEnergy(cfg.prior_scale)
    g = torch.Generator().manual_seed(cfg.seed + 7)
    n = len(test)
    torch.manual_seed(cfg.seed)
    model = ASBM(shape, BrownianSDE(cfg.sigma), energy, sim_steps=cfg.sim_steps, hidden=hidden)
    model.to(train.device)
    model.fit_forward(train, cfg.rounds, cfg.adjoint_steps, cfg.corrector_steps,
                      corrector_buffer=cfg.corrector_buffer, seed=cfg.seed)  # fmt: skip
    # the same iteration in closed form if the data were Gaussian with independent coordinates
    # of the training set's means and variances: the speed an exact stage 1 would converge at
    exact = gaussian_stage1(train.mean(0).cpu(), train.var(0).cpu().clamp_min(1e-6),
                            model.sde, cfg.prior_scale, cfg.rounds)  # fmt: skip
    rounds = [{**row, "gaussian_reference_mean": float(e.mean.mean()),
               "gaussian_reference_std": float(e.var.sqrt().mean())}
              for row, e in zip(model.log.rounds, exact, strict=True)]  # fmt: skip
    x1 = model.simulate_forward(test)
    model.fit_backward(train, cfg.bridge_steps, seed=cfg.seed)
    model.distill(steps=cfg.distill_steps, seed=cfg.seed)
    results = {
        "ASBM": _evaluate(
            lambda s: model.sample(n, s, generator=g, return_trajectory=True),
            test,
            cfg.steps,
            feature_net,
        )
    }
    results["ASBM (SDE sampler)"] = _evaluate(
        lambda s: model.sample(n, s, method="sde", generator=g, return_trajectory=True),
        test,
        cfg.steps,
        feature_net,
    )
    xd = model.sample_distilled(n, g)
    results["ASBM distilled (1 step)"] = {
        "1": {"mmd": mmd(xd, test), "sw2": sliced_w2(xd, test), "straightness": 1.0}
    }
    if feature_net is not None:
        results["ASBM distilled (1 step)"]["1"]["frechet (proxy)"] = frechet_distance(
            feature_net, xd, test
        )
    samples = {
        "data": test[:64],
        "ASBM 1 step": model.sample(64, 1, generator=g),
        "ASBM distilled": xd[:64],
    }
    for coupling, label in (("independent", "CFM"), ("ot", "OT-CFM")):
        torch.manual_seed(cfg.seed)
        fm = FlowMatching(shape, energy, coupling, hidden=hidden).to(train.device)
        fm.fit(train, cfg.budget, seed=cfg.seed)
        results[label] = _evaluate(
            lambda s, fm=fm: fm.sample(n, s, generator=g, return_trajectory=True),
            test,
            cfg.steps,
            feature_net,
        )
        samples[f"{label} 1 step"] = fm.sample(64, 1, generator=g)
    stage1 = {"x1 mean": x1.mean().item(), "x1 std": x1.std().item(), "target std": cfg.prior_scale}
    measured = {
        "metrics": results,
        "stage 1 terminal": stage1,
        "stage 1 rounds": rounds,
        "n test": n,
        "device": str(xd.device),
    }
    return measured, {k: v.tolist() for k, v in samples.items()}


def _check(cfg: DemoConfig) -> None:
    for c in (cfg, cfg.resolved()):  # what was asked, and what --quick makes of it
        if c.toy not in TOYS:
            raise ValueError(f"toy must be one of {sorted(TOYS)}, got {c.toy!r}")
        if not c.steps or min(c.steps) < 1:
            raise ValueError(f"steps must be a non-empty tuple of integers >= 1, got {c.steps}")
        if 1 not in c.steps:
            raise ValueError(f"steps must include 1 (the claims are about one step), got {c.steps}")
        if not c.sigma > 0 or not c.prior_scale > 0:
            raise ValueError("sigma and prior_scale must be positive")


def experiment(cfg: DemoConfig) -> dict:
    """Train and evaluate every method on the 2-D toy (and digits); return the measurements.

    ``problems[name]["metrics"][method][str(steps)]`` holds MMD, sliced W2, straightness (and the
    Fréchet proxy on digits); ``samples[name]`` the 64-sample grids the plots show.
    """
    _check(cfg)
    device = resolve_device(cfg.device)
    cfg = cfg.resolved()
    torch.manual_seed(cfg.seed)
    problems, samples = {}, {}
    toy = TOYS[cfg.toy]
    problems[cfg.toy], samples[cfg.toy] = _problem(
        cfg.toy,
        toy(8000, seed=cfg.seed, device=device),
        toy(cfg.n_eval, seed=cfg.seed + 1, device=device),
        cfg,
        cfg.hidden_2d,
    )
    if cfg.digits:
        x, y = digits()
        perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(cfg.seed))
        x, y = x[perm].to(device), y[perm].to(device)
        train, test = x[:1300], x[1300:]
        fnet = train_feature_net(train, y[:1300], seed=cfg.seed)
        problems["digits"], samples["digits"] = _problem(
            "digits", train, test, cfg, cfg.hidden_digits, fnet
        )
        problems["digits"]["frechet (proxy) train vs test"] = frechet_distance(
            fnet, train[: len(test)], test
        )
    devices = {name: p.pop("device") for name, p in problems.items()}
    return {
        "steps": sorted(cfg.steps),
        "budget": cfg.budget,
        "problems": problems,
        "samples": samples,
        "device": devices[cfg.toy],
    }


OT_FACTOR = 1.5
"""'At least as good as OT-CFM': one-step MMD at most this factor above OT-CFM's."""


def _cfm_row(name: str, p: dict, steps: list[int]) -> dict:
    m, top = p["metrics"], str(max(steps))
    a, c = m["ASBM"]["1"]["mmd"], m["CFM"]["1"]["mmd"]
    evidence = (
        f"1-step MMD ASBM {a:.4f} vs independent CFM {c:.4f}; path length / chord at {top} "
        f"steps ASBM {m['ASBM'][top]['straightness']:.2f} vs CFM "
        f"{m['CFM'][top]['straightness']:.2f}; {p['n test']} test samples, 1 seed. "
        "Rule: ASBM's MMD lower"
    )
    verdict = "reproduced" if a < c else "not reproduced"
    return claim_row(f"{name}: 1-step ASBM beats independent CFM (MMD)", verdict, evidence)


def _ot_row(name: str, p: dict) -> dict:
    m = p["metrics"]
    a, o = m["ASBM"]["1"]["mmd"], m["OT-CFM"]["1"]["mmd"]
    evidence = (
        f"1-step MMD ASBM {a:.4f} vs minibatch OT-CFM {o:.4f} (distilled ASBM "
        f"{m['ASBM distilled (1 step)']['1']['mmd']:.4f}); {p['n test']} test samples, 1 seed. "
        f"Rule: ASBM's MMD <= {OT_FACTOR:g}x OT-CFM's"
    )
    verdict = "reproduced" if a <= OT_FACTOR * o else "not reproduced"
    claim = f"{name}: 1-step ASBM at least as good as OT-CFM (MMD within {OT_FACTOR:g}x)"
    return claim_row(claim, verdict, evidence)


def verdict(results: dict) -> tuple[list[dict], str]:
    """Per data set: does 1-step ASBM beat independent CFM, and match minibatch OT-CFM?"""
    claims = []
    for name, p in results["problems"].items():
        claims += [_cfm_row(name, p, results["steps"]), _ot_row(name, p)]
    return claims, summarise([c["verdict"] for c in claims])


def _metrics(results: dict) -> dict:
    method, baseline, top = {}, {}, str(max(results["steps"]))
    for name, p in results["problems"].items():
        m = p["metrics"]
        for label in ("ASBM", "ASBM distilled (1 step)"):
            method[f"{name} {label} 1-step MMD"] = m[label]["1"]["mmd"]
        method[f"{name} ASBM straightness @{top}"] = m["ASBM"][top]["straightness"]
        for label in ("CFM", "OT-CFM"):
            baseline[f"{name} {label} 1-step MMD"] = m[label]["1"]["mmd"]
            baseline[f"{name} {label} straightness @{top}"] = m[label][top]["straightness"]
    return {"method": _clean(method), "baseline": _clean(baseline)}


def _headline(results: dict) -> str:
    return "; ".join(
        f"{n}: 1-step MMD ASBM {p['metrics']['ASBM']['1']['mmd']:.3g} / CFM "
        f"{p['metrics']['CFM']['1']['mmd']:.3g} / OT-CFM {p['metrics']['OT-CFM']['1']['mmd']:.3g}"
        for n, p in results["problems"].items()
    )


def run_demo(cfg: DemoConfig) -> dict:
    """Run the experiment, write results.json and the plots into the run folder, return results."""
    out = cfg.out or Path("runs") / "asbm" / datetime.now().strftime("%Y%m%d-%H%M%S")
    start = time.perf_counter()
    measured = experiment(cfg)
    claims, summary = verdict(measured)
    if cfg.quick:
        claims, summary = as_smoke(claims)
    run = cfg.resolved()
    results = {
        "package": PACKAGE,
        "version": _version(),
        "experiment": f"quality vs sampling steps, ASBM vs CFM vs OT-CFM ({run.budget} gradient "
        f"steps each) on {', '.join(measured['problems'])}",
        "claim": "a learned Schrödinger-bridge coupling gives nearly straight paths: good samples "
        "in very few steps, beyond what minibatch OT couplings give in high dimension",
        "headline": _headline(measured),
        "claims": claims,
        "metrics": _metrics(measured),
        "verdict": summary,
        "quick": cfg.quick,
        "seconds": round(time.perf_counter() - start, 2),
        "config": {
            **json.loads(json.dumps(asdict(run), default=str)),
            "command": demo_command("icml26-asbm", cfg),
        },
        "seed": cfg.seed,
        "device": measured["device"],
        "torch": torch.__version__,
        "steps": measured["steps"],  # with "problems": what verdict() reads
        "problems": _finite_tree(measured["problems"]),
    }
    write_results(out / "results.json", results)
    from icml26.asbm.plots import plot_quality, plot_rounds, plot_samples

    plot_quality(measured["problems"], out / "quality_vs_steps.png")
    plot_rounds(measured["problems"], cfg.prior_scale, out / "stage1_rounds.png")
    for name, grid in measured["samples"].items():
        plot_samples({k: torch.tensor(v) for k, v in grid.items()}, out / f"samples_{name}.png")
    _print(measured["problems"], results, out)
    return results


def _clean(d: dict) -> dict:
    return {
        k: (v if isinstance(v, int | float) and math.isfinite(v) else None) for k, v in d.items()
    }


def _finite_tree(obj):
    """The measurements as strict JSON: a non-finite number becomes None."""
    if isinstance(obj, dict):
        return {k: _finite_tree(v) for k, v in obj.items()}
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _version() -> str:
    from icml26.asbm import __version__

    return __version__


def _print(problems: dict, results: dict, out: Path) -> None:
    for name, p in problems.items():
        m = p["metrics"]
        steps = list(m["ASBM"])
        print(f"\n{name}: MMD (straightness) by sampling steps")
        print(f"{'method':<26}" + "".join(f"{s:>16}" for s in steps))
        for label, rows in m.items():
            cells = "".join(
                f"{rows[s]['mmd']:>9.4f} ({rows[s]['straightness']:.2f})"
                if s in rows
                else f"{'':>16}"
                for s in steps
            )
            print(f"{label:<26}{cells}")
        print(f"stage-1 terminal: {p['stage 1 terminal']}")
        print("stage-1 rounds: terminal mean / std (Gaussian reference), MMD to the prior, "
              "corrector loss (affine floor)")  # fmt: skip
        for r in p["stage 1 rounds"]:
            print(f"  {r['round']}: {r['terminal_mean']:+.3f} / {r['terminal_std']:.3f} "
                  f"({r['gaussian_reference_mean']:+.3f} / {r['gaussian_reference_std']:.3f}), "
                  f"{r['mmd_prior']:.4f}, {r['corrector_loss']:.2f} "
                  f"({r['corrector_linear_floor']:.2f})")  # fmt: skip
    print()
    for c in results["claims"]:
        print(f"[{c['verdict']}] {c['claim']}")
    print(f"verdict: {results['verdict']}  ({results['seconds']:.1f} s)  -> {out / 'results.json'}")
