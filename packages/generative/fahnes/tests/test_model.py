"""FAHNES samples exactly n nodes, stays sparse as n grows, saves and loads, trains under DDP."""

import numpy as np
import pytest
import torch

from icml26.fahnes import FahnesConfig, FahnesModel, FitConfig, FlatModel, fit
from icml26.fahnes.bench import LargestTensor
from icml26.fahnes.data import hypergraph_sbm, planar_graphs

SMALL = FahnesConfig(hidden=16, layers=2, diffusion_steps=3, sequences=2)


@pytest.fixture(scope="module")
def trained():
    torch.manual_seed(0)
    model, ex = FahnesModel.from_data(planar_graphs(6, 20, seed=0), SMALL, seed=0)
    fit(model, ex, FitConfig(steps=15, batch=4, eval_every=0), progress=False)
    return model


@pytest.mark.parametrize("n", [1, 2, 7, 20, 45])
def test_sampled_graphs_have_exactly_the_requested_node_count(trained, n):
    hgs = trained.sample_hypergraphs(n, 2, seed=n)
    assert [h.num_nodes for h in hgs] == [n, n]
    for h in hgs:
        h.check()  # valid incidences, finite features
        assert h.x.shape == (n, 2)
        assert all(len(e) == 2 for e in h.hyperedges())  # graphs: 2-node hyperedges only
    data = trained.sample([5, 9], seed=1)
    assert [d.num_nodes for d in data] == [5, 9] and data[0].x.shape == (5, 2)


def test_hypergraphs_with_features_of_both_kinds():
    hgs = hypergraph_sbm(4, n=18, k=3, seed=0, m_in=8, m_out=3)
    hgs = [h.with_features(h.x, torch.randn(h.num_edges, 2)) for h in hgs]
    model, ex = FahnesModel.from_data(hgs, SMALL, seed=0)
    out = fit(model, ex, FitConfig(steps=5, batch=4, eval_every=0), progress=False)
    assert np.isfinite(out["last_loss"])
    for h in model.sample_hypergraphs(18, 2, seed=0):
        assert h.num_nodes == 18 and h.edge_x.shape[1] == 2
        assert all(len(e) == 3 for e in h.hyperedges())


def test_the_hierarchical_sampler_never_builds_a_dense_block(trained):
    """The largest tensor grows ~linearly with n for FAHNES (x4 nodes: well under x16) and
    quadratically for the flat model, which shows the check can fail."""

    def largest(model, n):
        with LargestTensor() as probe:
            model.sample_hypergraphs(n, 1, seed=0)
        return probe.largest

    ratio = largest(trained, 400) / largest(trained, 100)
    assert ratio < 8, ratio
    flat, _ = FlatModel.from_data(planar_graphs(4, 20, seed=0))
    flat_ratio = largest(flat, 120) / largest(flat, 30)
    assert flat_ratio > 12, flat_ratio


def test_save_and_load_give_the_same_samples(trained, tmp_path):
    path = trained.save_pretrained(tmp_path / "m")
    again = FahnesModel.from_pretrained(path)
    a = trained.sample_hypergraphs(15, 2, seed=4)
    b = again.sample_hypergraphs(15, 2, seed=4)
    for x, y in zip(a, b, strict=True):
        assert torch.equal(x.incidence, y.incidence) and torch.equal(x.x, y.x)
    with pytest.raises(FileNotFoundError):
        FahnesModel.from_pretrained(tmp_path / "nothing")


def test_training_is_seeded_and_resumes_from_its_checkpoint(tmp_path):
    graphs = planar_graphs(4, 16, seed=1)

    def run(steps, ckpt=None, resume=False):
        torch.manual_seed(0)
        model, ex = FahnesModel.from_data(graphs, SMALL, seed=0)
        cfg = FitConfig(steps=steps, batch=3, eval_every=0, save_every=4)
        return model, fit(model, ex, cfg, checkpoint=ckpt, resume=resume, progress=False)

    _, a = run(8)
    _, b = run(8)
    assert a["last_loss"] == b["last_loss"]  # one seed, one result
    run(4, tmp_path / "ck")
    _, c = run(8, tmp_path / "ck", resume=True)
    assert np.isfinite(c["last_loss"])
    import json

    assert json.loads((tmp_path / "ck" / "state.json").read_text())["step"] == 8


def test_bad_sampling_requests_are_clear_errors(trained):
    with pytest.raises(ValueError, match="n_nodes"):
        trained.sample_hypergraphs(0)
    with pytest.raises(ValueError, match="num_samples"):
        trained.sample_hypergraphs(5, 0)
    with pytest.raises(ValueError, match="feature sizes"):
        FahnesModel.from_data(
            [planar_graphs(1, 10)[0], hypergraph_sbm(1, n=12, k=3, m_in=3, m_out=1)[0]]
        )
    with pytest.raises(ValueError, match="distinct"):
        hypergraph_sbm(1, n=9, k=3, m_in=3)


def _fit_on_rank(steps):
    import torch.distributed as dist

    torch.manual_seed(0)
    model, ex = FahnesModel.from_data(planar_graphs(4, 16, seed=0), SMALL, seed=0)
    out = fit(model, ex, FitConfig(steps=steps, batch=2, eval_every=0, seed=0), progress=False)
    return dist.get_rank(), {k: v.detach().clone() for k, v in model.state_dict().items()}, out


def test_two_gloo_ranks_keep_one_model():
    from icml26.testing import run_distributed

    (r0, w0, o0), (r1, w1, o1) = run_distributed(_fit_on_rank, 3, world_size=2)
    assert {r0, r1} == {0, 1} and o0["last_loss"] != o1["last_loss"]  # own batches per rank
    for k, v in w0.items():
        torch.testing.assert_close(w1[k], v, rtol=0, atol=0, msg=k)
