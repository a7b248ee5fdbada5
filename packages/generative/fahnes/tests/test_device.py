"""Devices: FAHNES 0.1 samples on the CPU (its sparse coarsening runs in numpy and small torch
ops); asked for CUDA it refuses by name instead of silently running elsewhere."""

import pytest
import torch

from icml26.fahnes.data import planar_graphs
from icml26.fahnes.model import FahnesConfig, FahnesModel
from icml26.fahnes.study import DemoConfig, experiment


def test_fahnes_samples_where_it_runs(device):
    if device != "cpu":
        with pytest.raises(ValueError, match="CPU only"):
            experiment(DemoConfig(quick=True, device=device))
        return
    graphs = planar_graphs(4, 12, seed=0)
    model, _ = FahnesModel.from_data(graphs, FahnesConfig(sequences=1), seed=0)
    out = model.sample_hypergraphs(12, 2, seed=1)
    assert [hg.num_nodes for hg in out] == [12, 12]
    assert all(torch.isfinite(torch.as_tensor(hg.x)).all() for hg in out)
