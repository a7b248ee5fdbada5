"""Trajectory abstraction and the class predictor.

Reconstructed (the TACTIC paper's body is not available; the parts follow TRAMA, arXiv
2503.01440, which TACTIC builds on):

- :class:`TrajectoryVQVAE` encodes a *window* of ``window`` consecutive trajectory vectors (the
  trainer passes joint observations; TRAMA also allows the state) into one code of a
  ``codes``-entry codebook (VQ-VAE, van den Oord et al. 2017:
  reconstruction + codebook + beta * commitment, straight-through gradients), with a *coverage*
  term that pushes the batch's mean soft assignment toward uniform so every code is used.
- :func:`fit_classes` clusters the quantised embeddings into K task classes with k-means. TRAMA
  clusters the mean quantised embedding of a whole trajectory; the shifting-dependency game
  changes its task inside an episode, so here each *step* gets a class (from the window ending at
  it) -- a reconstructed choice, flagged in the README.
- :class:`ClassPredictor` is a per-agent GRU classifier p(c | o_i,<=t) trained on those labels
  (:func:`train_predictor`), then frozen (:meth:`ClassPredictor.freeze`): the learner only reads
  its probabilities, so task recognition is decoupled from control.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "ClassFit",
    "ClassPredictor",
    "TrajectoryVQVAE",
    "fit_classes",
    "step_windows",
    "train_predictor",
]


def step_windows(x: torch.Tensor, window: int) -> torch.Tensor:
    """The window ending at every step, zero-padded at the start:
    (B, T, D) -> (B, T, window * D)."""
    if x.dim() != 3:
        raise ValueError(f"trajectories must be (B, T, D), got {tuple(x.shape)}")
    pad = x.new_zeros(x.shape[0], window - 1, x.shape[2])
    xp = torch.cat([pad, x], 1)
    return torch.cat([xp[:, k : k + x.shape[1]] for k in range(window)], -1)


class TrajectoryVQVAE(nn.Module):
    """VQ-VAE over trajectory windows: (N, window * D) -> code index (N,), quantised embedding."""

    def __init__(self, in_dim: int, codes: int = 16, dim: int = 16, hidden: int = 64,
                 beta: float = 0.25, coverage: float = 0.1):  # fmt: skip
        super().__init__()
        for name, value in (("in_dim", in_dim), ("codes", codes), ("dim", dim), ("hidden", hidden)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        self.beta, self.coverage = beta, coverage
        self.encoder = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, dim))
        self.decoder = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, in_dim))
        self.codebook = nn.Parameter(torch.randn(codes, dim) * 0.1)

    def quantise(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Nearest code: (index (N,), code vector (N, dim), squared distances (N, codes))."""
        d = torch.cdist(z, self.codebook) ** 2
        idx = d.argmin(1)
        return idx, self.codebook[idx], d

    def loss(self, x: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
        z = self.encoder(x)
        _, zq, d = self.quantise(z)
        recon = self.decoder(z + (zq - z).detach())  # straight-through
        rec = F.mse_loss(recon, x)
        codebook = F.mse_loss(zq, z.detach())
        commit = F.mse_loss(z, zq.detach())
        # coverage: KL(mean soft assignment || uniform) = log C - H(mean assignment)
        p = F.softmax(-d, 1).mean(0)
        cover = float(np.log(p.numel())) + (p * torch.log(p + 1e-9)).sum()
        total = rec + codebook + self.beta * commit + self.coverage * cover
        return total, {"recon": float(rec.detach()), "coverage_kl": float(cover.detach())}

    @torch.no_grad()
    def embed(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(code index (N,), quantised embedding (N, dim))."""
        idx, zq, _ = self.quantise(self.encoder(x))
        return idx, zq


@dataclass
class ClassFit:
    """What :func:`fit_classes` returns."""

    labels: np.ndarray
    """(B, T) int class of every step."""
    vqvae: TrajectoryVQVAE
    centroids: np.ndarray
    """(K, dim) k-means centres of the quantised embeddings."""
    codes_used: int
    recon: float


def fit_classes(
    traj: torch.Tensor, n_classes: int, *, window: int = 3, codes: int = 16, steps: int = 600,
    batch: int = 256, lr: float = 1e-3, seed: int = 0,
) -> ClassFit:  # fmt: skip
    """Train a :class:`TrajectoryVQVAE` on trajectories (B, T, D) (e.g. joint observations),
    then k-means its per-step quantised embeddings into ``n_classes`` classes."""
    from sklearn.cluster import KMeans

    if traj.dim() != 3 or traj.shape[0] < 1 or traj.shape[1] < 1:
        raise ValueError(f"traj must be a non-empty (B, T, D) tensor, got {tuple(traj.shape)}")
    if not torch.isfinite(traj).all():
        raise ValueError("traj holds NaN or inf")
    if n_classes < 2:
        raise ValueError(f"n_classes must be >= 2, got {n_classes}")
    g = torch.Generator().manual_seed(seed)
    x = step_windows(traj.float().cpu(), window).flatten(0, 1)  # (B*T, window*D)
    if x.shape[0] < n_classes:
        raise ValueError(f"{x.shape[0]} steps cannot make {n_classes} classes")
    with torch.random.fork_rng():  # seeded weights without touching the caller's RNG
        torch.manual_seed(seed)
        vq = TrajectoryVQVAE(x.shape[1], codes=codes)
    # initialise the codebook on encoded data so no code starts dead
    with torch.no_grad():
        vq.codebook.copy_(vq.encoder(x[torch.randint(0, x.shape[0], (codes,), generator=g)]))
    opt = torch.optim.Adam(vq.parameters(), lr=lr)
    stats = {}
    for _ in range(steps):
        xb = x[torch.randint(0, x.shape[0], (min(batch, x.shape[0]),), generator=g)]
        loss, stats = vq.loss(xb)
        opt.zero_grad()
        loss.backward()
        opt.step()
    idx, zq = vq.embed(x)
    km = KMeans(n_clusters=n_classes, n_init=10, random_state=seed).fit(zq.numpy())
    labels = km.labels_.reshape(traj.shape[0], traj.shape[1])
    return ClassFit(labels=labels, vqvae=vq.eval(), centroids=km.cluster_centers_,
                    codes_used=len(torch.unique(idx)),
                    recon=float(stats.get("recon", float("nan"))))  # fmt: skip


class ClassPredictor(nn.Module):
    """Per-agent recurrent classifier p(c | o_i,<=t): observations (B, T, n, d) -> class
    probabilities (B, T, n, K). Agents share weights and see their own id."""

    def __init__(self, obs_dim: int, n_agents: int, n_classes: int, hidden: int = 64):
        super().__init__()
        if min(obs_dim, n_agents, hidden) < 1 or n_classes < 2:
            raise ValueError("obs_dim, n_agents, hidden >= 1 and n_classes >= 2 needed")
        self.n_agents, self.n_classes = n_agents, n_classes
        self.inp = nn.Linear(obs_dim + n_agents, hidden)
        self.gru = nn.GRUCell(hidden, hidden)
        self.out = nn.Linear(hidden, n_classes)
        self.frozen = False

    def init_hidden(self, batch: int) -> torch.Tensor:
        return self.out.weight.new_zeros(batch, self.n_agents, self.gru.hidden_size)

    def step(self, obs: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One step: obs (B, n, d), hidden (B, n, H) -> (logits (B, n, K), hidden)."""
        B, n, _ = obs.shape
        ids = torch.eye(n, device=obs.device).expand(B, n, n)
        x = F.relu(self.inp(torch.cat([obs, ids], -1))).flatten(0, 1)
        h = self.gru(x, h.flatten(0, 1)).view(B, n, -1)
        return self.out(h), h

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Logits (B, T, n, K) of a batch of observation sequences (B, T, n, d)."""
        if obs.dim() != 4 or obs.shape[2] != self.n_agents:
            raise ValueError(f"obs must be (B, T, n_agents={self.n_agents}, d), got "
                             f"{tuple(obs.shape)}")  # fmt: skip
        h = self.init_hidden(obs.shape[0])
        logits = []
        for t in range(obs.shape[1]):
            lt, h = self.step(obs[:, t], h)
            logits.append(lt)
        return torch.stack(logits, 1)

    def freeze(self) -> ClassPredictor:
        """Stop every parameter from training (the predictor is fixed during RL)."""
        self.requires_grad_(False)
        self.eval()
        self.frozen = True
        return self

    def train(self, mode: bool = True):
        # a frozen predictor stays in eval mode whatever its parent module does
        return super().train(mode and not getattr(self, "frozen", False))


def train_predictor(
    pred: ClassPredictor, obs: torch.Tensor, labels: torch.Tensor, *, steps: int = 400,
    batch: int = 64, lr: float = 3e-3, holdout: float = 0.2, seed: int = 0,
) -> dict[str, float]:  # fmt: skip
    """Fit the predictor on observation sequences (B, T, n, d) and per-step labels (B, T) (every
    agent predicts the step's class); returns train and held-out accuracy, and the held-out share
    of the most frequent class (the accuracy of always guessing it)."""
    if obs.ndim != 4:
        raise ValueError(f"obs must be (B, T, n, d) observation sequences, got {tuple(obs.shape)}")
    if obs.shape[:2] != labels.shape:
        raise ValueError(f"labels {tuple(labels.shape)} must match obs (B, T) "
                         f"{tuple(obs.shape[:2])}")  # fmt: skip
    for name, v in (("steps", steps), ("batch", batch)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if not lr > 0 or not 0 < holdout < 1:
        raise ValueError(f"need lr > 0 and holdout in (0, 1), got lr={lr!r}, holdout={holdout!r}")
    if pred.frozen:
        raise ValueError("the predictor is frozen")
    B = obs.shape[0]
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(B, generator=g)
    n_test = max(1, round(holdout * B)) if B > 1 else 0
    test, train = perm[:n_test], perm[n_test:]
    if len(train) == 0:
        train = perm
    opt = torch.optim.Adam(pred.parameters(), lr=lr)
    lab = labels.long()
    for _ in range(steps):
        bi = train[torch.randint(0, len(train), (min(batch, len(train)),), generator=g)]
        logits = pred(obs[bi])
        target = lab[bi].unsqueeze(-1).expand(-1, -1, pred.n_agents)
        loss = F.cross_entropy(logits.flatten(0, 2), target.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()

    @torch.no_grad()
    def acc(idx):
        if len(idx) == 0:
            return float("nan")
        p = pred(obs[idx]).argmax(-1)
        return float((p == lab[idx].unsqueeze(-1)).float().mean())

    held = test if n_test else train
    majority = float(torch.bincount(lab[held].flatten()).max() / lab[held].numel())
    return {"train_acc": acc(train), "test_acc": acc(held), "majority": majority}
