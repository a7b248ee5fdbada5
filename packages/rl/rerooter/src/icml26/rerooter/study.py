"""The headline experiment at small scale, on Boxoban.

(a) Search only, no learning: a uniform policy and the hand-written heuristic (sum of box-to-
    nearest-goal Manhattan distances) guide LTS, PHS*, √LTS-H, √LTS-L and √LTS-LH on the first
    levels of the unfiltered test set at one expansion budget; problems solved, expansions spent.
(b) Online training, judged by expansions: for each method and seed a fresh two-headed network
    (the seed fixes the initial weights, the same for every method) is trained with the authors'
    bootstrap loop (``bootstrap_train_authors``) on the 1000 bundled unfiltered training levels
    until the training searches have spent the same number of expansions (``expansion_cap``).
    The curve of problems solved against cumulative expansions is the paper's "online training
    efficiency"; its area (the mean share of training levels solved over the expansion axis) and
    the expansions spent until k levels were solved are the numbers judged. Each trained network
    then searches unfiltered test levels and medium validation levels at a fixed budget.

Verdict (``verdict``, one row per claim, rules fixed before the full run): the method is √LTS-LH
(the hybrid rerooter), the baselines are LTS and PHS*. Part (a) is deterministic and compared as
counts. In part (b) every comparison is paired by seed (same initial weights, same level order):
the mean of the per-seed differences with its 95% t-interval; "better" when the interval lies
above zero, "worse" when below, else a tie. A row is reproduced when √LTS-LH is better than both
baselines, partly when better than one, not reproduced otherwise.
  1. equal budget, search only: √LTS-LH solves more test levels than LTS and than PHS* (a);
  2. online training efficiency: a larger area under the solved-vs-expansions curve (b);
  3. online training efficiency: fewer expansions until k = 10% of the training levels are solved
     (per-seed log ratio baseline / √LTS-LH; a seed where √LTS-LH never gets there fails, a
     baseline that never gets there is charged the cap, which favours the baseline) (b);
  4. the trained network solves more unfiltered test levels (b);
  5. the trained network solves more medium validation levels (b);
  6. rerooting beats learned subgoals: untestable here (no subgoal method is built).
A row whose methods or part were not run (``--methods``, ``--skip-training``) is "untestable here".
"""

import math
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from icml26.rerooter.bootstrap import (
    METHOD_LABELS,
    METHODS,
    AuthorsBootstrapConfig,
    bootstrap_train_authors,
    run_search,
)
from icml26.rerooter.environment import is_solution
from icml26.rerooter.evaluators import NetEvaluator, UniformPolicy
from icml26.rerooter.model import ConvNetConfig, TwoHeadedConvNet
from icml26.rerooter.sokoban import bundled_levels, load_boxoban
from icml26.testing.command import DemoOptions
from icml26.testing.results import (
    resolve_device,
)

CURVE_POINTS = 200
"""The stored curves: problems solved at this many evenly spaced cumulative-expansion values."""


