"""Adjoint Schrödinger Bridge Matching (ASBM).

Paper: "Adjoint Schrödinger Bridge Matching" (arXiv 2602.15396). No official code is public; this
is OUR RECONSTRUCTION from the paper's description and the Adjoint Schrödinger Bridge Sampler
(ASBS; Liu et al., 2025), run with the data as the source (t = 0) and the energy-defined prior
``nu ∝ exp(-E)`` as the target (t = 1). Every choice below is ours unless the docstring cites it.

Stage 1 — forward coupling. The controlled SDE ``dX = [f + g^2 u_theta(t, X)] dt + g dW`` from
data to nu. The SB optimum has ``u = grad log phi_t`` and terminal cost ``E + log phi^_1``, so with
the lean adjoint ``a_1 = grad E(x1) + h_phi(x1)``, ``h_phi ≈ grad log phi^_1``:

    adjoint matching    L_AM(theta) = E || u_theta(t, x_t) + a(t, 1) a_1 ||^2,
                        (x0, x1) from the replay buffer, x_t ~ reference bridge(x0, x1, t)
    corrector matching  L_CM(phi)   = E || h_phi(x1) - grad_{x1} log p_{1|0}(x1 | x0) ||^2

alternated for rounds (IPF-like): round 1 is adjoint matching with h = 0; every later round first
fits h on fresh pairs of the current forward process, then re-solves adjoint matching with it, so
every round ends on adjoint matching and uses the corrector fitted just before it. Buffers are
re-simulated (without gradients) every few hundred steps. a(t, 1) = 1 for the Brownian
reference. For Gaussian data the whole iteration has a closed form (``icml26.asbm.gaussian``),
which the tests hold the trained networks to.

Stage 2 — backward generative dynamics. Bridge matching on the coupling stage 1 induces: a
network predicts ``(x0, x1)`` from ``(t, x_t)`` with x_t on the reference bridge (regressing x0
from (t, x_t), plus x1 for the probability-flow ODE); sampling starts at ``x1 ~ nu`` and runs to
t = 0 either deterministically (``"ode"``: the exact update of the probability-flow ODE when the
predictions are held fixed over a step, DDIM-style) or by ancestral bridge sampling (``"sde"``).

One-step distillation: a generator regressed onto the ODE's endpoints.
"""

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
from icml26.asbm.sde import GaussianEnergy, LinearSDE, randn, sde_from_config


def _check_data(data: torch.Tensor, shape=None, min_n: int = 2, name: str = "data") -> torch.Tensor:
    if not isinstance(data, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(data).__name__}")
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
    """Wall-clock spent on those diagnostics (measurement, not training)."""


