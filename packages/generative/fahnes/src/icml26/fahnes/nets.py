"""The denoiser: a sparse message-passing network (PyG ``MessagePassing``) over elements (nodes
and hyperedges of the star expansion, or the nodes of the flat baseline) and typed links with
their own states (candidate incidences carrying their noisy label, sibling links between children
of one parent).

The hierarchical line of work (Bergmeister et al. 2024; HYGENE) uses a larger sparse GNN
conditioned on spectral embeddings; here a smaller edge-updating MPNN with a per-graph global
state (``hidden`` wide, ``layers`` deep) is used at this scale, without spectral inputs.
"""

from __future__ import annotations

import torch
from torch import nn
from torch_geometric.nn import MessagePassing

__all__ = ["Denoiser"]


def mlp(i: int, h: int, o: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(i, h), nn.SiLU(), nn.Linear(h, o))


class EdgeMPNNLayer(MessagePassing):
    """h_i <- h_i + U[h_i, mean_j M[h_i, h_j, e_ij], g]; e_ij <- e_ij + E[h_i, h_j, e_ij]."""

    def __init__(self, hidden: int):
        super().__init__(aggr="mean")
        self.msg = mlp(3 * hidden, hidden, hidden)
        self.upd = mlp(3 * hidden, hidden, hidden)
        self.edge = mlp(3 * hidden, hidden, hidden)
        self.glob = mlp(2 * hidden, hidden, hidden)
        self.norm_h, self.norm_e = nn.LayerNorm(hidden), nn.LayerNorm(hidden)

    def forward(self, h, edge_index, e, g, batch):
        m = self.propagate(edge_index, h=h, e=e)
        h = self.norm_h(h + self.upd(torch.cat([h, m, g[batch]], -1)))
        src, dst = edge_index
        e = self.norm_e(e + self.edge(torch.cat([h[src], h[dst], e], -1)))
        g = g + self.glob(torch.cat([g, _mean_by(h, batch, g.shape[0])], -1))
        return h, e, g

    def message(self, h_i, h_j, e):
        return self.msg(torch.cat([h_i, h_j, e], -1))

    def aggregate(self, inputs, index, ptr=None, dim_size=None):
        # mean over incoming links with index_add_ (PyG's scatter broadcasts the index and is
        # several times slower on CPU)
        return _mean_by(inputs, index, dim_size)


def _mean_by(x: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    total = torch.zeros(size, x.shape[1], dtype=x.dtype, device=x.device).index_add_(0, index, x)
    count = torch.zeros(size, dtype=x.dtype, device=x.device).index_add_(
        0, index, torch.ones_like(index, dtype=x.dtype)
    )
    return total / count.clamp_min(1)[:, None]


class Denoiser(nn.Module):
    """(element inputs (N, in), links (2, E) with inputs (E, in_e), batch (N,)) ->
    element states (N, hidden), link states (E, hidden)."""

    def __init__(self, in_dim: int, edge_in_dim: int, hidden: int = 64, layers: int = 4):
        super().__init__()
        self.inp = mlp(in_dim, hidden, hidden)
        self.edge_inp = mlp(edge_in_dim, hidden, hidden)
        self.layers = nn.ModuleList(EdgeMPNNLayer(hidden) for _ in range(layers))
        self.hidden = hidden

    def forward(self, x, edge_index, edge_attr, batch, num_graphs: int):
        h, e = self.inp(x), self.edge_inp(edge_attr)
        g = torch.zeros(num_graphs, self.hidden, device=x.device, dtype=h.dtype)
        for layer in self.layers:
            h, e, g = layer(h, edge_index, e, g, batch)
        return h, e
