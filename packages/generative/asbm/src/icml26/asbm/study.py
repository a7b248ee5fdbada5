"""Quality vs number of sampling steps at equal gradient steps, on the official recipe: ASBM
(VP reference 0.1 -> 4, stage 1 to the official stopping rule, the score-parameterised stage 2
sampled by Euler-Maruyama, the distribution-matching one-step generator) against the paper's
own baseline (score matching on a memoryless VP) and against independent CFM, minibatch OT-CFM,
SB-CFM and rectified-flow reflow, on 2-D moons and 8x8 digits (MLPs) and 24x24 LFW faces (a
TinyUNet), with held-out data for every set and several seeds.

Equal budgets: every baseline takes as many gradient steps as ASBM took in all (stage 1 to its
stopping round, stage 2, the distillation's generator and fake-score steps); every network keeps
a 0.999 moving average and samples with it. ASBM's forward simulations and the teachers' passes
are extra compute, counted in network evaluations, and every arm's wall-clock is reported.

Controls (``verdict``): stage 1 reaches the official stopping rule on every seed, and stage 2
trained on the independent coupling (no stage 1) matches CFM, where both learn the same
marginals. ``experiment`` trains and measures; ``verdict`` (pure) judges.
"""

import functools
import hashlib
import json
import math
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from icml26.asbm.asbm import ASBM, INTEGRATORS
from icml26.asbm.baselines import FlowMatching, Reflow, score_matching
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
from icml26.asbm.sde import VPSDE, GaussianEnergy
from icml26.asbm.verdict import BASELINES, CONTROL_ARM, DATA_FLOOR, TRIVIAL_ARM
from icml26.testing.command import DemoOptions
from icml26.testing.files import atomic_write_text
from icml26.testing.results import resolve_device, source_commit

FRECHET = "frechet (proxy)"
FEATURE_MMD = "feature mmd"
EMA = 0.999
"""Every network's moving average (the official decay, with ``ema_update``'s warm-up)."""

REFLOW_EPOCHS = 16
"""Reflow's pair set is sized so its second phase sees each teacher pair about this many times
(a fixed small set would be revisited hundreds of times at these budgets and overfit)."""


@dataclass(frozen=True)
class Budget:
    """ASBM's training budget on one data set (the baselines get its gradient steps)."""

    rounds: int = 8
    """Most stage-1 rounds (adjoint matching, then corrector + adjoint matching); stage 1 stops
    at the first round that passes the official stopping rule."""
    adjoint_steps: int = 400
    corrector_steps: int = 400
    buffer: int = 4096
    """Simulated pairs per adjoint-matching buffer (a fresh one every 250 steps)."""
    corrector_buffer: int = 16384
    """Simulated pairs per corrector buffer (a fresh one every 250 steps)."""
    check: int = 51200
    """Trajectories the stopping rule checks after each round (the official 51,200)."""
    bridge_steps: int = 24000
    """Stage-2 gradient steps. The score-parameterised stage 2 converges far more slowly than
    flow matching: on the independent coupling, digits' Frechet proxy at 100 Euler-Maruyama
    steps is 6.4 after 6000 steps, 5.2 / 5.5 after 12,000 and 4.3 / 4.4 after 24,000 (seeds 0 /
    1), while CFM sits at 3.4 from 6000 steps on; moons' MMD at 100 steps 0.0015 (12,000) and
    0.0007 (24,000) against CFM's 0.0005 and 0.0004 (``results/controls``: 1.6x behind at
    3000)."""
    bridge_buffer: int = 8192
    distill_steps: int = 1000
    """Distribution-matching steps (fake-score steps; the generator steps every 5th)."""
    distill_pairs: int = 4096
    """Teacher pairs for the distillation's regression term (and reflow's second round)."""
    teacher_steps: int = 25
    """Heun steps of the teacher's probability-flow ODE."""
    sim_steps: int = 30
    """Steps of the forward SDE (``integrator``)."""
    batch: int = 256
    integrator: str = "exponential"
    """How the forward SDE is simulated: the reference's linear part exactly. The official
    Euler-Maruyama (``"em"``) inflates the terminal variance (the reference alone takes unit
    variance to 1.023 at 30 steps, 1.007 at 100; faces at 16 steps: 1.044), and the stopping
    rule's eigenvalue bar sits only 0.6% above its own median at 51,200 points in 2-D and 64-D:
    an exact stage 1 simulated by Euler-Maruyama would fail it (at 100 steps it would pass
    about 40% of the time, the faces essentially never)."""

    def check_entries(self, where: str) -> None:
        if self.integrator not in INTEGRATORS:
            raise ValueError(f"{where}.integrator must be one of {INTEGRATORS}, "
                             f"got {self.integrator!r}")  # fmt: skip
        ints = {k: v for k, v in asdict(self).items() if k != "integrator"}
        if any(v < 1 for k, v in ints.items() if k != "corrector_steps"):
            raise ValueError(f"{where}: every budget entry must be >= 1, got {ints}")
        if self.corrector_steps < 0:
            raise ValueError(f"{where}: corrector_steps must be >= 0")