class ASBM:
    """Adjoint Schrödinger Bridge Matching from data (t = 0) to ``nu ∝ exp(-E)`` (t = 1).

    Args:
        shape: shape of one sample, e.g. (2,) or (1, 8, 8).
        sde: the reference SDE (BrownianSDE or VPSDE).
        energy: the prior's energy (GaussianEnergy).
        u_net, h_net, bridge_net, generator: any modules; ``u_net(t, x)`` and
            ``bridge_net(t, x)`` (2x channels out) take time, ``h_net(None, x)`` and
            ``generator(None, x)`` do not. Default: MLPs.
        sim_steps: Euler-Maruyama steps when simulating the forward SDE.
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
    ):
        self.shape = check_shape(shape)
        check_kind(sde, LinearSDE, "sde")
        check_kind(energy, GaussianEnergy, "energy")
        positive_int(sim_steps, "sim_steps")
        self.sde, self.energy, self.sim_steps = sde, energy, sim_steps
        self.u_net = u_net or MLP(self.shape, hidden)
        self.h_net = h_net or MLP(self.shape, hidden, time=False)
        self.bridge_net = bridge_net or MLP(self.shape, hidden, out_mult=2)
        self.generator = generator or MLP(self.shape, hidden, time=False)
        # h starts at 0: the first round matches the energy alone (phi^_1 = const).
        last = [m for m in self.h_net.modules() if isinstance(m, nn.Linear | nn.Conv2d)][-1]
        nn.init.zeros_(last.weight)
        nn.init.zeros_(last.bias)
        self.log = TrainLog([], [], [], [])
        self.nfe = {"simulation": 0, "training": 0, "teacher": 0}
        """Training compute in per-sample network evaluations: a forward pass on one sample
        counts 1, a gradient step ``TRAIN_COST`` per sample (forward + backward); diagnostics
        and sampling for evaluation are not counted."""

    @property
    def device(self) -> torch.device:
        """The device of the networks (that of ``u_net``); data and samples are put there."""
        return module_device(self.u_net)

    def to(self, device: str | torch.device) -> "ASBM":
        """Move all four networks to ``device``; returns self."""
        for name in ("u_net", "h_net", "bridge_net", "generator"):
            getattr(self, name).to(device)
        return self

    # --- stage 1 ---------------------------------------------------------------------------
    @torch.no_grad()
    def simulate_forward(
        self, x0: torch.Tensor, gen: torch.Generator | None = None, steps: int | None = None
    ) -> torch.Tensor:
        """Euler-Maruyama of ``dX = [f + g^2 u] dt + g dW`` from x0 (B, ...) to t = 1, on x0's
        device."""
        steps = steps or self.sim_steps
        x, dt = x0.clone(), 1.0 / steps
        for k in range(steps):
            t = torch.full((len(x),), k * dt, device=x.device)
            g = _bcast(self.sde.g(t), x)
            drift = self.sde.f(t, x) + g**2 * self.u_net(t, x)
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
    ) -> "ASBM":
        """Stage 1: adjoint matching (u) with h = 0, then ``rounds - 1`` times: corrector matching
        (h) on fresh pairs of the current forward process, and adjoint matching again.

        The corrector draws a new buffer of ``corrector_buffer`` simulated pairs every
        ``resimulate_every`` steps, so it never sees the same pairs for long (it overfits a small
        buffer). After each round, with ``diagnostics`` > 0, that many fresh trajectories give the
        round's row of ``self.log.rounds`` (``stage1_diagnostics``). Runs on the networks'
        device (``data`` is moved there); the draws come from a seeded CPU generator, so a seed
        gives the same batches on every device.
        """
        sizes = (batch_size, buffer_size, corrector_buffer, resimulate_every)
        _check_stage1(rounds, adjoint_steps, corrector_steps, *sizes)
        data = _check_data(data, self.shape).to(self.device)
        gen = torch.Generator().manual_seed(seed + 1000 * _rank())
        u, h = _ddp(self.u_net), _ddp(self.h_net)
        opt_u = torch.optim.Adam(u.parameters(), lr=lr)
        opt_h = torch.optim.Adam(h.parameters(), lr=lr)
        buffer = ReplayBuffer()

        def refresh(size):
            idx = torch.randint(0, len(data), (size,), generator=gen)
            x0 = data[idx.to(data.device)]
            buffer.fill(x0, self.simulate_forward(x0, gen))
            self.nfe["simulation"] += size * self.sim_steps

        total = rounds * adjoint_steps + (rounds - 1) * corrector_steps
        bar = tqdm(total=total, desc="ASBM stage 1", disable=not progress or _rank() != 0)
        for r in range(rounds):
            if r > 0:
                for k in range(corrector_steps):
                    if k % resimulate_every == 0:
                        refresh(corrector_buffer)
                    x0, x1 = buffer.sample(batch_size, gen)
                    loss = corrector_matching_loss(h, self.sde, x0, x1)
                    opt_h.zero_grad()
                    loss.backward()
                    opt_h.step()
                    self.log.corrector.append(loss.item())
                    self.nfe["training"] += TRAIN_COST * batch_size
                    bar.update()
            for k in range(adjoint_steps):
                if k % resimulate_every == 0:
                    refresh(buffer_size)
                x0, x1 = buffer.sample(batch_size, gen)
                t = torch.rand(batch_size, generator=gen).to(x0.device)
                # round 1 runs with h = 0 (h's last layer starts at zero): skip its forward pass
                h_used = self.h_net if r > 0 else None
                loss = adjoint_matching_loss(u, h_used, self.sde, self.energy, x0, x1, t)
                opt_u.zero_grad()
                loss.backward()
                opt_u.step()
                self.log.adjoint.append(loss.item())
                # u's gradient step, and h's forward pass for the target once h is in use
                self.nfe["training"] += (TRAIN_COST + (r > 0)) * batch_size
                bar.update()
            if diagnostics:
                start = time.perf_counter()
                self.log.rounds.append(
                    {"round": r + 1, **self.stage1_diagnostics(data, diagnostics, gen)}
                )
                self.log.diagnostics_seconds += time.perf_counter() - start
        bar.close()
        return self

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
    ) -> "ASBM":
        """Stage 2: bridge matching on (x0, x1) pairs from the learned forward SDE, on the
        networks' device."""
        positive_ints(steps=steps, batch_size=batch_size, buffer_size=buffer_size,
                       resimulate_every=resimulate_every)  # fmt: skip
        data = _check_data(data, self.shape).to(self.device)
        gen = torch.Generator().manual_seed(seed + 1 + 1000 * _rank())
        net = _ddp(self.bridge_net)
        opt = torch.optim.Adam(net.parameters(), lr=lr)
        buffer = ReplayBuffer()
        for k in tqdm(range(steps), desc="ASBM stage 2", disable=not progress or _rank() != 0):
            if k % resimulate_every == 0:
                idx = torch.randint(0, len(data), (buffer_size,), generator=gen).to(data.device)
                buffer.fill(data[idx], self.simulate_forward(data[idx], gen))
                self.nfe["simulation"] += buffer_size * self.sim_steps
            x0, x1 = buffer.sample(batch_size, gen)
            t = torch.rand(batch_size, generator=gen).to(x0.device)
            loss = bridge_matching_loss(net, self.sde, x0, x1, t)
            opt.zero_grad()
            loss.backward()
            opt.step()
            self.log.bridge.append(loss.item())
            self.nfe["training"] += TRAIN_COST * batch_size
        return self

    @torch.no_grad()
    def predict(self, t: torch.Tensor, x: torch.Tensor):
        """(x0_hat, x1_hat) = E[x0 | x_t], E[x1 | x_t] under the coupling."""
        return self.bridge_net(t, x).chunk(2, dim=1)

    @torch.no_grad()
    def sample(
        self,
        n: int | None = None,
        steps: int = 8,
        method: str = "ode",
        x1: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
        return_trajectory: bool = False,
    ):
        """Generate from ``x1 ~ nu`` (or the given x1) back to t = 0 in ``steps`` network calls.

        ``method="ode"`` is deterministic given x1; ``"sde"`` samples the reference bridge
        between the predicted x0 and the current state at every step (ancestral). Runs on x1's
        device, or on the networks' when x1 is drawn here.
        """
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps must be an integer >= 1, got {steps!r}")
        if method not in ("ode", "sde"):
            raise ValueError(f"method must be 'ode' or 'sde', got {method!r}")
        if x1 is None:
            if n is None or n < 1:
                raise ValueError("give n >= 1 or x1")
            x1 = self.energy.sample(n, self.shape, generator, self.device)
        x = _check_data(x1, self.shape, min_n=1, name="x1")
        ts = torch.linspace(1.0, 0.0, steps + 1)  # host-side grid: only read back as floats
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
        """Regress a one-step generator ``G(x1)`` onto the ODE's endpoints from ``x1``, on the
        networks' device."""
        gen = torch.Generator().manual_seed(seed + 2)
        x1 = self.energy.sample(n_pairs, self.shape, gen, self.device)
        x0 = torch.cat([self.sample(x1=c, steps=teacher_steps) for c in x1.split(2048)])
        self.nfe["teacher"] += n_pairs * teacher_steps
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
        return self

    @torch.no_grad()
    def sample_distilled(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        x1 = self.energy.sample(n, self.shape, generator, module_device(self.generator))
        return self.generator(None, x1)

    # --- checkpoints ------------------------------------------------------------------------
    def save_pretrained(self, directory: str | os.PathLike) -> None:
        """safetensors weights + JSON config, each written to a temp file and renamed."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        tensors = {}
        for name in ("u_net", "h_net", "bridge_net", "generator"):
            for k, v in getattr(self, name).state_dict().items():
                tensors[f"{name}.{k}"] = v.detach().contiguous().cpu()
        config = {
            "shape": list(self.shape),
            "sde": self.sde.config(),
            "energy_scale": self.energy.scale,
            "sim_steps": self.sim_steps,
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
            **built,
        )
        for name in built:
            prefix = f"{name}."
            state = {k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix)}
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


def _check_stage1(rounds, adjoint_steps, corrector_steps, *sizes) -> None:
    positive_int(rounds, "rounds")
    positive_int(adjoint_steps, "adjoint_steps")
    positive_int(corrector_steps, "corrector_steps", minimum=0)
    names = ("batch_size", "buffer_size", "corrector_buffer", "resimulate_every")
    positive_ints(**dict(zip(names, sizes, strict=True)))
