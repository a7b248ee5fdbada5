"""Featured graphs, hypergraphs and meshes generated here or read from files a dependency ships.

- ``planar_graphs``: SPECTRE-style planar graphs, the Delaunay triangulation of random points in
  the unit square, with the point coordinates as node features;
- ``sbm_graphs`` (2-5 blocks), ``tree_graphs`` (random labelled trees), ``hypergraph_sbm``
  (k-uniform hypergraph stochastic block model, block one-hot as node features);
- ``mesh_family``: noisy icospheres, tori and capsules (``trimesh``), decimated with
  ``fast_simplification`` to a few dozen vertices: triangles as 3-node hyperedges, vertex
  coordinates as node features;
- ``pyvista_mesh(name)``: the real meshes inside the ``pyvista`` wheel (airplane, ant, nut,
  sphere), read with ``trimesh`` from the ``.ply`` files without importing VTK.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import torch
from scipy.spatial import Delaunay

from icml26.fahnes.hypergraph import Hypergraph
from icml26.testing.checks import integer

__all__ = [
    "hypergraph_sbm",
    "mesh_family",
    "mesh_hypergraph",
    "planar_graphs",
    "pyvista_mesh",
    "sbm_graphs",
    "split",
    "tree_graphs",
]

PYVISTA_MESHES = ("airplane", "ant", "nut", "sphere")


def planar_graph(n: int, rng: np.random.Generator) -> Hypergraph:
    """The Delaunay triangulation of ``n`` uniform points in [0, 1]^2; x = coordinates."""
    pts = rng.uniform(size=(n, 2))
    tri = Delaunay(pts).simplices
    edges = {
        tuple(sorted((int(a), int(b))))
        for t in tri
        for a, b in ((t[0], t[1]), (t[1], t[2]), (t[0], t[2]))
    }
    return Hypergraph.from_hyperedges(sorted(edges), n, torch.tensor(pts, dtype=torch.float32))


def planar_graphs(count: int, n: int = 64, seed: int = 0) -> list[Hypergraph]:
    integer("count", count, low=1)
    integer("n", n, low=4)
    rng = np.random.default_rng(seed)
    return [planar_graph(n, rng) for _ in range(count)]


def sbm_graphs(count: int, seed: int = 0, n_range=(20, 40), p_in=0.3, p_out=0.05):
    """Stochastic block models with 2-5 blocks of ``n_range`` nodes each; x = block one-hot."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        k = int(rng.integers(2, 6))
        sizes = rng.integers(n_range[0], n_range[1] + 1, size=k)
        block = np.repeat(np.arange(k), sizes)
        n = block.size
        p = np.where(block[:, None] == block[None, :], p_in, p_out)
        a = np.triu(rng.uniform(size=(n, n)) < p, 1)
        edges = np.argwhere(a).tolist()
        x = torch.nn.functional.one_hot(torch.tensor(block), 5).float()
        out.append(Hypergraph.from_hyperedges(edges, n, x))
    return out


def tree_graphs(count: int, n: int = 64, seed: int = 0) -> list[Hypergraph]:
    """Uniform random labelled trees (random Prüfer sequences); no features."""
    import networkx as nx

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        t = nx.from_prufer_sequence(rng.integers(0, n, size=n - 2).tolist())
        out.append(Hypergraph.from_hyperedges(sorted(map(sorted, t.edges())), n))
    return out


def hypergraph_sbm(
    count: int,
    n: int = 48,
    k: int = 3,
    blocks: int = 3,
    seed: int = 0,
    m_in: int = 40,
    m_out: int = 10,
) -> list[Hypergraph]:
    """k-uniform hypergraph SBM: ``m_in`` hyperedges inside each block and ``m_out`` across,
    node sets drawn uniformly; x = block one-hot."""
    import math

    rng = np.random.default_rng(seed)
    block = np.arange(n) % blocks
    smallest = int(np.bincount(block).min())
    if k < 2 or smallest < k or m_in > math.comb(smallest, k) or m_out > math.comb(n, k) // 2:
        raise ValueError(
            f"cannot draw {m_in} distinct {k}-node hyperedges inside blocks of "
            f"{smallest} nodes (and {m_out} across)"
        )
    out = []
    for _ in range(count):
        edges: set[tuple[int, ...]] = set()
        for b in range(blocks):
            members = np.flatnonzero(block == b)
            while len(edges) < (b + 1) * m_in:
                edges.add(tuple(sorted(rng.choice(members, k, replace=False).tolist())))
        while len(edges) < blocks * m_in + m_out:
            e = tuple(sorted(rng.choice(n, k, replace=False).tolist()))
            if len(set(block[list(e)])) > 1:
                edges.add(e)
        x = torch.nn.functional.one_hot(torch.tensor(block), blocks).float()
        out.append(Hypergraph.from_hyperedges(sorted(edges), n, x))
    return out


