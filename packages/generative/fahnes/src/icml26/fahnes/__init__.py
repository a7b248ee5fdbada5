"""FAHNES: feature-aware generation of graphs and hypergraphs by next-scale prediction
(Gailhard, Tartaglione, Naviner, Giraldo; ICML 2026; arXiv 2506.01467).

Implemented: hypergraphs as bipartite star expansions with budgets (``Hypergraph``);
spectrum-preserving local-variation coarsening mirrored on the star expansion, with merged
hyperedges, summed budgets and budget-weighted features (``coarsen``); expansion into children
that inherit features, budget shares and memberships (``expand``); the learned refinement (which
memberships to keep, refined features, budget splits, next child counts) as one sparse
message-passing denoiser with discrete and Gaussian diffusion (``FahnesModel``); a flat dense
diffusion baseline (``FlatModel``); graph, featured-graph and mesh metrics.

Reconstructed from the paper's definitions and its line of work: the local-variation cost in closed
form for pairs, the refinement losses, the budget-split rule, the structural projections applied
while sampling, and the denoiser's size (a smaller MPNN, no spectral conditioning). ``model.py``
and ``coarsening.py`` list each.
"""

from icml26.fahnes.baselines import FlatConfig, FlatModel
from icml26.fahnes.coarsening import Coarsening, Expansion, coarsen, expand, targets
from icml26.fahnes.hypergraph import Hypergraph
from icml26.fahnes.model import FahnesConfig, FahnesModel
from icml26.fahnes.train import FitConfig, fit

__all__ = [
    "Coarsening",
    "Expansion",
    "FahnesConfig",
    "FahnesModel",
    "FitConfig",
    "FlatConfig",
    "FlatModel",
    "Hypergraph",
    "coarsen",
    "expand",
    "fit",
    "targets",
]
