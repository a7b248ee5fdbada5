"""Coarsening and expansion are exact inverses given the recorded counts and kept memberships."""

import numpy as np
import pytest
import torch

from icml26.fahnes import Hypergraph, coarsen, expand, targets
from icml26.fahnes.coarsening import budget_mean, refined
from icml26.fahnes.data import hypergraph_sbm, mesh_family, planar_graphs, sbm_graphs, tree_graphs


def _cases():
    return {
        "planar": planar_graphs(1, 40, seed=3)[0],
        "tree": tree_graphs(1, 30, seed=1)[0],
        "sbm": sbm_graphs(1, seed=2, n_range=(8, 12))[0],
        "hypergraph-sbm": hypergraph_sbm(1, n=24, k=3, seed=4, m_in=12, m_out=5)[0],
        "mesh": mesh_family(2, seed=0, target_faces=40)[0][1],
        "mixed sizes": Hypergraph.from_hyperedges(
            [[0, 1], [1, 2, 3], [3, 4, 5, 6], [6], [0, 6], [2, 5]],
            8,
            torch.randn(8, 3),
            torch.randn(6, 2),
        ),
    }


@pytest.mark.parametrize("name", list(_cases()))
def test_coarsen_then_expand_reconstructs_every_level(name):
    hg = _cases()[name]
    seq = coarsen(hg, np.random.default_rng(0))
    assert seq.levels[-1].num_nodes == 1 and seq.depth >= 1
    for level in range(seq.depth + 1):
        tg = targets(seq, level)
        back = refined(tg.expansion, tg.keep, tg.node_budget, tg.edge_budget, tg.x, tg.edge_x)
        fine = seq.levels[level]
        assert torch.equal(back.incidence, fine.incidence)
        assert torch.equal(back.node_budget, fine.node_budget)
        assert torch.equal(back.edge_budget, fine.edge_budget)
    # level 0 is the input, renumbered by the recorded permutations
    lv0 = seq.levels[0]
    assert torch.equal(lv0.x, hg.x[seq.node_perm]) and torch.equal(
        lv0.edge_x, hg.edge_x[seq.edge_perm]
    )
    inv = torch.empty_like(seq.node_perm).scatter_(0, seq.node_perm, torch.arange(hg.num_nodes))
    mapped = sorted(sorted(int(inv[v]) for v in e) for e in hg.hyperedges())
    assert mapped == sorted(sorted(e) for e in lv0.hyperedges())


@pytest.mark.parametrize("name", ["planar", "hypergraph-sbm", "mixed sizes"])
def test_budgets_are_conserved_and_features_are_budget_weighted_means(name):
    hg = _cases()[name]
    seq = coarsen(hg, 5)
    for level in range(seq.depth):
        fine, coarse = seq.levels[level], seq.levels[level + 1]
        assert int(coarse.node_budget.sum()) == hg.num_nodes
        assert int(coarse.edge_budget.sum()) == hg.num_edges
        want = budget_mean(fine.x, fine.node_budget, seq.node_parent[level], coarse.num_nodes)
        torch.testing.assert_close(coarse.x, want, rtol=1e-5, atol=1e-6)
    # the root holds the plain mean of the input's features (every budget 1 at the start)
    torch.testing.assert_close(seq.levels[-1].x[0], hg.x.mean(0), rtol=1e-5, atol=1e-5)
    # merged hyperedges keep distinct node sets at every level
    for lv in seq.levels:
        sets = [tuple(e) for e in lv.hyperedges()]
        assert len(sets) == len(set(sets))


def test_random_reduction_fractions_give_different_sequences():
    hg = planar_graphs(1, 48, seed=0)[0]
    depths = {coarsen(hg, s).depth for s in range(6)}
    assert len(depths) > 1


def test_expansion_lays_children_out_by_parent_with_all_candidates():
    hg = Hypergraph.from_hyperedges([[0, 1]], 2, torch.tensor([[0.0], [2.0]]))
    coarse = Hypergraph(
        torch.tensor([[0], [0]]),
        torch.tensor([[1.0]]),
        torch.zeros(1, 0),
        torch.tensor([2]),
        torch.tensor([1]),
    )
    exp = expand(coarse, torch.tensor([2]), torch.tensor([1]))
    assert exp.num_nodes == 2 and exp.candidates.tolist() == [[0, 1], [0, 0]]
    torch.testing.assert_close(exp.node_share, torch.tensor([1.0, 1.0]))
    torch.testing.assert_close(exp.x, torch.tensor([[1.0], [1.0]]))  # inherited, blocky
    assert hg.num_edges == 1
    with pytest.raises(ValueError, match="budget"):
        expand(coarse, torch.tensor([3]), torch.tensor([1]))


def test_malformed_hypergraphs_are_clear_errors():
    with pytest.raises(ValueError, match="hyperedge 1 is empty"):
        Hypergraph.from_hyperedges([[0, 1], []], 3)
    with pytest.raises(ValueError, match="node index 5 outside"):
        Hypergraph.from_hyperedges([[0, 5]], 3)
    with pytest.raises(ValueError, match="repeats a node"):
        Hypergraph.from_hyperedges([[0, 0]], 3)
    with pytest.raises(ValueError, match="same nodes"):
        Hypergraph.from_hyperedges([[0, 1], [1, 0]], 3)
    with pytest.raises(ValueError, match="num_nodes"):
        Hypergraph.from_hyperedges([[0, 1]], 0)
    with pytest.raises(ValueError, match="finite"):
        Hypergraph.from_hyperedges([[0, 1]], 2, torch.tensor([[0.0], [float("nan")]]))
    with pytest.raises(ValueError, match="reduction"):
        coarsen(Hypergraph.from_hyperedges([[0, 1]], 2), 0, reduction=(0.2, 0.9))
    from torch_geometric.data import Data

    with pytest.raises(ValueError, match="self-loop"):
        Hypergraph.from_data(Data(edge_index=torch.tensor([[0, 1], [0, 2]]), num_nodes=3))


def test_pyg_round_trip_of_a_graph():
    from torch_geometric.data import Data

    ei = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    d = Data(x=torch.randn(4, 2), edge_index=ei, edge_attr=torch.arange(6.0)[:, None])
    hg = Hypergraph.from_data(d)
    assert hg.num_edges == 3 and hg.edge_x[:, 0].tolist() == [0.0, 2.0, 4.0]
    back = hg.to_data()
    assert sorted(map(tuple, back.edge_index.t().tolist())) == sorted(map(tuple, ei.t().tolist()))
    het = hg.to_hetero()
    assert het["node", "in", "hyperedge"].edge_index.shape == (2, 6)
