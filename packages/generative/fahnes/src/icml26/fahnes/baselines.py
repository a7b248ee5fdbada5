"""The flat one-shot baseline: dense denoising diffusion of the whole adjacency and the node
features at once (DiGress-style marginal D3PM on every node pair, DDPM on the features), with the
same message-passing denoiser FAHNES uses, on the complete graph over the n nodes.

This is what hierarchy is compared against: same network, width, depth, diffusion steps,
optimiser, batch and number of training steps, but every one of the n (n - 1) / 2 pairs is a
label and every denoising step passes messages over all n (n - 1) ordered pairs (memory and
time grow with n^2). A hypergraph of k-node hyperedges is learned through its clique expansion
and read back as its k-cliques (triangles of a mesh).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from itertools import combinations
from pathlib import Path

import networkx as nx
import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from torch import nn

from icml26.fahnes.diffusion import Schedule
from icml26.fahnes.hypergraph import Hypergraph
from icml26.fahnes.model import check_counts, draw_edge_budget, node_counts, save_folder
from icml26.fahnes.nets import Denoiser, mlp
from icml26.testing.checks import integer

__all__ = ["FlatConfig", "FlatModel", "erdos_renyi_like"]


def erdos_renyi_like(
    train: list[Hypergraph], count: int, n: int, seed: int = 0
) -> list[Hypergraph]:
    """The trivial generator every graph generator must beat: ``count`` uniform G(n, m) graphs,
    m drawn from the training graphs' edge counts, node features drawn uniformly in the training
    features' bounding box (for coordinates: uniform points, no geometry learned)."""
    if not train:
        raise ValueError("train must hold at least one training graph, got none")
    integer("count", count, low=1)
    integer("n", n, low=2)
    rng = np.random.default_rng(seed)
    pairs = np.array(list(combinations(range(n), 2)))
    x = train[0].x
    lo = hi = None
    if x is not None:
        lo = torch.stack([h.x.min(0).values for h in train]).min(0).values.numpy()
        hi = torch.stack([h.x.max(0).values for h in train]).max(0).values.numpy()
    out = []
    for _ in range(count):
        m = min(int(train[rng.integers(len(train))].num_edges), len(pairs))
        edges = pairs[rng.choice(len(pairs), size=m, replace=False)]
        feats = None
        if lo is not None:
            feats = torch.tensor(rng.uniform(lo, hi, size=(n, len(lo))), dtype=x.dtype)
        out.append(Hypergraph.from_hyperedges(sorted(map(tuple, edges.tolist())), n, feats))
    return out


@dataclass(frozen=True)
class FlatConfig:
    """The flat baseline's denoiser (defaults: FAHNES's)."""

    hidden: int = 32
    layers: int = 3
    diffusion_steps: int = 10

    def __post_init__(self) -> None:
        check_counts(self, ("hidden", "layers", "diffusion_steps"))


@dataclass
class _FlatStats:
    node_dim: int
    mean_x: list[float]
    std_x: list[float]
    edge_prior: float
    edge_size: int
    sizes: list[list[int]]


