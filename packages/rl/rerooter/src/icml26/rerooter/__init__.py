"""icml26-rerooter: √LTS policy tree search with learned rerooters (ICML 2026).

Levin tree search (LTS), PHS* and √LTS (Orseau, Hutter & Lelis 2024: LTS rerooted at every expanded
node, weighted by a rerooter) with heuristic, clustering and hybrid rerooters; Sokoban (Boxoban)
and sliding-tile environments with a gymnasium wrapper; a two-headed policy/heuristic network and
online bootstrap training. See the README for what follows the paper and what is ours.
"""

from icml26.rerooter.baselines import lts, phs_star
from icml26.rerooter.bootstrap import (
    METHODS,
    AuthorsBootstrapConfig,
    BootstrapConfig,
    BootstrapHistory,
    bootstrap_train,
    bootstrap_train_authors,
    lts_cm_budget,
    run_search,
)
from icml26.rerooter.environment import Environment, is_solution, replay
from icml26.rerooter.evaluators import Evaluator, NetEvaluator, UniformPolicy
from icml26.rerooter.gym_env import PuzzleEnv
from icml26.rerooter.model import ConvNetConfig, TwoHeadedConvNet
from icml26.rerooter.rerooters import ClusterRerooter, HeuristicRerooter, MixedRerooter
from icml26.rerooter.search import (
    Rerooter,
    SearchResult,
    SearchTree,
    rerooted_cost_reference,
    sqrt_lts,
)
from icml26.rerooter.sliding_tile import SlidingTile
from icml26.rerooter.sokoban import Sokoban, bundled_levels, load_boxoban, parse_boxoban

__all__ = [
    "METHODS",
    "AuthorsBootstrapConfig",
    "BootstrapConfig",
    "BootstrapHistory",
    "ClusterRerooter",
    "ConvNetConfig",
    "Environment",
    "Evaluator",
    "HeuristicRerooter",
    "MixedRerooter",
    "NetEvaluator",
    "PuzzleEnv",
    "Rerooter",
    "SearchResult",
    "SearchTree",
    "SlidingTile",
    "Sokoban",
    "TwoHeadedConvNet",
    "UniformPolicy",
    "bootstrap_train",
    "bootstrap_train_authors",
    "bundled_levels",
    "is_solution",
    "load_boxoban",
    "lts",
    "lts_cm_budget",
    "parse_boxoban",
    "phs_star",
    "replay",
    "rerooted_cost_reference",
    "run_search",
    "sqrt_lts",
]
