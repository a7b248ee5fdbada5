"""Quality vs number of sampling steps at equal training compute: ASBM against independent CFM,
minibatch OT-CFM, SB-CFM and rectified-flow reflow, on 2-D moons and 8x8 digits (MLPs, several
seeds) and on 8x8 digits and 24x24 LFW faces with a TinyUNet; plus the one-step distilled ASBM
generator.

Equal compute: ASBM's training is counted in per-sample network evaluations (forward-SDE
simulation, every gradient step at ``TRAIN_COST`` per sample, the distillation teacher's ODE
passes and the distillation itself; see ``ASBM.nfe``), and every baseline gets as many gradient
steps as make its own count equal (reflow pays for its teacher pairs first). Wall-clock seconds
are measured for every method and reported beside it.

``experiment`` trains and measures; ``verdict`` (pure) gives one row per data set and number of
steps (and one for the distilled generator): ASBM against the best baseline at that number of
steps, paired over seeds, a difference inside the 95% interval being a tie.
"""

import statistics
import time
from dataclasses import asdict, dataclass, field

import torch

from icml26.asbm.asbm import ASBM, TRAIN_COST
from icml26.asbm.baselines import FlowMatching, Reflow
from icml26.asbm.data import TOYS, digits, lfw
from icml26.asbm.gaussian import gaussian_stage1
from icml26.asbm.metrics import (
    feature_mmd,
    frechet_distance,
    mmd,
    nearest_distance,
    sliced_w2,
    straightness,
    train_feature_net,
)
from icml26.asbm.nets import MLP, TinyUNet
from icml26.asbm.sde import BrownianSDE, GaussianEnergy
from icml26.asbm.verdict import BASELINES, VERDICT_STEPS
from icml26.testing.command import DemoOptions
from icml26.testing.results import (
    resolve_device,
)

FRECHET = "frechet (proxy)"


REFLOW_EPOCHS = 16
"""Reflow's pair set is sized so its second phase sees each teacher pair about this many times
(a fixed small set would be revisited hundreds of times at these budgets and overfit)."""


@dataclass(frozen=True)
class Budget:
    """ASBM's training budget on one data set (the baselines get its compute)."""

    rounds: int = 4
    """Stage-1 rounds: adjoint matching, then (rounds - 1) x (corrector matching, adjoint
    matching)."""
    adjoint_steps: int = 400
    corrector_steps: int = 400
    buffer: int = 4096
    """Simulated pairs per adjoint-matching buffer (a fresh one every 250 steps)."""
    corrector_buffer: int = 16384
    """Simulated pairs per corrector buffer (a fresh one every 250 steps)."""
    bridge_steps: int = 1200
    """Stage-2 gradient steps."""
    bridge_buffer: int = 8192
    distill_steps: int = 500
    distill_pairs: int = 8192
    """Teacher ODE pairs for the distillation (and for reflow's second round)."""
    teacher_steps: int = 32
    sim_steps: int = 30
    """Euler-Maruyama steps of the forward SDE."""
    batch: int = 256

    def check(self, where: str) -> None:
        ints = asdict(self)
        if self.rounds < 1 or any(v < 1 for k, v in ints.items() if k != "corrector_steps"):
            raise ValueError(f"{where}: every budget entry must be >= 1, got {ints}")
        if self.corrector_steps < 0:
            raise ValueError(f"{where}: corrector_steps must be >= 0")


IMAGE_BUDGET = Budget(
    rounds=3,
    adjoint_steps=300,
    corrector_steps=300,
    buffer=2048,
    corrector_buffer=4096,
    bridge_steps=900,
    bridge_buffer=4096,
    distill_steps=300,
    distill_pairs=2048,
    sim_steps=20,
    batch=128,
)


