"""Bad input at the public API ends in a ValueError / TypeError that names the argument."""

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from icml26.fahnes import (
    FahnesConfig,
    FahnesModel,
    FitConfig,
    FlatConfig,
    FlatModel,
    Hypergraph,
    fit,
)
from icml26.fahnes.data import mesh_hypergraph, planar_graphs
from icml26.fahnes.model import node_counts
from icml26.testing import assert_rejects

RETURNED = {
    "Coarsening": "coarsen returns it",
    "Expansion": "expand returns it",
}
"""Public names a user receives rather than builds (records the package returns): no input."""

SMALL = FahnesConfig(hidden=8, layers=1, diffusion_steps=2, sequences=1)


@pytest.fixture(scope="module")
def trained():
    torch.manual_seed(0)
    model, ex = FahnesModel.from_data(planar_graphs(4, 12, seed=0), SMALL, seed=0)
    fit(model, ex, FitConfig(steps=2, batch=2, eval_every=0), progress=False)
    return model


def test_feature_rows_must_match_nodes_and_hyperedges():
    edges = [[0, 1], [1, 2]]
    assert_rejects(lambda: Hypergraph.from_hyperedges(edges, 3, x=torch.zeros(4, 2)), "x")
    assert_rejects(lambda: Hypergraph.from_hyperedges(edges, 3, edge_x=torch.zeros(3, 1)), "edge_x")


def test_graph_edge_attr_rows_must_match_edge_index():
    ei = torch.tensor([[0, 1], [1, 2]])
    data = Data(edge_index=ei, num_nodes=3, edge_attr=torch.zeros(5, 1))
    assert_rejects(lambda: Hypergraph.from_data(data), "edge_attr")


def test_mesh_faces_outside_the_vertices_are_named():
    v = np.zeros((4, 3))
    assert_rejects(lambda: mesh_hypergraph(v, [[0, 1, 7]]), "faces")
    assert_rejects(lambda: mesh_hypergraph(np.full((3, 3), np.nan), [[0, 1, 2]]), "vertices")


@pytest.mark.parametrize("bad", ["10", 2.5, True, [], [3, "4"]])
def test_n_nodes_of_the_wrong_type_is_a_type_error(trained, bad):
    with pytest.raises(TypeError, match="n_nodes"):
        trained.sample_hypergraphs(bad, 1)


def test_n_nodes_far_beyond_training_warns_and_out_of_range_is_refused(trained):
    # node_counts is what sample_hypergraphs reads its sizes through (sampling 500 nodes from a
    # model trained on 12-node graphs would take long here; the warning comes first)
    rng = np.random.default_rng(0)
    with pytest.warns(UserWarning, match="extrapolates"):
        assert node_counts(500, 1, trained.stats.sizes, rng) == [500]
    assert_rejects(lambda: trained.sample_hypergraphs(0, 1), "n_nodes")
    assert_rejects(lambda: trained.sample_hypergraphs(5, 0), "num_samples")


def test_flat_model_checks_n_nodes_the_same_way():
    flat, _ = FlatModel.from_data(planar_graphs(2, 8, seed=0), FlatConfig(hidden=8, layers=1))
    with pytest.raises(TypeError, match="n_nodes"):
        flat.sample_hypergraphs("10", 1)
    assert_rejects(lambda: flat.sample_hypergraphs(1, 1), "n_nodes")


from icml26.fahnes import coarsen, expand, targets  # noqa: E402


def test_coarsening_names_a_bad_graph_reduction_level_or_counts():
    hg = planar_graphs(1, 12, seed=0)[0]
    assert_rejects(lambda: coarsen("graph"), "hg")
    assert_rejects(lambda: coarsen(hg, 0, reduction=(0.6, 0.2)), "reduction")
    seq = coarsen(hg, 0)
    assert_rejects(lambda: targets(seq, 99), "level")
    ones = torch.ones(hg.num_edges, dtype=torch.long)
    assert_rejects(lambda: expand(hg, torch.ones(3, dtype=torch.long), ones[:2]), "counts")
    assert_rejects(lambda: expand(hg, torch.zeros(hg.num_nodes, dtype=torch.long), ones), "counts")


def test_configs_name_sizes_that_build_no_network(tmp_path):
    from icml26.fahnes import FahnesConfig, FahnesModel, FitConfig, FlatConfig

    assert_rejects(lambda: FahnesConfig(hidden=0), "hidden")
    assert_rejects(lambda: FahnesConfig(reduction=(0.5, 0.1)), "reduction")
    assert_rejects(lambda: FlatConfig(layers=-2), "layers")
    assert_rejects(lambda: FitConfig(steps=-1), "steps")
    assert_rejects(lambda: FitConfig(batch=0), "batch")
    assert_rejects(lambda: FitConfig(lr=0.0), "lr")
    folder = tmp_path
    (folder / "config.json").write_text("{not json")  # a garbled config
    (folder / "model.safetensors").write_bytes(b"")
    assert_rejects(lambda: FahnesModel.from_pretrained(folder), "config.json")


def test_sample_names_a_garbled_model_config_in_one_line(tmp_path, capsys):
    from icml26.fahnes.cli import main

    (tmp_path / "model").mkdir()
    folder = tmp_path / "model"
    (folder / "config.json").write_text("{not json")  # a garbled config
    args = ["sample", str(folder), str(tmp_path / "s.json")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "config.json" in err[0]


from hypothesis import given, settings  # noqa: E402

from icml26.testing.strategies import empty, non_finite, wrong_rank  # noqa: E402


def _bad(shape):
    # integer and boolean features are accepted on purpose (one-hot or count features)
    return non_finite(shape) | wrong_rank(shape) | empty(shape)


@settings(max_examples=30, deadline=None)
@given(x=_bad((3, None)), edge_x=_bad((2, None)))
def test_node_and_hyperedge_features_of_every_bad_kind_are_named(x, edge_x):
    """NaN / inf, a wrong rank, or no rows; complex values below."""
    edges = [[0, 1], [1, 2]]
    assert_rejects(lambda: Hypergraph.from_hyperedges(edges, 3, x=x), "x")
    assert_rejects(lambda: Hypergraph.from_hyperedges(edges, 3, edge_x=edge_x), "edge_x")


def test_complex_features_are_refused():
    edges = [[0, 1], [1, 2]]
    x = torch.zeros(3, 2, dtype=torch.complex64)
    assert_rejects(lambda: Hypergraph.from_hyperedges(edges, 3, x=x), "x")
