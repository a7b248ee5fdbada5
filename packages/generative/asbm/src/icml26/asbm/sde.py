"""Reference SDEs ``dX = f_t(X) dt + g_t dW`` on t in [0, 1], linear in X, and their bridges.

Both references have Gaussian transitions ``X_t | X_s ~ N(a(s, t) X_s, v(s, t) I)``:

- ``BrownianSDE(sigma)``: f = 0, g = sigma; a = 1, v = sigma^2 (t - s).
- ``VPSDE(beta_min, beta_max)``: f = -beta(t) x / 2, g = sqrt(beta(t)), beta linear in t;
  a = exp(-B(s, t) / 2) with B the integral of beta, v = 1 - a^2. The default (0.1 -> 4) is the
  official code's reference (``components/sdes.py``): NOT memoryless, a(0, 1) = 0.36, so the
  control, not the reference, has to carry X_1 to the prior.

The bridge pinned at x0 (t = 0) and x1 (t = 1) is Gaussian at every t, with mean
``A_t x0 + B_t x1`` and variance ``v_t`` (product of the forward and backward transitions):

    v_t = 1 / (1 / v(0, t) + a(t, 1)^2 / v(t, 1)),
    A_t = v_t a(0, t) / v(0, t),     B_t = v_t a(t, 1) / v(t, 1).

The lean adjoint of a linear reference is transported by ``a(t, 1)`` (da/dt = -(df/dx)^T a), so
the adjoint-matching target at time t is ``a(t, 1) a_1``.
"""

from abc import ABC, abstractmethod

import torch

EPS = 1e-4  # times are kept in [EPS, 1 - EPS] where a bridge variance would vanish


_GAUSS_LEGENDRE = (
    (-0.9061798459386640, -0.5384693101056831, 0.0, 0.5384693101056831, 0.9061798459386640),
    (0.2369268850561891, 0.4786286704993665, 0.5688888888888889, 0.4786286704993665,
     0.2369268850561891),
)  # fmt: skip
"""Five-point Gauss-Legendre nodes and weights on [-1, 1]."""