FACE_BUDGET = Budget(
    rounds=3,
    adjoint_steps=150,
    corrector_steps=150,
    buffer=1024,
    corrector_buffer=2048,
    bridge_steps=450,
    bridge_buffer=2048,
    distill_steps=150,
    distill_pairs=1024,
    sim_steps=16,
    batch=64,
)


@dataclass(frozen=True)
class DemoConfig(DemoOptions):
    """ASBM vs CFM, OT-CFM, SB-CFM and reflow at equal compute: quality vs sampling steps.

    ``--quick``: small budgets, the 2-D problem only, one seed: well under a minute."""

    seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds of the MLP problems (moons, digits) and of TinyUNet digits."""
    face_seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds of the TinyUNet faces run."""
    toy: str = "moons"
    """2-D data set: moons, 8gaussians or checkerboard."""
    sigma: float = 0.5
    """Brownian reference noise (the entropic regularisation is sigma^2); SB-CFM uses the
    same."""
    prior_scale: float = 1.0
    """The prior nu = N(0, s^2 I), E(x) = ||x||^2 / 2 s^2."""
    steps: tuple[int, ...] = (1, 2, 4, 8, 32)
    """Sampling steps (= network evaluations) to sweep."""
    vector: Budget = Budget()
    """ASBM's budget on moons and MLP digits."""
    image: Budget = IMAGE_BUDGET
    """ASBM's budget on TinyUNet digits."""
    face: Budget = FACE_BUDGET
    """ASBM's budget on TinyUNet faces."""
    hidden: int = 256
    """MLP width."""
    unet_width: int = 16
    """TinyUNet base width."""
    n_eval: int = 1000
    """Samples per evaluation (2-D); images use the held-out set's size."""
    digits: bool = True
    """Run the 64-D digits comparison (MLP)."""
    images: bool = True
    """Run the TinyUNet problems (digits, faces)."""

    def quick_settings(self) -> dict:
        return dict(
            seeds=self.seeds[:1],
            vector=Budget(
                rounds=2,
                adjoint_steps=100,
                corrector_steps=100,
                buffer=2048,
                corrector_buffer=2048,
                bridge_steps=300,
                bridge_buffer=2048,
                distill_steps=100,
                distill_pairs=1024,
                sim_steps=10,
            ),
            n_eval=600,
            digits=False,
            images=False,
            steps=(1, 2, 4, 8),
        )


@dataclass
class Problem:
    """One data set: train / test tensors, the network family, the budget and the metric."""

    name: str
    train: torch.Tensor
    test: torch.Tensor
    budget: Budget
    make_net: object
    """make_net(out_mult, time) -> nn.Module"""
    metric: str = "mmd"
    """What the verdict compares: "mmd" (2-D) or the Fréchet proxy (images)."""
    feature_net: object = None
    reference: str = "held-out"
    memorisation: torch.Tensor | None = None
    """Training images to measure nearest-neighbour distances to (when scored on them)."""
    extra: dict = field(default_factory=dict)


def _scores(x, p: "Problem") -> dict:
    row = {"mmd": mmd(x, p.test), "sw2": sliced_w2(x, p.test)}
    if p.feature_net is not None:
        row[FRECHET] = frechet_distance(p.feature_net, x, p.test)
        row["feature mmd"] = feature_mmd(p.feature_net, x, p.test)
    if p.memorisation is not None:
        row["nn distance to train"] = nearest_distance(x, p.memorisation)
    return row


def _evaluate(sample, p: "Problem", steps) -> dict:
    rows = {}
    for s in steps:
        x, traj = sample(s)
        # str keys: the dict is stored as JSON as it is
        rows[str(s)] = {**_scores(x, p), "straightness": straightness(traj)}
    return rows


