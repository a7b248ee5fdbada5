"""The metrics score known cases the way the definitions say."""

import importlib.util

import numpy as np
import pytest
import torch

from icml26.fahnes import Hypergraph
from icml26.fahnes.data import mesh_family, mesh_hypergraph, planar_graphs, pyvista_mesh
from icml26.fahnes.metrics import (
    crossing_free,
    degree_mmd,
    euler_characteristic,
    graph_metrics,
    manifold,
    to_networkx,
    vun,
)


def test_planar_data_scores_as_data():
    gs = planar_graphs(12, 24, seed=0)
    assert all(crossing_free(h) for h in gs)  # a Delaunay graph at its own points
    nx_gs = [to_networkx(h) for h in gs]
    assert degree_mmd(nx_gs, nx_gs) < 1e-12
    v = vun(nx_gs[:6], nx_gs[6:])
    assert v["valid"] == 1.0 and v["unique"] == 1.0 and v["novel"] == 1.0
    assert vun(nx_gs[:3], nx_gs[:3])["novel"] == 0.0
    m = graph_metrics(gs[:6], gs[6:9], gs[9:], [24] * 6)
    assert m["node-count error"] == 0 and m["crossing-free"] == 1.0
    assert 0 <= m["V.U.N."] <= 1 and np.isfinite(m["mean ratio"])


def test_crossings_and_invalid_graphs_are_caught():
    # a square with both diagonals drawn straight: the diagonals cross
    x = torch.tensor([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    k4 = Hypergraph.from_hyperedges([[0, 1], [1, 2], [2, 3], [0, 3], [0, 2], [1, 3]], 4, x)
    assert not crossing_free(k4)
    k5 = Hypergraph.from_hyperedges([[a, b] for a in range(5) for b in range(a + 1, 5)], 5)
    assert vun([to_networkx(k5)], [])["valid"] == 0.0  # K5 is not planar


def test_mesh_validity_and_euler_characteristic():
    meshes, names = mesh_family(3, seed=0, target_faces=60)
    for h, name in zip(meshes, names, strict=True):
        assert manifold(h), name
        assert euler_characteristic(h) == (0 if name == "torus" else 2), name
    open_mesh = mesh_hypergraph(np.eye(3), [[0, 1, 2]])
    assert not manifold(open_mesh) and euler_characteristic(open_mesh) == 1


@pytest.mark.skipif(importlib.util.find_spec("pyvista") is None, reason="the meshes extra")
def test_the_pyvista_airplane_is_read_from_the_wheel():
    plane = pyvista_mesh("airplane")
    assert plane.num_nodes == 1335 and plane.num_edges == 2452 and plane.x.shape == (1335, 3)
