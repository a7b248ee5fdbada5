"""Value-factorisation learners: TACTIC and the baselines it is compared with.

All share one recurrent agent network (PyMARL's RNN agent: observation, agent id and last action
in, a GRU cell, shared weights). What differs is how the joint value is built:

- ``VDN``: Q_tot = sum_i Q_i (Sunehag et al. 2018);
- ``QMIX``: a monotonic mixing network whose weights come from hypernetworks of the state
  (Rashid et al. 2018; PyMARL2's sizes: mixing embed 32, hypernet 64);
- ``DCG``: the complete coordination graph, eq. (1) of :mod:`icml26.tactic.graph`, low-rank
  payoffs, max-sum (Böhmer et al. 2020);
- ``CASEC``: the same graph, each step pruned to the ``rho`` share of edges with the highest payoff
  variance for action selection (Wang et al. 2021);
- ``TACTIC``: CASEC whose utilities and payoffs are conditioned on a class embedding e_c of the
  frozen class predictor's probabilities (reconstructed: the predictor's soft output goes
  through a learned linear embedding; a pair's payoff sees the mean of its two agents'
  embeddings, which keeps f_ij symmetric).

Training uses eq. (1) on every edge (so every payoff keeps learning); the pruned graph decides the
greedy actions, in acting and in the TD target (double-Q style: online actions, target values).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from icml26.tactic.graph import all_edges, max_sum, payoff_variance, q_tot, select_edges

__all__ = ["Learner", "LearnerConfig", "StepOut", "flat_steps"]


@dataclass(frozen=True)
class LearnerConfig:
    """One learner's structure."""

    kind: str = "graph"
    """graph (DCG / CASEC / TACTIC), qmix or vdn."""
    classes: bool = False
    """Condition utilities and payoffs on the class predictor's embedding (TACTIC)."""
    prune: str | None = "variance"
    """Edge pruning for action selection: variance (CASEC / TACTIC), random, or None (DCG)."""
    freeze_predictor: bool = True
    """Freeze the class predictor after pretraining (TACTIC); False trains it with the TD loss."""
    rho: float = 1 / 3
    """Share of edges kept per step."""
    hidden: int = 64
    payoff_rank: int = 4
    class_dim: int = 8
    maxsum_iters: int = 8
    mixing_embed: int = 32
    hypernet_embed: int = 64

    def check(self) -> None:
        if self.kind not in ("graph", "qmix", "vdn"):
            raise ValueError(f"kind must be graph, qmix or vdn, got {self.kind!r}")
        if self.prune not in (None, "variance", "random"):
            raise ValueError(f"prune must be variance, random or None, got {self.prune!r}")
        if not 0.0 <= self.rho <= 1.0:
            raise ValueError(f"rho must be in [0, 1], got {self.rho}")
        if self.classes and self.kind != "graph":
            raise ValueError("class conditioning is defined for the graph learners only")
        sizes = {"hidden": self.hidden, "payoff_rank": self.payoff_rank,
                 "class_dim": self.class_dim, "mixing_embed": self.mixing_embed,
                 "hypernet_embed": self.hypernet_embed}  # fmt: skip
        for name, v in sizes.items():
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if self.maxsum_iters < 0:
            raise ValueError(f"maxsum_iters must be >= 0, got {self.maxsum_iters}")


class StepOut(NamedTuple):
    """A learner's output for a batch of N = B (or B * T) joint observations."""

    q: torch.Tensor
    """(N, n, A) per-agent utilities."""
    f: torch.Tensor | None
    """(N, E, A, A) pairwise payoffs (graph learners)."""
    variance: torch.Tensor | None
    """(N, E) payoff variance over action pairs, eq. (2)."""


def _mlp(i: int, h: int, o: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(i, h), nn.ReLU(), nn.Linear(h, o))


def flat_steps(out: StepOut, steps: slice) -> StepOut:
    """The time steps ``steps`` of an unrolled StepOut ((B, T, ...) fields), flattened to
    (B * len, ...)."""
    return StepOut(*(None if x is None else x[:, steps].flatten(0, 1) for x in out))