def _run_seed(p: Problem, cfg: DemoConfig, seed: int) -> tuple[dict, dict]:
    """Train ASBM, then every baseline at ASBM's compute, on one seed; (measurements, grids)."""
    b, shape, train, test = p.budget, tuple(p.train.shape[1:]), p.train, p.test
    energy = GaussianEnergy(cfg.prior_scale)
    g = torch.Generator().manual_seed(seed + 7)
    n = len(test)
    torch.manual_seed(seed)
    # the study's protocol: the Brownian reference and the posterior-mean stage 2 without an
    # average (the library's default is the official score-parameterised recipe)
    model = ASBM(shape, BrownianSDE(cfg.sigma), energy, sim_steps=b.sim_steps,
                 u_net=p.make_net(1, True), h_net=p.make_net(1, False),
                 bridge_net=p.make_net(2, True), generator=p.make_net(1, False),
                 stage2="posterior", ema=None)  # fmt: skip
    model.to(train.device)
    start = time.perf_counter()
    model.fit_forward(train, b.rounds, b.adjoint_steps, b.corrector_steps, batch_size=b.batch,
                      buffer_size=b.buffer, corrector_buffer=b.corrector_buffer,
                      seed=seed, check_size=0)  # fmt: skip
    model.fit_backward(train, b.bridge_steps, batch_size=b.batch, buffer_size=b.bridge_buffer,
                       seed=seed)  # fmt: skip
    model.distill(b.distill_pairs, b.teacher_steps, b.distill_steps, b.batch, seed=seed)
    asbm_seconds = time.perf_counter() - start - model.log.diagnostics_seconds
    budget = sum(model.nfe.values())
    compute = {"ASBM": {"nfe": budget, "seconds": asbm_seconds, "parts": dict(model.nfe)}}
    # the same iteration in closed form if the data were Gaussian with independent coordinates
    # of the training set's means and variances: the speed an exact stage 1 would converge at
    exact = gaussian_stage1(train.mean(0).cpu(), train.var(0).cpu().clamp_min(1e-6),
                            model.sde, cfg.prior_scale, b.rounds)  # fmt: skip
    rounds = [{**row, "gaussian_reference_mean": float(e.mean.mean()),
               "gaussian_reference_std": float(e.var.sqrt().mean())}
              for row, e in zip(model.log.rounds, exact, strict=True)]  # fmt: skip
    x1 = model.simulate_forward(test)
    results = {
        "ASBM": _evaluate(
            lambda s: model.sample(n, s, generator=g, return_trajectory=True), p, cfg.steps
        ),
        "ASBM (SDE sampler)": _evaluate(
            lambda s: model.sample(n, s, method="sde", generator=g, return_trajectory=True),
            p,
            cfg.steps,
        ),
    }
    xd = model.sample_distilled(n, g)
    results["ASBM distilled (1 step)"] = {"1": {**_scores(xd, p), "straightness": 1.0}}
    samples = {
        "data": test[:64],
        "ASBM 1 step": model.sample(64, 1, generator=g),
        "ASBM 4 steps": model.sample(64, 4, generator=g),
        "ASBM distilled": xd[:64],
    }
    for label in BASELINES:
        fm, compute[label] = _fit_baseline(label, p, cfg, energy, budget, seed)
        results[label] = _evaluate(
            lambda s, fm=fm: fm.sample(n, s, generator=g, return_trajectory=True), p, cfg.steps
        )
        samples[f"{label} 1 step"] = fm.sample(64, 1, generator=g)
    measured = {
        "metrics": results,
        "compute": compute,
        "stage 1 terminal": {"x1 mean": x1.mean().item(), "x1 std": x1.std().item()},
        "stage 1 rounds": rounds,
    }
    return measured, {k: v.tolist() for k, v in samples.items()}


