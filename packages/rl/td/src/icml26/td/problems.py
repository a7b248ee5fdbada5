"""Markov reward processes for policy evaluation with linear features.

A problem is a Markov chain ``P`` (S, S) over states, the expected reward ``r`` (S,) collected
when leaving a state, features ``phi`` (S, d) with ``||phi(s)|| <= 1`` (the paper's assumption),
a discount ``gamma`` and the stationary distribution ``mu`` (S,). With ``D = diag(mu)``:

- ``Sigma = Phi^T D Phi``, whose smallest eigenvalue is ``omega`` (the quantity the exponential
  schedule does not need to know);
- the TD fixed point ``theta*`` solves ``A theta = b`` with ``A = Phi^T D (I - gamma P) Phi`` and
  ``b = Phi^T D r`` (Tsitsiklis & Van Roy, 1997);
- the error of an iterate is
  ``||V_theta - V_theta*||_D^2 = (theta - theta*)^T Sigma (theta - theta*)``.
"""

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch

ArrayLike = torch.Tensor | np.ndarray


def _as_f64(x, name: str, device=None) -> torch.Tensor:
    try:
        t = torch.as_tensor(x, dtype=torch.float64, device=device)
    except (TypeError, ValueError, RuntimeError) as e:
        raise TypeError(f"{name} must be array-like of numbers: {e}") from None
    if t.numel() == 0:
        raise ValueError(f"{name} is empty")
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} contains NaN or inf")
    return t


def _check_transitions(P, atol: float = 1e-8) -> torch.Tensor:
    """``P`` as a float64 square row-stochastic matrix, or a ValueError naming ``P``."""
    P = _as_f64(P, "P")
    if P.ndim != 2 or P.shape[0] != P.shape[1]:
        raise ValueError(f"P must be a square (S, S) transition matrix, got shape {tuple(P.shape)}")
    if (-atol > P).any():
        raise ValueError("P must be row-stochastic: it has negative entries")
    rows = P.sum(1)
    if not torch.allclose(rows, torch.ones_like(rows), atol=1e-6):
        i = int((rows - 1).abs().argmax())
        raise ValueError(f"P must be row-stochastic: row {i} sums to {rows[i].item():.6g}, not 1")
    return P


def check_problem(P, r, phi, gamma, mu=None, *, atol: float = 1e-8):
    """Validate and convert a policy-evaluation problem; returns float64 tensors (P, r, phi, mu).

    Raises ValueError naming the argument: a non-square or non-stochastic ``P``, ``gamma``
    outside [0, 1), shapes that do not match the number of states, NaN/inf anywhere, features
    with norm above 1, or a ``mu`` that is not a distribution. ``mu`` may be None. The tensors
    land on ``P``'s device (``r``, ``phi``, ``mu`` are moved there when they live elsewhere).
    """
    if isinstance(gamma, bool) or not isinstance(gamma, int | float) or not math.isfinite(gamma):
        raise ValueError(f"gamma must be a finite number in [0, 1), got {gamma!r}")
    if not 0.0 <= gamma < 1.0:
        raise ValueError(f"gamma must lie in [0, 1), got {gamma}")
    P = _check_transitions(P, atol)
    S = P.shape[0]
    r = _as_f64(r, "r", P.device)
    if r.shape != (S,):
        raise ValueError(f"r must have shape (S,) = ({S},) to match P, got {tuple(r.shape)}")
    phi = _as_f64(phi, "phi", P.device)
    if phi.ndim != 2 or phi.shape[0] != S:
        raise ValueError(f"phi must have shape (S, d) with S = {S}, got {tuple(phi.shape)}")
    norms = torch.linalg.vector_norm(phi, dim=1)
    if (norms > 1 + 1e-9).any():
        i = int(norms.argmax())
        raise ValueError(
            f"phi: every feature vector must have norm <= 1 (the analysis assumes it); state {i} "
            f"has norm {norms[i].item():.4g}. Rescale, e.g. phi / phi.norm(dim=1).max()"
        )
    if mu is not None:
        mu = _as_f64(mu, "mu", P.device)
        if mu.shape != (S,):
            raise ValueError(f"mu must have shape (S,) = ({S},), got {tuple(mu.shape)}")
        if (mu < -atol).any() or abs(mu.sum().item() - 1) > 1e-6:
            raise ValueError("mu must be a probability distribution (non-negative, sums to 1)")
    return P, r, phi, mu


