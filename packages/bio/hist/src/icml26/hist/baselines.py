"""Baselines in the same harness as HiST (same inputs, head, loss, trainer):

* :class:`SpotMLP`: a per-spot MLP, no spatial context;
* :class:`KNNAttention`: STFlow-like local attention on the k-nearest-neighbour graph of the
  spots (one resolution, no tokens), the relative offset entering as a learned bias;
* :class:`FullAttention`: a plain transformer over all spots (N x N attention through SDPA),
  the quadratic cost baseline;
* the no-token ablation is ``HiST(HiSTConfig(..., use_tokens=False))`` and the dense-grid model
  is :class:`icml26.hist.model.DenseGridHiST`.
"""

from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from icml26.hist.attention import edge_attention
from icml26.hist.model import SpotModel, check_sizes, register


@dataclass(frozen=True)
class BaselineConfig:
    """Hyperparameters of the baselines."""

    in_features: int
    """Image-feature dimension per spot."""
    num_genes: int
    """Number of genes G predicted per spot."""
    dim: int = 512
    """Hidden width."""
    heads: int | None = None
    """Attention heads; None = dim // 64 (at least 1)."""
    layers: int = 2
    """Hidden layers (MLP) or transformer layers (attention baselines)."""
    k: int = 8
    """Neighbours per spot in the kNN graph (self-loop added)."""
    ff_ratio: float = 4.0
    """FFN hidden width / dim."""
    dropout: float = 0.05
    """Dropout."""

    @property
    def num_heads(self) -> int:
        return self.heads if self.heads is not None else max(1, self.dim // 64)

    def __post_init__(self):
        check_sizes(self, ("in_features", "num_genes", "dim", "layers", "k"))


@register
class SpotMLP(SpotModel):
    """Per-spot MLP: features -> log1p expression, no neighbours."""

    config_class = BaselineConfig

    def __init__(self, config: BaselineConfig):
        super().__init__(config)
        layers, d = [], config.in_features
        for _ in range(config.layers):
            layers += [nn.Linear(d, config.dim), nn.GELU(), nn.Dropout(config.dropout)]
            d = config.dim
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(d, config.num_genes)

    def forward(self, features: torch.Tensor, coords: torch.Tensor) -> torch.Tensor:
        features, _ = self.check_inputs(features, coords)
        return self.head(self.body(self.normalize(features)))


class _Block(nn.Module):
    def __init__(self, cfg: BaselineConfig, offset_bias: bool):
        super().__init__()
        self.heads, dim = cfg.num_heads, cfg.dim
        self.drop = cfg.dropout
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        hidden = int(dim * cfg.ff_ratio)
        self.ffn = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))
        self.bias = (
            nn.Sequential(nn.Linear(2, 32), nn.GELU(), nn.Linear(32, self.heads))
            if offset_bias
            else None
        )

    def forward(self, x, graph=None):
        q, k, v = self.qkv(self.norm1(x)).view(len(x), 3, self.heads, -1).unbind(1)
        drop = self.drop if self.training else 0.0
        if graph is None:  # all pairs
            a = F.scaled_dot_product_attention(
                q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), dropout_p=drop
            ).transpose(0, 1)
        else:
            src, dst, offset = graph
            a = edge_attention(q, k, v, src, dst, self.bias(offset), drop, self.training)
        x = x + self.out(a.flatten(1))
        return x + self.ffn(self.norm2(x))


def knn_graph(coords: torch.Tensor, k: int):
    """(src, dst, offset (E, 2) float) of the k-nearest-neighbour graph plus self-loops."""
    from scipy.spatial import cKDTree

    pts = coords.detach().cpu().double().numpy()
    kk = min(k + 1, len(pts))
    _, nbr = cKDTree(pts).query(pts, k=kk)
    nbr = torch.as_tensor(nbr, device=coords.device).view(len(pts), kk)
    dst = torch.arange(len(pts), device=coords.device).repeat_interleave(kk)
    src = nbr.flatten()
    return src, dst, (coords[dst] - coords[src]).float()


class _AttentionStack(SpotModel):
    """Embed -> attention blocks over ``graph(coords)`` (None: all pairs) -> head."""

    config_class = BaselineConfig
    offset_bias: ClassVar[bool] = False

    def __init__(self, config: BaselineConfig):
        super().__init__(config)
        self.embed = nn.Sequential(
            nn.Linear(config.in_features, config.dim), nn.Dropout(config.dropout)
        )
        self.blocks = nn.ModuleList(_Block(config, self.offset_bias) for _ in range(config.layers))
        self.out_norm = nn.LayerNorm(config.dim)
        self.head = nn.Linear(config.dim, config.num_genes)

    def graph(self, coords: torch.Tensor):
        return None

    def forward(self, features: torch.Tensor, coords: torch.Tensor) -> torch.Tensor:
        features, coords = self.check_inputs(features, coords)
        graph = self.graph(coords)
        x = self.embed(self.normalize(features))
        for blk in self.blocks:
            x = blk(x, graph)
        return self.head(self.out_norm(x))


@register
class KNNAttention(_AttentionStack):
    """STFlow-like local attention: each spot attends to its k nearest spots (and itself)."""

    offset_bias = True

    def graph(self, coords: torch.Tensor):
        return knn_graph(coords, self.config.k)


@register
class FullAttention(_AttentionStack):
    """A plain transformer over every spot of the slide (N x N attention, no positions)."""
