"""FAHNES: coarse-to-fine generation of featured hypergraphs by next-scale prediction.

Generation starts from one node holding the whole node budget ``n`` (and one hyperedge holding
the hyperedge budget ``m``) and repeats, until every budget is 1:

1. **expand** each element into the number of children predicted at the previous step
   (``coarsening.expand``): children inherit features, budget shares and memberships;
2. **refine** with one denoiser, jointly: which candidate incidences are kept (discrete
   diffusion), the children's features (Gaussian diffusion on the residual from the inherited,
   blocky features), then, from the denoised level, how each budget splits among siblings and
   how many children each element gets at the next level.

Training sequences come from coarsening each training hypergraph several times with random
reduction fractions (``coarsening.coarsen``); every level of every sequence is one refinement
example. Because budgets only split, the sampled hypergraph has exactly ``n`` nodes.

Reconstructed from the paper's definitions and its line of work: the refinement targets and their
losses (binary cross-entropy on kept candidates, x_0 regression on standardised residuals
scaled per budget bucket, cross-entropy of the sibling budget split, cross-entropy of the child
counts); budgets split by allocating each parent's surplus over its children by the predicted
softmax (largest remainders); features projected so each parent's budget-weighted mean is
kept exactly; a hyperedge keeps between 1 and the data's largest hyperedge size of its
candidates at every level (so a level holds O(budget) incidences, never a dense block); the
hyperedge budget ``m`` is drawn from the training graphs of the requested size.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import nn
from torch_geometric.data import Data
from tqdm.auto import tqdm

from icml26.fahnes.coarsening import Expansion, coarsen, expand, refined, targets
from icml26.fahnes.diffusion import Schedule
from icml26.fahnes.hypergraph import Hypergraph
from icml26.fahnes.nets import Denoiser, mlp

__all__ = ["FahnesConfig", "FahnesModel"]

BUCKETS = 17  # residual scales by floor(log2(parent budget)) (0..15), and the root (16)
EDGE_IN = 4  # link inputs: candidate, sibling, direction, noisy label


@dataclass(frozen=True)
class FahnesConfig:
    """Size of the denoiser and of the training sequences."""

    hidden: int = 32
    """Width of the message-passing denoiser."""
    layers: int = 3
    """Message-passing layers."""
    diffusion_steps: int = 10
    """Denoising steps per refinement (labels and features together)."""
    sequences: int = 8
    """Coarsening sequences drawn per training hypergraph (random reduction fractions)."""
    reduction: tuple[float, float] = (0.1, 0.5)
    """Range of the fraction of nodes each coarsening level removes."""
    spectral_k: int = 8
    """Laplacian eigenvectors local variation preserves."""
    clean_fraction: float = 0.5
    """Share of training examples shown clean (t = 0), as the budget / count passes see them."""

    def __post_init__(self) -> None:
        check_counts(self, ("hidden", "layers", "diffusion_steps", "sequences", "spectral_k"))
        lo, hi = self.reduction
        if not 0 < lo <= hi < 1:
            raise ValueError(
                f"reduction must be (lo, hi) with 0 < lo <= hi < 1, got {self.reduction}"
            )
        if not 0 <= self.clean_fraction <= 1:
            raise ValueError(f"clean_fraction must lie in [0, 1], got {self.clean_fraction!r}")


def check_counts(cfg, names: tuple[str, ...], minimum: int = 1) -> None:
    """The config's ``names`` are ints >= ``minimum``; a ValueError naming the first that is not."""
    for name in names:
        v = getattr(cfg, name)
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            raise ValueError(f"{type(cfg).__name__}.{name} must be an int >= {minimum}, got {v!r}")


@dataclass
class _Stats:
    """What the model learns about the data besides weights (saved with it)."""

    node_dim: int
    edge_dim: int
    mean_x: list[float]
    std_x: list[float]
    mean_ex: list[float]
    std_ex: list[float]
    sigma_node: list[float]
    sigma_edge: list[float]
    keep_prior: float
    max_children: int
    max_edge_size: int
    min_edge_size: int
    sizes: list[list[int]]


def _bucket(parent_budget: torch.Tensor, root: bool) -> torch.Tensor:
    b = torch.floor(torch.log2(parent_budget.float().clamp_min(1))).long().clamp(0, BUCKETS - 2)
    return torch.full_like(b, BUCKETS - 1) if root else b


