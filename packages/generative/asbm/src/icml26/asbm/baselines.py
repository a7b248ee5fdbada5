"""Baselines under the same conventions (data at t = 0, the Gaussian prior at t = 1): conditional
flow matching with the independent coupling (Lipman et al., 2023; Tong et al., 2024 "I-CFM"), with
minibatch exact optimal transport (Tong et al., 2024 "OT-CFM", pairs from POT's ``ot.emd``), and
with a minibatch entropic-OT coupling and Brownian-bridge paths (Tong et al., 2024 "SB-CFM");
rectified-flow reflow (Liu et al., 2023) re-fits a flow on the (data, noise) pairs of a first one.

I-CFM and OT-CFM use straight-line paths ``x_t = (1 - t) x0 + t x1`` with target velocity
``x1 - x0``. SB-CFM draws pairs from the Sinkhorn plan with entropic regularisation 2 sigma^2 and
uses the Brownian bridge ``x_t = (1 - t) x0 + t x1 + sigma sqrt(t (1 - t)) eps`` with target
``(1 - 2t) / (2 t (1 - t)) (x_t - (1 - t) x0 - t x1) + x1 - x0`` (torchcfm's
``SchrodingerBridgeConditionalFlowMatcher``; the tests hold these formulas to torchcfm's).
Sampling is Euler from t = 1 to 0 with as many network calls as steps.
"""

import copy
import warnings

import numpy as np
import ot
import torch
from tqdm.auto import tqdm

from icml26.asbm.asbm import (
    ASBM,
    TRAIN_COST,
    _check_data,
    _ddp,
    _rank,
    ema_update,
    module_device,
)
from icml26.asbm.checks import (
    check_kind,
    check_pair,
    check_shape,
    nonnegative_float,
    positive_int,
    positive_ints,
)
from icml26.asbm.metrics import check_samples
from icml26.asbm.nets import MLP
from icml26.asbm.sde import VPSDE, GaussianEnergy, randn
from icml26.testing.checks import number