# ---- meshes -------------------------------------------------------------------------------------


def mesh_hypergraph(vertices, faces) -> Hypergraph:
    """Triangles as 3-node hyperedges, vertex coordinates as node features (unused vertices
    dropped, duplicate faces removed)."""
    v = np.asarray(vertices, dtype=np.float32)
    f = np.asarray(faces, dtype=np.int64)
    if v.ndim != 2 or v.shape[1] != 3 or f.ndim != 2 or f.shape[1] != 3:
        raise ValueError(f"vertices must be (n, 3) and faces (m, 3), got {v.shape}, {f.shape}")
    if f.size and (f.min() < 0 or f.max() >= len(v)):
        raise ValueError(f"faces index vertices outside [0, {len(v)}): "
                         f"[{int(f.min())}, {int(f.max())}]")  # fmt: skip
    if not np.isfinite(v).all():
        raise ValueError("vertices must be finite")
    used = np.unique(f)
    remap = np.full(len(v), -1)
    remap[used] = np.arange(len(used))
    faces = {tuple(sorted(map(int, remap[t]))) for t in f if len(set(t.tolist())) == 3}
    return Hypergraph.from_hyperedges(sorted(faces), len(used), torch.from_numpy(v[used]))


def mesh_family(count: int, seed: int = 0, target_faces: int = 60, noise: float = 0.03):
    """Noisy icospheres, tori and capsules in turn, decimated to about ``target_faces``
    triangles, centred; returns (hypergraphs, family names)."""
    import fast_simplification
    import trimesh

    rng = np.random.default_rng(seed)
    out, names = [], []
    for i in range(count):
        kind = ("icosphere", "torus", "capsule")[i % 3]
        if kind == "icosphere":
            m = trimesh.creation.icosphere(subdivisions=2, radius=rng.uniform(0.8, 1.2))
        elif kind == "torus":
            m = trimesh.creation.torus(rng.uniform(0.8, 1.1), rng.uniform(0.3, 0.45), 24, 12)
        else:
            m = trimesh.creation.capsule(height=rng.uniform(0.8, 1.6), radius=0.5, count=[12, 12])
        v, f = np.asarray(m.vertices), np.asarray(m.faces)
        ratio = 1 - min(1.0, target_faces / len(f))
        v, f = fast_simplification.simplify(v.astype(np.float32), f.astype(np.int64), ratio)
        v = v + rng.normal(0, noise, v.shape)
        v = v - v.mean(0)
        out.append(mesh_hypergraph(v, f))
        names.append(kind)
    return out, names


def pyvista_mesh(name: str = "airplane") -> Hypergraph:
    """A mesh shipped inside the pyvista wheel (``examples/<name>.ply``), read with trimesh."""
    import trimesh

    if name not in PYVISTA_MESHES:
        raise ValueError(f"mesh must be one of {PYVISTA_MESHES}, got {name!r}")
    spec = importlib.util.find_spec("pyvista")
    if spec is None or spec.origin is None:
        raise ValueError('the pyvista meshes need `pip install "icml26-fahnes[meshes]"`')
    path = Path(spec.origin).parent / "examples" / f"{name}.ply"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is not in this pyvista wheel")
    m = trimesh.load(path, process=False, force="mesh")
    return mesh_hypergraph(m.vertices, m.faces)


def split(items: list, seed: int = 0, fractions=(0.64, 0.16)) -> tuple[list, list, list]:
    """Train / validation / test split (SPECTRE's 128 / 32 / 40 of 200 by default)."""
    idx = np.random.default_rng(seed).permutation(len(items))
    a = round(fractions[0] * len(items))
    b = a + round(fractions[1] * len(items))
    return [items[i] for i in idx[:a]], [items[i] for i in idx[a:b]], [items[i] for i in idx[b:]]
