"""Featured hypergraphs as bipartite star expansions, and their conversion to and from PyG.

FAHNES represents a hypergraph by its star expansion: ``n`` nodes on one side, ``m`` hyperedges on
the other, and an incidence ``(node, hyperedge)`` for every membership. A graph is the case of
2-node hyperedges; a triangle mesh the case of 3-node hyperedges. Every element carries a
**budget** (how many original nodes / hyperedges it stands for; 1 in a data hypergraph) and
optional features (node features ``x``, hyperedge features ``edge_x``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch_geometric.data import Data, HeteroData

__all__ = ["Hypergraph"]


@dataclass(frozen=True)
class Hypergraph:
    """A featured hypergraph as its bipartite star expansion.

    - ``incidence``: (2, nnz) int64, rows (node index, hyperedge index), sorted by hyperedge then
      node, no duplicates;
    - ``x``: (n, d) float node features (d may be 0); ``edge_x``: (m, d_e) hyperedge features;
    - ``node_budget`` (n,) and ``edge_budget`` (m,) int64, >= 1: how many original nodes /
      hyperedges each element stands for (all 1 in data, summed by coarsening).
    """

    incidence: torch.Tensor
    x: torch.Tensor
    edge_x: torch.Tensor
    node_budget: torch.Tensor
    edge_budget: torch.Tensor

    @property
    def num_nodes(self) -> int:
        return int(self.x.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.edge_x.shape[0])

    @property
    def edge_sizes(self) -> torch.Tensor:
        """(m,) number of nodes in each hyperedge."""
        return torch.bincount(self.incidence[1], minlength=self.num_edges)

    # ---- construction ---------------------------------------------------------------------------

    @classmethod
    def from_hyperedges(
        cls,
        hyperedges: list[list[int]] | list[tuple[int, ...]] | torch.Tensor,
        num_nodes: int,
        x: torch.Tensor | None = None,
        edge_x: torch.Tensor | None = None,
    ) -> Hypergraph:
        """From a list of node-index lists (or an (m, k) tensor of k-uniform hyperedges).

        Raises ``ValueError`` on an empty hyperedge, a node index out of range, a repeated node
        inside a hyperedge, or two hyperedges with the same node set."""
        if isinstance(hyperedges, torch.Tensor):
            if hyperedges.dim() != 2:
                raise ValueError(
                    f"a hyperedge tensor must be (m, k), got {tuple(hyperedges.shape)}"
                )
            hyperedges = hyperedges.tolist()
        if not isinstance(num_nodes, int) or num_nodes < 1:
            raise ValueError(f"num_nodes must be a positive int, got {num_nodes!r}")
        nodes, edges, seen = [], [], {}
        for j, e in enumerate(hyperedges):
            members = [int(v) for v in e]
            if not members:
                raise ValueError(f"hyperedge {j} is empty")
            bad = [v for v in members if not 0 <= v < num_nodes]
            if bad:
                raise ValueError(f"hyperedge {j} has node index {bad[0]} outside [0, {num_nodes})")
            if len(set(members)) != len(members):
                raise ValueError(f"hyperedge {j} repeats a node: {members}")
            key = tuple(sorted(members))
            if key in seen:
                raise ValueError(f"hyperedges {seen[key]} and {j} have the same nodes {list(key)}")
            seen[key] = j
            nodes += list(key)
            edges += [j] * len(key)
        m = len(seen)
        inc = torch.tensor([nodes, edges], dtype=torch.long).reshape(2, -1)
        x = torch.zeros(num_nodes, 0) if x is None else torch.as_tensor(x)
        edge_x = torch.zeros(m, 0) if edge_x is None else torch.as_tensor(edge_x)
        for name, feats in (("x", x), ("edge_x", edge_x)):
            if feats.is_complex():  # a cast to float would drop the imaginary part
                raise TypeError(f"{name} must hold real features, got {feats.dtype}")
        if x.dim() != 2 or x.shape[0] != num_nodes:
            raise ValueError(f"x must have one row per node: ({num_nodes}, d), got "
                             f"{tuple(x.shape)}")  # fmt: skip
        if edge_x.dim() != 2 or edge_x.shape[0] != m:
            raise ValueError(f"edge_x must have one row per hyperedge: ({m}, d), got "
                             f"{tuple(edge_x.shape)}")  # fmt: skip
        hg = cls(
            inc,
            torch.as_tensor(x, dtype=torch.float32),
            torch.as_tensor(edge_x, dtype=torch.float32),
            torch.ones(num_nodes, dtype=torch.long),
            torch.ones(m, dtype=torch.long),
        )
        hg.check()
        return hg

    @classmethod
    def from_data(cls, data: Data) -> Hypergraph:
        """A graph (``edge_index``, undirected, either both directions or one) as a hypergraph of
        2-node hyperedges; ``data.x`` becomes the node features, ``data.edge_attr`` (one row per
        undirected edge, in the order of first appearance) the hyperedge features."""
        if not isinstance(data, Data) or data.edge_index is None:
            raise TypeError("expected a torch_geometric.data.Data with an edge_index")
        n = int(data.num_nodes)
        ei = data.edge_index
        if ei.numel() and (int(ei.min()) < 0 or int(ei.max()) >= n):
            raise ValueError(f"edge_index has a node index outside [0, {n})")
        if bool((ei[0] == ei[1]).any()):
            raise ValueError("edge_index has a self-loop; FAHNES graphs are simple")
        pairs = torch.sort(ei.t(), dim=1).values
        uniq, first = _unique_rows_first(pairs)
        edge_x = None
        if getattr(data, "edge_attr", None) is not None:
            if data.edge_attr.shape[0] != ei.shape[1]:
                raise ValueError(f"edge_attr must have one row per edge_index column "
                                 f"({ei.shape[1]}), got {data.edge_attr.shape[0]}")  # fmt: skip
            edge_x = data.edge_attr[first].reshape(len(first), -1)
        return cls.from_hyperedges(uniq.tolist(), n, data.x, edge_x)

    # ---- checks and conversion ------------------------------------------------------------------

    def check(self) -> None:
        """Raise ``ValueError`` unless the fields are consistent (shapes, ranges, sorted unique
        incidences, every hyperedge non-empty, finite features, budgets >= 1)."""
        n, m = self.num_nodes, self.num_edges
        inc = self.incidence
        if inc.dtype != torch.long or inc.dim() != 2 or inc.shape[0] != 2:
            raise ValueError(f"incidence must be (2, nnz) int64, got {tuple(inc.shape)}")
        if self.x.dim() != 2 or self.edge_x.dim() != 2:
            raise ValueError("x and edge_x must be 2-D (rows are elements)")
        if inc.numel():
            if int(inc[0].min()) < 0 or int(inc[0].max()) >= n:
                raise ValueError(f"an incidence names a node outside [0, {n})")
            if int(inc[1].min()) < 0 or int(inc[1].max()) >= m:
                raise ValueError(f"an incidence names a hyperedge outside [0, {m})")
            key = inc[1] * n + inc[0]
            if bool((key[1:] <= key[:-1]).any()):
                raise ValueError("incidences must be sorted by (hyperedge, node) without repeats")
        if m and bool((self.edge_sizes == 0).any()):
            raise ValueError(f"hyperedge {int((self.edge_sizes == 0).nonzero()[0])} is empty")
        if self.node_budget.shape != (n,) or self.edge_budget.shape != (m,):
            got = (tuple(self.node_budget.shape), tuple(self.edge_budget.shape))
            raise ValueError(f"node_budget must be ({n},) (one per row of x) and edge_budget "
                             f"({m},) (one per row of edge_x), got {got[0]}, {got[1]}")  # fmt: skip
        if (n and int(self.node_budget.min()) < 1) or (m and int(self.edge_budget.min()) < 1):
            raise ValueError("budgets must be >= 1")
        for name, feats in (("x", self.x), ("edge_x", self.edge_x)):
            if not bool(torch.isfinite(feats).all()):
                raise ValueError(f"{name} (features) must be finite, got NaN or inf")

    def hyperedges(self) -> list[list[int]]:
        """Node lists of the hyperedges, in hyperedge order."""
        out: list[list[int]] = [[] for _ in range(self.num_edges)]
        for v, e in self.incidence.t().tolist():
            out[e].append(v)
        return out

    def to_data(self) -> Data:
        """A ``Data`` graph: 2-node hyperedges become undirected edges (both directions), larger
        ones their cliques; ``x`` the node features, ``hyperedges`` the node lists."""
        pairs = set()
        for e in self.hyperedges():
            for i, a in enumerate(e):
                for b in e[i + 1 :]:
                    pairs.add((min(a, b), max(a, b)))
        ei = torch.tensor(sorted(pairs), dtype=torch.long).reshape(-1, 2).t()
        ei = torch.cat([ei, ei.flip(0)], 1)
        return Data(x=self.x, edge_index=ei, num_nodes=self.num_nodes)

    def to_hetero(self) -> HeteroData:
        """The star expansion as ``HeteroData``: node types ``node`` and ``hyperedge``, edge type
        ``(node, in, hyperedge)`` and its reverse; budgets as ``budget`` fields."""
        h = HeteroData()
        h["node"].x, h["node"].budget = self.x, self.node_budget
        h["hyperedge"].x, h["hyperedge"].budget = self.edge_x, self.edge_budget
        h["node", "in", "hyperedge"].edge_index = self.incidence
        h["hyperedge", "has", "node"].edge_index = self.incidence.flip(0)
        return h

    def with_features(self, x: torch.Tensor, edge_x: torch.Tensor | None = None) -> Hypergraph:
        return replace(self, x=x, edge_x=self.edge_x if edge_x is None else edge_x)


def _unique_rows_first(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Unique rows of a (k, 2) tensor in order of first appearance, and those first indices."""
    seen: dict[tuple[int, int], int] = {}
    for i, r in enumerate(rows.tolist()):
        seen.setdefault((r[0], r[1]), i)
    first = torch.tensor(list(seen.values()), dtype=torch.long)
    return rows[first].reshape(-1, 2), first
