"""Sparse coordination graphs: low-rank pairwise payoffs, their closed-form variance, pruning by
payoff sensitivity, anytime max-sum, and the factorised joint value.

The joint value of a coordination graph over n agents with edge set E (DCG, Böhmer et al. 2020;
CASEC, Wang et al. 2021, arXiv 2106.02886):

    Q_tot(a) = 1/n sum_i f_i(a_i) + 1/|E| sum_{(i,j) in E'} f_ij(a_i, a_j)               (1)

where E' is the kept (pruned) subset of E. Pruning drops terms and keeps the normaliser 1/|E| of
the full graph, so the pruned Q_tot is the learned full-graph Q_tot with the dropped payoffs set to
zero: an edge whose payoff is (nearly) constant over action pairs -- low variance -- changes
nothing (or little) in the greedy joint action. With no edge kept Q_tot is a (scaled) VDN sum.

Payoffs are low rank: f_ij = P_ij Q_ij^T with P, Q of shape (A, R), so that the variance of a
payoff over all A x A action pairs -- CASEC's payoff-sensitivity score, the edge pruning
criterion -- has a closed form in R x R Gram matrices:

    mean f = (1^T P)(Q^T 1) / A^2,   E[f^2] = <P^T P, Q^T Q>_F / A^2,   Var = E[f^2] - mean^2  (2)
"""

from __future__ import annotations

import itertools

import torch

__all__ = [
    "all_edges",
    "brute_force_greedy",
    "max_sum",
    "payoff_matrix",
    "payoff_variance",
    "q_tot",
    "select_edges",
]


def all_edges(n_agents: int) -> torch.Tensor:
    """The complete graph's edges (E, 2), i < j, E = n (n - 1) / 2."""
    if n_agents < 2:
        raise ValueError(f"a coordination graph needs >= 2 agents, got {n_agents}")
    return torch.tensor(list(itertools.combinations(range(n_agents), 2)), dtype=torch.long)