def _fit_baseline(label: str, p: Problem, cfg: DemoConfig, energy, budget: int, seed: int):
    """Train one baseline at ASBM's compute (``budget`` network evaluations); the model and
    what it spent."""
    b, shape, train = p.budget, tuple(p.train.shape[1:]), p.train
    per_step = TRAIN_COST * b.batch
    torch.manual_seed(seed)
    if label == "Reflow":
        # pairs p with (budget - T p) / (2 * per_step) * batch / p = REFLOW_EPOCHS
        pairs = max(2 * b.batch, round(budget / (2 * TRAIN_COST * REFLOW_EPOCHS
                                                 + b.teacher_steps)))  # fmt: skip
        fm = Reflow(shape, energy, p.make_net(1, True), n_pairs=pairs,
                    teacher_steps=b.teacher_steps)  # fmt: skip
        steps = round((budget - pairs * b.teacher_steps) / per_step)
    else:
        coupling = {"CFM": "independent", "OT-CFM": "ot", "SB-CFM": "sb"}[label]
        fm = FlowMatching(shape, energy, coupling, p.make_net(1, True), sigma=cfg.sigma)
        steps = round(budget / per_step)
    fm.to(train.device)
    start = time.perf_counter()
    fm.fit(train, max(steps, 2), batch_size=b.batch, seed=seed)
    spent = {
        "nfe": sum(fm.nfe.values()),
        "seconds": time.perf_counter() - start,
        "gradient steps": len(fm.losses),
    }
    if label == "SB-CFM":  # minibatches whose entropic plan underflowed to the exact one
        spent["exact-plan batches"] = fm.exact_plan_batches
    if label == "Reflow":
        spent["pairs"] = fm.n_pairs
    return fm, spent


def _aggregate(per_seed: list[dict]) -> dict:
    """Mean (and std over seeds) of every metric: ``metrics[method][steps][name]``."""
    out = {}
    first = per_seed[0]["metrics"]
    for method, rows in first.items():
        out[method] = {}
        for s, row in rows.items():
            agg = {}
            for key in row:
                vals = [r["metrics"][method][s][key] for r in per_seed]
                agg[key] = statistics.fmean(vals)
                if len(vals) > 1:
                    agg[f"{key} std"] = statistics.stdev(vals)
            out[method][s] = agg
    return out


def _run_problem(problem_for, cfg: DemoConfig, seeds) -> tuple[dict, dict]:
    """``problem_for(seed) -> Problem`` trained and measured on every seed."""
    per_seed, grids = [], None
    for seed in seeds:
        p = problem_for(seed)
        print(f"== {p.name}, seed {seed}")
        measured, samples = _run_seed(p, cfg, seed)
        per_seed.append({"seed": seed, **measured})
        grids = grids or samples
    ratio = {
        m: statistics.fmean(r["compute"][m]["seconds"] / r["compute"]["ASBM"]["seconds"]
                            for r in per_seed)
        for m in per_seed[0]["compute"]
    }  # fmt: skip
    return {
        "metric": p.metric,
        "reference": p.reference,
        "n test": len(p.test),
        "metrics": _aggregate(per_seed),
        "seeds": per_seed,
        "wall-clock vs ASBM": ratio,
        "stage 1 terminal": per_seed[0]["stage 1 terminal"],
        "stage 1 rounds": per_seed[0]["stage 1 rounds"],
        **p.extra,
    }, grids


def _check(cfg: DemoConfig) -> None:
    for c in (cfg, cfg.resolved()):  # what was asked, and what --quick makes of it
        if c.toy not in TOYS:
            raise ValueError(f"toy must be one of {sorted(TOYS)}, got {c.toy!r}")
        if not c.steps or min(c.steps) < 1:
            raise ValueError(f"steps must be a non-empty tuple of integers >= 1, got {c.steps}")
        if not set(VERDICT_STEPS) <= set(c.steps):
            raise ValueError(
                f"steps must include {VERDICT_STEPS} (the claims are about them), got {c.steps}"
            )
        if not c.seeds:
            raise ValueError("seeds must not be empty")
        if c.images and not c.face_seeds:
            raise ValueError("face_seeds must not be empty when the image studies run")
        for name in ("sigma", "prior_scale"):
            if not getattr(c, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(c, name)}")
        if c.hidden < 1:
            raise ValueError(f"hidden must be >= 1, got {c.hidden}")
        if c.unet_width < 8 or c.unet_width % 8:
            raise ValueError(f"unet_width must be a positive multiple of 8, got {c.unet_width}")
        for name in ("vector", "image", "face"):
            getattr(c, name).check(name)