class FahnesModel(nn.Module):
    """FAHNES on hypergraphs with ``node_dim`` node features and ``edge_dim`` hyperedge features.

    ``fit(hypergraphs)`` learns from data; ``sample(n_nodes, num_samples)`` returns PyG graphs
    (``sample_hypergraphs`` the hypergraphs themselves)."""

    def __init__(self, cfg: FahnesConfig, stats: _Stats):
        super().__init__()
        self.cfg, self.stats = cfg, stats
        self.schedule = Schedule(cfg.diffusion_steps)
        D = stats.node_dim + stats.edge_dim
        in_dim = 2 + 8 + 2 * D + 3 + 4
        self.net = Denoiser(in_dim, EDGE_IN, cfg.hidden, cfg.layers)
        h = cfg.hidden
        self.keep_head = mlp(2 * h, h, 1)
        self.feat_head = mlp(h, h, max(D, 1))
        self.budget_head = mlp(h, h, 1)
        self.count_head = mlp(h, h, stats.max_children)

    # ---- data statistics ------------------------------------------------------------------------

    @classmethod
    def from_data(
        cls, hypergraphs: list[Hypergraph], cfg: FahnesConfig | None = None, seed: int = 0
    ) -> tuple[FahnesModel, list]:
        """A model sized for ``hypergraphs`` and its refinement examples (every level of
        ``cfg.sequences`` coarsening sequences per hypergraph)."""
        cfg = cfg or FahnesConfig()
        if not hypergraphs:
            raise ValueError("need at least one training hypergraph")
        dims = {(h.x.shape[1], h.edge_x.shape[1]) for h in hypergraphs}
        if len(dims) != 1:
            raise ValueError(f"all hypergraphs need the same feature sizes, got {sorted(dims)}")
        dv, de = dims.pop()
        rng = np.random.default_rng(seed)
        seqs = [
            coarsen(h, rng, cfg.reduction, cfg.spectral_k)
            for h in tqdm(hypergraphs, desc="coarsen", leave=False)
            for _ in range(cfg.sequences)
        ]
        allx = torch.cat([h.x for h in hypergraphs]) if dv else torch.zeros(1, 0)
        allex = torch.cat([h.edge_x for h in hypergraphs]) if de else torch.zeros(1, 0)
        mx, sx = allx.mean(0), (allx.std(0).clamp_min(1e-6) if dv else allx.sum(0))
        mex, sex = allex.mean(0), (allex.std(0).clamp_min(1e-6) if de else allex.sum(0))
        max_children = max(
            [2]
            + [
                int(s.edge_counts(lv).max())
                for s in seqs
                for lv in range(s.depth)
                if s.levels[lv + 1].num_edges
            ]
        )
        sizes = torch.cat([h.edge_sizes for h in hypergraphs])
        stats = _Stats(
            dv,
            de,
            mx.tolist(),
            sx.tolist(),
            mex.tolist(),
            sex.tolist(),
            [1.0] * BUCKETS,
            [1.0] * BUCKETS,
            0.5,
            max_children,
            int(sizes.max()) if sizes.numel() else 2,
            int(sizes.min()) if sizes.numel() else 2,
            [[h.num_nodes, h.num_edges] for h in hypergraphs],
        )
        model = cls(cfg, stats)
        examples = [ex for s in seqs for ex in model._examples(s)]
        model._fit_scales(examples)
        return model, examples

    def _examples(self, seq) -> list[dict]:
        N = seq.levels[0].num_nodes
        M = seq.levels[0].num_edges
        out = []
        for lv in range(seq.depth + 1):
            tg = targets(seq, lv)
            root = lv == seq.depth
            ex = self._inputs(tg.expansion, root, N, M)
            D = ex["inherited"].shape[1]
            fine = torch.zeros(ex["inherited"].shape[0], D)
            fine[: tg.expansion.num_nodes, : self.stats.node_dim] = self._std_x(tg.x)
            fine[tg.expansion.num_nodes :, self.stats.node_dim :] = self._std_ex(tg.edge_x)
            ex.update(
                keep=tg.keep,
                residual=(fine - ex["inherited"]) * ex["free"][:, None],
                budget=torch.cat([tg.node_budget, tg.edge_budget]),
                next_counts=torch.cat([tg.next_node_counts, tg.next_edge_counts]),
            )
            out.append(ex)
        return out

    def _fit_scales(self, examples: list[dict]) -> None:
        """Residual scale per (type, budget bucket): the RMS of the training residuals there, so
        the feature diffusion sees unit-scale targets at every level."""
        dv = self.stats.node_dim
        for kind, cols, name in (
            (0, slice(0, dv), "sigma_node"),
            (1, slice(dv, None), "sigma_edge"),
        ):
            sq = torch.zeros(BUCKETS)
            cnt = torch.zeros(BUCKETS)
            for ex in examples:
                sel = ex["free"] & (ex["type"] == kind)
                r = ex["residual"][sel][:, cols]
                if r.numel():
                    sq.index_add_(0, ex["bucket"][sel], (r**2).mean(1))
                    cnt.index_add_(0, ex["bucket"][sel], torch.ones(int(sel.sum())))
            sig = torch.where(cnt > 0, (sq / cnt.clamp_min(1)).sqrt(), torch.ones(BUCKETS))
            setattr(self.stats, name, sig.clamp_min(1e-3).tolist())
        keep = torch.cat([ex["keep"] for ex in examples]).float()
        self.stats.keep_prior = float(keep.mean().clamp(0.02, 0.98)) if keep.numel() else 0.5
        for ex in examples:
            ex["residual"] = ex["residual"] / self._sigma(ex)[:, None]

    def _sigma(self, ex: dict) -> torch.Tensor:
        sv = torch.tensor(self.stats.sigma_node)[ex["bucket"]]
        se = torch.tensor(self.stats.sigma_edge)[ex["bucket"]]
        return torch.where(ex["type"] == 0, sv, se)

    def _std_x(self, x):
        return (x - torch.tensor(self.stats.mean_x)) / torch.tensor(self.stats.std_x)

    def _std_ex(self, ex):
        return (ex - torch.tensor(self.stats.mean_ex)) / torch.tensor(self.stats.std_ex)

    # ---- inputs of one refinement ---------------------------------------------------------------

    def _inputs(self, exp: Expansion, root: bool, N: int, M: int) -> dict:
        """Everything but the noisy state of one refinement example: element descriptors,
        candidate and sibling links, groups of siblings."""
        n, m = exp.num_nodes, exp.num_edges
        dv, de = self.stats.node_dim, self.stats.edge_dim
        typ = torch.cat([torch.zeros(n, dtype=torch.long), torch.ones(m, dtype=torch.long)])
        pb = torch.cat([exp.node_budget_parent, exp.edge_budget_parent])
        sib = torch.cat([exp.node_siblings, exp.edge_siblings])
        inherited = torch.zeros(n + m, dv + de)
        if not root:
            inherited[:n, :dv] = self._std_x(exp.x)
            inherited[n:, dv:] = self._std_ex(exp.edge_x)
        groups = torch.cat([exp.node_parent, exp.edge_parent + (int(exp.node_parent.max()) + 1)])
        cand = torch.stack([exp.candidates[0], exp.candidates[1] + n])
        deg = torch.bincount(cand.flatten(), minlength=n + m).float()
        desc = torch.stack(
            [
                torch.log1p(pb.float() / sib.float()),
                torch.log1p(pb.float()),
                torch.log(sib.float()),
                torch.full((n + m,), float(root)),
                torch.full((n + m,), math.log1p(N) / 8),
                torch.full((n + m,), math.log1p(M) / 8),
                torch.full((n + m,), math.log1p(n) / math.log1p(max(N, 1)) if N > 1 else 1.0),
                torch.log1p(deg),
            ],
            1,
        )
        feat_mask = torch.zeros(n + m, dv + de, dtype=torch.bool)
        feat_mask[:n, :dv] = True
        feat_mask[n:, dv:] = True
        return dict(
            type=typ,
            desc=desc,
            feat_mask=feat_mask,
            inherited=inherited,
            free=(sib > 1) | root,
            bucket=_bucket(pb, root),
            parent_budget=pb,
            siblings_count=sib,
            groups=groups,
            cand=cand,
            sib_links=_sibling_links(groups),
            n=n,
            m=m,
        )

    # ---- forward on a batch of examples ---------------------------------------------------------

    def _forward(self, batch: dict, xt_lab: torch.Tensor, xt_feat: torch.Tensor, t: torch.Tensor):
        T = self.schedule.T
        te = t.float()[batch["element_graph"]] / T
        x = torch.cat(
            [
                F.one_hot(batch["type"], 2).float(),
                batch["desc"],
                batch["inherited"],
                xt_feat * batch["free"][:, None],
                te[:, None],
                torch.sin(math.pi * te)[:, None],
                torch.cos(math.pi * te)[:, None],
                batch.get("known", torch.zeros(te.shape[0], 4)),
            ],
            1,
        )
        C = batch["cand"].shape[1]
        S = batch["sib_links"].shape[1]
        links = torch.cat([batch["cand"], batch["cand"].flip(0), batch["sib_links"]], 1)
        lab = xt_lab.float()
        attr = torch.zeros(2 * C + S, EDGE_IN)
        attr[: 2 * C, 0] = 1
        attr[2 * C :, 1] = 1
        attr[:C, 2] = 1
        attr[: 2 * C, 3] = torch.cat([lab, lab])
        h, e = self.net(x, links, attr, batch["element_graph"], batch["num_graphs"])
        keep_logit = self.keep_head(torch.cat([e[:C], e[C : 2 * C]], -1)).squeeze(-1)
        return (
            keep_logit,
            self.feat_head(h)[:, : batch["inherited"].shape[1]],
            self.budget_head(h).squeeze(-1),
            self._mask_counts(self.count_head(h), batch),
        )

    def _mask_counts(self, logits, batch):
        k = torch.arange(1, logits.shape[1] + 1)[None, :]
        bad = k > batch["budget_for_counts"][:, None]
        bad |= (batch["type"][:, None] == 0) & (k > 2)
        return logits.masked_fill(bad, -1e9)

    # ---- training -------------------------------------------------------------------------------

    def forward(self, examples: list[dict], gen: torch.Generator | None = None) -> dict:
        """The training loss (what DDP wraps)."""
        return self.loss(examples, gen)

    def loss(self, examples: list[dict], gen: torch.Generator | None = None) -> dict:
        """Refinement losses on a batch of examples at random diffusion steps: {"loss", parts}."""
        batch = collate(examples)
        B = batch["num_graphs"]
        T = self.schedule.T
        t = torch.randint(1, T + 1, (B,), generator=gen)
        clean = torch.rand(B, generator=gen) < self.cfg.clean_fraction
        t = torch.where(clean, torch.zeros_like(t), t)
        tc = t[batch["cand_graph"]]
        te = t[batch["element_graph"]]
        pi = self.stats.keep_prior
        xt_lab = torch.where(
            tc > 0, self.schedule.noisy_labels(batch["keep"], tc, pi, gen), batch["keep"]
        )
        r0 = batch["residual"]
        xt_feat = torch.where((te > 0)[:, None], self.schedule.noisy_features(r0, te, gen), r0)
        batch["budget_for_counts"] = batch["budget"]
        # the budget and count heads decide in turn while sampling (budgets, then node counts,
        # then hyperedge counts given the node counts): each example shows a random prefix
        eg = batch["element_graph"]
        knows_budget = ((torch.rand(B, generator=gen) < 0.5) & clean)[eg]  # counts come at t = 0
        knows_nodes = knows_budget & (torch.rand(B, generator=gen) < 0.5)[eg]
        batch["known"] = _known(
            batch, knows_budget, knows_nodes, batch["budget"], batch["next_counts"]
        )
        keep_logit, r_hat, b_logit, c_logit = self._forward(batch, xt_lab, xt_feat, t)
        noisy_c, noisy_e = tc > 0, (te > 0) & batch["free"]
        l_keep = _masked_mean(
            F.binary_cross_entropy_with_logits(keep_logit, batch["keep"].float(), reduction="none"),
            noisy_c,
        )
        fmask = batch["feat_mask"] & noisy_e[:, None]
        l_feat = ((r_hat - r0) ** 2 * fmask).sum() / fmask.sum().clamp_min(1)
        l_budget = _split_loss(b_logit, batch, ~knows_budget)
        node = batch["type"] == 0
        ask = (batch["budget"] > 1) & knows_budget & torch.where(node, ~knows_nodes, knows_nodes)
        l_count = _masked_mean(
            F.cross_entropy(c_logit, (batch["next_counts"] - 1).clamp_min(0), reduction="none"), ask
        )
        total = l_keep + l_feat + l_budget + l_count
        return {
            "loss": total,
            "keep": l_keep.detach(),
            "features": l_feat.detach(),
            "budget": l_budget.detach(),
            "counts": l_count.detach(),
        }

    # ---- sampling -------------------------------------------------------------------------------

    @torch.no_grad()
    def sample_hypergraphs(
        self,
        n_nodes: int | list[int] | None = None,
        num_samples: int = 1,
        seed: int = 0,
        n_edges: int | list[int] | None = None,
        progress: bool = False,
        max_levels: int | None = None,
    ) -> list[Hypergraph]:
        """Sample hypergraphs with exactly ``n_nodes`` nodes each (an int, one per sample, or
        None: sizes drawn from the training set). ``n_edges`` (the hyperedge budget) defaults to
        that of a training hypergraph of the same size (scaled from the nearest size)."""
        gen = torch.Generator().manual_seed(seed)
        rng = np.random.default_rng(seed)
        ns = node_counts(n_nodes, num_samples, self.stats.sizes, rng)
        num_samples = len(ns)
        if n_edges is None:
            ms = [self._draw_edges(n, rng) for n in ns]
        else:
            ms = [n_edges] * num_samples if isinstance(n_edges, int) else list(n_edges)
        if len(ms) != num_samples or min(ms) < 1:
            raise ValueError("n_edges must be >= 1, one per sample")
        was_training = self.training
        self.eval()
        states = [_root(n, m, self.stats) for n, m in zip(ns, ms, strict=True)]
        done: list[Hypergraph | None] = [None] * num_samples
        limit = max_levels or 4 * math.ceil(math.log2(max(max(ns), max(ms)) + 1)) + 8
        bar = tqdm(total=num_samples, desc="sample", disable=not progress, leave=False)
        for level in range(limit + 1):
            active = [i for i in range(num_samples) if done[i] is None]
            if not active:
                break
            # the last levels split every element as far as allowed, so budgets reach 1 in time
            force = level >= limit - math.ceil(math.log2(max(max(ns), max(ms)) + 1)) - 1
            new = self._refine(
                [states[i] for i in active],
                [ns[i] for i in active],
                [ms[i] for i in active],
                level == 0,
                gen,
                force,
            )
            for i, st in zip(active, new, strict=True):
                states[i] = st
                hg, _, edge_counts = st
                # done once every node is final and no hyperedge splits again (a hyperedge whose
                # budget exceeds the distinct node sets left to it keeps the rest unused)
                edges_final = not hg.num_edges or int(edge_counts.max()) == 1
                if int(hg.node_budget.max()) == 1 and edges_final:
                    done[i] = self._finish(hg)
                    bar.update(1)
        bar.close()
        self.train(was_training)
        if any(d is None for d in done):
            raise RuntimeError("sampling did not reach unit budgets; raise max_levels")
        return done  # type: ignore[return-value]

    def sample(
        self, n_nodes: int | list[int] | None = None, num_samples: int = 1, seed: int = 0, **kw
    ) -> list[Data]:
        """Sampled graphs as ``torch_geometric.data.Data`` (``x`` node features,
        ``edge_index`` the clique expansion, ``hyperedges`` the node lists)."""
        out = []
        for hg in self.sample_hypergraphs(n_nodes, num_samples, seed, **kw):
            d = hg.to_data()
            d.hyperedges = hg.hyperedges()
            d.edge_x = hg.edge_x
            out.append(d)
        return out

    def _draw_edges(self, n: int, rng) -> int:
        return draw_edge_budget(self.stats.sizes, n, rng)

    def _refine(self, states, ns, ms, root: bool, gen, force: bool):
        """One expansion + refinement for every state (hypergraph, node counts, edge counts)."""
        exps, exs = [], []
        for (hg, cv, ce), n, m in zip(states, ns, ms, strict=True):
            exp = expand(hg, cv, ce)
            exps.append(exp)
            exs.append(self._inputs(exp, root, n, m))
        batch = collate(exs)
        B, T, pi = batch["num_graphs"], self.schedule.T, self.stats.keep_prior
        C = batch["cand"].shape[1]
        lab = torch.rand(C, generator=gen) < pi
        feat = torch.randn(batch["inherited"].shape, generator=gen)
        batch["budget_for_counts"] = batch["parent_budget"]  # not used before t = 0
        p_keep = torch.full((C,), pi)
        for step in range(T, 0, -1):
            t = torch.full((B,), step)
            keep_logit, r_hat, _, _ = self._forward(batch, lab, feat, t)
            p_keep = torch.sigmoid(keep_logit)
            lab = self.schedule.label_step(lab, p_keep, t[batch["cand_graph"]], pi, gen)
            feat = self.schedule.feature_step(feat, r_hat, t[batch["element_graph"]], gen)
        feat = feat * batch["free"][:, None] * batch["feat_mask"]
        uniform = (
            self.stats.min_edge_size
            if self.stats.min_edge_size == self.stats.max_edge_size
            else None
        )
        share = (batch["parent_budget"] == batch["siblings_count"]) | (batch["type"] == 1)
        batch["last_level"] = (
            torch.zeros(B, dtype=torch.long).index_add_(0, batch["element_graph"], (~share).long())
            == 0
        )
        lab = _hyperedge_sizes(lab, p_keep, batch, self.stats.max_edge_size, uniform)
        lab = _distinct_siblings(lab, p_keep, batch, self.stats.max_edge_size, uniform)
        budget, counts = self._budgets_and_counts(batch, lab, feat, gen, force)
        sigma = self._sigma(batch)
        return [
            self._refined(g, exp, batch, lab, feat, sigma, budget, counts, root)
            for g, exp in enumerate(exps)
        ]

    def _budgets_and_counts(self, batch, lab, feat, gen, force: bool):
        """Given the denoised labels and features (t = 0): each element's budget (its share of
        the parent's), then how many children each node and hyperedge splits into."""
        B = batch["num_graphs"]
        t0 = torch.zeros(B, dtype=torch.long)
        _, _, b_logit, _ = self._forward(batch, lab, feat, t0)
        budget = _allocate(b_logit, batch)
        batch["budget_for_counts"] = budget
        every = torch.ones_like(batch["free"])
        batch["known"] = _known(batch, every, ~every, budget, budget)
        _, _, _, c_logit = self._forward(batch, lab, feat, t0)
        counts = torch.multinomial(F.softmax(c_logit, -1), 1, generator=gen).squeeze(-1) + 1
        counts = torch.minimum(counts, budget)
        batch["known"] = _known(batch, every, every, budget, counts)
        _, _, _, c_logit = self._forward(batch, lab, feat, t0)
        # a hyperedge can only split into distinct node sets of its nodes' children: given the
        # nodes' counts, cap its count and draw it again from the capped distribution
        cap = _distinct_children(counts, lab, batch, self.stats.max_edge_size)
        k = torch.arange(1, c_logit.shape[1] + 1)[None, :]
        capped = c_logit.masked_fill((batch["type"][:, None] == 1) & (k > cap[:, None]), -1e9)
        edge_counts = torch.multinomial(F.softmax(capped, -1), 1, generator=gen).squeeze(-1) + 1
        counts = torch.where(batch["type"] == 1, edge_counts, counts)
        if force:  # past the level limit: split as much as allowed
            counts = torch.where(batch["type"] == 0, budget.clamp(max=2), counts)
            cap = _distinct_children(counts, lab, batch, self.stats.max_edge_size)
            counts = torch.where(batch["type"] == 1, torch.minimum(budget, cap), counts)
        return budget, torch.minimum(counts, budget).clamp_min(1)

    def _refined(self, g: int, exp, batch, lab, feat, sigma, budget, counts, root: bool):
        """Graph g's refined hypergraph (features projected onto their parents' and mapped back
        to data units) and its nodes' and hyperedges' child counts."""
        el = batch["element_slices"][g]
        cs = batch["cand_slices"][g]
        n = exp.num_nodes
        x_std = batch["inherited"][el] + feat[el] * sigma[el][:, None]
        b = budget[el]
        x_std = _project(
            x_std,
            b,
            batch["groups"][el] - int(batch["groups"][el].min()),
            batch["inherited"][el],
            batch["free"][el],
            root,
        )
        stats = self.stats
        x = x_std[:n, : stats.node_dim] * torch.tensor(stats.std_x) + torch.tensor(stats.mean_x)
        ex = x_std[n:, stats.node_dim :] * torch.tensor(stats.std_ex) + torch.tensor(stats.mean_ex)
        hg = refined(exp, lab[cs], b[:n], b[n:], x, ex)
        c = counts[el]
        return hg, c[:n], c[n:]

    def _finish(self, hg: Hypergraph) -> Hypergraph:
        """The last level: hyperedges smaller than the data's smallest are dropped (a 1-node
        'edge' of a graph), and coincident ones merged (their features averaged)."""
        keys: dict[tuple[int, ...], list[int]] = {}
        for j, nodes in enumerate(hg.hyperedges()):
            if len(nodes) >= self.stats.min_edge_size:
                keys.setdefault(tuple(sorted(nodes)), []).append(j)
        edge_x = (
            torch.stack([hg.edge_x[js].mean(0) for js in keys.values()])
            if keys
            else torch.zeros(0, hg.edge_x.shape[1])
        )
        return Hypergraph.from_hyperedges([list(k) for k in keys], hg.num_nodes, hg.x, edge_x)

    # ---- checkpoints ----------------------------------------------------------------------------

    def save_pretrained(self, path: str | Path) -> Path:
        """``config.json`` (config and data statistics) and ``model.safetensors``, written to a
        temporary folder and swapped into place."""
        meta = json.dumps({"config": asdict(self.cfg), "stats": asdict(self.stats)}, indent=1)
        return save_folder(path, {"model.safetensors": self.state_dict(), "config.json": meta})

    @classmethod
    def from_pretrained(cls, path: str | Path) -> FahnesModel:
        path = Path(path)
        if not (path / "config.json").is_file() or not (path / "model.safetensors").is_file():
            raise FileNotFoundError(f"{path} needs config.json and model.safetensors")
        try:
            meta = json.loads((path / "config.json").read_text())
            c = meta["config"]
            c["reduction"] = tuple(c["reduction"])
            config, stats = FahnesConfig(**c), _Stats(**meta["stats"])
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise ValueError(
                f"{path / 'config.json'}: not a FahnesModel config ({type(e).__name__}: {e})"
            ) from None
        model = cls(config, stats)
        model.load_state_dict(load_file(path / "model.safetensors"))
        return model


