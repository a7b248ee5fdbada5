"""Adjoint Schrödinger Bridge Matching (ASBM).

Paper: "Adjoint Schrödinger Bridge Matching" (arXiv 2602.15396). Official code: swswss/ASBM
(``components/{sdes,matchers,prior,buffer}.py``, ``runner.py``, ``distill.py``). Data at t = 0,
the energy-defined prior ``nu ∝ exp(-E)`` at t = 1. The README lists what follows the official
code and what differs.

Stage 1 — forward coupling. The controlled SDE ``dX = [f + g^2 u_theta(t, X)] dt + g dW`` from
data to nu. The SB optimum has ``u = grad log phi_t`` and terminal cost ``E + log phi^_1``, so with
the lean adjoint ``a_1 = grad E(x1) + h_phi(x1)``, ``h_phi ≈ grad log phi^_1``:

    adjoint matching    L_AM(theta) = E || u_theta(t, x_t) + a(t, 1) a_1 ||^2,
                        (x0, x1) from the replay buffer, x_t ~ reference bridge(x0, x1, t)
    corrector matching  L_CM(phi)   = E || h_phi(x1) - grad_{x1} log p_{1|0}(x1 | x0) ||^2

(official ``matchers.py``: the same targets, the lean adjoint transported in closed form by
``a(t, 1)``). They alternate in rounds: round 1 is adjoint matching with h = 0; every later round
first fits h on fresh pairs of the current forward process, then re-solves adjoint matching with
it. Buffers are re-simulated (without gradients) every few hundred steps. For Gaussian data the
whole iteration has a closed form (``icml26.asbm.gaussian``), which the tests hold the trained
networks to.

Stage 2 — backward generative dynamics, by bridge matching on the coupling stage 1 induces.
Default (``stage2="score"``, the official one): a backward score ``s(t, x)`` regressed onto
``grad log p_{t|0}(x_t | x0)`` (``bridge_score_loss``), sampled by Euler-Maruyama on
``dx = [f - g^2 s] dt + g dW`` or by Heun on the probability-flow ODE
``dx/dt = f + g^2 (u - s) / 2`` with stage 1's forward control. The alternative
(``stage2="posterior"``): a network predicts ``(x0, x1)`` from ``(t, x_t)``, sampled by the exact
update of the probability-flow ODE with the predictions held fixed over a step (DDIM-style,
``"ode"``) or by ancestral bridge sampling (``"sde"``).

One-step distillation: a generator regressed onto the sampler's endpoints (the official
``distill.py`` adds a distribution-matching term; see the README).
"""

import copy
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist
from safetensors.torch import load_file, save_file
from torch import nn
from tqdm.auto import tqdm

from icml26.asbm.checks import (
    check_kind,
    check_pair,
    check_shape,
    positive_int,
    positive_ints,
)
from icml26.asbm.nets import MLP, TinyUNet
from icml26.asbm.sde import EPS, GaussianEnergy, LinearSDE, randn, sde_from_config
from icml26.testing.checks import number


def _check_data(data: torch.Tensor, shape=None, min_n: int = 2, name: str = "data") -> torch.Tensor:
    if not isinstance(data, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(data).__name__}")
    if not data.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {data.dtype} (scale it and "
                        "convert with .float())")  # fmt: skip
    if data.dim() < 2 or data.shape[0] < min_n:
        raise ValueError(
            f"{name} must be (N, ...) with N >= {min_n}, got shape {tuple(data.shape)}"
        )
    if not torch.isfinite(data).all():
        raise ValueError(f"{name} contains NaN or inf")
    if shape is not None and tuple(data.shape[1:]) != tuple(shape):
        raise ValueError(
            f"{name} samples have shape {tuple(data.shape[1:])}, the model expects {tuple(shape)}"
        )
    return data.float()


