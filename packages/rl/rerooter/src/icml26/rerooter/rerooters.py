"""Rerooters: the weights w(n) that tell √LTS where to start a fresh LTS.

From our reading of the authors' C++ code (tuero/policyts, ``siirlts_rerooter.h``):
- heuristic rerooter: ``w_H(n) = exp(-alpha h(n) / max(h(root), 1))``, alpha = 10, h the search's
  cost-to-go estimate (learned, or hand-written in the search-only demo): nodes that look close to
  the goal become rerooting points;
- clustering rerooter: Louvain communities (resolution 0.1, coarsest level of the hierarchy) of the
  graph of generated states, reclustered on a geometric schedule of batch evaluations;
  ``w_L(n) = 1 / (++count[cluster(n)])`` - the k-th expansion inside a community gets 1/k, so
  every region of the state space gets a rerooting budget that shrinks harmonically - and nodes
  generated since the last clustering get ``w_parent / (w_parent + 1)``;
- hybrid: ``w = u_a w_L + u_b w_H`` (u_a = u_b = 1).

Choices left open by that reading (ours): the count is over *expanded* nodes of the cluster (the
authors' "closed count, parent increment" mode); reclustering runs after evaluator batch 1, 2, 4,
8, ... (``update_factor = 2``); Louvain is python-igraph's ``community_multilevel``, whose vertex
order is randomised, so each clustering reseeds igraph's generator from ``seed`` (deterministic
searches; note this sets igraph's global RNG).
"""

import math
import random

from icml26.rerooter.search import Rerooter, SearchTree


class HeuristicRerooter(Rerooter):
    """``w_H(n) = exp(-alpha h(n) / max(h(root), 1))``."""

    def __init__(self, alpha: float = 10.0) -> None:
        if not alpha >= 0.0:
            raise ValueError(f"alpha must be >= 0, got {alpha}")
        self.alpha = alpha

    def reset(self, tree: SearchTree) -> None:
        super().reset(tree)
        self.base_h = max(tree.h[0], 1.0)

    def weight(self, node: int) -> float:
        return math.exp(-self.alpha * self.tree.h[node] / self.base_h)


class ClusterRerooter(Rerooter):
    """``w_L``: one harmonic rerooting budget per Louvain community of the generated graph."""

    def __init__(self, resolution: float = 0.1, update_factor: float = 2.0, seed: int = 0) -> None:
        if not resolution > 0.0:
            raise ValueError(f"resolution must be > 0, got {resolution}")
        if not update_factor > 1.0:
            raise ValueError(
                f"update_factor must be > 1 (a geometric schedule), got {update_factor}"
            )
        self.resolution = resolution
        self.update_factor = update_factor
        self.seed = seed

    def reset(self, tree: SearchTree) -> None:
        super().reset(tree)
        self.edges: list[tuple[int, int]] = []
        self.membership: list[int] = []
        self.counts: dict[int, int] = {}
        self.w_cluster: dict[int, float] = {0: 1.0}
        self.batches = 0
        self.next_update = 1
        self.clusterings = 0

    def generated(self, parent: int, child: int) -> None:
        self.edges.append((parent, child))

    def revisited(self, parent: int, node: int) -> None:
        self.edges.append((parent, node))

    def evaluated(self) -> None:
        self.batches += 1
        if self.batches >= self.next_update:
            self.recluster()
            self.next_update = math.ceil(self.update_factor * self.next_update)

    def recluster(self) -> None:
        """Louvain on the graph of generated states; the coarsest level's communities."""
        import igraph  # 2-3 s to import: only searches that cluster pay it

        n = len(self.tree.states)
        graph = igraph.Graph(n=n, edges=self.edges)
        igraph.set_random_number_generator(random.Random(self.seed))
        levels = graph.community_multilevel(resolution=self.resolution, return_levels=True)
        self.membership = levels[-1].membership if levels else list(range(n))
        self.clusterings += 1
        # Counts restart from the expanded nodes of each new community (w is set on expansion).
        self.counts = {}
        w = self.tree.w
        for node, cid in enumerate(self.membership):
            if not math.isnan(w[node]):  # w is set on expansion
                self.counts[cid] = self.counts.get(cid, 0) + 1

    def weight(self, node: int) -> float:
        if node < len(self.membership):
            cid = self.membership[node]
            count = self.counts.get(cid, 0) + 1
            self.counts[cid] = count
            wl = 1.0 / count
        else:
            wp = self.w_cluster[self.tree.parent[node]]
            wl = wp / (wp + 1.0)
        self.w_cluster[node] = wl
        return wl


class MixedRerooter(Rerooter):
    """``w = u_a w_L + u_b w_H``: the clustering and the heuristic rerooter together."""

    def __init__(
        self,
        cluster: ClusterRerooter | None = None,
        heuristic: HeuristicRerooter | None = None,
        u_a: float = 1.0,
        u_b: float = 1.0,
    ) -> None:
        if not (u_a >= 0 and u_b >= 0):  # NaN fails too
            raise ValueError(f"u_a and u_b must be >= 0, got {u_a}, {u_b}")
        self.cluster = cluster or ClusterRerooter()
        self.heuristic = heuristic or HeuristicRerooter()
        self.u_a, self.u_b = u_a, u_b

    def reset(self, tree: SearchTree) -> None:
        super().reset(tree)
        self.cluster.reset(tree)
        self.heuristic.reset(tree)

    def generated(self, parent: int, child: int) -> None:
        self.cluster.generated(parent, child)

    def revisited(self, parent: int, node: int) -> None:
        self.cluster.revisited(parent, node)

    def evaluated(self) -> None:
        self.cluster.evaluated()

    def weight(self, node: int) -> float:
        return self.u_a * self.cluster.weight(node) + self.u_b * self.heuristic.weight(node)