class Learner(nn.Module):
    """Agent network plus the joint-value head of ``cfg.kind``.

    ``input_dim`` is the per-agent input (observation, agent id, last action), ``n_classes`` the
    class predictor's classes (needed when ``cfg.classes``).
    """

    def __init__(self, cfg: LearnerConfig, n_agents: int, n_actions: int, input_dim: int,
                 state_dim: int, n_classes: int | None = None):  # fmt: skip
        super().__init__()
        cfg.check()
        if cfg.classes and not n_classes:
            raise ValueError("a class-conditioned learner needs n_classes")
        self.cfg, self.n_agents, self.n_actions = cfg, n_agents, n_actions
        H, A = cfg.hidden, n_actions
        self.inp = nn.Linear(input_dim, H)
        self.gru = nn.GRUCell(H, H)
        c = cfg.class_dim if cfg.classes else 0
        if cfg.classes:
            self.class_embed = nn.Linear(n_classes, cfg.class_dim)
        self.utility = _mlp(H + c, H, A)
        if cfg.kind == "graph":
            self.register_buffer("edges", all_edges(n_agents), persistent=False)
            self.payoff = _mlp(2 * H + c, H, 2 * A * cfg.payoff_rank)
        elif cfg.kind == "qmix":
            E, Hh = cfg.mixing_embed, cfg.hypernet_embed
            self.hyper_w1 = _mlp(state_dim, Hh, n_agents * E)
            self.hyper_b1 = nn.Linear(state_dim, E)
            self.hyper_w2 = _mlp(state_dim, Hh, E)
            self.hyper_b2 = _mlp(state_dim, E, 1)

    # -- per-step forward ------------------------------------------------------------------------
    def init_hidden(self, batch: int) -> torch.Tensor:
        return self.inp.weight.new_zeros(batch, self.n_agents, self.cfg.hidden)

    def step(self, inputs: torch.Tensor, h: torch.Tensor, probs: torch.Tensor | None = None
             ) -> tuple[StepOut, torch.Tensor]:  # fmt: skip
        """inputs (N, n, d), hidden (N, n, H), class probabilities (N, n, K) -> (StepOut,
        hidden)."""
        N, n, _ = inputs.shape
        x = F.relu(self.inp(inputs)).flatten(0, 1)
        h = self.gru(x, h.flatten(0, 1)).view(N, n, -1)
        feats = h
        e = None
        if self.cfg.classes:
            if probs is None:
                raise ValueError("a class-conditioned learner needs class probabilities")
            e = self.class_embed(probs)  # e_c per agent, (N, n, class_dim)
            feats = torch.cat([h, e], -1)
        q = self.utility(feats)
        if self.cfg.kind != "graph":
            return StepOut(q, None, None), h
        f, var = self._payoffs(h, e)
        return StepOut(q, f, var), h

    def _payoffs(self, h: torch.Tensor, e: torch.Tensor | None):
        """Symmetrised low-rank payoffs (N, E, A, A) and their variance (N, E)."""
        N = h.shape[0]
        A, R = self.n_actions, self.cfg.payoff_rank
        i, j = self.edges[:, 0], self.edges[:, 1]
        hi, hj = h[:, i], h[:, j]
        extra = [] if e is None else [(e[:, i] + e[:, j]) / 2]
        fwd = self.payoff(torch.cat([hi, hj, *extra], -1)).view(N, -1, 2, A, R)
        bwd = self.payoff(torch.cat([hj, hi, *extra], -1)).view(N, -1, 2, A, R)
        # f_ij = (L1 R1^T + (L2 R2^T)^T) / 2 = P Q^T with P = [L1, R2] / sqrt 2,
        # Q = [R1, L2] / sqrt 2
        p = torch.cat([fwd[:, :, 0], bwd[:, :, 1]], -1) * 0.5**0.5
        qf = torch.cat([fwd[:, :, 1], bwd[:, :, 0]], -1) * 0.5**0.5
        return p @ qf.transpose(-1, -2), payoff_variance(p, qf)

    def forward(self, inputs: torch.Tensor, probs: torch.Tensor | None = None) -> StepOut:
        """Unroll over time: inputs (B, T, n, d), probs (B, T, n, K) -> StepOut whose fields
        have (B, T) leading; :func:`flat_steps` makes them (B * T) for the joint-value heads."""
        B, T = inputs.shape[:2]
        h = self.init_hidden(B)
        outs = []
        for t in range(T):
            o, h = self.step(inputs[:, t], h, None if probs is None else probs[:, t])
            outs.append(o)
        return StepOut(*(None if outs[0][k] is None else torch.stack([o[k] for o in outs], 1)
                         for k in range(3)))  # fmt: skip

    # -- joint values ----------------------------------------------------------------------------
    def edge_mask(self, out: StepOut, generator: torch.Generator | None = None) -> torch.Tensor:
        """The kept edges (N, E) used to choose actions."""
        N = out.q.shape[0]
        E = self.edges.shape[0]
        if self.cfg.prune is None:
            return torch.ones(N, E, dtype=torch.bool, device=out.q.device)
        return select_edges(out.variance.detach(), self.cfg.rho, generator,
                            random=self.cfg.prune == "random")  # fmt: skip

    @torch.no_grad()
    def greedy(self, out: StepOut, avail: torch.Tensor, generator: torch.Generator | None = None
               ) -> tuple[torch.Tensor, torch.Tensor | None]:  # fmt: skip
        """Greedy joint actions (N, n) and the kept edges (N, E) (None for VDN / QMIX)."""
        if self.cfg.kind != "graph":
            return out.q.masked_fill(~avail, float("-inf")).argmax(-1), None
        mask = self.edge_mask(out, generator)
        return max_sum(out.q, out.f, self.edges, mask, avail, self.cfg.maxsum_iters), mask

    def q_tot(self, out: StepOut, actions: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """Q_tot of joint actions (N, n) given states (N, state_dim) -> (N,). Graph learners use
        every edge (eq. 1 with E' = E)."""
        if self.cfg.kind == "graph":
            return q_tot(out.q, out.f, self.edges, actions)
        chosen = out.q.gather(2, actions.unsqueeze(-1)).squeeze(-1)  # (N, n)
        if self.cfg.kind == "vdn":
            return chosen.sum(1)
        E = self.cfg.mixing_embed
        w1 = self.hyper_w1(state).abs().view(-1, self.n_agents, E)
        b1 = self.hyper_b1(state).unsqueeze(1)
        hidden = F.elu(chosen.unsqueeze(1) @ w1 + b1)  # (N, 1, E)
        w2 = self.hyper_w2(state).abs().unsqueeze(-1)  # (N, E, 1)
        return (hidden @ w2).view(-1) + self.hyper_b2(state).view(-1)