def node_counts(n_nodes, num_samples: int, sizes: list[list[int]], rng: np.random.Generator,
                minimum: int = 1) -> list[int]:  # fmt: skip
    """The node count of each sample: ``n_nodes`` an int (every sample), a list of ints (one per
    sample) or None (drawn from the training ``sizes``). Named errors for anything else, and a
    warning when a count lies far beyond the sizes the model was trained on."""
    if isinstance(num_samples, bool) or not isinstance(num_samples, int | np.integer):
        raise TypeError(f"num_samples must be an int, got {type(num_samples).__name__}")
    if num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples}")
    trained = [int(s[0]) for s in sizes]
    if n_nodes is None:
        return [trained[rng.integers(len(trained))] for _ in range(num_samples)]
    if isinstance(n_nodes, int | np.integer) and not isinstance(n_nodes, bool):
        ns = [int(n_nodes)] * num_samples
    elif (
        isinstance(n_nodes, list | tuple)
        and n_nodes
        and all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in n_nodes)
    ):
        ns = [int(v) for v in n_nodes]
    else:
        raise TypeError(f"n_nodes must be an int, a non-empty list of ints or None, got "
                        f"{n_nodes!r}")  # fmt: skip
    if min(ns) < minimum:
        raise ValueError(f"n_nodes must be >= {minimum}, got {min(ns)}")
    if max(ns) > 2 * max(trained):
        warnings.warn(f"n_nodes={max(ns)} is over twice the largest training graph "
                      f"({max(trained)} nodes): the model extrapolates", stacklevel=3)  # fmt: skip
    return ns