def payoff_matrix(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """f[a_i, a_j] = sum_r p[a_i, r] q[a_j, r]: (..., A, R) x (..., A, R) -> (..., A, A)."""
    if p.shape != q.shape:
        raise ValueError(f"payoff factors must share a shape, got {tuple(p.shape)} and "
                         f"{tuple(q.shape)}")  # fmt: skip
    return p @ q.transpose(-1, -2)


def payoff_variance(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Variance of the payoff ``p q^T`` over all A x A action pairs, in closed form (eq. 2):
    (..., A, R) x (..., A, R) -> (...). Never builds the A x A matrix."""
    if p.shape != q.shape:
        raise ValueError(f"payoff factors must share a shape, got {tuple(p.shape)} and "
                         f"{tuple(q.shape)}")  # fmt: skip
    a2 = p.shape[-2] ** 2
    mean = (p.sum(-2) * q.sum(-2)).sum(-1) / a2
    second = ((p.transpose(-1, -2) @ p) * (q.transpose(-1, -2) @ q)).sum((-1, -2)) / a2
    return (second - mean**2).clamp_min(0.0)


def select_edges(
    scores: torch.Tensor, rho: float, generator: torch.Generator | None = None,
    random: bool = False,
) -> torch.Tensor:  # fmt: skip
    """Keep the ``round(rho * E)`` edges with the highest score per row: (B, E) -> bool (B, E).

    ``random=True`` keeps as many edges chosen uniformly at random instead (the pruning
    ablation); ``rho = 0`` keeps none, ``rho = 1`` all.
    """
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"rho must be in [0, 1], got {rho}")
    B, E = scores.shape
    k = round(rho * E)
    mask = torch.zeros(B, E, dtype=torch.bool, device=scores.device)
    if k == 0:
        return mask
    if random:
        scores = torch.rand(B, E, generator=generator, device="cpu").to(scores.device)
    mask.scatter_(1, scores.topk(k, dim=1).indices, True)
    return mask


def _check_edges(edges, n: int) -> None:
    """edges (E, 2): integer pairs of two different agents in [0, n) (an index outside it was a
    raw IndexError, float edges a raw RuntimeError, a self-loop ran silently)."""
    if not isinstance(edges, torch.Tensor) or edges.dtype not in (torch.int64, torch.int32):
        got = edges.dtype if isinstance(edges, torch.Tensor) else type(edges).__name__
        raise TypeError(f"edges must be an (E, 2) integer tensor of agent pairs, got {got}")
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise ValueError(f"edges must have shape (E, 2), got {tuple(edges.shape)}")
    if edges.numel() and (int(edges.min()) < 0 or int(edges.max()) >= n):
        raise ValueError(f"edges must index the {n} agents in [0, {n}), got values in "
                         f"[{int(edges.min())}, {int(edges.max())}]")  # fmt: skip
    if bool((edges[:, 0] == edges[:, 1]).any()):
        raise ValueError("edges must join two different agents, got a self-loop")


def _check_factors(q, f, edges) -> tuple[int, int, int]:
    """Utilities q (B, n, A) and payoffs f (B, E, A, A): real, finite, non-empty; (B, n, A)."""
    for name, x, rank in (("utilities q", q, 3), ("payoffs f", f, 4)):
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            got = x.dtype if isinstance(x, torch.Tensor) else type(x).__name__
            raise TypeError(f"{name} must be a real floating-point tensor, got {got}")
        if x.ndim != rank or x.numel() == 0:
            raise ValueError(f"{name} must be a non-empty {rank}-D tensor, got {tuple(x.shape)}")
    B, n, A = q.shape
    _check_edges(edges, n)
    E = edges.shape[0]
    if f.shape != (B, E, A, A):
        raise ValueError(f"payoffs must have shape {(B, E, A, A)}, got {tuple(f.shape)}")
    for name, x in (("utilities q", q), ("payoffs f", f)):
        if not bool(torch.isfinite(x).all()):
            raise ValueError(f"{name} must be finite (NaN or inf would make every belief equal "
                             "and the greedy action meaningless)")  # fmt: skip
    return B, n, A


def q_tot(
    q: torch.Tensor, f: torch.Tensor, edges: torch.Tensor, actions: torch.Tensor,
    edge_mask: torch.Tensor | None = None,
) -> torch.Tensor:  # fmt: skip
    """Eq. (1) at joint actions: utilities (B, n, A), payoffs (B, E, A, A) (``f[b, e, a_i, a_j]``
    for edge e = (i, j)), edges (E, 2), actions (B, n) long, edge_mask (B, E) bool (None: all)
    -> (B,)."""
    B, n, A = _check_factors(q, f, edges)
    if actions.shape != (B, n):
        raise ValueError(f"actions must have shape {(B, n)}, got {tuple(actions.shape)}")
    if actions.dtype != torch.long:
        raise TypeError(f"actions must be a long tensor of action indices, got {actions.dtype}")
    if actions.numel() and (int(actions.min()) < 0 or int(actions.max()) >= A):
        raise ValueError(f"actions must lie in [0, {A}) (the utilities' last dimension), got "
                         f"[{int(actions.min())}, {int(actions.max())}]")  # fmt: skip
    local = q.gather(2, actions.unsqueeze(-1)).squeeze(-1).mean(1)
    if edges.numel() == 0:
        return local
    ai, aj = actions[:, edges[:, 0]], actions[:, edges[:, 1]]  # (B, E)
    pair = f.flatten(2).gather(2, (ai * A + aj).unsqueeze(-1)).squeeze(-1)  # (B, E)
    if edge_mask is None:
        edge_mask = torch.ones_like(pair, dtype=torch.bool)
    return local + (pair * edge_mask).sum(1) / edges.shape[0]


@torch.no_grad()
def max_sum(
    q: torch.Tensor, f: torch.Tensor, edges: torch.Tensor,
    edge_mask: torch.Tensor | None = None, avail: torch.Tensor | None = None,
    iters: int = 8,
) -> torch.Tensor:  # fmt: skip
    """Greedy joint action of eq. (1) by max-sum message passing: (B, n) long.

    Messages along each kept edge in both directions are normalised to mean zero (so loopy
    graphs do not diverge); after every iteration each agent takes the action that maximises
    its belief, the joint action is scored with eq. (1), and the best seen is returned (anytime
    max-sum, as DCG does). Exact on trees after enough iterations (at least the diameter).
    Unavailable actions (``avail`` False) are never chosen.
    """
    B, n, A = _check_factors(q, f, edges)
    E = edges.shape[0]
    if iters < 0:
        raise ValueError(f"iters must be >= 0, got {iters}")
    if avail is None:
        avail = torch.ones_like(q, dtype=torch.bool)
    if not bool(avail.any(-1).all()):
        raise ValueError("every agent needs at least one available action")
    if edge_mask is None:
        edge_mask = torch.ones(B, E, dtype=torch.bool, device=q.device)
    neg = torch.finfo(q.dtype).min / 4
    u = torch.where(avail, q / n, neg)  # scaled utilities, eq. (1)
    w = f * edge_mask.unsqueeze(-1).unsqueeze(-1) / max(E, 1)  # scaled payoffs, eq. (1)
    src, dst = edges[:, 0], edges[:, 1]
    m_ij = q.new_zeros(B, E, A)  # message i -> j, a function of a_j
    m_ji = q.new_zeros(B, E, A)  # message j -> i, a function of a_i

    def beliefs():
        b = u.clone()
        b.index_add_(1, dst, m_ij)
        b.index_add_(1, src, m_ji)
        return torch.where(avail, b, neg)

    def score(a):
        return q_tot(q, f, edges, a, edge_mask)

    b = beliefs()
    best = b.argmax(-1)
    best_val = score(best)
    for _ in range(iters):
        if E == 0:
            break
        # i -> j: max over a_i of [belief_i(a_i) - m_ji(a_i) + w(a_i, a_j)]
        into_i = (b[:, src] - m_ji).unsqueeze(-1) + w  # (B, E, A_i, A_j)
        new_ij = into_i.max(2).values
        into_j = (b[:, dst] - m_ij).unsqueeze(-2) + w  # (B, E, A_i, A_j)
        new_ji = into_j.max(3).values
        m_ij = (new_ij - new_ij.mean(-1, keepdim=True)) * edge_mask.unsqueeze(-1)
        m_ji = (new_ji - new_ji.mean(-1, keepdim=True)) * edge_mask.unsqueeze(-1)
        b = beliefs()  # also the next iteration's
        a = b.argmax(-1)
        val = score(a)
        better = val > best_val
        best = torch.where(better.unsqueeze(-1), a, best)
        best_val = torch.where(better, val, best_val)
    return best


def brute_force_greedy(
    q: torch.Tensor, f: torch.Tensor, edges: torch.Tensor,
    edge_mask: torch.Tensor | None = None, avail: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """The exact argmax of eq. (1) by enumerating all A^n joint actions (small n only):
    (best actions (B, n), best values (B,))."""
    B, n, A = q.shape
    if f.shape != (B, edges.shape[0], A, A):
        raise ValueError(f"payoffs must have shape {(B, edges.shape[0], A, A)}, got "
                         f"{tuple(f.shape)}")  # fmt: skip
    if A**n > 200_000:
        raise ValueError(f"{A}^{n} joint actions are too many to enumerate")
    joint = torch.tensor(list(itertools.product(range(A), repeat=n)), device=q.device)
    vals = torch.stack([q_tot(q, f, edges, a.expand(B, n), edge_mask) for a in joint], 1)
    if avail is not None:
        ok = torch.stack([avail[:, torch.arange(n), a].all(-1) for a in joint], 1)
        vals = torch.where(ok, vals, torch.finfo(vals.dtype).min)
    best = vals.argmax(1)
    return joint[best], vals.gather(1, best.unsqueeze(1)).squeeze(1)