@dataclass(frozen=True)
class DemoConfig(DemoOptions):
    """√LTS with rerooters vs LTS and PHS* on Boxoban: search only, then online training.

    ``--quick``: few levels, small budgets, 2 seeds: finishes in seconds (numbers are not
    meaningful)."""

    seed: int = 0
    """First seed; (b) runs seeds seed, seed+1, ... (initial weights, level order, minibatches)."""
    seeds: int = 3
    """(b) Seeds per method."""
    methods: tuple[str, ...] = METHODS
    """Searches to compare (lts, phs_star, sqrt_lts_h, sqrt_lts_l, sqrt_lts_lh)."""
    test_file: Path | None = None
    """Boxoban file of test levels (default: the bundled unfiltered test/000); its last
    ``validation_levels`` levels are (b)'s validation set, never tested on."""
    train_file: Path | None = None
    """Boxoban file of training levels (default: the bundled unfiltered train/000)."""
    medium_file: Path | None = None
    """Boxoban file of the second test set of (b) (default: the bundled medium valid/000)."""
    test_levels: int = 20
    """(a) Test levels searched (the first ones of the test file)."""
    search_budget: int = 20000
    """(a) Expansion budget of the search-only comparison."""
    train_levels: int = 1000
    """(b) Training levels (the first ones of the training file)."""
    validation_levels: int = 32
    """(b) Validation levels of the authors' stop rule (the last ones of the test file)."""
    initial_budget: int = 1000
    """(b) Expansion budget of the first bootstrap iteration (the C++ starts at 4000)."""
    expansion_cap: int = 2_000_000
    """(b) Training stops after the chunk at which its searches spent this many expansions: the
    equal compute every method and seed gets."""
    solve_share: float = 0.1
    """(b) k of "expansions to solve k", as a share of the training levels."""
    eval_levels: int = 100
    """(b) Levels the trained networks search, from each test set."""
    eval_budget: int = 2000
    """(b) Expansion budget of those searches."""
    blocks: int = 0
    """Residual blocks of the network (0: conv stem + heads, fast on CPU)."""
    workers: int = 0
    """(b) Training runs in parallel processes, each single-threaded (0: one per CPU core).
    Only the wall time depends on it: every run is seeded on its own."""
    skip_training: bool = False
    """Run part (a) only."""
    plot: bool = True
    """Save solved.png (search-only bars, the online training curves, the trained networks)."""

    def quick_settings(self) -> dict:
        return dict(
            seeds=min(self.seeds, 2),
            test_levels=min(self.test_levels, 6),
            search_budget=min(self.search_budget, 2000),
            train_levels=min(self.train_levels, 24),
            validation_levels=min(self.validation_levels, 4),
            initial_budget=min(self.initial_budget, 200),
            expansion_cap=min(self.expansion_cap, 8000),
            eval_levels=min(self.eval_levels, 4),
            eval_budget=min(self.eval_budget, 300),
        )

    def validate(self) -> None:
        unknown = set(self.methods) - set(METHODS)
        if not self.methods or unknown:
            raise ValueError(f"methods must be a non-empty subset of {METHODS}, got {self.methods}")
        for name in (
            "seeds",
            "test_levels",
            "search_budget",
            "train_levels",
            "validation_levels",
            "initial_budget",
            "expansion_cap",
            "eval_levels",
            "eval_budget",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.blocks < 0:
            raise ValueError(f"blocks must be >= 0, got {self.blocks}")
        if self.workers < 0:
            raise ValueError(f"workers must be >= 0 (0: one per CPU core), got {self.workers}")
        if not 0 < self.solve_share <= 1:
            raise ValueError(f"solve_share must lie in (0, 1], got {self.solve_share}")


def _levels(path: Path | None, split: str, count: int | None = None):
    levels = load_boxoban(path) if path is not None else bundled_levels(split)
    if count is not None and count > len(levels):
        raise ValueError(f"asked for {count} {split} levels, the file has {len(levels)}")
    return levels if count is None else levels[:count]


def _test_sets(cfg: "DemoConfig"):
    """(unfiltered test levels, validation levels, medium levels) of (b); validation is the test
    file's tail so it never overlaps the levels tested on."""
    test = _levels(cfg.test_file, "test")
    need = max(cfg.eval_levels, cfg.test_levels) + cfg.validation_levels
    if need > len(test):
        raise ValueError(
            f"the test file has {len(test)} levels: too few for {need} "
            "(test/eval levels + validation levels, disjoint)"
        )
    medium = _levels(cfg.medium_file, "medium", cfg.eval_levels)
    return test[: cfg.eval_levels], test[len(test) - cfg.validation_levels :], medium


def _search_all(method, levels, evaluator, budget, desc=None, mix_epsilon=0.0):
    solved, expansions, seconds = 0, 0, 0.0
    for env in tqdm(levels, desc=desc, leave=False, disable=desc is None):
        t = time.perf_counter()
        r = run_search(method, env, evaluator, budget, mix_epsilon=mix_epsilon)
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


# ---- (b): one online-training run, and the numbers of its curve ----


def solved_at(curve: list, expansions) -> np.ndarray:
    """Problems solved (ever) once ``expansions`` cumulative expansions were spent: the step
    function of the bootstrap curve ``[(cumulative expansions, solved), ...]``."""
    e = np.asarray([p[0] for p in curve], dtype=float)
    s = np.asarray([p[1] for p in curve], dtype=float)
    idx = np.searchsorted(e, np.asarray(expansions, dtype=float), side="right") - 1
    return np.where(idx >= 0, s[np.clip(idx, 0, None)] if len(s) else 0.0, 0.0)


def curve_area(curve: list, cap: int, n: int) -> float:
    """The mean share of the ``n`` training problems solved over cumulative expansions in
    [0, cap]: the area under the online-training curve, normalised to [0, 1]. A run that stopped
    before the cap keeps its last count."""
    area, prev_e, prev_s = 0.0, 0.0, 0.0
    for e, s in curve:
        e = min(float(e), float(cap))
        area += prev_s * (e - prev_e)
        prev_e, prev_s = e, float(s)
        if e >= cap:
            break
    area += prev_s * (cap - prev_e)
    return area / (cap * n)


def expansions_to_solve(curve: list, k: int) -> int | None:
    """Cumulative expansions when the k-th problem was first solved (None: never)."""
    for e, s in curve:
        if s >= k:
            return int(e)
    return None


def train_one(method: str, seed: int, cfg: "DemoConfig", device: str) -> dict:
    """(b) for one method and seed: a fresh network, the authors' bootstrap up to the expansion
    cap, then the trained network on both test sets."""
    torch.set_num_threads(1)  # searches call the network on small batches: threads only add noise
    train = _levels(cfg.train_file, "train", cfg.train_levels)
    test, validation, medium = _test_sets(cfg)
    torch.manual_seed(seed)  # built on the CPU, then moved: the same weights on every device
    net = TwoHeadedConvNet(ConvNetConfig(blocks=cfg.blocks)).to(device)
    acfg = AuthorsBootstrapConfig(
        method=method,
        initial_budget=cfg.initial_budget,
        max_expansions=cfg.expansion_cap,
        seed=seed,
    )
    t = time.perf_counter()
    hist = bootstrap_train_authors(train, validation, net, acfg, progress=False)
    train_s = time.perf_counter() - t
    evaluator, eps = NetEvaluator(net), acfg.resolved_epsilon()
    tested = _search_all(method, test, evaluator, cfg.eval_budget, mix_epsilon=eps)
    med = _search_all(method, medium, evaluator, cfg.eval_budget, mix_epsilon=eps)
    k = max(1, math.ceil(cfg.solve_share * len(train)))
    grid = np.linspace(0, cfg.expansion_cap, CURVE_POINTS + 1)[1:]
    return {
        "method": method,
        "seed": seed,
        "area": curve_area(hist.curve, cfg.expansion_cap, len(train)),
        "expansions to solve k": expansions_to_solve(hist.curve, k),
        "train solved": hist.num_solved,
        "train expansions": hist.cumulative_expansions,
        "iterations": hist.iteration,
        "final budget": hist.rows[-1]["budget"] if hist.rows else cfg.initial_budget,
        "train seconds": round(train_s, 1),
        "test solved": tested["solved"],
        "medium solved": med["solved"],
        "curve": solved_at(hist.curve, grid).astype(int).tolist(),
        "rows": hist.rows,
        "device": str(next(net.parameters()).device),
    }


def _train_all(cfg: "DemoConfig", device: str) -> list[dict]:
    jobs = [(m, cfg.seed + i) for i in range(cfg.seeds) for m in cfg.methods]
    bar = tqdm(total=len(jobs), desc="(b) online training runs", leave=False)
    runs = []
    workers = cfg.workers or os.cpu_count() or 1
    if workers == 1 or len(jobs) == 1:
        for m, seed in jobs:
            bar.set_postfix_str(f"{METHOD_LABELS[m]} seed {seed}")
            runs.append(train_one(m, seed, cfg, device))
            bar.update()
    else:
        # spawn: a fresh interpreter per worker, never a fork of a process holding torch threads
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(min(workers, len(jobs)), mp_context=ctx) as pool:
            futures = [pool.submit(train_one, m, seed, cfg, device) for m, seed in jobs]
            for f in as_completed(futures):
                runs.append(f.result())
                bar.update()
    bar.close()
    order = {job: i for i, job in enumerate(jobs)}
    return sorted(runs, key=lambda r: order[(r["method"], r["seed"])])


def experiment(cfg: DemoConfig) -> dict:
    """(a) search only and (b) online training; the raw numbers (no verdict, no files)."""
    cfg.validate()
    cfg = cfg.resolved()
    device = resolve_device(cfg.device)
    test = _levels(cfg.test_file, "test", cfg.test_levels)
    if not cfg.skip_training:
        _test_sets(cfg)  # a file too short for (b) fails before (a) runs
    torch.set_num_threads(1)
    guide = UniformPolicy(heuristic=True)  # (a): uniform policy + hand-written heuristic
    search_only = {
        m: _search_all(m, test, guide, cfg.search_budget, f"(a) {METHOD_LABELS[m]}")
        for m in cfg.methods
    }
    # With --skip-training nothing runs in torch: (a)'s searches and guide are host-side NumPy, so
    # the host is the device that ran; (b) records the device its networks ran on.
    runs = [] if cfg.skip_training else _train_all(cfg, device)
    return {
        "n_test": len(test),
        "n_train": 0 if cfg.skip_training else cfg.train_levels,
        "n_eval": cfg.eval_levels,
        "cap": cfg.expansion_cap,
        "k": max(1, math.ceil(cfg.solve_share * cfg.train_levels)),
        "search_only": search_only,
        "runs": runs,
        "device": runs[0]["device"] if runs else "cpu",
    }