def draw_edge_budget(sizes: list[list[int]], n: int, rng: np.random.Generator) -> int:
    """The hyperedge count of a training hypergraph with ``n`` nodes (drawn among them), or,
    when none has ``n``, a nearest-size one's scaled by n / its size."""
    arr = np.array(sizes)
    same = arr[arr[:, 0] == n]
    if len(same):
        return int(same[rng.integers(len(same)), 1])
    near = arr[np.abs(arr[:, 0] - n) == np.abs(arr[:, 0] - n).min()]
    n0, m0 = near[rng.integers(len(near))]
    return max(1, round(m0 * n / n0))


def save_folder(path: Path, files: dict[str, object]) -> Path:
    """Write ``files`` (name -> tensors dict for .safetensors, str for text) into a temporary
    folder beside ``path`` and swap it into place: a crash leaves the old folder or the new."""
    import os
    import shutil

    path = Path(path)
    tmp = path.with_name(f".{path.name}.partial")
    old = path.with_name(f".{path.name}.old")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name, content in files.items():
        if isinstance(content, str):
            (tmp / name).write_text(content)
        else:
            save_file({k: v.contiguous() for k, v in content.items()}, tmp / name)
    if path.exists():
        os.replace(path, old)
    os.replace(tmp, path)
    shutil.rmtree(old, ignore_errors=True)
    return path