def stationary_distribution(P: ArrayLike) -> torch.Tensor:
    """The stationary distribution ``mu`` of an ergodic chain: ``mu P = mu``, ``sum mu = 1``."""
    P = _check_transitions(P)
    S = P.shape[0]
    # Least squares on [P^T - I; 1^T] mu = [0; 1]: exact for an ergodic chain.
    M = torch.cat([P.T - torch.eye(S, dtype=P.dtype, device=P.device), P.new_ones(1, S)])
    rhs = torch.cat([P.new_zeros(S), P.new_ones(1)])
    mu = torch.linalg.lstsq(M, rhs.unsqueeze(1)).solution.squeeze(1).clamp_min(0)
    return mu / mu.sum()


def td_fixed_point(P, r, phi, gamma: float, mu) -> torch.Tensor:
    """The TD(0) fixed point ``theta*`` (d,): the solution of ``A theta = b`` (see module doc)."""
    P, r, phi, mu = check_problem(P, r, phi, gamma, mu)
    if mu is None:
        raise ValueError("mu is required (use stationary_distribution(P))")
    D_phi = mu[:, None] * phi  # (S, d) = D Phi
    A = D_phi.T @ (phi - gamma * P @ phi)
    b = D_phi.T @ r
    if torch.linalg.matrix_rank(A) < A.shape[0]:
        raise ValueError(
            "phi: the features are linearly dependent on the states the chain visits "
            "(Phi^T D Phi is singular), so the TD fixed point is not unique"
        )
    return torch.linalg.solve(A, b)


@dataclass(frozen=True)
class MarkovRewardProcess:
    """A policy-evaluation problem with linear features (shapes in the module docstring)."""

    P: torch.Tensor
    r: torch.Tensor
    phi: torch.Tensor
    gamma: float
    mu: torch.Tensor
    name: str = "mrp"

    def __post_init__(self):
        P, r, phi, mu = check_problem(self.P, self.r, self.phi, self.gamma, self.mu)
        object.__setattr__(self, "P", P)
        object.__setattr__(self, "r", r)
        object.__setattr__(self, "phi", phi)
        object.__setattr__(self, "mu", mu)

    @property
    def device(self) -> torch.device:
        return self.P.device

    def to(self, device: torch.device | str) -> "MarkovRewardProcess":
        """The same problem with its tensors on ``device``."""
        return MarkovRewardProcess(
            self.P.to(device),
            self.r.to(device),
            self.phi.to(device),
            self.gamma,
            self.mu.to(device),
            self.name,
        )

    @property
    def n_states(self) -> int:
        return self.P.shape[0]

    @property
    def n_features(self) -> int:
        return self.phi.shape[1]

    @cached_property
    def feature_covariance(self) -> torch.Tensor:
        """``Sigma = Phi^T D Phi`` (d, d)."""
        return (self.mu[:, None] * self.phi).T @ self.phi

    @cached_property
    def omega(self) -> float:
        """Smallest eigenvalue of ``Sigma``."""
        return torch.linalg.eigvalsh(self.feature_covariance)[0].item()

    @cached_property
    def theta_star(self) -> torch.Tensor:
        """The TD fixed point (d,)."""
        return td_fixed_point(self.P, self.r, self.phi, self.gamma, self.mu)

    def mixing_time(self, eps: float = 0.25, max_steps: int = 100_000) -> int:
        """``tau_mix(eps)``: the least t with ``max_s TV(P^t(s, .), mu) <= eps`` (the quantity the
        mixing-time-aware analyses of prior work need and the paper's schedule does not)."""
        if not 0 < eps < 1:
            raise ValueError(f"eps must lie in (0, 1), got {eps}")
        Pt = torch.eye(self.n_states, dtype=torch.float64, device=self.device)
        for t in range(1, max_steps + 1):
            Pt = Pt @ self.P
            if 0.5 * (Pt - self.mu).abs().sum(1).max().item() <= eps:
                return t
        raise ValueError(f"the chain has not mixed to {eps} within {max_steps} steps")

    def regularised_fixed_point(self, reg: float) -> torch.Tensor:
        """The point regularised TD(0) converges to: ``(A + lambda I) theta = b`` (d,), with
        ``A = Phi^T D (Phi - gamma P Phi)`` and ``b = Phi^T D r``. Its distance to
        ``theta_star`` is the bias the regularisation costs: an error floor no schedule beats."""
        if not (isinstance(reg, int | float) and reg >= 0):
            raise ValueError(f"reg must be a number >= 0, got {reg!r}")
        D_phi = self.mu[:, None] * self.phi  # (S, d)
        A = D_phi.T @ (self.phi - self.gamma * self.P @ self.phi)
        eye = torch.eye(A.shape[0], dtype=A.dtype, device=A.device)
        return torch.linalg.solve(A + reg * eye, D_phi.T @ self.r)

    def value_error(self, theta: torch.Tensor, to: torch.Tensor | None = None) -> torch.Tensor:
        """``||V_theta - V_theta*||_D^2`` for iterates of shape (..., d); returns shape (...).

        ``to`` (d,) measures the distance to another point instead of ``theta_star``: with
        ``regularised_fixed_point(lam)`` it is the optimisation error of regularised TD, the part
        of its error that the schedule controls (the rest is the bias floor)."""
        ref = self.theta_star if to is None else torch.as_tensor(to, dtype=torch.float64)
        if ref.shape != (self.n_features,):
            raise ValueError(f"to must have shape ({self.n_features},), got {tuple(ref.shape)}")
        diff = theta.to(torch.float64) - ref.to(self.device)
        return torch.einsum("...i,ij,...j->...", diff, self.feature_covariance, diff)

    def lazy(self, eps: float) -> "MarkovRewardProcess":
        """The lazy chain ``(1 - eps) I + eps P``: same ``mu``, mixing slowed by ``1/eps``."""
        if not 0 < eps <= 1:
            raise ValueError(f"eps must lie in (0, 1], got {eps}")
        P = (1 - eps) * torch.eye(self.n_states, dtype=torch.float64, device=self.device)
        P = P + eps * self.P
        return MarkovRewardProcess(
            P, self.r, self.phi, self.gamma, self.mu, f"lazy({self.name}, {eps:g})"
        )


