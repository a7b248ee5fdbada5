"""Baselines under the same conventions (data at t = 0, the Gaussian prior at t = 1): conditional
flow matching with the independent coupling (Lipman et al., 2023; Tong et al., 2024 "I-CFM") and
with minibatch exact optimal transport (Tong et al., 2024 "OT-CFM", pairs from POT's ``ot.emd``).

Straight-line paths ``x_t = (1 - t) x0 + t x1`` with target velocity ``x1 - x0``; sampling is Euler
from t = 1 to 0 with as many network calls as steps.
"""

import numpy as np
import ot
import torch
from tqdm.auto import tqdm

from icml26.asbm.asbm import _check_data, _ddp, _rank, module_device
from icml26.asbm.nets import MLP
from icml26.asbm.sde import GaussianEnergy


def ot_pairing(x0: torch.Tensor, x1: torch.Tensor) -> torch.Tensor:
    """A permutation of x1 (on x1's device) that solves the exact OT problem with squared
    Euclidean cost."""
    # POT's exact solver runs on the host: the cost matrix goes to NumPy and the plan comes back.
    M = torch.cdist(x0.flatten(1), x1.flatten(1)).pow(2).double().cpu().numpy()
    n = len(x0)
    plan = ot.emd(np.full(n, 1.0 / n), np.full(n, 1.0 / n), M)
    return torch.from_numpy(plan.argmax(1)).to(x1.device)


class FlowMatching:
    """Conditional flow matching; ``coupling="independent"`` or ``"ot"`` (minibatch OT)."""

    def __init__(
        self,
        shape,
        energy: GaussianEnergy,
        coupling: str = "independent",
        net=None,
        hidden: int = 256,
    ):
        if coupling not in ("independent", "ot"):
            raise ValueError(f"coupling must be 'independent' or 'ot', got {coupling!r}")
        self.shape, self.energy, self.coupling = tuple(shape), energy, coupling
        self.net = net or MLP(self.shape, hidden)
        self.losses: list[float] = []

    @property
    def device(self) -> torch.device:
        return module_device(self.net)

    def to(self, device: str | torch.device) -> "FlowMatching":
        """Move the network to ``device``; returns self."""
        self.net.to(device)
        return self

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
        data = _check_data(data, self.shape).to(self.device)
        gen = torch.Generator().manual_seed(seed + 1000 * _rank())
        net = _ddp(self.net)
        opt = torch.optim.Adam(net.parameters(), lr=lr)
        for _ in tqdm(
            range(steps), desc=f"CFM ({self.coupling})", disable=not progress or _rank() != 0
        ):
            x0 = data[torch.randint(0, len(data), (batch_size,), generator=gen).to(data.device)]
            x1 = self.energy.sample(batch_size, self.shape, gen, data.device)
            if self.coupling == "ot":
                x1 = x1[ot_pairing(x0, x1)]
            t = torch.rand(batch_size, generator=gen).to(data.device)
            tb = t.view(-1, *([1] * len(self.shape)))
            x_t = (1 - tb) * x0 + tb * x1
            loss = (net(t, x_t) - (x1 - x0)).pow(2).flatten(1).sum(1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            self.losses.append(loss.item())
        return self

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
        x = self.energy.sample(n, self.shape, generator, self.device) if x1 is None else x1.float()
        ts = torch.linspace(1.0, 0.0, steps + 1)  # host-side grid: only read back as floats
        traj = [x]
        for k in range(steps):
            t, dt = ts[k].item(), (ts[k] - ts[k + 1]).item()
            x = x - dt * self.net(torch.full((len(x),), t, device=x.device), x)
            traj.append(x)
        return (x, traj) if return_trajectory else x
