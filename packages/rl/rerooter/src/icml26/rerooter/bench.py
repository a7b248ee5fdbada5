"""``icml26-rerooter bench``: expansions per second of LTS, PHS* and √LTS, as ratios to LTS.

Every search runs on the same Boxoban test levels with the same budget, in one process and one
thread, with and without a network in the loop (``UniformPolicy(heuristic=True)`` vs an untrained
two-headed net through ``NetEvaluator``). The naive √LTS row recomputes each node's cost from the
definition (O(d^2) per node, the straightforward approach); the others use the incremental live-term
lists. Target: √LTS within 2x of LTS's expansion rate.

Whole searches expand different trees (a method that finds the goal sooner, or wanders into
cheaper states, shows a different rate), so a second table replays one and the same expansion
order (LTS's, at the same budget) through every method's bookkeeping (``best_first_search(...,
replay=...)``): the same nodes generated and evaluated, only the costs, rerooter and open-list
work differ. Its ratios are the price of the bookkeeping alone.
"""

import time
from dataclasses import dataclass

import torch

from icml26.rerooter.baselines import lts, phs_star
from icml26.rerooter.evaluators import NetEvaluator, UniformPolicy
from icml26.rerooter.model import ConvNetConfig, TwoHeadedConvNet
from icml26.rerooter.rerooters import ClusterRerooter, HeuristicRerooter, MixedRerooter
from icml26.rerooter.search import best_first_search, sqrt_lts
from icml26.rerooter.sokoban import bundled_levels
from icml26.testing.results import resolve_device
from icml26.testing.timing import torch_threads


@dataclass(frozen=True)
class BenchConfig:
    """Expansion rate of each search relative to LTS, with and without a network."""

    levels: int = 6
    """Bundled test levels searched by every method."""
    budget: int = 6000
    """Expansion budget per search."""
    naive_budget: int = 1500
    """Budget for the naive O(d^2) √LTS row (it is slow)."""
    network: bool = True
    """Also run with an (untrained) network as the evaluator."""
    blocks: int = 0
    """Residual blocks of that network."""
    seed: int = 0
    """Seeds the network's weights."""
    device: str = "auto"
    """auto (CUDA when present), cpu, cuda, cuda:N (where the network runs)"""


def _rate(fn, levels) -> tuple[float, int]:
    fn(levels[0])  # warm-up: lazy imports (igraph) and caches are not part of the rate
    expansions, seconds = 0, 0.0
    for env in levels:
        t = time.perf_counter()
        r = fn(env)
        seconds += time.perf_counter() - t
        expansions += r.expansions
    return expansions / max(seconds, 1e-9), expansions


def run_bench(cfg: BenchConfig) -> dict[str, dict[str, float]]:
    """Print and return {evaluator: {search: expansions/s}} plus ratios to LTS."""
    device = resolve_device(cfg.device)
    if cfg.levels < 1 or cfg.budget < 1 or cfg.naive_budget < 1:
        raise ValueError(f"levels, budget and naive_budget must be >= 1, got {cfg}")
    if cfg.levels > 1000:
        raise ValueError(f"the bundled test file has 1000 levels, asked for {cfg.levels}")
    with torch_threads(1, "cpu"):  # restored after: the caller's setting is theirs
        levels = bundled_levels("test")[: cfg.levels]
        evaluators = {"no network": UniformPolicy(heuristic=True)}
        if cfg.network:
            torch.manual_seed(cfg.seed)
            net = TwoHeadedConvNet(ConvNetConfig(blocks=cfg.blocks)).to(device)
            evaluators["network"] = NetEvaluator(net)
        b, nb = cfg.budget, cfg.naive_budget
        out: dict[str, dict[str, float]] = {}
        for ev_name, ev in evaluators.items():
            searches = {
                "LTS": lambda e, ev=ev: lts(e, ev, b),
                "PHS*": lambda e, ev=ev: phs_star(e, ev, b),
                "√LTS-H": lambda e, ev=ev: sqrt_lts(e, ev, HeuristicRerooter(), b),
                "√LTS-L": lambda e, ev=ev: sqrt_lts(e, ev, ClusterRerooter(), b),
                "√LTS-LH": lambda e, ev=ev: sqrt_lts(e, ev, MixedRerooter(), b),
                "√LTS-H naive O(d^2)": lambda e, ev=ev: sqrt_lts(
                    e, ev, HeuristicRerooter(), nb, naive=True
                ),
            }
            rates = {name: _rate(fn, levels) for name, fn in searches.items()}
            lts_rate = rates["LTS"][0]
            where = f" on {device}" if ev_name == "network" else ""
            print(f"\n{ev_name}{where}: {cfg.levels} Boxoban test levels, budget {b} (naive: {nb})")
            print(f"{'search':22s} {'expansions':>10s} {'exp/s':>9s} {'rate / LTS':>10s}")
            for name, (rate, n) in rates.items():
                print(f"{name:22s} {n:>10d} {rate:>9.0f} {rate / lts_rate:>10.2f}")
            out[ev_name] = {name: r for name, (r, _) in rates.items()}
            out[ev_name].update({f"{name} / LTS": r / lts_rate for name, (r, _) in rates.items()})
            same = _replay_rates(levels, ev, b, nb)
            print("same expansion order (LTS's, replayed through each method's bookkeeping):")
            print(f"{'search':22s} {'expansions':>10s} {'exp/s':>9s} {'rate / LTS':>10s}")
            for name, (rate, n) in same.items():
                print(f"{name:22s} {n:>10d} {rate:>9.0f} {rate / same['LTS'][0]:>10.2f}")
            out[f"{ev_name}, same trace"] = {
                **{name: r for name, (r, _) in same.items()},
                **{f"{name} / LTS": r / same["LTS"][0] for name, (r, _) in same.items()},
            }
        return out


def _replay_rates(levels, ev, budget: int, naive_budget: int) -> dict[str, tuple[float, int]]:
    """Expansions per second of each method's bookkeeping on LTS's own expansion order."""
    methods = {
        "LTS": ("d_pi", None, False),
        "PHS*": ("phs_star", None, False),
        "√LTS-H": ("rerooted", HeuristicRerooter, False),
        "√LTS-L": ("rerooted", ClusterRerooter, False),
        "√LTS-LH": ("rerooted", MixedRerooter, False),
        "√LTS-H naive O(d^2)": ("rerooted", HeuristicRerooter, True),
    }
    traces = [lts(env, ev, budget, trace=True).expansion_order for env in levels]
    out = {}
    for name, (priority, make, naive) in methods.items():
        expansions, seconds = 0, 0.0
        for env, order in zip(levels, traces, strict=True):
            order = order[:naive_budget] if naive else order
            rerooter = make() if make is not None else None
            t = time.perf_counter()
            r = best_first_search(
                env, ev, len(order), priority, rerooter, naive=naive, replay=order
            )
            seconds += time.perf_counter() - t
            expansions += r.expansions
        out[name] = (expansions / max(seconds, 1e-9), expansions)
    return out
