"""Coarsening (training sequences) and expansion (generation) of featured hypergraphs.

**Coarsening** contracts node pairs chosen by spectrum-preserving *local variation* (Loukas 2019,
"Graph reduction with spectral and cut guarantees", the edge-based contraction sets) on the
clique expansion of the hypergraph, and mirrors the contraction on the star expansion: each
hyperedge maps to the set of clusters of its nodes, and hyperedges whose mapped node sets
coincide merge. A cluster's **budget** is the sum of its children's; its features are the
budget-weighted mean of theirs (the mean-squared-error optimal summary). A random reduction
fraction per level gives many sequences per training hypergraph.

**Expansion** replaces each node / hyperedge by its number of children, which inherit its
features, an equal share of its budget, and every incident membership: child node ``a`` of ``u``
and child hyperedge ``e`` of ``f`` are a *candidate* incidence whenever ``(u, f)`` is an
incidence. Refinement (the learned part, ``model.py``) keeps a subset of the candidates.

Levels are numbered from the data (level 0) to one node (the last level); every level's elements
are ordered by parent, so expanding level l + 1 with the recorded child counts and keeping the
candidates the data keeps gives level l exactly (``tests/test_coarsening.py``).

Reconstructed from the paper's definitions: the local-variation cost of contracting
edge ``(i, j)`` is ``||B_i - B_j||^2 (d_i + d_j) / 2`` with ``B = U_k diag(lambda_k)^(-1/2)`` the
first ``k`` Laplacian eigenvectors of the current level's clique expansion (Loukas's local
Laplacian with the projection onto the cluster-constant vectors, worked out for a pair);
``B`` is recomputed on every coarse level (on its clique expansion, merged hyperedges weighted
by their budgets) rather than carried through Loukas's multilevel update. The eigenvectors come
from a dense eigendecomposition per level: coarsening runs on training graphs only (sampling
never coarsens).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import torch

from icml26.fahnes.hypergraph import Hypergraph

__all__ = ["Coarsening", "Expansion", "RefinementTargets", "coarsen", "expand", "targets"]


@dataclass(frozen=True)
class Coarsening:
    """A coarsening sequence. ``levels[0]`` is the input with its nodes and hyperedges reordered
    (``levels[0].x == input.x[node_perm]``), ``levels[-1]`` one node; ``node_parent[l]`` (n_l,)
    and ``edge_parent[l]`` (m_l,) map level l's elements to level l + 1's."""

    levels: list[Hypergraph]
    node_parent: list[torch.Tensor]
    edge_parent: list[torch.Tensor]
    node_perm: torch.Tensor
    edge_perm: torch.Tensor

    @property
    def depth(self) -> int:
        return len(self.levels) - 1

    def node_counts(self, level: int) -> torch.Tensor:
        """(n_{l+1},) children of each node of level ``level + 1`` at level ``level``."""
        return torch.bincount(self.node_parent[level], minlength=self.levels[level + 1].num_nodes)

    def edge_counts(self, level: int) -> torch.Tensor:
        return torch.bincount(self.edge_parent[level], minlength=self.levels[level + 1].num_edges)


@dataclass(frozen=True)
class Expansion:
    """A coarse level with every element replaced by its children.

    ``node_parent`` (n',) / ``edge_parent`` (m',): each child's coarse element; ``candidates``
    (2, C) the candidate incidences (child node, child hyperedge) sorted by hyperedge then node;
    ``x`` (n', d) / ``edge_x`` (m', d_e) the inherited features; ``node_share`` / ``edge_share``
    the inherited (real) budget shares; ``node_budget_parent`` / ``edge_budget_parent`` the
    parents' budgets; ``node_siblings`` / ``edge_siblings`` the parents' child counts."""

    node_parent: torch.Tensor
    edge_parent: torch.Tensor
    candidates: torch.Tensor
    x: torch.Tensor
    edge_x: torch.Tensor
    node_budget_parent: torch.Tensor
    edge_budget_parent: torch.Tensor
    node_siblings: torch.Tensor
    edge_siblings: torch.Tensor

    @property
    def num_nodes(self) -> int:
        return int(self.node_parent.numel())

    @property
    def num_edges(self) -> int:
        return int(self.edge_parent.numel())

    @property
    def node_share(self) -> torch.Tensor:
        return self.node_budget_parent.float() / self.node_siblings.float()

    @property
    def edge_share(self) -> torch.Tensor:
        return self.edge_budget_parent.float() / self.edge_siblings.float()


@dataclass(frozen=True)
class RefinementTargets:
    """What refinement must produce from an expansion: which candidates are kept (C,) bool, the
    children's budgets and features, and each child's number of children at the next level."""

    expansion: Expansion
    keep: torch.Tensor
    node_budget: torch.Tensor
    edge_budget: torch.Tensor
    x: torch.Tensor
    edge_x: torch.Tensor
    next_node_counts: torch.Tensor
    next_edge_counts: torch.Tensor


# ---- coarsening ---------------------------------------------------------------------------------


def clique_weights(hg: Hypergraph) -> sp.csr_matrix:
    """The clique expansion's weight matrix (n, n): a hyperedge of s >= 2 nodes and budget b adds
    b / (s - 1) to each pair of its nodes (a node's weighted degree counts the original
    hyperedges it is in; on a coarse level the merged ones count with their multiplicity)."""
    n, m = hg.num_nodes, hg.num_edges
    v, e = hg.incidence.numpy()
    sizes = np.bincount(e, minlength=m).astype(float)
    w = np.where(sizes > 1, hg.edge_budget.numpy() / np.maximum(sizes - 1, 1), 0.0)
    H = sp.csr_matrix((np.ones(v.size), (v, e)), shape=(n, m))
    W = (H @ sp.diags(w) @ H.T).tocsr()
    W.setdiag(0)
    W.eliminate_zeros()
    return W


def local_variation_costs(W: sp.csr_matrix, k: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Candidate contraction pairs (P, 2) (the clique expansion's edges, i < j) and their local
    variation costs (P,): ``||B_i - B_j||^2 (d_i + d_j) / 2`` with ``B = U_k Lambda_k^(-1/2)``,
    small costs first to contract (they move the first k eigenvectors least)."""
    n = W.shape[0]
    upper = sp.triu(W, k=1).tocoo()
    pairs = np.stack([upper.row, upper.col], 1).astype(np.int64)
    if not len(pairs):
        return pairs, np.zeros(0)
    deg = np.asarray(W.sum(1)).ravel()
    L = np.diag(deg) - W.toarray()
    k = max(1, min(k, n - 1))
    lam, U = scipy.linalg.eigh(L, subset_by_index=(0, k))  # the constant vector and k more
    inv = np.where(lam > 1e-9, 1.0 / np.sqrt(np.maximum(lam, 1e-300)), 0.0)
    B = U * inv
    diff = B[pairs[:, 0]] - B[pairs[:, 1]]
    return pairs, (diff**2).sum(1) * (deg[pairs[:, 0]] + deg[pairs[:, 1]]) / 2