def _bcast(c: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return c.view(-1, *([1] * (x.dim() - 1)))


def module_device(module: nn.Module) -> torch.device:
    """Where a module's parameters live (CPU for a module without any)."""
    p = next(module.parameters(), None)
    return p.device if p is not None else torch.device("cpu")


class ReplayBuffer:
    """(x0, x1) endpoint pairs of simulated trajectories, replaced wholesale on refresh."""

    def __init__(self):
        self.x0 = self.x1 = None

    def fill(self, x0: torch.Tensor, x1: torch.Tensor) -> None:
        check_pair(x0, x1)
        self.x0, self.x1 = x0.detach(), x1.detach()

    def __len__(self) -> int:
        return 0 if self.x0 is None else len(self.x0)

    def sample(self, batch: int, gen: torch.Generator):
        positive_int(batch, "batch")
        if not len(self):
            raise ValueError("the replay buffer is empty: fill it before sampling")
        # Indices come from the (CPU) training generator, so CPU runs draw what they always drew.
        idx = torch.randint(0, len(self), (batch,), generator=gen).to(self.x0.device)
        return self.x0[idx], self.x1[idx]


def adjoint_matching_loss(u_net, h_net, sde: LinearSDE, energy: GaussianEnergy, x0, x1, t):
    """``|| u(t, x_t) + a(t, 1) (grad E(x1) + h(x1)) ||^2`` with x_t on the reference bridge."""
    check_kind(sde, LinearSDE, "sde")
    check_kind(energy, GaussianEnergy, "energy")
    check_pair(x0, x1, t)
    x_t = sde.bridge_sample(x0, x1, t)
    with torch.no_grad():
        a1 = energy.grad(x1) + (h_net(None, x1) if h_net is not None else 0.0)
        target = -_bcast(sde.transfer(t), a1) * a1
    return (u_net(t, x_t) - target).pow(2).flatten(1).sum(1).mean()


def corrector_matching_loss(h_net, sde: LinearSDE, x0, x1):
    """``|| h(x1) - grad_{x1} log p_{1|0}(x1 | x0) ||^2``."""
    check_kind(sde, LinearSDE, "sde")
    check_pair(x0, x1)
    target = sde.grad_log_transition(x1, x0)
    return (h_net(None, x1) - target).pow(2).flatten(1).sum(1).mean()


def bridge_matching_loss(net, sde: LinearSDE, x0, x1, t):
    """Regress ``(x0, x1)`` from ``(t, x_t)``: the network outputs them stacked on dim 1."""
    check_kind(sde, LinearSDE, "sde")
    check_pair(x0, x1, t)
    x_t = sde.bridge_sample(x0, x1, t)
    pred = net(t, x_t)
    if pred.shape[0] != len(x0) or pred.shape[1] != 2 * x0.shape[1]:
        raise ValueError(f"net must output (x0, x1) stacked on dim 1 ({2 * x0.shape[1]} "
                         f"channels, out_mult=2), got {tuple(pred.shape)}")  # fmt: skip
    x0_hat, x1_hat = pred.chunk(2, dim=1)
    return ((x0_hat - x0).pow(2) + (x1_hat - x1).pow(2)).flatten(1).sum(1).mean()


def bridge_score_loss(net, sde: LinearSDE, x0, x1, t):
    """The official stage-2 objective (``components/matchers.py``): with x_t on the reference
    bridge between x0 and x1, regress the backward score ``s(t, x_t)`` onto
    ``grad_{x_t} log p_{t|0}(x_t | x0) = (a(0, t) x0 - x_t) / std_t^2``, weighted by ``std_t^2``,
    std_t the reference transition's from t = 0 (not the bridge's)::

        L(s) = E || std_t s(t, x_t) - (a(0, t) x0 - x_t) / std_t ||^2.

    The network outputs ``std_t s`` (the official network outputs s and the loss multiplies it
    by std_t: the same minimiser, a network output of unit scale at every t). Times are kept in
    [EPS, 1 - EPS] like the bridge's.
    """
    check_kind(sde, LinearSDE, "sde")
    check_pair(x0, x1, t)
    t = t.clamp(EPS, 1 - EPS)
    x_t = sde.bridge_sample(x0, x1, t)
    a0t, std = (_bcast(c, x0) for c in sde.from_zero(t))
    pred = net(t, x_t)
    if pred.shape != x0.shape:
        raise ValueError(f"net must output one score per input (shape {tuple(x0.shape)}, "
                         f"out_mult=1), got {tuple(pred.shape)}")  # fmt: skip
    return (pred - (a0t * x0 - x_t) / std).pow(2).flatten(1).sum(1).mean()


INTEGRATORS = ("em", "exponential")
"""How ``simulate_forward`` steps the forward SDE."""

STAGE2 = {"score": ("em", "heun"), "posterior": ("ode", "sde")}
"""Stage-2 parameterisations and their samplers (the first is the default)."""


def ema_update(average: nn.Module, live: nn.Module, decay: float, step: int) -> None:
    """``average <- d average + (1 - d) live`` with ``d = min(decay, (1 + step) / (10 + step))``.

    The official code averages with a fixed 0.999 over hundreds of thousands of steps; the
    warm-up keeps an average of a few thousand steps from being dominated by the initial
    weights (the usual Polyak-average warm-up)."""
    d = min(decay, (1 + step) / (10 + step))
    with torch.no_grad():
        for a, b in zip(average.parameters(), live.parameters(), strict=True):
            a.lerp_(b, 1 - d)
        for a, b in zip(average.buffers(), live.buffers(), strict=True):
            a.copy_(b)


def _zero_output_layer(net: nn.Module) -> None:
    """Zero the last linear or convolutional layer of ``net`` (its output starts at 0); a module
    without one (a fixed field) is left as it is."""
    layers = [m for m in net.modules() if isinstance(m, nn.Linear | nn.Conv2d)]
    if layers:
        nn.init.zeros_(layers[-1].weight)
        if layers[-1].bias is not None:
            nn.init.zeros_(layers[-1].bias)


AVERAGED_NETS = ("u_net", "h_net", "bridge_net", "generator", "u_ema", "bridge_ema")
"""Every module of a model, the moving averages included (what ``to`` moves and checkpoints
hold)."""

TRAIN_COST = 3
"""Per-sample cost of a gradient step in forward-pass units (a backward pass ~ two forwards)."""


def _ddp(module: nn.Module) -> nn.Module:
    if dist.is_available() and dist.is_initialized():
        return nn.parallel.DistributedDataParallel(module)
    return module


def _rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


@dataclass
class TrainLog:
    """Per-stage loss curves."""

    adjoint: list
    corrector: list
    bridge: list
    distill: list
    rounds: list = field(default_factory=list)
    """Stage-1 diagnostics after each round (see ``ASBM.stage1_diagnostics``)."""
    diagnostics_seconds: float = 0.0
    """Wall-clock spent on those diagnostics and checks (measurement, not training)."""
    matched_round: int | None = None
    """The first stage-1 round whose terminal law passed the official stopping rule."""


class ASBM:
    """Adjoint Schrödinger Bridge Matching from data (t = 0) to ``nu ∝ exp(-E)`` (t = 1).

    Args:
        shape: shape of one sample, e.g. (2,) or (1, 8, 8).
        sde: the reference SDE (BrownianSDE or VPSDE).
        energy: the prior's energy (GaussianEnergy).
        u_net, h_net, bridge_net, generator: any modules; ``u_net(t, x)`` and
            ``bridge_net(t, x)`` (2x channels out) take time, ``h_net(None, x)`` and
            ``generator(None, x)`` do not. Default: MLPs. The output layers of u and h (given
            or default) are zeroed, as in the official code (both start at 0): load pretrained
            weights after construction.
        sim_steps: steps when simulating the forward SDE.
        integrator: ``"em"`` (Euler-Maruyama, the official) or ``"exponential"`` (the
            reference's linear part exact; see ``simulate_forward``). Euler-Maruyama inflates
            the terminal variance (the VP reference alone: +2.3% at 30 steps, +0.7% at 100),
            which the stopping rule can see at low dimension.
        stage2: ``"score"`` (default; the official code's: a backward score trained with
            ``bridge_score_loss``, sampled by Euler-Maruyama or the Heun probability-flow ODE)
            or ``"posterior"`` (the network predicts E[x0 | x_t] and E[x1 | x_t] with
            ``bridge_matching_loss``, sampled by the DDIM-style ODE or ancestral bridges).
        ema: decay of the exponential moving averages of the forward control (stage 1) and of
            the stage-2 network (the official 0.999 for both, with a warm-up, see
            ``ema_update``). As in the official code (``--simulate-ema``), every simulation of
            the forward SDE -- the training buffers, the stopping rule, stage 2's couplings --
            and the probability-flow sampler use the averaged control, and sampling uses the
            averaged stage-2 network. ``None``: no averages.
    """

    def __init__(
        self,
        shape,
        sde: LinearSDE,
        energy: GaussianEnergy,
        u_net=None,
        h_net=None,
        bridge_net=None,
        generator=None,
        sim_steps: int = 100,
        hidden: int = 256,
        stage2: str = "score",
        ema: float | None = 0.999,
        integrator: str = "em",
    ):
        self.shape = check_shape(shape)
        if stage2 not in STAGE2:
            raise ValueError(f"stage2 must be one of {sorted(STAGE2)}, got {stage2!r}")
        if ema is not None:
            number("ema", ema, low=0, below=1)
        if integrator not in INTEGRATORS:
            raise ValueError(f"integrator must be one of {INTEGRATORS}, got {integrator!r}")
        self.stage2, self.ema, self.integrator = stage2, ema, integrator
        check_kind(sde, LinearSDE, "sde")
        check_kind(energy, GaussianEnergy, "energy")
        positive_int(sim_steps, "sim_steps")
        self.sde, self.energy, self.sim_steps = sde, energy, sim_steps
        self.u_net = u_net or MLP(self.shape, hidden)
        # u starts at 0, as in the official code: the first simulation is the reference's
        _zero_output_layer(self.u_net)
        # the averaged control starts as a copy of u and follows it during fit_forward
        self.u_ema = copy.deepcopy(self.u_net) if ema is not None else None
        self.h_net = h_net or MLP(self.shape, hidden, time=False)
        self.bridge_net = bridge_net or MLP(self.shape, hidden, out_mult=self._out_mult)
        # the stage-2 average starts as a copy of the network and follows it during fit_backward
        self.bridge_ema = copy.deepcopy(self.bridge_net) if ema is not None else None
        self.generator = generator or MLP(self.shape, hidden, time=False)
        # h starts at 0: the first round matches the energy alone (phi^_1 = const).
        _zero_output_layer(self.h_net)
        self.log = TrainLog([], [], [], [])
        self.stage1_fitted = False
        """Whether u_net is a trained forward control (``fit_forward`` ran)."""
        self.distill_time: float | None = None
        """t_c of a distribution-matched generator read out by Tweedie's formula (``distill_dm``);
        None: the generator maps x1 to a sample directly."""
        self.nfe = {"simulation": 0, "training": 0, "teacher": 0}
        """Training compute in per-sample network evaluations: a forward pass on one sample
        counts 1, a gradient step ``TRAIN_COST`` per sample (forward + backward); diagnostics
        and sampling for evaluation are not counted."""

    @property
    def control(self) -> nn.Module:
        """The forward control that simulations and the probability-flow sampler use: the
        moving average of ``u_net`` when there is one."""
        return self.u_ema if self.u_ema is not None else self.u_net

    @property
    def _out_mult(self) -> int:
        return 1 if self.stage2 == "score" else 2

    @property
    def device(self) -> torch.device:
        """The device of the networks (that of ``u_net``); data and samples are put there."""
        return module_device(self.u_net)

    def to(self, device: str | torch.device) -> "ASBM":
        """Move all four networks to ``device``; returns self."""
        for name in AVERAGED_NETS:
            if getattr(self, name) is not None:
                getattr(self, name).to(device)
        return self

    # --- stage 1 ---------------------------------------------------------------------------
    @torch.no_grad()
    def simulate_forward(
        self, x0: torch.Tensor, gen: torch.Generator | None = None, steps: int | None = None
    ) -> torch.Tensor:
        """``dX = [f + g^2 u] dt + g dW`` from x0 (B, ...) to t = 1 in ``steps`` uniform steps,
        on x0's device: Euler-Maruyama (``integrator="em"``, the official), or ``"exponential"``:
        the reference's linear part exactly and the control held fixed over each step,
        ``X' = a X + c u + sqrt(v) z`` (``sde.a``, ``sde.control_gain``, ``sde.v``), which
        carries the reference alone to its exact terminal law at any step count."""
        steps = steps or self.sim_steps
        x, dt = x0.clone(), 1.0 / steps
        for k in range(steps):
            t = torch.full((len(x),), k * dt, device=x.device)
            u = self.control(t, x)
            if self.integrator == "exponential":
                s, e = torch.tensor(k * dt), torch.tensor((k + 1) * dt)
                a, c, v = self.sde.a(s, e), self.sde.control_gain(s, e), self.sde.v(s, e)
                x = a * x + c * u + v.sqrt() * randn(x.shape, gen, x.device)
                continue
            g = _bcast(self.sde.g(t), x)
            drift = self.sde.f(t, x) + g**2 * u
            x = x + drift * dt + g * dt**0.5 * randn(x.shape, gen, x.device)
        return x

    def fit_forward(
        self,
        data: torch.Tensor,
        rounds: int = 4,
        adjoint_steps: int = 1000,
        corrector_steps: int = 1000,
        batch_size: int = 256,
        buffer_size: int = 4096,
        corrector_buffer: int = 16384,
        resimulate_every: int = 250,
        lr: float = 1e-3,
        seed: int = 0,
        progress: bool = True,
        diagnostics: int = 2048,
        stop_at_prior_match: bool = False,
        check_size: int = 51200,
        corrector_sim_steps: int | None = None,
    ) -> "ASBM":
        """Stage 1: adjoint matching (u) with h = 0, then ``rounds - 1`` times: corrector matching
        (h) on fresh pairs of the current forward process (a new buffer of ``corrector_buffer``
        pairs every ``resimulate_every`` steps: it overfits a small one), and adjoint matching.

        After each round, ``diagnostics`` fresh trajectories give ``stage1_diagnostics`` and
        ``check_size`` more the official stopping rule (``metrics.prior_match``), in the round's
        row of ``self.log.rounds``; ``self.log.matched_round`` is the first round that passes.
        With ``stop_at_prior_match``, ``rounds`` is a maximum and stage 1 stops there, as the
        official code does (it checks every 20 epochs from epoch 300). ``corrector_sim_steps``:
        Euler-Maruyama steps of the simulations that feed the corrector (the official
        ``--cm-nfe`` 100 is finer than its adjoint buffers' 20); None: ``sim_steps``. Runs on the
        networks' device; the draws come from a seeded CPU generator (the same batches on every
        device).
        """
        sizes = (batch_size, buffer_size, corrector_buffer, resimulate_every)
        _check_stage1(rounds, adjoint_steps, corrector_steps, *sizes)
        _check_rounds_log(diagnostics, check_size, stop_at_prior_match)
        corrector_sim = (self.sim_steps if corrector_sim_steps is None
                         else positive_int(corrector_sim_steps, "corrector_sim_steps"))  # fmt: skip
        data = _check_data(data, self.shape).to(self.device)
        gen = torch.Generator().manual_seed(seed + 1000 * _rank())
        u, h = _ddp(self.u_net), _ddp(self.h_net)
        opt_u = torch.optim.Adam(u.parameters(), lr=lr)
        opt_h = torch.optim.Adam(h.parameters(), lr=lr)
        buffer = ReplayBuffer()

        def refresh(size, steps):
            idx = torch.randint(0, len(data), (size,), generator=gen)
            x0 = data[idx.to(data.device)]
            buffer.fill(x0, self.simulate_forward(x0, gen, steps))
            self.nfe["simulation"] += size * steps

        total = rounds * adjoint_steps + (rounds - 1) * corrector_steps
        bar = tqdm(total=total, desc="ASBM stage 1", disable=not progress or _rank() != 0)
        for r in range(rounds):
            if r > 0:
                for k in range(corrector_steps):
                    if k % resimulate_every == 0:
                        refresh(corrector_buffer, corrector_sim)
                    self._corrector_step(h, opt_h, *buffer.sample(batch_size, gen))
                    bar.update()
            for k in range(adjoint_steps):
                if k % resimulate_every == 0:
                    refresh(buffer_size, self.sim_steps)
                x0, x1 = buffer.sample(batch_size, gen)
                t = torch.rand(batch_size, generator=gen).to(x0.device)
                # round 1 runs with h = 0 (h's last layer starts at zero): skip its forward pass
                self._adjoint_step(u, opt_u, x0, x1, t, self.h_net if r > 0 else None)
                bar.update()
            self.stage1_fitted = True
            self._log_round(r + 1, data, diagnostics, check_size, gen)
            if stop_at_prior_match and self._all_ranks(self.log.matched_round is not None):
                break
        bar.close()
        return self

    def _all_ranks(self, decision: bool) -> bool:
        """Rank 0's decision on every rank (each rank checks its own trajectories, and ranks
        that stopped in different rounds would wait on each other's gradients)."""
        if not (dist.is_available() and dist.is_initialized()):
            return decision
        flag = torch.tensor([int(decision)], device=self.device)
        dist.broadcast(flag, 0)
        return bool(flag.item())

    def _corrector_step(self, h, opt_h, x0: torch.Tensor, x1: torch.Tensor) -> None:
        loss = corrector_matching_loss(h, self.sde, x0, x1)
        opt_h.zero_grad()
        loss.backward()
        opt_h.step()
        self.log.corrector.append(loss.item())
        self.nfe["training"] += TRAIN_COST * len(x0)

    def _adjoint_step(self, u, opt_u, x0, x1, t, h_used) -> None:
        loss = adjoint_matching_loss(u, h_used, self.sde, self.energy, x0, x1, t)
        opt_u.zero_grad()
        loss.backward()
        opt_u.step()
        if self.u_ema is not None:  # one average over all rounds, as in the official code
            ema_update(self.u_ema, self.u_net, self.ema, len(self.log.adjoint))
        self.log.adjoint.append(loss.item())
        # u's gradient step, and h's forward pass for the target once h is in use
        self.nfe["training"] += (TRAIN_COST + (h_used is not None)) * len(x0)

    def _log_round(self, round_: int, data, diagnostics: int, check_size: int, gen) -> None:
        """The round's row of ``self.log.rounds`` (diagnostics, stopping rule), timed apart."""
        start = time.perf_counter()
        row = {"round": round_}
        if diagnostics:
            row.update(self.stage1_diagnostics(data, diagnostics, gen))
        if check_size:
            row["prior_match"] = self.prior_match(data, check_size, gen)
            if row["prior_match"]["passed"] and self.log.matched_round is None:
                self.log.matched_round = round_
        if len(row) > 1:
            self.log.rounds.append(row)
        self.log.diagnostics_seconds += time.perf_counter() - start

    @torch.no_grad()
    def prior_match(self, data: torch.Tensor, n: int = 51200,
                    gen: torch.Generator | None = None) -> dict:  # fmt: skip
        """The official stopping rule (``metrics.prior_match``) on ``n`` fresh trajectories from
        the data (simulated in chunks of 4096)."""
        from icml26.asbm.metrics import prior_match

        positive_int(n, "n", minimum=2)
        gen = gen or torch.Generator().manual_seed(0)
        data = _check_data(data, self.shape).to(self.device)
        idx = torch.randint(0, len(data), (n,), generator=gen).to(data.device)
        x1 = torch.cat([self.simulate_forward(data[c], gen) for c in idx.split(4096)])
        return prior_match(x1, self.energy.scale)

    @torch.no_grad()
    def stage1_diagnostics(
        self, data: torch.Tensor, n: int = 2048, gen: torch.Generator | None = None
    ) -> dict[str, float]:
        """Where stage 1 stands, on ``n`` fresh trajectories from the data:

        - ``terminal_mean`` / ``terminal_std``: mean over coordinates of X1's per-coordinate
          mean and standard deviation (the prior's are 0 and ``energy.scale``);
        - ``mmd_prior``: MMD between X1 and prior draws (at most 1024 of each);
        - ``corrector_loss``: the corrector loss on these fresh pairs, and
          ``corrector_linear_floor``: that of the best affine h fitted by least squares on
          another fresh set (a yardstick: an under-fitted network sits above it).
        """
        from icml26.asbm.metrics import mmd

        gen = gen or torch.Generator().manual_seed(0)
        data = _check_data(data, self.shape).to(self.device)

        def pairs():
            idx = torch.randint(0, len(data), (n,), generator=gen).to(data.device)
            return data[idx], self.simulate_forward(data[idx], gen)

        x0, x1 = pairs()
        flat = x1.flatten(1)
        prior = self.energy.sample(n, self.shape, gen, x1.device).flatten(1)
        out = {
            "terminal_mean": float(flat.mean(0).mean()),
            "terminal_std": float(flat.std(0).mean()),
            "mmd_prior": float(mmd(flat[:1024], prior[:1024])),  # n^2 memory: a subsample
            "corrector_loss": float(corrector_matching_loss(self.h_net, self.sde, x0, x1)),
        }
        f0, f1 = pairs()  # the affine least-squares fit, on other pairs
        design = torch.cat([f1.flatten(1), torch.ones(n, 1, device=f1.device)], 1).double()
        target = self.sde.grad_log_transition(f1, f0).flatten(1).double()
        coef = torch.linalg.lstsq(design.cpu(), target.cpu()).solution.to(design.device)
        test = torch.cat([flat, torch.ones(n, 1, device=flat.device)], 1).double()
        resid = test @ coef - self.sde.grad_log_transition(x1, x0).flatten(1).double()
        out["corrector_linear_floor"] = float(resid.pow(2).sum(1).mean())
        return out

    # --- stage 2 ---------------------------------------------------------------------------
    def fit_backward(
        self,
        data: torch.Tensor,
        steps: int = 3000,
        batch_size: int = 256,
        buffer_size: int = 8192,
        resimulate_every: int = 500,
        lr: float = 1e-3,
        seed: int = 0,
        progress: bool = True,
        coupling: str = "learned",
    ) -> "ASBM":
        """Stage 2: bridge matching on (x0, x1) pairs from the learned forward SDE, on the
        networks' device: ``bridge_score_loss`` (``stage2="score"``) or ``bridge_matching_loss``
        (``"posterior"``); the moving average follows every step.

        ``coupling="independent"`` pairs each x0 with a fresh prior draw instead of simulating
        stage 1 (no stage 1 needed): the positive control of the stage-2 code, which must then
        match flow matching with the independent coupling (both learn the same marginals)."""
        positive_ints(steps=steps, batch_size=batch_size, buffer_size=buffer_size,
                       resimulate_every=resimulate_every)  # fmt: skip
        if coupling not in ("learned", "independent"):
            raise ValueError(f"coupling must be 'learned' or 'independent', got {coupling!r}")
        data = _check_data(data, self.shape).to(self.device)
        gen = torch.Generator().manual_seed(seed + 1 + 1000 * _rank())
        net = _ddp(self.bridge_net)
        opt = torch.optim.Adam(net.parameters(), lr=lr)
        buffer = ReplayBuffer()
        for k in tqdm(range(steps), desc="ASBM stage 2", disable=not progress or _rank() != 0):
            if k % resimulate_every == 0:
                idx = torch.randint(0, len(data), (buffer_size,), generator=gen).to(data.device)
                if coupling == "independent":
                    x1 = self.energy.sample(buffer_size, self.shape, gen, data.device)
                else:
                    x1 = self.simulate_forward(data[idx], gen)
                    self.nfe["simulation"] += buffer_size * self.sim_steps
                buffer.fill(data[idx], x1)
            x0, x1 = buffer.sample(batch_size, gen)
            t = torch.rand(batch_size, generator=gen).to(x0.device)
            loss = self._stage2_loss(net, self.sde, x0, x1, t)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if self.bridge_ema is not None:
                ema_update(self.bridge_ema, self.bridge_net, self.ema, len(self.log.bridge))
            self.log.bridge.append(loss.item())
            self.nfe["training"] += TRAIN_COST * batch_size
        return self

    @property
    def _stage2_loss(self):
        return bridge_score_loss if self.stage2 == "score" else bridge_matching_loss

    @property
    def stage2_net(self) -> nn.Module:
        """The stage-2 network sampling uses: the moving average when there is one."""
        return self.bridge_ema if self.bridge_ema is not None else self.bridge_net

    def _require(self, stage2: str, what: str) -> None:
        if self.stage2 != stage2:
            raise ValueError(f"{what} needs stage2={stage2!r}; this model has "
                             f"stage2={self.stage2!r}")  # fmt: skip

    @torch.no_grad()
    def predict(self, t: torch.Tensor, x: torch.Tensor):
        """(x0_hat, x1_hat) = E[x0 | x_t], E[x1 | x_t] under the coupling (posterior model)."""
        self._require("posterior", "predict")
        return self.stage2_net(t, x).chunk(2, dim=1)

    @torch.no_grad()
    def score(self, t: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """The backward score ``s(t, x) ≈ E[grad log p_{t|0}(x_t | x0) | x_t = x]``
        (``stage2="score"``): the network's output divided by std_t."""
        self._require("score", "score")
        return self.stage2_net(t, x) / _bcast(self.sde.from_zero(t)[1], x)

    @torch.no_grad()
    def probability_flow(self, t: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """``dx/dt = f + g^2 (u - s) / 2`` (official ``sdes.py``): the forward control u of stage 1
        and the backward score s of stage 2 give the marginals' deterministic flow, since the
        forward drift f + g^2 u and the backward drift f - g^2 s differ by g^2 grad log p_t."""
        g2 = _bcast(self.sde.g(t), x) ** 2
        return self.sde.f(t, x) + 0.5 * g2 * (self._forward_control(t, x) - self.score(t, x))

    MEMORYLESS = 0.01
    """a(0, 1) below this: the reference forgets X_0, so its own coupling is the independent
    one and its forward control is 0 (the official probability-flow sampler for score matching
    runs with u = 0)."""

    def _forward_control(self, t, x) -> torch.Tensor:
        if self.stage1_fitted:
            return self.control(t, x)
        a01 = float(self.sde.a(torch.zeros(()), torch.ones(())))
        if a01 < self.MEMORYLESS:
            return torch.zeros_like(x)
        raise ValueError(
            f"the probability-flow sampler needs stage 1's forward control: run fit_forward "
            f"first, or sample with method='em' (this reference keeps a(0, 1) = {a01:.3f} of "
            "X_0, so its forward drift is not the reference's)"
        )

    @torch.no_grad()
    def sample(
        self,
        n: int | None = None,
        steps: int = 8,
        method: str | None = None,
        x1: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
        return_trajectory: bool = False,
    ):
        """Generate from ``x1 ~ nu`` (or the given x1) back to t = 0 in ``steps`` time steps on
        the uniform grid from 1 to 0.

        ``stage2="score"``: ``method="em"`` (default) is Euler-Maruyama on the backward SDE
        ``dx = [f - g^2 s] dt + g dW`` (one network call per step, no noise on the last step, as
        in the official sampler); ``"heun"`` integrates the probability-flow ODE
        (``probability_flow``) with Heun's method, a plain Euler last step, each velocity
        costing a call of the score and of the forward control (so 4 calls per step but the
        last, which costs 2). ``stage2="posterior"``: ``"ode"`` (default) is deterministic given
        x1; ``"sde"`` samples the reference bridge between the predicted x0 and the current
        state at every step (ancestral). Runs on x1's device, or on the networks' when x1 is
        drawn here.
        """
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps must be an integer >= 1, got {steps!r}")
        methods = STAGE2[self.stage2]
        method = methods[0] if method is None else method
        if method not in methods:
            raise ValueError(f"method must be one of {methods} for stage2={self.stage2!r}, "
                             f"got {method!r}")  # fmt: skip
        if x1 is None:
            if n is None or n < 1:
                raise ValueError("give n >= 1 or x1")
            x1 = self.energy.sample(n, self.shape, generator, self.device)
        x = _check_data(x1, self.shape, min_n=1, name="x1")
        ts = torch.linspace(1.0, 0.0, steps + 1)  # host-side grid: only read back as floats
        if self.stage2 == "score":
            traj = self._sample_score(x, ts, method, generator)
            return (traj[-1], traj) if return_trajectory else traj[-1]
        traj = [x]
        for k in range(steps):
            t, s = ts[k].item(), ts[k + 1].item()
            tt = torch.full((len(x),), t, device=x.device)
            x0_hat, x1_hat = self.predict(tt, x)
            if k == 0:
                x1_hat = x  # at t = 1 the state is x1 itself
            if s <= 0.0:
                x = x0_hat
            elif method == "ode":
                A_t, B_t, v_t = self.sde.bridge_coefficients(torch.tensor(t, device=x.device))
                A_s, B_s, v_s = self.sde.bridge_coefficients(torch.tensor(s, device=x.device))
                resid = torch.zeros_like(x) if k == 0 else x - A_t * x0_hat - B_t * x1_hat
                x = A_s * x0_hat + B_s * x1_hat + (v_s / v_t).sqrt() * resid
            else:
                x = self._bridge_step(x0_hat, x, s, t, generator)
            traj.append(x)
        return (x, traj) if return_trajectory else x

    def _sample_score(self, x, ts, method: str, gen) -> list[torch.Tensor]:
        traj, last = [x], len(ts) - 2
        for k in range(len(ts) - 1):
            t, s = ts[k].item(), ts[k + 1].item()
            dt = t - s
            tt = torch.full((len(x),), t, device=x.device)
            if method == "em":
                g = _bcast(self.sde.g(tt), x)
                x = x + (g**2 * self.score(tt, x) - self.sde.f(tt, x)) * dt
                if k < last:
                    x = x + g * dt**0.5 * randn(x.shape, gen, x.device)
            else:
                v = self.probability_flow(tt, x)
                guess = x - dt * v
                if k < last:  # Heun: average the slopes at both ends
                    ss = torch.full((len(x),), s, device=x.device)
                    guess = x - 0.5 * dt * (v + self.probability_flow(ss, guess))
                x = guess
            traj.append(x)
        return traj

    def _bridge_step(self, x0, xt, s: float, t: float, gen) -> torch.Tensor:
        # Reference bridge on [0, t] pinned at x0 and xt, evaluated at s < t.
        sde = self.sde
        s_, t_, z = (torch.tensor(c, device=xt.device) for c in (s, t, 0.0))
        v0s, vst = sde.v(z, s_), sde.v(s_, t_)
        a0s, ast = sde.a(z, s_), sde.a(s_, t_)
        w = 1.0 / (1.0 / v0s + ast**2 / vst)
        mean = w * (a0s * x0 / v0s + ast * xt / vst)
        return mean + w.sqrt() * randn(xt.shape, gen, xt.device)

    # --- distillation -----------------------------------------------------------------------
    @property
    def teacher_method(self) -> str:
        """The deterministic sampler that makes distillation pairs: Heun on the probability-flow
        ODE (the official teacher) or the posterior model's ODE."""
        return "heun" if self.stage2 == "score" else "ode"

    def sampler_calls(self, steps: int, method: str | None = None) -> int:
        """Network evaluations per sample of ``sample(steps=steps, method=method)``."""
        method = method or STAGE2[self.stage2][0]
        return 4 * steps - 2 if method == "heun" else steps

    def _teacher_pairs(self, n_pairs: int, teacher_steps: int, gen: torch.Generator):
        x1 = self.energy.sample(n_pairs, self.shape, gen, self.device)
        x0 = torch.cat([self.sample(x1=c, steps=teacher_steps, method=self.teacher_method)
                        for c in x1.split(2048)])  # fmt: skip
        self.nfe["teacher"] += n_pairs * self.sampler_calls(teacher_steps, self.teacher_method)
        return x1, x0

    def distill(
        self,
        n_pairs: int = 8192,
        teacher_steps: int = 32,
        steps: int = 2000,
        batch_size: int = 256,
        lr: float = 1e-3,
        seed: int = 0,
        progress: bool = True,
    ) -> "ASBM":
        """Regress a one-step generator ``G(x1)`` onto the deterministic sampler's endpoints from
        ``x1`` (``teacher_method``), on the networks' device. See ``distill_dm`` for the official
        objective."""
        gen = torch.Generator().manual_seed(seed + 2)
        x1, x0 = self._teacher_pairs(n_pairs, teacher_steps, gen)
        net = _ddp(self.generator)
        opt = torch.optim.Adam(net.parameters(), lr=lr)
        for _ in tqdm(range(steps), desc="distill", disable=not progress or _rank() != 0):
            idx = torch.randint(0, n_pairs, (batch_size,), generator=gen).to(x1.device)
            loss = (net(None, x1[idx]) - x0[idx]).pow(2).flatten(1).sum(1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            self.log.distill.append(loss.item())
            self.nfe["training"] += TRAIN_COST * batch_size
        self.distill_time = None
        return self

    def distill_dm(
        self,
        n_pairs: int = 8192,
        teacher_steps: int = 25,
        steps: int = 2000,
        batch_size: int = 256,
        lr: float = 1e-4,
        regression: float = 0.025,
        fake_updates: int = 5,
        clip: float = 10.0,
        seed: int = 0,
        progress: bool = True,
    ) -> "ASBM":
        """The official distillation (``distill.py``): distribution matching plus ``regression``
        times a regression onto teacher pairs, for the score model.

        - The generator is a score network initialised from the (averaged) stage-2 network and
          read out by Tweedie's formula at t_c = 1: ``G(z) = (z + std_1^2 s_G(1, z)) / a(0, 1)``,
          so it starts as the teacher's one-jump posterior mean.
        - A fake score network, also initialised from the teacher, follows the generator's law:
          every step it takes one ``bridge_score_loss`` step on bridges between ``G(z)`` and z.
        - Every ``fake_updates`` steps the generator takes one step on
          ``L = 1/2 || G(z) - sg(G(z) - w_t (s_fake - s_real)(t, x_t)) ||^2
          + regression || G(z') - x0' ||^2``, x_t on the bridge between G(z) and z, t uniform,
          ``w_t = 0.9 B_t + 0.1`` (B_t the bridge's weight on z), (z', x0') teacher pairs made by
          Heun on the probability-flow ODE (``teacher_steps`` steps).

        ``regression`` 0.025 is the official 0.1 on the [0, 1] image scale, for data in [-1, 1];
        gradients clipped at ``clip`` (official 10). The README lists the differences. The
        distilled generator replaces ``self.generator``; ``sample_distilled`` reads it at t_c."""
        self._require("score", "distill_dm")
        positive_ints(n_pairs=n_pairs, teacher_steps=teacher_steps, steps=steps,
                      batch_size=batch_size, fake_updates=fake_updates)  # fmt: skip
        reg_weight = number("regression", regression, low=0)
        clip = number("clip", clip, above=0)
        gen = torch.Generator().manual_seed(seed + 3)
        if reg_weight:
            x1, x0 = self._teacher_pairs(n_pairs, teacher_steps, gen)
        real = self.stage2_net
        self.generator = copy.deepcopy(real).requires_grad_(True)
        fake = copy.deepcopy(real).requires_grad_(True)
        g_net, f_net = _ddp(self.generator), _ddp(fake)
        opt_g = torch.optim.AdamW(g_net.parameters(), lr=lr, weight_decay=0.0)
        opt_f = torch.optim.AdamW(f_net.parameters(), lr=lr, weight_decay=0.0)
        self.distill_time = 1.0
        for k in tqdm(range(steps), desc="distill (DM)", disable=not progress or _rank() != 0):
            z = self.energy.sample(batch_size, self.shape, gen, self.device)
            with torch.no_grad():
                x_gen = self._tweedie(g_net, z)
            t = torch.rand(batch_size, generator=gen).to(z.device)
            loss_f = bridge_score_loss(f_net, self.sde, x_gen, z, t)
            opt_f.zero_grad()
            loss_f.backward()
            opt_f.step()
            self.nfe["training"] += TRAIN_COST * batch_size + batch_size  # + G's forward pass
            if k % fake_updates:
                continue
            x_gen = self._tweedie(g_net, z)
            t = torch.rand(batch_size, generator=gen).to(z.device).clamp(EPS, 1 - EPS)
            with torch.no_grad():
                x_t = self.sde.bridge_sample(x_gen, z, t)
                std = _bcast(self.sde.from_zero(t)[1], z)
                w = 0.9 * _bcast(self.sde.bridge_coefficients(t)[1], z) + 0.1
                v = w * (fake(t, x_t) - real(t, x_t)) / std
            # the gradient of this surrogate with respect to G(z) is v itself
            loss = 0.5 * (x_gen - (x_gen.detach() - v)).pow(2).flatten(1).sum(1).mean()
            if reg_weight:
                idx = torch.randint(0, n_pairs, (batch_size,), generator=gen).to(z.device)
                reg = (self._tweedie(g_net, x1[idx]) - x0[idx]).pow(2).flatten(1).sum(1).mean()
                loss = loss + reg_weight * reg
            opt_g.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(g_net.parameters(), clip)
            opt_g.step()
            self.log.distill.append(loss.item())
            # the generator's passes with gradients (two with the regression), two scores for v
            passes = 2 if reg_weight else 1
            self.nfe["training"] += passes * TRAIN_COST * batch_size + 2 * batch_size
        return self

    def _tweedie(self, net, z: torch.Tensor) -> torch.Tensor:
        t = torch.full((len(z),), self.distill_time, device=z.device)
        a, std = (_bcast(c, z) for c in self.sde.from_zero(t.clamp(EPS, 1 - EPS)))
        return (z + std * net(t, z)) / a  # net outputs std * s, so std^2 s = std * net

    @torch.no_grad()
    def sample_distilled(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """One network call per sample: the distilled generator at x1 ~ nu."""
        x1 = self.energy.sample(n, self.shape, generator, module_device(self.generator))
        if self.distill_time is not None:
            return self._tweedie(self.generator, x1)
        return self.generator(None, x1)

    # --- checkpoints ------------------------------------------------------------------------
    def save_pretrained(self, directory: str | os.PathLike) -> None:
        """safetensors weights + JSON config, each written to a temp file and renamed."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        tensors = {}
        for name in AVERAGED_NETS:
            if getattr(self, name) is None:
                continue
            for k, v in getattr(self, name).state_dict().items():
                tensors[f"{name}.{k}"] = v.detach().contiguous().cpu()
        config = {
            "shape": list(self.shape),
            "sde": self.sde.config(),
            "energy_scale": self.energy.scale,
            "sim_steps": self.sim_steps,
            "stage2": self.stage2,
            "ema": self.ema,
            "integrator": self.integrator,
            "distill_time": self.distill_time,
            "stage1_fitted": self.stage1_fitted,
            "nets": {
                n: getattr(getattr(self, n), "init_config", None)
                for n in ("u_net", "h_net", "bridge_net", "generator")
            },
        }
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".safetensors")
        os.close(fd)
        save_file(tensors, tmp)
        os.replace(tmp, directory / "model.safetensors")
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(config, f, indent=2)
        os.replace(tmp, directory / "config.json")

    @classmethod
    def from_pretrained(
        cls, directory: str | os.PathLike, device: str | torch.device = "cpu", **nets
    ) -> "ASBM":
        """Load a checkpoint onto ``device``; built-in nets are rebuilt from the config, custom
        ones passed in."""
        directory = Path(directory)
        try:
            config = json.loads((directory / "config.json").read_text())
            tensors = load_file(directory / "model.safetensors")
        except FileNotFoundError as e:
            raise ValueError(f"{directory} is not an ASBM checkpoint: {e}") from None
        except (json.JSONDecodeError, OSError) as e:
            raise ValueError(f"{directory}: corrupted checkpoint ({e})") from None
        built = {}
        for name, spec in config["nets"].items():
            if name in nets:
                built[name] = nets[name]
            elif spec is None:
                raise ValueError(f"{name} is a custom module: pass {name}=... to from_pretrained")
            else:
                built[name] = build_net(spec)
        model = cls(
            config["shape"],
            sde_from_config(config["sde"]),
            GaussianEnergy(config["energy_scale"]),
            sim_steps=config["sim_steps"],
            # checkpoints written before these fields existed are posterior models without EMA
            stage2=config.get("stage2", "posterior"),
            ema=config.get("ema"),
            integrator=config.get("integrator", "em"),
            **built,
        )
        model.distill_time = config.get("distill_time")
        # checkpoints written before the field existed come from train, which runs stage 1
        model.stage1_fitted = config.get("stage1_fitted", True)
        averages = [n for n in ("u_ema", "bridge_ema") if getattr(model, n) is not None]
        for name in [*built, *averages]:
            prefix = f"{name}."
            state = {k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix)}
            if not state and name == "u_ema":  # written before stage 1 kept an average
                state = model.u_net.state_dict()
            getattr(model, name).load_state_dict(state)
        return model.to(device)


def build_net(spec: dict) -> nn.Module:
    """Rebuild a built-in network from its ``init_config``."""
    kind = spec.get("kind")
    kwargs = {k: v for k, v in spec.items() if k != "kind"}
    if kind == "mlp":
        return MLP(**kwargs)
    if kind == "unet":
        return TinyUNet(**kwargs)
    raise ValueError(f"unknown network kind {kind!r}")


def _check_rounds_log(diagnostics, check_size, stop_at_prior_match) -> None:
    positive_int(check_size, "check_size", minimum=0)
    positive_int(diagnostics, "diagnostics", minimum=0)
    if stop_at_prior_match and not check_size:
        raise ValueError("stop_at_prior_match needs check_size > 0 trajectories to check")


def _check_stage1(rounds, adjoint_steps, corrector_steps, *sizes) -> None:
    positive_int(rounds, "rounds")
    positive_int(adjoint_steps, "adjoint_steps")
    positive_int(corrector_steps, "corrector_steps", minimum=0)
    names = ("batch_size", "buffer_size", "corrector_buffer", "resimulate_every")
    positive_ints(**dict(zip(names, sizes, strict=True)))