# ---- helpers ------------------------------------------------------------------------------------


def _root(n: int, m: int, stats: _Stats):
    """One node (budget n) in one hyperedge (budget m), each with one child to start."""
    hg = Hypergraph(
        torch.zeros(2, 1, dtype=torch.long),
        torch.tensor([stats.mean_x]).reshape(1, stats.node_dim),
        torch.tensor([stats.mean_ex]).reshape(1, stats.edge_dim),
        torch.tensor([n]),
        torch.tensor([m]),
    )
    return hg, torch.ones(1, dtype=torch.long), torch.ones(1, dtype=torch.long)


def _sibling_links(groups: torch.Tensor) -> torch.Tensor:
    """(2, S) all ordered pairs of distinct elements sharing a parent (groups are contiguous)."""
    size = torch.bincount(groups)
    s = size[groups]
    start = (torch.cumsum(size, 0) - size)[groups]
    src = torch.repeat_interleave(torch.arange(groups.numel()), s)
    local = torch.arange(int(s.sum())) - torch.repeat_interleave(torch.cumsum(s, 0) - s, s)
    dst = torch.repeat_interleave(start, s) + local
    keep = src != dst
    return torch.stack([src[keep], dst[keep]])


def collate(examples: list[dict]) -> dict:
    """Concatenate refinement examples into one batch (indices offset; per-graph slices)."""
    out: dict = {"num_graphs": len(examples)}
    offs_el, offs_c, offs_g = 0, 0, 0
    cat: dict[str, list] = {}
    el_slices, c_slices = [], []
    for g, ex in enumerate(examples):
        N = ex["n"] + ex["m"]
        C = ex["cand"].shape[1]
        for k in (
            "type",
            "desc",
            "inherited",
            "free",
            "bucket",
            "parent_budget",
            "siblings_count",
            "feat_mask",
            "keep",
            "residual",
            "budget",
            "next_counts",
        ):
            if k in ex:
                cat.setdefault(k, []).append(ex[k])
        cat.setdefault("cand", []).append(ex["cand"] + offs_el)
        cat.setdefault("sib_links", []).append(ex["sib_links"] + offs_el)
        cat.setdefault("groups", []).append(ex["groups"] + offs_g)
        cat.setdefault("element_graph", []).append(torch.full((N,), g))
        cat.setdefault("cand_graph", []).append(torch.full((C,), g))
        el_slices.append(slice(offs_el, offs_el + N))
        c_slices.append(slice(offs_c, offs_c + C))
        offs_el += N
        offs_c += C
        offs_g += int(ex["groups"].max()) + 1 if N else 0
    for k, v in cat.items():
        out[k] = torch.cat(v, 1 if k in ("cand", "sib_links") else 0)
    out["element_slices"], out["cand_slices"] = el_slices, c_slices
    return out