class FlatModel(nn.Module):
    """Dense one-shot diffusion over (adjacency, node features) of a given node count."""

    def __init__(self, cfg: FlatConfig, stats: _FlatStats):
        super().__init__()
        self.cfg, self.stats = cfg, stats
        self.schedule = Schedule(cfg.diffusion_steps)
        d = stats.node_dim
        self.net = Denoiser(5 + d, 1, cfg.hidden, cfg.layers)
        self.edge_head = mlp(2 * cfg.hidden, cfg.hidden, 1)
        self.feat_head = mlp(cfg.hidden, cfg.hidden, max(d, 1))

    @classmethod
    def from_data(cls, hypergraphs: list[Hypergraph], cfg: FlatConfig | None = None):
        cfg = cfg or FlatConfig()
        if not hypergraphs:
            raise ValueError("need at least one training hypergraph")
        ks = {int(s) for h in hypergraphs for s in h.edge_sizes.tolist()}
        if len(ks) != 1:
            raise ValueError(
                f"the flat baseline needs k-uniform hypergraphs, got sizes {sorted(ks)}"
            )
        allx = torch.cat([h.x for h in hypergraphs])
        d = allx.shape[1]
        examples = [_flat_example(h) for h in hypergraphs]
        dens = torch.cat([e["adj"] for e in examples]).float().mean()
        stats = _FlatStats(
            d,
            allx.mean(0).tolist(),
            allx.std(0).clamp_min(1e-6).tolist(),
            float(dens.clamp(0.02, 0.98)),
            ks.pop(),
            [[e["n"], int(e["adj"].sum())] for e in examples],
        )
        model = cls(cfg, stats)
        for e in examples:
            e["x0"] = (e["x"] - torch.tensor(stats.mean_x)) / torch.tensor(stats.std_x)
        return model, examples

    def _forward(self, n_list, xt_feat, lab, t, m_list):
        """One denoiser pass on a batch of complete graphs: (pair logits (P,), x_0 (N, d))."""
        pairs, links, batch = _complete(n_list)
        T = self.schedule.T
        te = t.float()[batch] / T
        logn = torch.tensor([math.log1p(n) / 8 for n in n_list])[batch]
        # the edge count, as FAHNES is given its hyperedge budget
        logm = torch.tensor([math.log1p(m) / 8 for m in m_list])[batch]
        x = torch.cat(
            [
                te[:, None],
                torch.sin(math.pi * te)[:, None],
                torch.cos(math.pi * te)[:, None],
                logn[:, None],
                logm[:, None],
                xt_feat,
            ],
            1,
        )
        attr = torch.cat([lab, lab]).float()[:, None]
        h, e = self.net(x, links, attr, batch, len(n_list))
        P = pairs.shape[1]
        logit = self.edge_head(torch.cat([e[:P], e[P:]], -1)).squeeze(-1)
        return logit, self.feat_head(h)[:, : self.stats.node_dim]

    def forward(self, examples: list[dict], gen: torch.Generator | None = None) -> dict:
        """The training loss (what DDP wraps)."""
        return self.loss(examples, gen)

    def loss(self, examples: list[dict], gen: torch.Generator | None = None) -> dict:
        n_list = [e["n"] for e in examples]
        adj = torch.cat([e["adj"] for e in examples])
        x0 = torch.cat([e["x0"] for e in examples])
        B, T = len(examples), self.schedule.T
        t = torch.randint(1, T + 1, (B,), generator=gen)
        pair_graph = torch.repeat_interleave(
            torch.arange(B), torch.tensor([n * (n - 1) // 2 for n in n_list])
        )
        node_graph = torch.repeat_interleave(torch.arange(B), torch.tensor(n_list))
        lab = self.schedule.noisy_labels(adj, t[pair_graph], self.stats.edge_prior, gen)
        xt = self.schedule.noisy_features(x0, t[node_graph], gen)
        m_list = [int(e["adj"].sum()) for e in examples]
        logit, x_hat = self._forward(n_list, xt, lab, t, m_list)
        l_edge = F.binary_cross_entropy_with_logits(logit, adj.float())
        l_feat = F.mse_loss(x_hat, x0) if x0.numel() else logit.sum() * 0
        return {"loss": l_edge + l_feat, "edges": l_edge.detach(), "features": l_feat.detach()}

    @torch.no_grad()
    def sample_hypergraphs(
        self, n_nodes: int | list[int] | None = None, num_samples: int = 1, seed: int = 0, **_
    ) -> list[Hypergraph]:
        """Sample ``num_samples`` hypergraphs of ``n_nodes`` nodes (None: training sizes), each
        told the edge count of a training graph of its size, as FAHNES is."""
        gen = torch.Generator().manual_seed(seed)
        rng = np.random.default_rng(seed)
        ns = node_counts(n_nodes, num_samples, self.stats.sizes, rng, minimum=2)
        ms = [draw_edge_budget(self.stats.sizes, n, rng) for n in ns]
        was = self.training
        self.eval()
        P = sum(n * (n - 1) // 2 for n in ns)
        pi = self.stats.edge_prior
        lab = torch.rand(P, generator=gen) < pi
        x = torch.randn(sum(ns), self.stats.node_dim, generator=gen)
        B = len(ns)
        pair_graph = torch.repeat_interleave(
            torch.arange(B), torch.tensor([n * (n - 1) // 2 for n in ns])
        )
        node_graph = torch.repeat_interleave(torch.arange(B), torch.tensor(ns))
        for step in range(self.schedule.T, 0, -1):
            t = torch.full((B,), step)
            logit, x_hat = self._forward(ns, x, lab, t, ms)
            lab = self.schedule.label_step(lab, torch.sigmoid(logit), t[pair_graph], pi, gen)
            x = self.schedule.feature_step(x, x_hat, t[node_graph], gen)
        self.train(was)
        x = x * torch.tensor(self.stats.std_x) + torch.tensor(self.stats.mean_x)
        out, po, no = [], 0, 0
        for n in ns:
            iu = torch.triu_indices(n, n, 1)
            k = n * (n - 1) // 2
            edges = iu[:, lab[po : po + k]].t().tolist()
            out.append(_from_cliques(edges, n, x[no : no + n], self.stats.edge_size))
            po, no = po + k, no + n
        return out

    def save_pretrained(self, path: str | Path) -> Path:
        """``config.json`` and ``model.safetensors``, swapped into place when complete."""
        meta = json.dumps({"config": asdict(self.cfg), "stats": asdict(self.stats)})
        return save_folder(path, {"model.safetensors": self.state_dict(), "config.json": meta})

    @classmethod
    def from_pretrained(cls, path: str | Path) -> FlatModel:
        path = Path(path)
        if not (path / "config.json").is_file() or not (path / "model.safetensors").is_file():
            raise FileNotFoundError(f"{path} needs config.json and model.safetensors")
        meta = json.loads((path / "config.json").read_text())
        model = cls(FlatConfig(**meta["config"]), _FlatStats(**meta["stats"]))
        model.load_state_dict(load_file(path / "model.safetensors"))
        return model


def _flat_example(h: Hypergraph) -> dict:
    n = h.num_nodes
    a = torch.zeros(n, n, dtype=torch.bool)
    for e in h.hyperedges():
        for u, v in combinations(e, 2):
            a[u, v] = a[v, u] = True
    iu = torch.triu_indices(n, n, 1)
    return {"n": n, "adj": a[iu[0], iu[1]], "x": h.x}


def _complete(n_list: list[int]):
    """Pairs i < j (2, P) and ordered links (both directions, (2, 2P)) of complete graphs."""
    pairs, off = [], 0
    for n in n_list:
        pairs.append(torch.triu_indices(n, n, 1) + off)
        off += n
    pairs = torch.cat(pairs, 1)
    batch = torch.repeat_interleave(torch.arange(len(n_list)), torch.tensor(n_list))
    return pairs, torch.cat([pairs, pairs.flip(0)], 1), batch


def _from_cliques(edges: list, n: int, x: torch.Tensor, k: int) -> Hypergraph:
    if k == 2:
        return Hypergraph.from_hyperedges(edges, n, x)
    cliques = []
    for c in nx.enumerate_all_cliques(nx.Graph(edges)) if edges else []:
        if len(c) > k:  # cliques come by increasing size
            break
        if len(c) == k:
            cliques.append(sorted(c))
    return Hypergraph.from_hyperedges(cliques, n, x)