def _matching(n: int, pairs: np.ndarray, costs: np.ndarray, wanted: int, rng) -> np.ndarray:
    """Greedy lowest-cost matching of at most ``wanted`` disjoint pairs (ties in random order);
    with no clique edge left (isolated clusters), random pairs so the sequence still ends."""
    order = rng.permutation(len(pairs))
    order = order[np.argsort(costs[order], kind="stable")]
    used = np.zeros(n, bool)
    chosen = []
    for i, j in pairs[order]:
        if len(chosen) == wanted:
            break
        if not used[i] and not used[j]:
            used[i] = used[j] = True
            chosen.append((i, j))
    if not chosen:
        free = rng.permutation(n)
        chosen = [tuple(free[2 * t : 2 * t + 2]) for t in range(min(wanted, n // 2))]
    return np.array(chosen, dtype=np.int64).reshape(-1, 2)


def _merge(hg: Hypergraph, node_parent: torch.Tensor) -> tuple[Hypergraph, torch.Tensor]:
    """The coarse hypergraph for a node merge map: hyperedges map to their nodes' clusters and
    coincident ones merge; budgets add; features are budget-weighted means."""
    n_c = int(node_parent.max()) + 1
    keys: dict[tuple[int, ...], int] = {}
    edge_parent = []
    for nodes in hg.hyperedges():
        key = tuple(sorted({int(node_parent[v]) for v in nodes}))
        edge_parent.append(keys.setdefault(key, len(keys)))
    edge_parent_t = torch.tensor(edge_parent, dtype=torch.long)
    m_c = len(keys)
    nodes = [v for key in keys for v in key]
    edges = [j for j, key in enumerate(keys) for _ in key]
    inc = torch.tensor([nodes, edges], dtype=torch.long).reshape(2, -1)
    nb = torch.zeros(n_c, dtype=torch.long).index_add_(0, node_parent, hg.node_budget)
    eb = torch.zeros(m_c, dtype=torch.long).index_add_(0, edge_parent_t, hg.edge_budget)
    coarse = Hypergraph(
        inc,
        budget_mean(hg.x, hg.node_budget, node_parent, n_c),
        budget_mean(hg.edge_x, hg.edge_budget, edge_parent_t, m_c),
        nb,
        eb,
    )
    return coarse, edge_parent_t


def budget_mean(x: torch.Tensor, budget: torch.Tensor, parent: torch.Tensor, size: int):
    """Budget-weighted mean of the children's features per parent: (size, d)."""
    w = budget.to(x.dtype)[:, None]
    num = torch.zeros(size, x.shape[1], dtype=x.dtype).index_add_(0, parent, x * w)
    den = torch.zeros(size, dtype=x.dtype).index_add_(0, parent, budget.to(x.dtype))
    return num / den.clamp_min(1e-12)[:, None]


def coarsen(
    hg: Hypergraph,
    rng: np.random.Generator | int | None = None,
    reduction: tuple[float, float] = (0.1, 0.5),
    k: int = 8,
) -> Coarsening:
    """Coarsen ``hg`` down to one node; each level contracts a local-variation matching removing
    a fraction ``U(reduction)`` of the nodes (at least one)."""
    if not isinstance(hg, Hypergraph):
        raise TypeError(f"hg must be a Hypergraph (Hypergraph.from_data for a PyG graph), got "
                        f"{type(hg).__name__}")  # fmt: skip
    hg.check()
    lo, hi = reduction
    if not 0 < lo <= hi <= 0.5:
        raise ValueError(f"reduction must satisfy 0 < low <= high <= 0.5, got {reduction}")
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    levels, node_parents, edge_parents = [hg], [], []
    while levels[-1].num_nodes > 1:
        cur = levels[-1]
        n = cur.num_nodes
        wanted = max(1, math.floor(n * rng.uniform(lo, hi)))
        pairs, costs = local_variation_costs(clique_weights(cur), k)
        chosen = _matching(n, pairs, costs, wanted, rng)
        parent = np.full(n, -1, dtype=np.int64)
        parent[chosen[:, 0]] = parent[chosen[:, 1]] = np.arange(len(chosen))
        rest = parent < 0
        parent[rest] = len(chosen) + np.arange(int(rest.sum()))
        node_parent = torch.from_numpy(parent)
        coarse, edge_parent = _merge(cur, node_parent)
        levels.append(coarse)
        node_parents.append(node_parent)
        edge_parents.append(edge_parent)
    return _canonical(levels, node_parents, edge_parents)


def _canonical(levels, node_parents, edge_parents) -> Coarsening:
    """Renumber every level top-down so elements are ordered by parent (stable), as expansion
    lays out children."""
    L = len(levels) - 1
    new_levels: list[Hypergraph] = [None] * (L + 1)  # type: ignore[list-item]
    new_np: list[torch.Tensor] = [None] * L  # type: ignore[list-item]
    new_ep: list[torch.Tensor] = [None] * L  # type: ignore[list-item]
    rank_v = torch.zeros(1, dtype=torch.long)  # old index -> new index, level above
    rank_e = torch.arange(levels[L].num_edges)
    new_levels[L] = _reindex(levels[L], torch.zeros(1, dtype=torch.long), rank_e)
    node_perm = torch.zeros(1, dtype=torch.long)
    edge_perm = rank_e
    for lvl in range(L - 1, -1, -1):
        pv = rank_v[node_parents[lvl]]  # new parent of each old node
        pe = rank_e[edge_parents[lvl]]
        node_perm = torch.sort(pv, stable=True).indices  # new order -> old index
        edge_perm = torch.sort(pe, stable=True).indices
        rank_v = torch.empty_like(node_perm).scatter_(0, node_perm, torch.arange(len(node_perm)))
        rank_e = torch.empty_like(edge_perm).scatter_(0, edge_perm, torch.arange(len(edge_perm)))
        new_levels[lvl] = _reindex(levels[lvl], rank_v, rank_e)
        new_np[lvl] = pv[node_perm]
        new_ep[lvl] = pe[edge_perm]
    return Coarsening(new_levels, new_np, new_ep, node_perm, edge_perm)


def _reindex(hg: Hypergraph, rank_v: torch.Tensor, rank_e: torch.Tensor) -> Hypergraph:
    """``hg`` with node i renamed rank_v[i] and hyperedge j renamed rank_e[j]."""
    inv_v = torch.empty_like(rank_v).scatter_(0, rank_v, torch.arange(len(rank_v)))
    inv_e = torch.empty_like(rank_e).scatter_(0, rank_e, torch.arange(len(rank_e)))
    inc = torch.stack([rank_v[hg.incidence[0]], rank_e[hg.incidence[1]]])
    order = torch.argsort(inc[1] * max(1, hg.num_nodes) + inc[0])
    return Hypergraph(
        inc[:, order],
        hg.x[inv_v],
        hg.edge_x[inv_e],
        hg.node_budget[inv_v],
        hg.edge_budget[inv_e],
    )


# ---- expansion ----------------------------------------------------------------------------------


def expand(coarse: Hypergraph, node_counts: torch.Tensor, edge_counts: torch.Tensor) -> Expansion:
    """Replace coarse node u by ``node_counts[u]`` children and hyperedge f by ``edge_counts[f]``
    (each >= 1 and at most the element's budget); children inherit features and budget shares,
    and every (child of u, child of f) with (u, f) an incidence is a candidate."""
    n_c, m_c = coarse.num_nodes, coarse.num_edges
    cv = torch.as_tensor(node_counts, dtype=torch.long)
    ce = torch.as_tensor(edge_counts, dtype=torch.long)
    if cv.shape != (n_c,) or ce.shape != (m_c,):
        raise ValueError(f"counts must be ({n_c},) and ({m_c},), got {cv.shape} and {ce.shape}")
    if n_c and (int(cv.min()) < 1 or bool((cv > coarse.node_budget).any())):
        raise ValueError("node counts must be in [1, budget]")
    if m_c and (int(ce.min()) < 1 or bool((ce > coarse.edge_budget).any())):
        raise ValueError("hyperedge counts must be in [1, budget]")
    node_parent = torch.repeat_interleave(torch.arange(n_c), cv)
    edge_parent = torch.repeat_interleave(torch.arange(m_c), ce)
    off_v, off_e = torch.cumsum(cv, 0) - cv, torch.cumsum(ce, 0) - ce
    u, f = coarse.incidence
    cu, cf = cv[u], ce[f]
    k = cu * cf  # candidates each coarse incidence spawns
    inc_id = torch.repeat_interleave(torch.arange(u.numel()), k)
    local = torch.arange(int(k.sum())) - torch.repeat_interleave(torch.cumsum(k, 0) - k, k)
    child_edge = off_e[f][inc_id] + local // cu[inc_id]
    child_node = off_v[u][inc_id] + local % cu[inc_id]
    n_new = int(cv.sum())
    order = torch.argsort(child_edge * max(1, n_new) + child_node)
    return Expansion(
        node_parent,
        edge_parent,
        torch.stack([child_node[order], child_edge[order]]),
        coarse.x[node_parent],
        coarse.edge_x[edge_parent],
        coarse.node_budget[node_parent],
        coarse.edge_budget[edge_parent],
        cv[node_parent],
        ce[edge_parent],
    )


def refined(exp: Expansion, keep: torch.Tensor, node_budget, edge_budget, x, edge_x) -> Hypergraph:
    """The finer level an expansion becomes once refinement has chosen the kept candidates, the
    children's budgets and features."""
    return Hypergraph(exp.candidates[:, keep], x, edge_x, node_budget, edge_budget)


def targets(seq: Coarsening, level: int) -> RefinementTargets:
    """The refinement that turns level ``level + 1`` into ``level`` (``level == depth``: the root,
    from itself with one child each), with the next level's child counts."""
    L = seq.depth
    if not 0 <= level <= L:
        raise ValueError(f"level must be in [0, {L}], got {level}")
    fine = seq.levels[level]
    if level == L:
        exp = expand(
            fine, torch.ones(1, dtype=torch.long), torch.ones(fine.num_edges, dtype=torch.long)
        )
    else:
        exp = expand(seq.levels[level + 1], seq.node_counts(level), seq.edge_counts(level))
    n = exp.num_nodes
    cand_key = exp.candidates[1] * n + exp.candidates[0]
    true_key = fine.incidence[1] * n + fine.incidence[0]
    keep = torch.isin(cand_key, true_key)
    if level > 0:
        nxt_v, nxt_e = seq.node_counts(level - 1), seq.edge_counts(level - 1)
    else:
        nxt_v = torch.ones(fine.num_nodes, dtype=torch.long)
        nxt_e = torch.ones(fine.num_edges, dtype=torch.long)
    return RefinementTargets(
        exp, keep, fine.node_budget, fine.edge_budget, fine.x, fine.edge_x, nxt_v, nxt_e
    )