def sb_pairing(x0: torch.Tensor, x1: torch.Tensor, sigma: float, gen: torch.Generator,
               max_iter: int = 200) -> tuple[torch.Tensor, torch.Tensor, bool]:  # fmt: skip
    """Indices (i, j) of len(x0) pairs drawn with replacement from the entropic OT plan between
    the two minibatches (squared Euclidean cost, Sinkhorn with regularisation 2 sigma^2), and
    whether the plan had to be replaced by its sigma -> 0 limit.

    When the costs dwarf the regularisation (high dimension: squared distances in the hundreds
    against 2 sigma^2 = 0.5) the entropic plan is, to machine precision, a permutation, and
    Sinkhorn either underflows (exp(-M / reg) = 0) or needs thousands of iterations to find it.
    If it has not matched the marginals (L1 error 1e-3) within ``max_iter`` iterations, the exact
    OT plan -- the sigma -> 0 limit, ``ot_pairing`` -- is used instead. (torchcfm's SB-CFM uses
    the exact plan by default, and falls back to the independent coupling when Sinkhorn fails.)
    """
    check_samples(x0, x1, ("x0", "x1"))
    if not (isinstance(sigma, int | float) and sigma > 0):
        raise ValueError(f"sigma must be a positive number, got {sigma!r}")
    M = torch.cdist(x0.flatten(1), x1.flatten(1)).pow(2).double().cpu().numpy()
    n, m = M.shape
    a, b = np.full(n, 1.0 / n), np.full(m, 1.0 / m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # non-convergence is detected below
        plan = ot.sinkhorn(a, b, M, reg=2 * sigma**2, numItermax=max_iter)
    p = torch.from_numpy(plan).flatten()
    err = np.abs(plan.sum(1) - a).sum() + np.abs(plan.sum(0) - b).sum()
    if not torch.isfinite(p).all() or not err < 1e-3:
        if n != m:
            raise ValueError(f"the Sinkhorn plan failed (sigma={sigma} too small for these "
                             "costs) and the exact fallback needs equal batch sizes")  # fmt: skip
        j = ot_pairing(x0, x1)
        return torch.arange(n, device=x0.device), j, True
    k = torch.multinomial(p.clamp_min(0) / p.clamp_min(0).sum(), n, replacement=True,
                          generator=gen)  # fmt: skip
    return (k // m).to(x0.device), (k % m).to(x1.device), False


def sb_path(x0, x1, t, eps, sigma: float) -> tuple[torch.Tensor, torch.Tensor]:
    """SB-CFM's conditional path and target velocity at t (B,): (x_t, u_t)."""
    check_pair(x0, x1, t)
    check_pair(x0, eps, names=("x0", "eps"))
    nonnegative_float(sigma, "sigma")
    if not bool(((t > 0) & (t < 1)).all()):  # the target divides by t (1 - t)
        raise ValueError("t must lie strictly inside (0, 1): the target velocity divides by t(1-t)")
    tb = t.view(-1, *([1] * (x0.dim() - 1)))
    mu = (1 - tb) * x0 + tb * x1
    x_t = mu + sigma * (tb * (1 - tb)).sqrt() * eps
    u = (1 - 2 * tb) / (2 * tb * (1 - tb)) * (x_t - mu) + (x1 - x0)
    return x_t, u


def ot_pairing(x0: torch.Tensor, x1: torch.Tensor) -> torch.Tensor:
    """A permutation of x1 (on x1's device) that solves the exact OT problem with squared
    Euclidean cost."""
    check_samples(x0, x1, ("x0", "x1"), same_size=True)
    # POT's exact solver runs on the host: the cost matrix goes to NumPy and the plan comes back.
    M = torch.cdist(x0.flatten(1), x1.flatten(1)).pow(2).double().cpu().numpy()
    n = len(x0)
    plan = ot.emd(np.full(n, 1.0 / n), np.full(n, 1.0 / n), M)
    return torch.from_numpy(plan.argmax(1)).to(x1.device)


class FlowMatching:
    """Conditional flow matching; ``coupling="independent"``, ``"ot"`` (minibatch exact OT) or
    ``"sb"`` (SB-CFM: minibatch entropic OT and Brownian-bridge paths of noise ``sigma``).

    ``ema``: decay of a moving average of the network (``ema_update``'s warm-up), used for
    sampling; None (default) samples with the trained network itself."""

    def __init__(
        self,
        shape,
        energy: GaussianEnergy,
        coupling: str = "independent",
        net=None,
        hidden: int = 256,
        sigma: float = 0.5,
        ema: float | None = None,
    ):
        check_kind(energy, GaussianEnergy, "energy")
        if ema is not None:
            number("ema", ema, low=0, below=1)
        positive_int(hidden, "hidden")
        nonnegative_float(sigma, "sigma", positive=coupling == "sb")
        if coupling not in ("independent", "ot", "sb"):
            raise ValueError(f"coupling must be 'independent', 'ot' or 'sb', got {coupling!r}")
        if coupling == "sb" and not sigma > 0:
            raise ValueError(f"SB-CFM needs sigma > 0, got {sigma}")
        self.shape, self.energy, self.coupling = check_shape(shape), energy, coupling
        self.sigma = float(sigma)
        self.net = net or MLP(self.shape, hidden)
        self.ema = ema
        self.net_ema = copy.deepcopy(self.net) if ema is not None else None
        self._ema_from = 0  # the step the average (re)started at: its warm-up counts from there
        self.losses: list[float] = []
        self.nfe = {"training": 0, "teacher": 0}
        """Training compute in per-sample network evaluations (see ``ASBM.nfe``)."""
        self.exact_plan_batches = 0
        """SB-CFM: minibatches whose entropic plan underflowed and used the exact OT plan."""

    @property
    def device(self) -> torch.device:
        return module_device(self.net)

    def to(self, device: str | torch.device) -> "FlowMatching":
        """Move the network (and its average) to ``device``; returns self."""
        self.net.to(device)
        if self.net_ema is not None:
            self.net_ema.to(device)
        return self

    @property
    def sampling_net(self):
        """The network sampling uses: the moving average when there is one."""
        return self.net_ema if self.net_ema is not None else self.net

    def _step(self, opt, loss) -> None:
        opt.zero_grad()
        loss.backward()
        opt.step()
        if self.net_ema is not None:
            ema_update(self.net_ema, self.net, self.ema, len(self.losses) - self._ema_from)
        self.losses.append(loss.item())

    def fit(
        self,
        data: torch.Tensor,
        steps: int = 3000,
        batch_size: int = 256,
        lr: float = 1e-3,
        seed: int = 0,
        progress: bool = True,
    ) -> "FlowMatching":
        """Fit on the network's device (``data`` is moved there); draws come from a seeded CPU
        generator."""
        positive_ints(steps=steps, batch_size=batch_size)
        nonnegative_float(lr, "lr", positive=True)
        data = _check_data(data, self.shape).to(self.device)
        gen = torch.Generator().manual_seed(seed + 1000 * _rank())
        net = _ddp(self.net)
        opt = torch.optim.Adam(net.parameters(), lr=lr)
        for _ in tqdm(
            range(steps), desc=f"CFM ({self.coupling})", disable=not progress or _rank() != 0
        ):
            x0 = data[torch.randint(0, len(data), (batch_size,), generator=gen).to(data.device)]
            x1 = self.energy.sample(batch_size, self.shape, gen, data.device)
            self._step(opt, self.loss(net, x0, x1, gen))
            self.nfe["training"] += TRAIN_COST * batch_size
        return self

    def loss(self, net, x0: torch.Tensor, x1: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """The conditional flow-matching loss of one minibatch of data x0 and prior draws x1
        (paired here by the coupling)."""
        t = torch.rand(len(x0), generator=gen).to(x0.device)
        if self.coupling == "sb":
            i, j, exact = sb_pairing(x0, x1, self.sigma, gen)
            self.exact_plan_batches += exact
            t = t.clamp(1e-3, 1 - 1e-3)  # the target's 1 / (t (1 - t)) factor
            eps = randn(x0.shape, gen, x0.device)
            x_t, target = sb_path(x0[i], x1[j], t, eps, self.sigma)
            return (net(t, x_t) - target).pow(2).flatten(1).sum(1).mean()
        if self.coupling == "ot":
            x1 = x1[ot_pairing(x0, x1)]
        tb = t.view(-1, *([1] * len(self.shape)))
        x_t = (1 - tb) * x0 + tb * x1
        return (net(t, x_t) - (x1 - x0)).pow(2).flatten(1).sum(1).mean()

    @torch.no_grad()
    def sample(
        self,
        n: int | None = None,
        steps: int = 8,
        x1: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
        return_trajectory: bool = False,
    ):
        """Euler from t = 1 to 0; on x1's device, or on the network's when x1 is drawn here."""
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps must be an integer >= 1, got {steps!r}")
        if x1 is None:
            x = self.energy.sample(positive_int(n, "n"), self.shape, generator, self.device)
        else:
            x = _check_data(x1, self.shape, min_n=1, name="x1")
        ts = torch.linspace(1.0, 0.0, steps + 1)  # host-side grid: only read back as floats
        traj = [x]
        for k in range(steps):
            t, dt = ts[k].item(), (ts[k] - ts[k + 1]).item()
            x = x - dt * self.sampling_net(torch.full((len(x),), t, device=x.device), x)
            traj.append(x)
        return (x, traj) if return_trajectory else x


class Reflow(FlowMatching):
    """Rectified flow with one reflow round (Liu et al., 2023): an independent-coupling flow is
    fitted for ``first_steps``, its ODE (``teacher_steps`` Euler steps) maps ``n_pairs`` prior
    draws to data-space points, and the same network is then fitted on those fixed pairs, whose
    straight paths no longer cross, for the remaining steps. ``nfe["teacher"]`` counts the
    network evaluations the pairs cost."""

    def __init__(self, shape, energy: GaussianEnergy, net=None, hidden: int = 256,
                 n_pairs: int = 8192, teacher_steps: int = 32,
                 ema: float | None = None):  # fmt: skip
        super().__init__(shape, energy, "independent", net, hidden, ema=ema)
        positive_int(n_pairs, "n_pairs", 2)
        positive_int(teacher_steps, "teacher_steps")
        self.n_pairs, self.teacher_steps = n_pairs, teacher_steps

    def fit(self, data, steps: int = 3000, batch_size: int = 256, lr: float = 1e-3,
            seed: int = 0, progress: bool = True, first_steps: int | None = None
            ) -> "Reflow":  # fmt: skip
        """``first_steps`` (default half of ``steps``) on the independent coupling, the rest on
        the flow's own pairs."""
        first = steps // 2 if first_steps is None else first_steps
        if not 0 < first < steps:
            raise ValueError(f"need 0 < first_steps < steps, got {first} of {steps}")
        super().fit(data, first, batch_size, lr, seed, progress)
        gen = torch.Generator().manual_seed(seed + 7919)
        x1 = self.energy.sample(self.n_pairs, self.shape, gen, self.device)
        x0 = torch.cat([self.sample(x1=c, steps=self.teacher_steps) for c in x1.split(2048)])
        self.nfe["teacher"] += self.n_pairs * self.teacher_steps
        if self.net_ema is not None:  # a new objective: the average restarts from the network
            self.net_ema = copy.deepcopy(self.net)
            self._ema_from = len(self.losses)
        net = _ddp(self.net)
        opt = torch.optim.Adam(net.parameters(), lr=lr)
        for _ in tqdm(range(steps - first), desc="reflow", disable=not progress or _rank() != 0):
            idx = torch.randint(0, self.n_pairs, (batch_size,), generator=gen).to(x0.device)
            a, b = x0[idx], x1[idx]
            t = torch.rand(batch_size, generator=gen).to(a.device)
            tb = t.view(-1, *([1] * len(self.shape)))
            loss = (net(t, (1 - tb) * a + tb * b) - (b - a)).pow(2).flatten(1).sum(1).mean()
            self._step(opt, loss)
            self.nfe["training"] += TRAIN_COST * batch_size
        return self


def score_matching(shape, energy: GaussianEnergy, net=None, hidden: int = 256,
                   beta_max: float = 20.0, ema: float | None = 0.999) -> ASBM:  # fmt: skip
    """The paper's own baseline: denoising score matching on a memoryless VP reference (beta
    0.1 -> 20, the official scripts' setting; a(0, 1) = 0.0066, so X_1 forgets X_0), with the
    same network and sampler as ASBM's stage 2.

    It is ASBM's stage-2 code on the independent coupling: train it with
    ``model.fit_backward(data, coupling="independent")`` (no stage 1), sample it with
    ``model.sample`` (Euler-Maruyama; ``"heun"`` needs a forward control it does not have).
    With a memoryless reference the bridge from x0 to an independent x1 is the usual diffusion
    forward process up to a(0, 1)."""
    number("beta_max", beta_max, above=0.1)
    bridge = net if net is not None else MLP(check_shape(shape), hidden)
    return ASBM(shape, VPSDE(0.1, beta_max), energy, bridge_net=bridge, hidden=hidden, ema=ema)
