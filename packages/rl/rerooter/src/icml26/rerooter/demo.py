"""The headline experiment at small scale, on Boxoban.

(a) Search only, no learning: a uniform policy and the hand-written heuristic (sum of box-to-
    nearest-goal Manhattan distances) guide LTS, PHS*, √LTS-H, √LTS-L and √LTS-LH on the first
    levels of the unfiltered test set at one expansion budget; problems solved, expansions spent.
(b) Online bootstrap training: for each method a fresh two-headed network (same seed, same initial
    weights) is trained on the first training levels; the curve of problems solved against
    cumulative expansions is the paper's "online training efficiency"; then each trained network
    searches the test levels at a fixed budget.

Verdict rule, fixed before running: the method is √LTS-LH (the hybrid rerooter), the baselines are
LTS and PHS*. Claim (a) holds when √LTS-LH solves more test levels than both in search-only mode;
claim (b) when, after the same bootstrap schedule (same levels, budgets and iterations, so the
expansions spent are comparable), √LTS-LH has solved more training problems than both baselines
and solves at least as many test levels. Both -> reproduced, one -> partly, none -> not reproduced.
"""

import json
import time
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from importlib.metadata import version
from pathlib import Path

import torch
from tqdm.auto import tqdm

from icml26.rerooter.bootstrap import (
    METHOD_LABELS,
    METHODS,
    BootstrapConfig,
    bootstrap_train,
    run_search,
)
from icml26.rerooter.environment import is_solution
from icml26.rerooter.evaluators import NetEvaluator, UniformPolicy
from icml26.rerooter.model import ConvNetConfig, TwoHeadedConvNet, atomic_write_text
from icml26.rerooter.sokoban import bundled_levels, load_boxoban

PACKAGE = "icml26-rerooter"
METHOD, BASELINES = "sqrt_lts_lh", ("lts", "phs_star")