FACE_BUDGET = Budget(
    rounds=5,
    adjoint_steps=200,
    corrector_steps=200,
    buffer=1024,
    corrector_buffer=2048,
    # 2048 trajectories per stopping-rule check (8192 took about 15 minutes a round on two CPU
    # cores). The eigenvalue bar is a prior draw's at the same size, so the rule stays fair, but
    # in 1728-D it now sees only a terminal direction whose variance exceeds the prior's by
    # about 1.9x (the BBP edge 1 + sqrt(d / n); 1.46x at 8192); the radial checks keep their 8%.
    check=2048,
    bridge_steps=800,
    bridge_buffer=2048,
    distill_steps=300,
    distill_pairs=1024,
    teacher_steps=10,
    sim_steps=16,
    batch=64,
)


@dataclass(frozen=True)
class DemoConfig(DemoOptions):
    """ASBM (the official recipe) vs score matching, CFM, OT-CFM, SB-CFM and reflow at equal
    gradient steps: quality vs sampling steps, 1 to 100.

    ``--quick``: small budgets, the 2-D problem only, one seed: well under a minute."""

    seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds of the MLP problems (moons, digits)."""
    face_seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds of the TinyUNet faces run."""
    toy: str = "moons"
    """2-D data set: moons, 8gaussians or checkerboard."""
    sigma: float = 0.5
    """SB-CFM's Brownian-bridge noise (its entropic regularisation is 2 sigma^2)."""
    prior_scale: float = 1.0
    """The prior nu = N(0, s^2 I), E(x) = ||x||^2 / 2 s^2."""
    steps: tuple[int, ...] = (1, 2, 4, 8, 20, 50, 100)
    """Sampling steps (= network evaluations for every Euler and Euler-Maruyama sampler)."""
    heun_steps: tuple[int, ...] = (3, 7, 13)
    """Heun steps of ASBM's probability-flow sampler (10, 26, 50 network evaluations)."""
    vector: Budget = Budget()
    """ASBM's budget on the 2-D toy."""
    digit: Budget = Budget()
    """ASBM's budget on MLP digits."""
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
    """Run the TinyUNet faces comparison."""
    resume: bool = False
    """Reuse the seeds an interrupted run with the same --out and settings finished (each data
    set's seed is saved under --out/parts/ when it ends, with the commit that ran it)."""

    def quick_settings(self) -> dict:
        return dict(
            seeds=self.seeds[:1],
            vector=Budget(
                rounds=2,
                adjoint_steps=100,
                corrector_steps=100,
                buffer=1024,
                corrector_buffer=1024,
                check=2048,
                bridge_steps=200,
                bridge_buffer=1024,
                distill_steps=50,
                distill_pairs=256,
                teacher_steps=4,
                sim_steps=10,
            ),
            n_eval=500,
            digits=False,
            images=False,
            steps=(1, 2, 4, 8, 20),
            heun_steps=(3,),
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
    """What the verdict compares: "mmd" (2-D), the Fréchet proxy or the feature MMD (images)."""
    feature_net: object = None
    memorisation: torch.Tensor | None = None
    """Training images to measure nearest-neighbour distances to."""
    extra: dict = field(default_factory=dict)


def _scores(x, p: Problem) -> dict:
    row = {"mmd": mmd(x, p.test), "sw2": sliced_w2(x, p.test)}
    if p.feature_net is not None:
        row[FRECHET] = frechet_distance(p.feature_net, x, p.test)
        row[FEATURE_MMD] = feature_mmd(p.feature_net, x, p.test)
    if p.memorisation is not None:
        row["nn distance to train"] = nearest_distance(x, p.memorisation)
    return row


def _evaluate(sample, p: Problem, steps, calls=None) -> dict:
    """``sample(k) -> (x, trajectory)`` scored at every k; ``calls(k)`` network evaluations."""
    rows = {}
    for k in steps:
        x, traj = sample(k)
        rows[str(k)] = {**_scores(x, p), "straightness": straightness(traj),
                        "network calls": calls(k) if calls else k}  # fmt: skip
    return rows


def _asbm(p: Problem, cfg: DemoConfig, seed: int) -> tuple[ASBM, dict]:
    """ASBM on the official recipe, trained to its budget; the model and what it spent."""
    b, shape = p.budget, tuple(p.train.shape[1:])
    torch.manual_seed(seed)
    model = ASBM(shape, VPSDE(), GaussianEnergy(cfg.prior_scale), sim_steps=b.sim_steps,
                 integrator=b.integrator,
                 u_net=p.make_net(1, True), h_net=p.make_net(1, False),
                 bridge_net=p.make_net(1, True), generator=p.make_net(1, False),
                 ema=EMA).to(p.train.device)  # fmt: skip
    start = time.perf_counter()
    model.fit_forward(p.train, b.rounds, b.adjoint_steps, b.corrector_steps, batch_size=b.batch,
                      buffer_size=b.buffer, corrector_buffer=b.corrector_buffer, seed=seed,
                      check_size=b.check, stop_at_prior_match=True)  # fmt: skip
    stage1_steps = len(model.log.adjoint) + len(model.log.corrector)
    model.fit_backward(p.train, b.bridge_steps, batch_size=b.batch, buffer_size=b.bridge_buffer,
                       seed=seed)  # fmt: skip
    model.distill_dm(b.distill_pairs, b.teacher_steps, b.distill_steps, b.batch, seed=seed)
    seconds = time.perf_counter() - start - model.log.diagnostics_seconds
    # the distillation takes a fake-score step every step and a generator step every fifth
    steps = stage1_steps + b.bridge_steps + b.distill_steps + len(model.log.distill)
    spent = {"gradient steps": steps, "seconds": seconds, "nfe": sum(model.nfe.values()),
             "parts": dict(model.nfe), "stage 1 rounds": len(model.log.rounds),
             "matched round": model.log.matched_round}  # fmt: skip
    return model, spent


def _baseline(label: str, p: Problem, cfg: DemoConfig, steps: int, seed: int):
    """One baseline trained for ``steps`` gradient steps; the model and what it spent."""
    b, shape, energy = p.budget, tuple(p.train.shape[1:]), GaussianEnergy(cfg.prior_scale)
    torch.manual_seed(seed)
    start = time.perf_counter()
    if label in ("Score matching", CONTROL_ARM):
        # the paper's baseline (memoryless VP) and the control (ASBM's own VP 0.1 -> 4), both
        # ASBM's stage-2 code on the independent coupling
        beta_max = 20.0 if label == "Score matching" else VPSDE().beta_max
        model = score_matching(shape, energy, p.make_net(1, True), beta_max=beta_max, ema=EMA)
        model.to(p.train.device).fit_backward(p.train, steps, batch_size=b.batch,
                                              buffer_size=b.bridge_buffer, seed=seed,
                                              coupling="independent")  # fmt: skip
        spent = {"gradient steps": len(model.log.bridge)}
    elif label == "Reflow":
        pairs = max(2 * b.batch, round(steps / 2 * b.batch / REFLOW_EPOCHS))
        model = Reflow(shape, energy, p.make_net(1, True), n_pairs=pairs,
                       teacher_steps=b.teacher_steps, ema=EMA).to(p.train.device)  # fmt: skip
        model.fit(p.train, steps, batch_size=b.batch, seed=seed)
        spent = {"gradient steps": len(model.losses), "pairs": pairs}
    else:
        coupling = {"CFM": "independent", "OT-CFM": "ot", "SB-CFM": "sb"}[label]
        model = FlowMatching(shape, energy, coupling, p.make_net(1, True), sigma=cfg.sigma,
                             ema=EMA).to(p.train.device)  # fmt: skip
        model.fit(p.train, steps, batch_size=b.batch, seed=seed)
        spent = {"gradient steps": len(model.losses)}
        if label == "SB-CFM":  # minibatches whose entropic plan underflowed to the exact one
            spent["exact-plan batches"] = model.exact_plan_batches
    spent.update(seconds=time.perf_counter() - start, nfe=sum(model.nfe.values()))
    return model, spent


def _run_seed(p: Problem, cfg: DemoConfig, seed: int) -> tuple[dict, dict]:
    """Train ASBM, then every baseline and the control arm at ASBM's gradient steps, on one
    seed; (measurements, sample grids)."""
    g = torch.Generator().manual_seed(seed + 7)
    n = len(p.test)
    model, spent = _asbm(p, cfg, seed)
    compute = {"ASBM": spent}
    # the same iteration in closed form if the data were Gaussian with independent coordinates
    # of the training set's means and variances: the speed an exact stage 1 would converge at
    exact = gaussian_stage1(p.train.mean(0).cpu(), p.train.var(0).cpu().clamp_min(1e-6),
                            model.sde, cfg.prior_scale, len(model.log.rounds))  # fmt: skip
    rounds = [{**row, "gaussian_reference_mean": float(e.mean.mean()),
               "gaussian_reference_std": float(e.var.sqrt().mean())}
              for row, e in zip(model.log.rounds, exact, strict=True)]  # fmt: skip
    results = {
        "ASBM": _evaluate(
            lambda k: model.sample(n, k, generator=g, return_trajectory=True), p, cfg.steps
        ),
        "ASBM (Heun)": _evaluate(
            lambda k: model.sample(n, k, method="heun", generator=g, return_trajectory=True),
            p,
            cfg.heun_steps,
            lambda k: model.sampler_calls(k, "heun"),
        ),
    }
    xd = model.sample_distilled(n, g)
    results["ASBM distilled (1 step)"] = {"1": {**_scores(xd, p), "straightness": 1.0,
                                                "network calls": 1}}  # fmt: skip
    samples = {"data": p.test[:64], "ASBM 1 step": model.sample(64, 1, generator=g),
               "ASBM 20 steps": model.sample(64, 20, generator=g),
               "ASBM distilled": xd[:64]}  # fmt: skip
    for label in (*BASELINES, CONTROL_ARM):
        # every arm gets ASBM's total gradient steps: the control arm is judged against CFM, so
        # it trains for CFM's steps (stage 2's own steps would compare unequal budgets)
        fm, compute[label] = _baseline(label, p, cfg, spent["gradient steps"], seed)
        results[label] = _evaluate(
            lambda k, fm=fm: fm.sample(n, k, generator=g, return_trajectory=True), p, cfg.steps
        )
        if label in BASELINES:
            samples[f"{label} 20 steps"] = fm.sample(64, 20, generator=g)
    # the trivial generator and the metric's floor, scored the same way (no network calls)
    for label, x in (
        (TRIVIAL_ARM, _gaussian_fit(p.train, n, g)),
        (DATA_FLOOR, p.train[torch.randperm(len(p.train), generator=g)[:n]]),
    ):
        results[label] = {"1": {**_scores(x, p), "straightness": 1.0, "network calls": 0}}
    measured = {"metrics": results, "compute": compute, "stage 1 rounds": rounds}
    return measured, {k: v.tolist() for k, v in samples.items()}


def _gaussian_fit(train: torch.Tensor, n: int, g: torch.Generator) -> torch.Tensor:
    """``n`` draws from N(mean, covariance) of ``train`` (flattened), exactly, in any dimension
    (a rank-deficient covariance included): mean + (X - mean)^T z / sqrt(N - 1), z ~ N(0, I_N)."""
    x = train.flatten(1).double().cpu()
    mean = x.mean(0)
    z = torch.randn(n, len(x), generator=g, dtype=torch.float64)
    draws = mean + z @ (x - mean) / math.sqrt(len(x) - 1)
    return draws.to(train.dtype).reshape(n, *train.shape[1:]).to(train.device)


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


@functools.lru_cache(maxsize=1)
def _code_identity() -> tuple[str, str]:
    """(sha256 of this package's Python sources, the commit checked out), taken once when the
    run starts: a part is reused only by the same code, and records the commit it ran from."""
    digest = hashlib.sha256()
    for f in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(f.name.encode() + b"\0" + f.read_bytes())
    return digest.hexdigest()[:16], source_commit(__file__)


def _part_key(p: Problem, cfg: DemoConfig, seed: int) -> dict:
    """What one (data set, seed) measurement depends on -- the code, the data set and seed, the
    budget and the settings the study reads -- a saved part is reused only if this matches."""
    fields = ("toy", "sigma", "prior_scale", "steps", "heun_steps", "hidden", "unet_width",
              "n_eval")  # fmt: skip
    cfg_fields = {f: getattr(cfg, f) for f in fields}
    return json.loads(json.dumps({"code": _code_identity()[0], "problem": p.name, "seed": seed,
                                  "budget": asdict(p.budget), **cfg_fields}))  # fmt: skip


def _seed_part(p: Problem, cfg: DemoConfig, seed: int, out: Path | None, reused: dict):
    """``_run_seed`` or, with --resume, what an earlier run with the same settings saved under
    out/parts/; every finished seed is saved there atomically with its seconds and commit."""
    key = _part_key(p, cfg, seed)
    path = None if out is None else out / "parts" / f"{p.name.split()[0]}-seed{seed}.json"
    if cfg.resume and path is not None and path.exists():
        saved = json.loads(path.read_text())
        if saved.get("config") == key:
            print(f"== {p.name}, seed {seed}: reusing {path}")
            reused[path.stem] = {"seconds": saved["seconds"], "commit": saved["commit"]}
            return saved["measured"], saved["samples"]
    print(f"== {p.name}, seed {seed}")
    start = time.perf_counter()
    measured, samples = _run_seed(p, cfg, seed)
    if path is not None:
        record = {
            "config": key,
            "seconds": round(time.perf_counter() - start, 1),
            "commit": _code_identity()[1],
            "measured": measured,
            "samples": samples,
        }
        atomic_write_text(path, json.dumps(record))  # fmt: skip
    return measured, samples


def _run_problem(problem_for, cfg: DemoConfig, seeds, out=None, reused=None) -> tuple[dict, dict]:
    """``problem_for(seed) -> Problem`` trained and measured on every seed."""
    per_seed, grids = [], None
    for seed in seeds:
        p = problem_for(seed)
        measured, samples = _seed_part(p, cfg, seed, out, {} if reused is None else reused)
        per_seed.append({"seed": seed, **measured})
        grids = grids or samples
    ratio = {
        m: statistics.fmean(r["compute"][m]["seconds"] / r["compute"]["ASBM"]["seconds"]
                            for r in per_seed)
        for m in per_seed[0]["compute"]
    }  # fmt: skip
    return {
        "metric": p.metric,
        "reference": "held-out",
        "n test": len(p.test),
        "n train": len(p.train),
        "metrics": _aggregate(per_seed),
        "seeds": per_seed,
        "wall-clock vs ASBM": ratio,
        "stage 1 rounds": per_seed[0]["stage 1 rounds"],
        **p.extra,
    }, grids


def _check(cfg: DemoConfig) -> None:
    for c in (cfg, cfg.resolved()):  # what was asked, and what --quick makes of it
        if c.toy not in TOYS:
            raise ValueError(f"toy must be one of {sorted(TOYS)}, got {c.toy!r}")
        if not c.steps or min(c.steps) < 1:
            raise ValueError(f"steps must be a non-empty tuple of integers >= 1, got {c.steps}")
        if not c.heun_steps or min(c.heun_steps) < 1:
            raise ValueError(f"heun_steps must be integers >= 1, got {c.heun_steps}")
        if 1 not in c.steps:
            raise ValueError(f"steps must include 1 (the one-step claims), got {c.steps}")
        if not c.seeds:
            raise ValueError("seeds must not be empty")
        if c.images and not c.face_seeds:
            raise ValueError("face_seeds must not be empty when the faces study runs")
        for name in ("sigma", "prior_scale"):
            if not getattr(c, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(c, name)}")
        if c.hidden < 1:
            raise ValueError(f"hidden must be >= 1, got {c.hidden}")
        if c.unet_width < 8 or c.unet_width % 8:
            raise ValueError(f"unet_width must be a positive multiple of 8, got {c.unet_width}")
        for name in ("vector", "digit", "face"):
            getattr(c, name).check_entries(name)


def _mlp(shape, hidden):
    return lambda out_mult, time: MLP(shape, hidden, out_mult=out_mult, time=time)


def _unet(width):
    return lambda out_mult, time: TinyUNet(1, width, out_mult=out_mult)


FACE_TEST = 20
"""Faces held out (with their mirror images) from the 100 of the LFW subset."""


def _faces_problem(cfg: DemoConfig, device) -> Problem:
    """80 training faces and their mirror images; 20 held-out faces and theirs."""
    imgs, is_face = lfw(device)
    faces = imgs[is_face.bool()]
    perm = torch.randperm(len(faces), generator=torch.Generator().manual_seed(0)).to(device)
    train, test = faces[perm[FACE_TEST:]], faces[perm[:FACE_TEST]]
    train, test = torch.cat([train, train.flip(-1)]), torch.cat([test, test.flip(-1)])
    # 32 features: a distance on 40 held-out images needs a small feature space; trained on
    # the training faces and the background patches only
    background = imgs[~is_face.bool()]
    fnet = train_feature_net(torch.cat([train, background, background.flip(-1)]),
                             torch.cat([torch.ones(len(train)), torch.zeros(2 * len(background))]
                                       ).long().to(device), seed=0, width=32)  # fmt: skip
    floor = {
        "feature mmd train vs held-out faces": feature_mmd(fnet, train, test),
        "frechet (proxy) train vs held-out faces": frechet_distance(fnet, train, test),
        "nn distance held-out to train faces": nearest_distance(test, train),
    }
    return Problem("faces (TinyUNet)", train, test, cfg.face, _unet(cfg.unet_width),
                   FEATURE_MMD, fnet, memorisation=train, extra=floor)  # fmt: skip


def experiment(cfg: DemoConfig, out: Path | None = None) -> dict:
    """Train and evaluate every method on every data set; return the measurements.

    ``problems[name]["metrics"][method][str(steps)]`` holds the seed means (and stds) of MMD,
    sliced W2, straightness and network calls (and the Fréchet proxy and feature MMD on
    images); ``problems[name]["seeds"]`` every seed's own numbers and compute;
    ``samples[name]`` the first seed's sample grids; ``reused`` the seeds taken from ``out``'s
    parts (--resume) with the seconds and commit of the run that measured them.
    """
    _check(cfg)
    _code_identity()  # the code and commit this run starts from
    device = resolve_device(cfg.device)
    cfg = cfg.resolved()
    problems, samples, reused = {}, {}, {}
    toy = TOYS[cfg.toy]

    def toy_problem(seed):  # the toy's points are drawn afresh for each seed, in one draw
        x = toy(8000 + cfg.n_eval, seed=seed, device=device)  # (standardised together)
        return Problem(cfg.toy, x[:8000], x[8000:], cfg.vector, _mlp((2,), cfg.hidden))

    problems[cfg.toy], samples[cfg.toy] = _run_problem(toy_problem, cfg, cfg.seeds, out, reused)
    if cfg.digits:
        x, y = digits()
        perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
        x, y = x[perm].to(device), y[perm].to(device)
        train, test = x[:1300], x[1300:]
        fnet = train_feature_net(train, y[:1300], seed=0)
        extra = {"frechet (proxy) train vs test": frechet_distance(fnet, train[: len(test)], test)}
        p = Problem("digits", train, test, cfg.digit, _mlp((1, 8, 8), cfg.hidden), FRECHET,
                    fnet, extra=extra)  # fmt: skip
        problems[p.name], samples[p.name] = _run_problem(lambda _: p, cfg, cfg.seeds, out, reused)
    if cfg.images:
        p = _faces_problem(cfg, device)
        seeds = cfg.face_seeds
        problems[p.name], samples[p.name] = _run_problem(lambda _: p, cfg, seeds, out, reused)
    return {"protocol": "official", "steps": sorted(cfg.steps), "problems": problems,
            "samples": samples, "reused": reused, "device": str(device)}  # fmt: skip