def _is_primitive(P: torch.Tensor) -> bool:
    # Irreducible and aperiodic iff some power of the support is all positive; Wielandt's bound
    # (S-1)^2 + 1 on that power means ~2 log2(S) squarings suffice.
    S = P.shape[0]
    M = (P > 0).to(torch.float64)
    power = 1
    while power < (S - 1) ** 2 + 1:
        M = ((M @ M) > 0).to(torch.float64)
        power *= 2
    return bool((M > 0).all())


def _features_with_omega(
    mu: torch.Tensor, n_features: int, omega: float | None, gen: torch.Generator
) -> torch.Tensor:
    """Random features with ``||phi(s)|| <= 1`` and ``lambda_min(Phi^T D Phi) = omega``.

    Whiten random Gaussian features under D, give them the spectrum ``geomspace(kappa, 1)`` in a
    random basis, rescale rows so the largest norm is 1, and find ``kappa`` by bisection:
    ``omega(kappa) = kappa / max_s ||phi_0(s)||^2`` increases with ``kappa``.
    """
    S, d = mu.shape[0], n_features
    G = torch.randn(S, d, generator=gen, dtype=torch.float64)
    M = (mu[:, None] * G).T @ G
    evals, evecs = torch.linalg.eigh(M)
    W = G @ evecs @ torch.diag(evals.rsqrt()) @ evecs.T  # W^T D W = I
    Q, _ = torch.linalg.qr(torch.randn(d, d, generator=gen, dtype=torch.float64))

    def build(log_kappa: float) -> tuple[torch.Tensor, float]:
        e = (
            torch.logspace(log_kappa, 0.0, d, base=math.e, dtype=torch.float64)
            if d > 1
            else torch.ones(1, dtype=torch.float64)
        )
        phi0 = W @ torch.diag(e.sqrt()) @ Q
        c2 = phi0.pow(2).sum(1).max().item()
        return phi0 / math.sqrt(c2), e.min().item() / c2

    phi, omega_max = build(0.0)
    if omega is None:
        return phi
    if not 0 < omega <= omega_max * (1 + 1e-9):
        raise ValueError(
            f"omega must lie in (0, {omega_max:.4g}] for these {S} states and {d} features "
            f"(at most 1/d = {1 / d:.4g} in general, since trace(Sigma) <= 1); got {omega}"
        )
    lo, hi = math.log(omega) - 5 * math.log(10) - math.log(d), 0.0
    while build(lo)[1] > omega:
        lo -= 5.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if build(mid)[1] < omega else (lo, mid)
    return build(hi)[0]