@dataclass(frozen=True)
class DemoConfig:
    """√LTS with rerooters vs LTS and PHS* on Boxoban: search only, then bootstrap training."""

    quick: bool = False
    """Few levels, small budgets: finishes in seconds (numbers are not meaningful)."""
    out: Path | None = None
    """Run folder (default runs/rerooter/<timestamp>)."""
    seed: int = 0
    """Seeds the networks' initial weights and minibatch order (searches are deterministic)."""
    methods: tuple[str, ...] = METHODS
    """Searches to compare (lts, phs_star, sqrt_lts_h, sqrt_lts_l, sqrt_lts_lh)."""
    test_file: Path | None = None
    """Boxoban file of test levels (default: the bundled unfiltered test/000)."""
    train_file: Path | None = None
    """Boxoban file of training levels (default: the bundled unfiltered train/000)."""
    test_levels: int = 20
    """Test levels used (the first ones of the file)."""
    search_budget: int = 20000
    """(a) Expansion budget of the search-only comparison."""
    train_levels: int = 60
    """(b) Training levels for the bootstrap."""
    initial_budget: int = 1000
    """(b) First bootstrap budget (doubled after an iteration without a new solve)."""
    iterations: int = 3
    """(b) Bootstrap iterations."""
    train_steps: int = 200
    """(b) Gradient steps per bootstrap iteration."""
    test_budget: int = 4000
    """(b) Expansion budget when the trained networks search the test levels."""
    blocks: int = 0
    """Residual blocks of the network (0: conv stem + heads, fast on CPU)."""
    skip_training: bool = False
    """Run part (a) only."""
    plot: bool = True
    """Save solved.png (search-only bars and the bootstrap curves)."""

    def resolved(self) -> "DemoConfig":
        if not self.quick:
            return self
        return replace(
            self,
            test_levels=min(self.test_levels, 6),
            search_budget=min(self.search_budget, 2000),
            train_levels=min(self.train_levels, 12),
            initial_budget=min(self.initial_budget, 300),
            iterations=1,
            train_steps=min(self.train_steps, 30),
            test_budget=min(self.test_budget, 500),
        )

    def validate(self) -> None:
        unknown = set(self.methods) - set(METHODS)
        if not self.methods or unknown:
            raise ValueError(f"methods must be a non-empty subset of {METHODS}, got {self.methods}")
        for name in (
            "test_levels",
            "search_budget",
            "train_levels",
            "initial_budget",
            "iterations",
            "train_steps",
            "test_budget",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.blocks < 0:
            raise ValueError(f"blocks must be >= 0, got {self.blocks}")


def _levels(path: Path | None, split: str, count: int):
    levels = load_boxoban(path) if path is not None else bundled_levels(split)
    if count > len(levels):
        raise ValueError(f"asked for {count} {split} levels, the file has {len(levels)}")
    return levels[:count]


def _search_all(method, levels, evaluator, budget, desc):
    solved, expansions, seconds = 0, 0, 0.0
    for env in tqdm(levels, desc=desc, leave=False):
        t = time.perf_counter()
        r = run_search(method, env, evaluator, budget)
        seconds += time.perf_counter() - t
        if r.solved and not is_solution(env, r.actions):  # never report an invalid solution
            raise RuntimeError(f"{method} returned an invalid solution on {env.name}")
        solved += r.solved
        expansions += r.expansions
    return {
        "solved": solved,
        "expansions": expansions,
        "expansions/s": expansions / max(seconds, 1e-9),
    }


def run_demo(cfg: DemoConfig) -> dict:
    """Run (a) and (b), write results.json (+ PNG) into the run folder, return the results."""
    cfg.validate()
    cfg = cfg.resolved()
    test = _levels(cfg.test_file, "test", cfg.test_levels)
    train = [] if cfg.skip_training else _levels(cfg.train_file, "train", cfg.train_levels)
    out = cfg.out or Path("runs") / "rerooter" / datetime.now().strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)  # searches call the network on small batches: threads only add noise
    start = time.perf_counter()

    # (a) search only: uniform policy + hand-written heuristic
    guide = UniformPolicy(heuristic=True)
    search_only = {
        m: _search_all(m, test, guide, cfg.search_budget, f"(a) {METHOD_LABELS[m]}")
        for m in cfg.methods
    }

    # (b) online bootstrap training, then test
    boot: dict[str, dict] = {}
    curves: dict[str, list] = {}
    for m in [] if cfg.skip_training else cfg.methods:
        torch.manual_seed(cfg.seed)  # the same initial network for every method
        net = TwoHeadedConvNet(ConvNetConfig(blocks=cfg.blocks))
        bcfg = BootstrapConfig(
            method=m,
            initial_budget=cfg.initial_budget,
            max_budget=max(cfg.initial_budget * 2**cfg.iterations, cfg.initial_budget),
            iterations=cfg.iterations,
            train_steps=cfg.train_steps,
            seed=cfg.seed,
        )
        t = time.perf_counter()
        hist = bootstrap_train(train, net, bcfg)
        train_s = time.perf_counter() - t
        tested = _search_all(
            m, test, NetEvaluator(net), cfg.test_budget, f"(b) test {METHOD_LABELS[m]}"
        )
        boot[m] = {
            "train solved": hist.num_solved,
            "train expansions": hist.cumulative_expansions,
            "train seconds": train_s,
            "test solved": tested["solved"],
            "test expansions": tested["expansions"],
        }
        curves[m] = [list(p) for p in hist.curve]

    verdict, rule = _verdict(cfg, search_only, boot)
    seconds = time.perf_counter() - start

    def group(m: str) -> dict:
        g = {
            "search-only solved": search_only[m]["solved"],
            "search-only expansions": search_only[m]["expansions"],
            "search-only expansions/s": round(search_only[m]["expansions/s"], 1),
        }
        g.update(
            {k: (round(v, 2) if isinstance(v, float) else v) for k, v in boot.get(m, {}).items()}
        )
        return g

    metrics = {METHOD_LABELS[m]: group(m) for m in cfg.methods}
    if METHOD in cfg.methods:
        metrics["method"] = metrics[METHOD_LABELS[METHOD]]
    if "lts" in cfg.methods:
        metrics["baseline"] = metrics[METHOD_LABELS["lts"]]
    metrics.setdefault("method", {})
    metrics.setdefault("baseline", {})
    results = {
        "package": PACKAGE,
        "version": version(PACKAGE),
        "experiment": f"Boxoban unfiltered: (a) search only on {len(test)} test levels at "
        f"{cfg.search_budget} expansions; (b) bootstrap on {len(train)} training levels "
        f"({cfg.iterations} iterations from budget {cfg.initial_budget}), "
        f"test at {cfg.test_budget}",
        "claim": "√LTS with (learned) rerooters solves more problems than LTS and PHS* at equal "
        "budget, and trains online with fewer expansions",
        "metrics": metrics,
        "verdict": verdict,
        "verdict rule": rule,
        "seconds": round(seconds, 2),
        "config": json.loads(json.dumps(asdict(cfg), default=str)),
        "seed": cfg.seed,
        "device": "cpu",
        "torch": torch.__version__,
        "curves": curves,
    }
    atomic_write_text(out / "results.json", json.dumps(results, indent=2))
    if cfg.plot:
        from icml26.rerooter.plots import plot_results

        plot_results(search_only, curves, len(test), len(train), out / "solved.png")
    _print_table(cfg, search_only, boot, len(test), len(train), verdict, out, seconds)
    return results


