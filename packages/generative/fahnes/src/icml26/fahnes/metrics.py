"""Graph, featured-graph and mesh metrics as the graph-generation literature reports them.

- Degree / clustering / spectral / orbit MMD^2 between sets of graphs, with SPECTRE's kernels: a
  Gaussian kernel on the total-variation distance between histograms (degree sigma 1, clustering
  100 bins sigma 0.1, normalised-Laplacian spectrum 200 bins sigma 1) and a Gaussian kernel on mean
  4-node orbit counts (sigma 30; counts from ``orbit-count``'s ORCA).
- **Ratio**: a metric against the test set divided by the training set's against the test set
  (1 = as close as fresh samples of the data).
- V.U.N.: valid (planar and connected, by networkx), unique among the samples, novel against
  the training set (isomorphism tests).
- Featured planar graphs: MMD^2 of pooled node coordinates (Gaussian kernel, sigma 0.1), MMD^2
  of edge-length histograms (all of [0, sqrt 2]), and the share of samples whose straight-line
  drawing at their own coordinates has no crossing edges (a Delaunay graph never does).
- Meshes: Chamfer distance of vertex sets to the nearest reference mesh, the share of meshes
  whose every edge lies on exactly two triangles (closed 2-manifold edges), and the share whose
  Euler characteristic V - E + F is one the training meshes have.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
from scipy.spatial import cKDTree

from icml26.fahnes.hypergraph import Hypergraph

__all__ = [
    "chamfer_to_nearest",
    "clustering_mmd",
    "coordinate_mmd",
    "crossing_free",
    "degree_mmd",
    "edge_length_mmd",
    "euler_characteristic",
    "graph_metrics",
    "manifold",
    "mesh_metrics",
    "orbit_mmd",
    "spectral_mmd",
    "to_networkx",
    "vun",
]


def to_networkx(hg: Hypergraph) -> nx.Graph:
    """The clique expansion as a networkx graph (all nodes, isolated ones included)."""
    g = nx.Graph()
    g.add_nodes_from(range(hg.num_nodes))
    for e in hg.hyperedges():
        g.add_edges_from((a, b) for i, a in enumerate(e) for b in e[i + 1 :])
    return g


# ---- MMD with the GRAN / SPECTRE kernels --------------------------------------------------------


def _pad(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = max(len(a), len(b))
    return np.pad(a, (0, n - len(a))), np.pad(b, (0, n - len(b)))


def _mmd(xs: list[np.ndarray], ys: list[np.ndarray], kernel) -> float:
    def mean_k(a, b):
        return np.mean([kernel(u, v) for u in a for v in b])

    return float(mean_k(xs, xs) + mean_k(ys, ys) - 2 * mean_k(xs, ys))


def _tv_kernel(sigma: float):
    def k(u, v):
        u, v = _pad(u, v)
        d = np.abs(u - v).sum() / 2
        return np.exp(-(d**2) / (2 * sigma**2))

    return k


def _gauss_kernel(sigma: float):
    def k(u, v):
        return np.exp(-((u - v) ** 2).sum() / (2 * sigma**2))

    return k


def _hist(values, bins, rng) -> np.ndarray:
    h, _ = np.histogram(values, bins=bins, range=rng)
    return h / max(h.sum(), 1)


def degree_mmd(gs: list[nx.Graph], refs: list[nx.Graph]) -> float:
    def deg(g):
        h = np.bincount([d for _, d in g.degree()]) if g.number_of_nodes() else np.zeros(1)
        return h / max(h.sum(), 1)

    return _mmd([deg(g) for g in gs], [deg(g) for g in refs], _tv_kernel(1.0))


def clustering_mmd(gs, refs) -> float:
    def cl(g):
        return _hist(list(nx.clustering(g).values()), 100, (0.0, 1.0))

    return _mmd([cl(g) for g in gs], [cl(g) for g in refs], _tv_kernel(0.1))


def spectral_mmd(gs, refs) -> float:
    def spec(g):
        if g.number_of_nodes() == 0:
            return np.zeros(200)
        lam = np.linalg.eigvalsh(nx.normalized_laplacian_matrix(g).toarray())
        return _hist(lam, 200, (-1e-5, 2.0))

    return _mmd([spec(g) for g in gs], [spec(g) for g in refs], _tv_kernel(1.0))


def orbit_mmd(gs, refs) -> float:
    from orbit_count import node_orbit_counts

    def orb(g):
        g = nx.convert_node_labels_to_integers(g)
        g.remove_edges_from(nx.selfloop_edges(g))
        if g.number_of_edges() == 0:
            return np.zeros(15)
        return node_orbit_counts(g, graphlet_size=4).mean(0)

    return _mmd([orb(g) for g in gs], [orb(g) for g in refs], _gauss_kernel(30.0))


def vun(gs: list[nx.Graph], train: list[nx.Graph]) -> dict[str, float]:
    """Shares of valid (connected planar), unique, novel, and valid-unique-novel samples."""
    valid = [nx.is_connected(g) and nx.check_planarity(g)[0] if len(g) else False for g in gs]
    hashes = [nx.weisfeiler_lehman_graph_hash(g) for g in gs]
    train_hash: dict[str, list[nx.Graph]] = {}
    for g in train:
        train_hash.setdefault(nx.weisfeiler_lehman_graph_hash(g), []).append(g)
    unique, novel = [], []
    for i, g in enumerate(gs):
        dup = any(hashes[j] == hashes[i] and nx.is_isomorphic(gs[j], g) for j in range(i))
        unique.append(not dup)
        novel.append(not any(nx.is_isomorphic(g, t) for t in train_hash.get(hashes[i], [])))
    n = max(len(gs), 1)
    return {
        "valid": sum(valid) / n,
        "unique": sum(unique) / n,
        "novel": sum(novel) / n,
        "V.U.N.": sum(v and u and o for v, u, o in zip(valid, unique, novel, strict=True)) / n,
    }


# ---- featured planar graphs ---------------------------------------------------------------------


def coordinate_mmd(
    hgs: list[Hypergraph],
    refs: list[Hypergraph],
    sigma: float = 0.1,
    max_points: int = 2000,
    seed: int = 0,
) -> float:
    """MMD^2 (Gaussian kernel) between pooled node features of two sets of hypergraphs."""
    rng = np.random.default_rng(seed)

    def pool(hs):
        p = np.concatenate([h.x.numpy() for h in hs])
        return p[rng.choice(len(p), min(len(p), max_points), replace=False)]

    a, b = pool(hgs), pool(refs)

    def k(u, v):
        d = ((u[:, None, :] - v[None, :, :]) ** 2).sum(-1)
        return np.exp(-d / (2 * sigma**2)).mean()

    return float(k(a, a) + k(b, b) - 2 * k(a, b))


def _edge_lengths(hg: Hypergraph) -> np.ndarray:
    x = hg.x.numpy()
    e = [h for h in hg.hyperedges() if len(h) == 2]
    if not e:
        return np.zeros(0)
    e = np.array(e)
    return np.linalg.norm(x[e[:, 0]] - x[e[:, 1]], axis=1)


def edge_length_mmd(hgs, refs) -> float:
    """MMD^2 of edge-length histograms (60 bins on [0, sqrt 2], the unit square's diagonal, so
    no edge falls outside; TV kernel sigma 0.1): do the features agree with the structure?"""

    def h(g):
        return _hist(_edge_lengths(g), 60, (0.0, 2**0.5))

    return _mmd([h(g) for g in hgs], [h(g) for g in refs], _tv_kernel(0.1))


def crossing_free(hg: Hypergraph) -> bool:
    """Whether the straight-line drawing of the graph at its node coordinates has no two edges
    crossing (edges sharing an endpoint never count)."""
    x = hg.x.numpy()[:, :2]
    e = np.array([h for h in hg.hyperedges() if len(h) == 2]).reshape(-1, 2)
    if len(e) < 2:
        return True
    p, q = x[e[:, 0]], x[e[:, 1]]

    def orient(a, b, c):
        return np.sign(
            (b[..., 0] - a[..., 0]) * (c[..., 1] - a[..., 1])
            - (b[..., 1] - a[..., 1]) * (c[..., 0] - a[..., 0])
        )

    P1, Q1 = p[:, None], q[:, None]
    P2, Q2 = p[None, :], q[None, :]
    cross = (orient(P1, Q1, P2) * orient(P1, Q1, Q2) < 0) & (
        orient(P2, Q2, P1) * orient(P2, Q2, Q1) < 0
    )
    shared = (e[:, None, :, None] == e[None, :, None, :]).any((2, 3))
    return not bool((cross & ~shared).any())


def graph_metrics(
    samples: list[Hypergraph],
    train: list[Hypergraph],
    test: list[Hypergraph],
    requested: list[int] | None = None,
    planar: bool = True,
    features: bool = True,
) -> dict[str, float]:
    """Every graph metric of ``samples`` against ``test``, with Ratios to train-vs-test."""
    gs, tr, te = ([to_networkx(h) for h in s] for s in (samples, train, test))
    out: dict[str, float] = {}
    ratios = []
    for name, fn in (
        ("degree", degree_mmd),
        ("clustering", clustering_mmd),
        ("spectral", spectral_mmd),
        ("orbit", orbit_mmd),
    ):
        m, ref = fn(gs, te), fn(tr, te)
        out[f"{name} MMD"] = m
        out[f"{name} ratio"] = m / max(ref, 1e-8)
        ratios.append(out[f"{name} ratio"])
    out["mean ratio"] = float(np.mean(ratios))
    if planar:
        out.update(vun(gs, tr))
    if requested is not None:
        out["node-count error"] = float(
            np.mean([abs(h.num_nodes - r) for h, r in zip(samples, requested, strict=True)])
        )
    if features:
        out["coordinate MMD"] = coordinate_mmd(samples, test)
        out["edge-length MMD"] = edge_length_mmd(samples, test)
        out["crossing-free"] = float(np.mean([crossing_free(h) for h in samples]))
    out["edges per node"] = float(np.mean([g.number_of_edges() / max(len(g), 1) for g in gs]))
    return out


# ---- meshes -------------------------------------------------------------------------------------


def _mesh_edges(hg: Hypergraph) -> dict[tuple[int, int], int]:
    count: dict[tuple[int, int], int] = {}
    for f in hg.hyperedges():
        for i, a in enumerate(f):
            for b in f[i + 1 :]:
                k = (min(a, b), max(a, b))
                count[k] = count.get(k, 0) + 1
    return count


def manifold(hg: Hypergraph) -> bool:
    """Every edge of the triangle mesh lies on exactly two triangles (a closed 2-manifold's
    edges), and every hyperedge is a triangle."""
    if any(len(f) != 3 for f in hg.hyperedges()) or hg.num_edges == 0:
        return False
    return all(c == 2 for c in _mesh_edges(hg).values())


def euler_characteristic(hg: Hypergraph) -> int:
    """V - E + F of the triangle mesh (2 for a sphere, 0 for a torus)."""
    return hg.num_nodes - len(_mesh_edges(hg)) + hg.num_edges


def chamfer(a: np.ndarray, b: np.ndarray) -> float:
    """Symmetric Chamfer distance: mean squared nearest-neighbour distance, both ways."""
    return float((cKDTree(b).query(a)[0] ** 2).mean() + (cKDTree(a).query(b)[0] ** 2).mean())


def chamfer_to_nearest(hgs: list[Hypergraph], refs: list[Hypergraph]) -> float:
    """Mean over ``hgs`` of the Chamfer distance to the nearest mesh of ``refs``."""
    pts = [r.x.numpy() for r in refs]
    return float(np.mean([min(chamfer(h.x.numpy(), p) for p in pts) for h in hgs]))


def mesh_metrics(samples, train, test) -> dict[str, float]:
    chis = {euler_characteristic(h) for h in train}
    return {
        "Chamfer": chamfer_to_nearest(samples, test),
        "Chamfer train-vs-test": chamfer_to_nearest(train, test),
        "manifold": float(np.mean([manifold(h) for h in samples])),
        "Euler match": float(np.mean([euler_characteristic(h) in chis for h in samples])),
        "triangles per vertex": float(np.mean([h.num_edges / h.num_nodes for h in samples])),
    }