class LinearSDE(ABC):
    """Shared bridge algebra; subclasses give ``f``, ``g``, ``a(s, t)`` and ``v(s, t)``."""

    @abstractmethod
    def f(self, t: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Drift f_t(x)."""

    @abstractmethod
    def g(self, t: torch.Tensor) -> torch.Tensor:
        """Diffusion coefficient g_t."""

    @abstractmethod
    def a(self, s, t) -> torch.Tensor:
        """Mean factor of the transition from s to t."""

    @abstractmethod
    def v(self, s, t) -> torch.Tensor:
        """Variance of the transition from s to t."""

    def control_gain(self, s, t) -> torch.Tensor:
        """``c(s, t) = int_s^t a(r, t) g(r)^2 dr``: how much a control u held fixed over [s, t]
        moves the state by t (``X_t = a(s, t) X_s + c(s, t) u + N(0, v(s, t))``, exact for the
        linear part). Subclasses give it in closed form; this default is Gauss-Legendre
        quadrature."""
        s, t = torch.as_tensor(s, dtype=torch.float32), torch.as_tensor(t, dtype=torch.float32)
        nodes, weights = _GAUSS_LEGENDRE
        half, mid = (t - s) / 2, (t + s) / 2
        total = torch.zeros_like(half)
        for x, w in zip(nodes, weights, strict=True):
            r = mid + half * x
            total = total + w * self.a(r, t) * self.g(r) ** 2
        return half * total

    def bridge_coefficients(self, t: torch.Tensor):
        """(A_t, B_t, v_t) of the bridge mean ``A_t x0 + B_t x1`` and variance, shape of t."""
        t = torch.as_tensor(t, dtype=torch.float32).clamp(EPS, 1 - EPS)
        zero, one = torch.zeros_like(t), torch.ones_like(t)
        v0t, vt1 = self.v(zero, t), self.v(t, one)
        a0t, at1 = self.a(zero, t), self.a(t, one)
        vt = 1.0 / (1.0 / v0t + at1**2 / vt1)
        return vt * a0t / v0t, vt * at1 / vt1, vt

    def bridge_sample(self, x0, x1, t, noise=None) -> torch.Tensor:
        """x_t from the reference bridge between x0 and x1: (B, ...) with t of shape (B,)."""
        A, B, v = (c.view(-1, *([1] * (x0.dim() - 1))) for c in self.bridge_coefficients(t))
        noise = torch.randn_like(x0) if noise is None else noise
        return A * x0 + B * x1 + v.sqrt() * noise

    def transfer(self, t: torch.Tensor) -> torch.Tensor:
        """a(t, 1): carries the terminal adjoint a_1 back to time t (lean adjoint)."""
        t = torch.as_tensor(t, dtype=torch.float32)
        return self.a(t, torch.ones_like(t))

    def from_zero(self, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(a(0, t), sqrt(v(0, t)))``: mean factor and standard deviation of ``X_t | X_0``."""
        t = torch.as_tensor(t, dtype=torch.float32)
        zero = torch.zeros_like(t)
        return self.a(zero, t), self.v(zero, t).sqrt()

    def grad_log_transition(self, x1: torch.Tensor, x0: torch.Tensor) -> torch.Tensor:
        """``grad_{x1} log p_{1|0}(x1 | x0) = -(x1 - a(0,1) x0) / v(0,1)``."""
        zero, one = x1.new_zeros(()), x1.new_ones(())
        return -(x1 - self.a(zero, one) * x0) / self.v(zero, one)

    @abstractmethod
    def config(self) -> dict:
        """JSON-able description, for checkpoints."""


class BrownianSDE(LinearSDE):
    """``dX = sigma dW``: the Brownian reference (f = 0)."""

    def __init__(self, sigma: float = 0.5):
        if not sigma > 0:
            raise ValueError(f"sigma must be positive, got {sigma}")
        self.sigma = float(sigma)

    def f(self, t, x):
        return torch.zeros_like(x)

    def g(self, t):
        return torch.full_like(torch.as_tensor(t, dtype=torch.float32), self.sigma)

    def a(self, s, t):
        return torch.ones_like(torch.as_tensor(t, dtype=torch.float32))

    def v(self, s, t):
        return self.sigma**2 * (torch.as_tensor(t) - torch.as_tensor(s)).float()

    def control_gain(self, s, t):
        return self.v(s, t)  # a = 1, g^2 = sigma^2

    def config(self) -> dict:
        return {"kind": "brownian", "sigma": self.sigma}


class VPSDE(LinearSDE):
    """``dX = -beta(t) X / 2 dt + sqrt(beta(t)) dW``, beta linear from beta_min to beta_max."""

    def __init__(self, beta_min: float = 0.1, beta_max: float = 4.0):
        if not 0 <= beta_min <= beta_max or beta_max <= 0:
            raise ValueError(
                f"need 0 <= beta_min <= beta_max, beta_max > 0; got {beta_min}, {beta_max}"
            )
        self.beta_min, self.beta_max = float(beta_min), float(beta_max)

    def beta(self, t):
        return self.beta_min + torch.as_tensor(t, dtype=torch.float32) * (
            self.beta_max - self.beta_min
        )

    def _B(self, s, t):  # integral of beta from s to t
        s, t = torch.as_tensor(s, dtype=torch.float32), torch.as_tensor(t, dtype=torch.float32)
        return self.beta_min * (t - s) + 0.5 * (self.beta_max - self.beta_min) * (t**2 - s**2)

    def f(self, t, x):
        b = (
            self.beta(t).view(-1, *([1] * (x.dim() - 1)))
            if torch.as_tensor(t).dim()
            else self.beta(t)
        )
        return -0.5 * b * x

    def g(self, t):
        return self.beta(t).sqrt()

    def a(self, s, t):
        return torch.exp(-0.5 * self._B(s, t))

    def v(self, s, t):
        return -torch.expm1(-self._B(s, t))  # 1 - a^2, accurate for small B

    def control_gain(self, s, t):
        # d/dr a(r, t) = beta(r) a(r, t) / 2, so int_s^t a(r, t) beta(r) dr = 2 (1 - a(s, t))
        return -2 * torch.expm1(-0.5 * self._B(s, t))

    def config(self) -> dict:
        return {"kind": "vp", "beta_min": self.beta_min, "beta_max": self.beta_max}


def sde_from_config(cfg: dict) -> LinearSDE:
    kind = cfg.get("kind")
    if kind == "brownian":
        return BrownianSDE(cfg["sigma"])
    if kind == "vp":
        return VPSDE(cfg["beta_min"], cfg["beta_max"])
    raise ValueError(f"unknown reference SDE kind {kind!r}")


class GaussianEnergy:
    """The prior ``nu ∝ exp(-E)``, ``E(x) = ||x||^2 / (2 s^2)``: N(0, s^2 I)."""

    def __init__(self, scale: float = 1.0):
        if not scale > 0:
            raise ValueError(f"scale must be positive, got {scale}")
        self.scale = float(scale)

    def energy(self, x: torch.Tensor) -> torch.Tensor:
        return x.flatten(1).pow(2).sum(1) / (2 * self.scale**2)

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        return x / self.scale**2

    def sample(
        self,
        n: int,
        shape,
        generator: torch.Generator | None = None,
        device: str | torch.device | None = None,
    ) -> torch.Tensor:
        """n draws of shape ``shape`` on ``device`` (default: the generator's, else CPU)."""
        return self.scale * randn((n, *shape), generator, device)


def randn(shape, generator: torch.Generator | None, device=None) -> torch.Tensor:
    """Standard normals drawn on the generator's device (CPU without one), then moved to ``device``.

    A seeded CPU generator thus gives the same numbers on every device, and CPU runs draw exactly
    what they drew before any device was involved.
    """
    where = generator.device if generator is not None else torch.device("cpu")
    z = torch.randn(shape, generator=generator, device=where)
    return z if device is None else z.to(device)