def _verdict(cfg: DemoConfig, search_only: dict, boot: dict) -> tuple[str, str]:
    needed = {METHOD, *BASELINES}
    if not needed <= set(cfg.methods):
        return "not reproduced", f"the verdict needs methods {sorted(needed)}; some were not run"
    a = all(search_only[METHOD]["solved"] > search_only[b]["solved"] for b in BASELINES)
    parts = [f"(a) √LTS-LH solves more than LTS and PHS* in search only: {a}"]
    held = int(a)
    if boot:
        b_ok = all(
            boot[METHOD]["train solved"] > boot[b]["train solved"]
            and boot[METHOD]["test solved"] >= boot[b]["test solved"]
            for b in BASELINES
        )
        parts.append(
            "(b) after the same bootstrap schedule, √LTS-LH has solved more training problems "
            f"than LTS and PHS*, and at least as many test levels: {b_ok}"
        )
        held += b_ok
        total = 2
    else:
        total = 1
    verdict = "reproduced" if held == total else "partly" if held > 0 else "not reproduced"
    return verdict, "; ".join(parts)


def _print_table(cfg, search_only, boot, n_test, n_train, verdict, out, seconds) -> None:
    print(
        f"\n(a) search only, uniform policy + hand-written h, {n_test} test levels, "
        f"budget {cfg.search_budget}"
    )
    print(f"{'method':10s} {'solved':>8s} {'expansions':>11s} {'exp/s':>8s}")
    for m, r in search_only.items():
        print(
            f"{METHOD_LABELS[m]:10s} {r['solved']:>5d}/{n_test:<2d} {r['expansions']:>11d} "
            f"{r['expansions/s']:>8.0f}"
        )
    if boot:
        print(
            f"\n(b) bootstrap on {n_train} training levels ({cfg.iterations} iterations from "
            "budget "
            f"{cfg.initial_budget}); test budget {cfg.test_budget}"
        )
        print(f"{'method':10s} {'train solved':>12s} {'train exp':>10s} {'test solved':>11s}")
        for m, r in boot.items():
            print(
                f"{METHOD_LABELS[m]:10s} {r['train solved']:>8d}/{n_train:<3d} "
                f"{r['train expansions']:>10d} {r['test solved']:>8d}/{n_test:<2d}"
            )
    print(f"\nverdict: {verdict}   ({seconds:.0f} s; results in {out})")