def garnet_mdp(
    n_states: int,
    n_features: int,
    gamma: float,
    seed: int = 0,
    *,
    omega: float | None = None,
    branching: int = 5,
    device: torch.device | str = "cpu",
) -> MarkovRewardProcess:
    """A random Garnet chain (Archibald et al., 1995) evaluated under a fixed policy.

    Each state moves to ``branching`` distinct random successors with Dirichlet(1) probabilities
    (redrawn until the chain is irreducible and aperiodic); rewards are uniform in [0, 1];
    features are random with ``||phi(s)|| <= 1`` and, when ``omega`` is given, scaled so the
    smallest eigenvalue of ``Phi^T D Phi`` equals ``omega`` (at most ``1/n_features``). The chain
    is drawn on the CPU (the same chain for a seed on every device), then moved to ``device``.
    """
    if not isinstance(n_states, int) or n_states < 2:
        raise ValueError(f"n_states must be an integer >= 2, got {n_states!r}")
    if not isinstance(n_features, int) or not 1 <= n_features <= n_states:
        raise ValueError(
            f"n_features must be an integer in [1, n_states={n_states}], got {n_features!r}"
        )
    if not branching >= 1:
        raise ValueError(f"branching must be >= 1, got {branching}")
    branching = min(branching, n_states)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(1000):
        P = torch.zeros(n_states, n_states, dtype=torch.float64)
        for s in range(n_states):
            succ = torch.randperm(n_states, generator=gen)[:branching]
            w = -torch.rand(branching, generator=gen, dtype=torch.float64).log()  # Dirichlet(1)
            P[s, succ] = w / w.sum()
        if _is_primitive(P):
            break
    else:
        raise ValueError(f"could not draw an ergodic Garnet chain with branching={branching}")
    r = torch.rand(n_states, generator=gen, dtype=torch.float64)
    mu = stationary_distribution(P)
    phi = _features_with_omega(mu, n_features, omega, gen)
    name = f"garnet(S={n_states}, d={n_features}" + (f", omega={omega:g})" if omega else ")")
    return MarkovRewardProcess(P, r, phi, gamma, mu, name).to(device)


def boyan_chain(
    gamma: float = 0.95, n_states: int = 13, device: torch.device | str = "cpu"
) -> MarkovRewardProcess:
    """Boyan's chain (Boyan, 2002), made continuing: from state 0 the walk restarts at the top.

    States n-1..0; from s >= 2 move to s-1 or s-2 with probability 1/2 (reward -3); from 1 to 0
    (reward -2); from 0 back to n-1 (reward 0). Four features interpolate linearly between the
    unit vectors placed at states n-1, 2(n-1)/3, (n-1)/3 and 0 (norm <= 1).
    """
    if n_states < 4:
        raise ValueError(f"n_states must be >= 4, got {n_states}")
    n = n_states
    P = torch.zeros(n, n, dtype=torch.float64)
    r = torch.zeros(n, dtype=torch.float64)
    for s in range(2, n):
        P[s, s - 1] = P[s, s - 2] = 0.5
        r[s] = -3.0
    P[1, 0], r[1] = 1.0, -2.0
    P[0, n - 1] = 1.0
    anchors = torch.linspace(n - 1, 0, 4, dtype=torch.float64)
    phi = torch.zeros(n, 4, dtype=torch.float64)
    for s in range(n):
        j = min(int(((n - 1 - s) / (n - 1)) * 3), 2)
        w = (anchors[j] - s) / (anchors[j] - anchors[j + 1])
        phi[s, j], phi[s, j + 1] = 1 - w, w
    # Period 2 is possible in the restarted chain only through the s-2 moves; it is aperiodic
    # because cycles of lengths n and n+1 both exist.
    mrp = MarkovRewardProcess(P, r, phi, gamma, stationary_distribution(P), f"boyan({n})")
    return mrp.to(device)