def _mlp(shape, hidden):
    return lambda out_mult, time: MLP(shape, hidden, out_mult=out_mult, time=time)


def _unet(width):
    return lambda out_mult, time: TinyUNet(1, width, out_mult=out_mult)


def experiment(cfg: DemoConfig) -> dict:
    """Train and evaluate every method on every data set; return the measurements.

    ``problems[name]["metrics"][method][str(steps)]`` holds the seed means (and stds) of MMD,
    sliced W2, straightness (and the Fréchet proxy on images); ``problems[name]["seeds"]`` every
    seed's own numbers and compute; ``samples[name]`` the first seed's sample grids.
    """
    _check(cfg)
    device = resolve_device(cfg.device)
    cfg = cfg.resolved()
    problems, samples = {}, {}
    toy = TOYS[cfg.toy]

    def toy_problem(seed):  # the toy's points are drawn afresh for each seed, in one draw
        x = toy(8000 + cfg.n_eval, seed=seed, device=device)  # (standardised together)
        return Problem(cfg.toy, x[:8000], x[8000:], cfg.vector, _mlp((2,), cfg.hidden))

    problems[cfg.toy], samples[cfg.toy] = _run_problem(toy_problem, cfg, cfg.seeds)
    if cfg.digits or cfg.images:
        x, y = digits()
        perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
        x, y = x[perm].to(device), y[perm].to(device)
        train, test = x[:1300], x[1300:]
        fnet = train_feature_net(train, y[:1300], seed=0)
        extra = {"frechet (proxy) train vs test": frechet_distance(fnet, train[: len(test)], test)}
        runs = []
        if cfg.digits:
            runs.append(("digits", cfg.vector, _mlp((1, 8, 8), cfg.hidden)))
        if cfg.images:
            runs.append(("digits (TinyUNet)", cfg.image, _unet(cfg.unet_width)))
        for name, budget, make in runs:
            p = Problem(name, train, test, budget, make, FRECHET, fnet, extra=extra)
            problems[name], samples[name] = _run_problem(lambda _, p=p: p, cfg, cfg.seeds)
    if cfg.images:
        imgs, is_face = lfw(device)
        faces = imgs[is_face.bool()]
        train = torch.cat([faces, faces.flip(-1)])  # horizontal flips: 200 training faces
        # 32 features: a Fréchet distance on 100 samples needs a small covariance
        fnet = train_feature_net(torch.cat([imgs, imgs.flip(-1)]), torch.cat([is_face] * 2),
                                 seed=0, width=32)  # fmt: skip
        others = torch.cdist(faces.flatten(1), faces.flatten(1)) + 1e9 * torch.eye(
            len(faces), device=device
        )
        floor = {
            "frechet (proxy) flipped vs training faces": frechet_distance(
                fnet, faces.flip(-1), faces
            ),
            "feature mmd flipped vs training faces": feature_mmd(fnet, faces.flip(-1), faces),
            # each face's nearest other face (itself and its flip are not in ``faces``)
            "nn distance between training faces": others.min(1).values.mean().item(),
        }
        p = Problem("faces (TinyUNet)", train, faces, cfg.face, _unet(cfg.unet_width), FRECHET,
                    fnet, reference="the 100 training faces (no held-out split)",
                    memorisation=train, extra=floor)  # fmt: skip
        problems[p.name], samples[p.name] = _run_problem(lambda _: p, cfg, cfg.face_seeds)
    return {"steps": sorted(cfg.steps), "problems": problems, "samples": samples,
            "device": str(device)}  # fmt: skip