def _masked_mean(v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (v * mask).sum() / mask.sum().clamp_min(1)


def _known(batch, knows_budget, knows_nodes, budget, counts) -> torch.Tensor:
    """(N, 4) inputs of what is already decided: [budget known, log1p(budget), node's next
    count known, log(count)] (the count columns only on nodes)."""
    node = batch["type"] == 0
    kn = knows_nodes & node
    return torch.stack(
        [
            knows_budget.float(),
            torch.log1p(budget.float()) * knows_budget,
            kn.float(),
            torch.log(counts.float().clamp_min(1)) * kn,
        ],
        1,
    )


def _split_loss(logit: torch.Tensor, batch: dict, ask: torch.Tensor) -> torch.Tensor:
    """Cross-entropy between the sibling softmax of ``logit`` and the share of each parent's
    surplus (budget - children) that each child holds (budget - 1)."""
    g = batch["groups"]
    sib = batch["siblings_count"]
    surplus = batch["parent_budget"] - sib
    sel = (sib > 1) & (surplus > 0) & ask
    if not bool(sel.any()):
        return logit.sum() * 0
    target = (batch["budget"] - 1).float() / surplus.clamp_min(1).float()
    logp = logit - _group_logsumexp(logit, g)
    return -(target * logp)[sel].sum() / (torch.unique(g[sel]).numel())


def _group_logsumexp(v: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    mx = torch.zeros(int(g.max()) + 1).scatter_reduce(0, g, v, "amax", include_self=False)
    s = torch.zeros_like(mx).index_add_(0, g, torch.exp(v - mx[g]))
    return (mx + torch.log(s))[g]


def _allocate(logit: torch.Tensor, batch: dict) -> torch.Tensor:
    """Integer budgets: each child gets 1 plus its softmax share of the parent's surplus,
    rounded by largest remainders so siblings sum to the parent's budget exactly."""
    g = batch["groups"]
    w = torch.exp(logit - _group_logsumexp(logit, g))
    surplus = (batch["parent_budget"] - batch["siblings_count"]).float()
    share = w * surplus
    base = torch.floor(share)
    left = (surplus - torch.zeros(int(g.max()) + 1).index_add_(0, g, base)[g]).round().long()
    frac = share - base
    extra = _rank_in_groups(g, frac.double()) < left  # the largest remainders get one more
    return (base.long() + 1 + extra.long()).clamp_min(1)


def _hyperedge_sizes(lab, p, batch, kmax: int, exact: int | None) -> torch.Tensor:
    """Keep what coarsening implies of every child hyperedge: at least one child of each node
    of its parent hyperedge (its nodes map back onto its parent's), at most ``kmax`` nodes, and,
    on a graph's last level when the data is ``exact``-uniform, exactly that many. The kept
    labels win over the dropped ones, then the more probable."""
    edge = batch["cand"][1]
    if edge.numel() == 0:
        return lab
    group = batch["groups"][batch["cand"][0]]  # the coarse node each candidate descends from
    score = lab.double() + p.double()  # in [0, 2]: kept first, then by probability
    pair = edge * (int(group.max()) + 1) + group  # one id per (child hyperedge, coarse node)
    first_of_group = _rank_in_groups(pair, score) == 0
    r = _rank_in_groups(edge, score + 4 * first_of_group.double())  # rank inside its hyperedge
    keep = (lab | first_of_group) & (r < kmax)
    if exact is not None:
        last = batch["last_level"][batch["cand_graph"]]
        keep = torch.where(last, r < exact, keep)
    return keep


def _distinct_siblings(lab, p, batch, kmax: int, exact: int | None) -> torch.Tensor:
    """Children of one hyperedge stand for different original hyperedges, so their node sets
    differ (coarsening merged exactly the coincident ones). A child whose sampled node set
    repeats a sibling's takes instead its most probable unused node set (each coarse node
    keeps >= 1 child, at most ``kmax`` nodes, exactly ``exact`` on a last level)."""
    from itertools import combinations, product

    cand_node, cand_edge = batch["cand"]
    by_edge: dict[int, list[int]] = {}
    for i, e in enumerate(cand_edge.tolist()):
        by_edge.setdefault(e, []).append(i)
    groups = batch["groups"].tolist()
    siblings: dict[int, list[int]] = {}
    for e in by_edge:
        siblings.setdefault(groups[e], []).append(e)
    lab = lab.clone()
    logp, log1mp = torch.log(p.clamp(1e-6, 1)).tolist(), torch.log((1 - p).clamp(1e-6, 1)).tolist()
    node_group = batch["groups"][cand_node].tolist()
    last = batch.get("last_level")
    for sibs in siblings.values():
        if len(sibs) < 2:
            continue
        # node sets as positions in the candidate list, which siblings share (same nodes, order)
        sets = [frozenset(j for j, i in enumerate(by_edge[e]) if lab[i]) for e in sibs]
        if len(set(sets)) == len(sets):
            continue
        first = by_edge[sibs[0]]
        per_node: dict[int, list[int]] = {}
        for pos, i in enumerate(first):
            per_node.setdefault(node_group[i], []).append(pos)
        size = (
            exact
            if exact is not None and last is not None and bool(last[batch["cand_graph"][first[0]]])
            else None
        )
        options = []
        for picks in product(
            *[
                [c for r in range(1, len(v) + 1) for c in combinations(v, r)]
                for v in per_node.values()
            ]
        ):
            chosen = frozenset(x for pk in picks for x in pk)
            if len(chosen) <= kmax and (size is None or len(chosen) == size):
                options.append(chosen)
        taken = set()
        for e, pos_set in zip(sibs, sets, strict=True):
            if pos_set not in taken:
                taken.add(pos_set)
                continue
            idx = by_edge[e]
            free = [o for o in options if o not in taken]
            if not free:
                continue
            best = max(
                free,
                key=lambda o: sum(
                    logp[idx[j]] if j in o else log1mp[idx[j]] for j in range(len(idx))
                ),
            )
            taken.add(best)
            for j, i in enumerate(idx):
                lab[i] = j in best
    return lab


def _distinct_children(counts, lab, batch, kmax: int) -> torch.Tensor:
    """(N,) for each hyperedge, how many distinct node sets its children can have at the next
    level: subsets of its nodes' children with at least one child of each node and at most
    ``kmax`` nodes. With a nodes splitting in 1 and b in 2 that is
    sum_{j : a + b + j <= kmax} C(b, j) 2^(b - j)."""
    node, edge = batch["cand"][:, lab]
    N = batch["type"].numel()
    two = (counts[node] >= 2).long()
    a = torch.zeros(N, dtype=torch.long).index_add_(0, edge, 1 - two)
    b = torch.zeros(N, dtype=torch.long).index_add_(0, edge, two)
    total = torch.zeros(N, dtype=torch.long)
    for j in range(kmax + 1):
        ok = (a + b + j <= kmax) & (j <= b)
        comb = torch.tensor([math.comb(int(x), j) if j <= int(x) else 0 for x in range(kmax + 1)])
        total += torch.where(ok, comb[b.clamp(max=kmax)] * 2 ** (b - j).clamp_min(0), 0)
    return total.clamp_min(1)


def _rank_in_groups(group: torch.Tensor, score: torch.Tensor) -> torch.Tensor:
    """Rank of each entry within its group by descending ``score`` (0 = the best)."""
    group = torch.unique(group, return_inverse=True)[1]  # ids 0..G-1: no table sized by the ids
    rank = _rank_within(group.double() * 8 - score)  # score in [0, 6]: groups stay apart
    start = torch.zeros(int(group.max()) + 1, dtype=torch.long)
    start = start.scatter_reduce(0, group, rank, "amin", include_self=False)
    return rank - start[group]


def _rank_within(key: torch.Tensor) -> torch.Tensor:
    """Position of each entry in the ascending order of ``key``."""
    order = torch.argsort(key, stable=True)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.numel())
    return rank


def _project(x, budget, groups, inherited, free, root: bool):
    """Shift each sibling group's features so their budget-weighted mean is the parent's."""
    if root or x.shape[1] == 0:
        return x
    w = budget.float()[:, None]
    G = int(groups.max()) + 1
    mean = torch.zeros(G, x.shape[1]).index_add_(0, groups, x * w)
    den = torch.zeros(G).index_add_(0, groups, budget.float())[:, None]
    shift = mean / den - torch.zeros(G, x.shape[1]).index_add_(0, groups, inherited * w) / den
    return torch.where(free[:, None], x - shift[groups], inherited)
