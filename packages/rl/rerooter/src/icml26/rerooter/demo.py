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
from dataclasses import dataclass, replace
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
from icml26.testing.report import demo_config, finish_demo, print_verdicts, run_folder
from icml26.testing.results import (
    claim_row,
    control,
    judge,
    resolve_device,
    summarise,
)

PACKAGE = "icml26-rerooter"
METHOD, BASELINES = "sqrt_lts_lh", ("lts", "phs_star")
CURVE_POINTS = 200
"""The stored curves: problems solved at this many evenly spaced cumulative-expansion values."""


@dataclass(frozen=True)
class DemoConfig:
    """√LTS with rerooters vs LTS and PHS* on Boxoban: search only, then online training."""

    quick: bool = False
    """Few levels, small budgets, 2 seeds: finishes in seconds (numbers are not meaningful)."""
    out: Path | None = None
    """Run folder (default runs/rerooter/<timestamp>)."""
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
    device: str = "auto"
    """auto (CUDA when present), cpu, cuda, cuda:N (where the networks of (b) run)"""

    def resolved(self) -> "DemoConfig":
        if not self.quick:
            return self
        return replace(
            self,
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


# ---- verdict: a pure function of the numbers, one row per claim ----

CLAIMS = {
    "search": "at an equal expansion budget, √LTS-LH solves more problems than LTS and PHS* "
    "(search only, hand-written heuristic)",
    "area": "online training with √LTS-LH solves training problems with fewer expansions than "
    "with LTS and PHS* (area under the solved-vs-expansions curve at equal expansions)",
    "to_k": "online training with √LTS-LH reaches k solved training problems with fewer "
    "expansions than with LTS and PHS*",
    "test": "the network trained with √LTS-LH solves more unfiltered test levels than those "
    "trained with LTS and PHS*",
    "medium": "the network trained with √LTS-LH solves more medium levels than those trained "
    "with LTS and PHS*",
    "subgoal": "learning where to reroot is more efficient than learning subgoals",
}

# Two-sided 95% t quantiles by degrees of freedom (no SciPy dependency for a handful of seeds).
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306}


def interval(values) -> tuple[float, float, float]:
    """Mean and 95% t-interval (the mean itself for one value)."""
    v = np.asarray(values, dtype=float)
    m = float(v.mean())
    if len(v) < 2:
        return m, m, m
    df = len(v) - 1
    # beyond the table, the Cornish-Fisher expansion of t about the normal quantile
    t = _T975.get(df, 1.96 + (1.96**3 + 1.96) / (4 * df))
    h = t * float(v.std(ddof=1)) / math.sqrt(len(v))
    return m, m - h, m + h


def _by_seed(runs: list[dict], key: str) -> dict[str, dict[int, object]]:
    out: dict[str, dict[int, object]] = {}
    for r in runs:
        out.setdefault(r["method"], {})[r["seed"]] = r[key]
    return out


CALL = {"better": "reproduced", "worse": "not reproduced", "tie": "inconclusive"}
LEARNS = "online training improves every method's network on the validation levels"


def _claim_of(calls: list[str]) -> str:
    """Better than both baselines: reproduced; than one: partly; worse than both: not
    reproduced; otherwise (ties): inconclusive."""
    return summarise([CALL[c] for c in calls])


def _paired_row(claim: str, runs: list[dict], key: str, fmt: str, unit: str) -> dict:
    """√LTS-LH minus each baseline, paired by seed; better / tie / worse by the t-interval."""
    vals = _by_seed(runs, key)
    parts, calls = [], []
    for b in BASELINES:
        seeds = sorted(set(vals[METHOD]) & set(vals[b]))
        m, lo, hi = interval([vals[METHOD][s] - vals[b][s] for s in seeds])
        call = "better" if lo > 0 else "worse" if hi < 0 else "tie"
        calls.append(call)
        ours = np.mean([vals[METHOD][s] for s in seeds])
        theirs = np.mean([vals[b][s] for s in seeds])
        parts.append(
            f"vs {METHOD_LABELS[b]}: {ours:{fmt}} vs {theirs:{fmt}}{unit}, difference "
            f"{m:+{fmt}} [{lo:+{fmt}}, {hi:+{fmt}}] over {len(seeds)} seeds ({call})"
        )
    return claim_row(claim, _claim_of(calls), "; ".join(parts), [LEARNS])


def _to_k_row(claim: str, runs: list[dict], k: int, cap: int) -> dict:
    """Per-seed log(expansions of the baseline / of √LTS-LH) to reach k solved problems."""
    vals = _by_seed(runs, "expansions to solve k")
    parts, calls = [], []
    for b in BASELINES:
        seeds = sorted(set(vals[METHOD]) & set(vals[b]))
        reached = all(vals[METHOD][s] is not None for s in seeds)
        ratios = [
            math.log((vals[b][s] or cap) / (vals[METHOD][s] or cap)) for s in seeds
        ]  # a baseline that never got there is charged the cap: in its favour
        m, lo, hi = interval(ratios)
        call = "better" if reached and lo > 0 else "worse" if hi < 0 else "tie"
        calls.append(call)
        missing = sum(vals[b][s] is None for s in seeds)
        ours_missing = sum(vals[METHOD][s] is None for s in seeds)
        parts.append(
            f"vs {METHOD_LABELS[b]}: ratio {math.exp(m):.2f} [{math.exp(lo):.2f}, "
            f"{math.exp(hi):.2f}] over {len(seeds)} seeds ({call}; never reached: "
            f"{METHOD_LABELS[b]} {missing}, √LTS-LH {ours_missing})"
        )
    return claim_row(
        claim, _claim_of(calls), f"k = {k}, cap {cap} expansions; " + "; ".join(parts), [LEARNS]
    )


def learns_control(runs: list[dict] | None) -> dict:
    """Positive control of the training rows: each method's network solves more validation
    levels by the end of online training than after its first iteration (on most seeds), so the
    comparisons are between learners."""
    if not runs:
        return control(LEARNS, "positive", False, "no training run")
    parts, ok = [], True
    for m in dict.fromkeys(r["method"] for r in runs):
        rs = [r for r in runs if r["method"] == m and r.get("rows")]
        first = [r["rows"][0]["validation_solved"] for r in rs]
        last = [r["rows"][-1]["validation_solved_ever"] for r in rs]
        up = sum(b > a for a, b in zip(first, last, strict=True))
        ok &= up * 2 > len(rs)
        parts.append(
            f"{METHOD_LABELS.get(m, m)} validation solved {np.mean(first):.1f} -> "
            f"{np.mean(last):.1f} (up on {up}/{len(rs)} seeds)"
        )
    return control(LEARNS, "positive", bool(ok), "; ".join(parts))


def verdict(results: dict) -> dict:
    """One row per claim from the numbers of :func:`experiment`, the training control,
    counts and the summary."""
    needed = {METHOD, *BASELINES}
    search, runs = results["search_only"], results["runs"]
    missing = f"needs {', '.join(sorted(needed))}; ran {', '.join(search)} (--methods)"
    if not needed <= set(search):
        search = runs = None
    elif not runs:
        runs, missing = None, "not run (--skip-training)"
    n_test = results["n_test"]
    if search is None:
        rows = [claim_row(CLAIMS["search"], "untestable here", missing)]
    else:
        ours = search[METHOD]["solved"]
        holds = all(ours > search[b]["solved"] for b in BASELINES)
        theirs = ", ".join(f"{METHOD_LABELS[b]} {search[b]['solved']}/{n_test}" for b in BASELINES)
        rows = [
            claim_row(
                CLAIMS["search"],
                "reproduced" if holds else "not reproduced",
                f"solved: √LTS-LH {ours}/{n_test} vs {theirs} (rule: more than each)",
            )
        ]
    if runs is None:
        rows += [claim_row(CLAIMS[c], "untestable here", missing) for c in CLAIMS if c != "search"]
        rows[-1] = claim_row(CLAIMS["subgoal"], "untestable here", _NO_SUBGOAL)
    else:
        n_train, n_eval = results["n_train"], results["n_eval"]
        rows += [
            _paired_row(CLAIMS["area"], runs, "area", ".3f", f" (share of {n_train} solved)"),
            _to_k_row(CLAIMS["to_k"], runs, results["k"], results["cap"]),
            _paired_row(CLAIMS["test"], runs, "test solved", ".1f", f"/{n_eval}"),
            _paired_row(CLAIMS["medium"], runs, "medium solved", ".1f", f"/{n_eval}"),
            claim_row(CLAIMS["subgoal"], "untestable here", _NO_SUBGOAL),
        ]
    return judge(rows, [learns_control(runs)])


_NO_SUBGOAL = (
    "no subgoal-search method is built in this package (the README says why); √LTS is compared "
    "with LTS and PHS* only"
)


# ---- run: experiment -> verdict -> results.json, figure, table ----


def run_demo(cfg: DemoConfig) -> dict:
    """Run (a) and (b), write results.json (+ PNG) into the run folder, return the results."""
    cfg.validate()
    run_cfg = cfg.resolved()
    out = run_folder(cfg.out, "rerooter")
    start = time.perf_counter()
    raw = experiment(run_cfg)
    seconds = time.perf_counter() - start
    results = finish_demo(
        out,
        package=PACKAGE,
        module_file=__file__,
        cfg=cfg,
        experiment=f"Boxoban: (a) search only on {raw['n_test']} unfiltered test levels at "
        f"{run_cfg.search_budget} expansions; (b) the authors' bootstrap on {raw['n_train']} "
        f"unfiltered training levels from budget {run_cfg.initial_budget} up to "
        f"{run_cfg.expansion_cap} training expansions, {run_cfg.seeds} seeds; trained networks "
        f"on {run_cfg.eval_levels} unfiltered test and {run_cfg.eval_levels} medium levels at "
        f"{run_cfg.eval_budget}",
        claim="√LTS with (learned) rerooters solves more problems than LTS and PHS* at equal "
        "budget, and trains online with fewer expansions",
        headline=_headline(raw),
        judged=verdict(raw),
        metrics=_metrics(raw),
        seconds=seconds,
        # the worker count changes the wall time only, so it is not part of the command
        config=demo_config(PACKAGE, cfg, recorded=run_cfg, skip=("out", "workers")),
        seed=run_cfg.seed,
        device=raw["device"],
        data=_data_files(run_cfg),
        # what verdict() reads, so the rows can be recomputed from the file
        measurements={
            "curves": _curves(raw),
            "runs": [{k: v for k, v in r.items() if k != "curve"} for r in raw["runs"]],
            **{k: raw[k] for k in ("n_test", "n_train", "n_eval", "cap", "k", "search_only")},
        },
    )
    if run_cfg.plot:
        from icml26.rerooter.plots import plot_results

        plot_results(raw, out / "solved.png")
    _print_table(run_cfg, raw, results, out)
    return results


def _data_files(cfg) -> dict[str, Path]:
    """The Boxoban level files the run read (given, or bundled), for the fingerprints."""
    from importlib import resources

    from icml26.rerooter.sokoban import BUNDLED

    out = {}
    for split, given in (("test", cfg.test_file), ("train", cfg.train_file),
                         ("medium", cfg.medium_file)):  # fmt: skip
        path = (
            Path(given)
            if given
            else Path(str(resources.files("icml26.rerooter").joinpath("levels", BUNDLED[split])))
        )
        out[path.name] = path
    return out


def _curves(raw: dict) -> dict:
    """Per method: the expansion grid and, per seed, the problems solved at each grid point."""
    if not raw["runs"]:
        return {}
    grid = np.linspace(0, raw["cap"], CURVE_POINTS + 1)[1:].astype(int).tolist()
    out: dict = {}
    for r in raw["runs"]:
        out.setdefault(r["method"], {"expansions": grid, "solved": {}})
        out[r["method"]]["solved"][str(r["seed"])] = r["curve"]
    return out


def _summary(raw: dict) -> dict[str, dict]:
    """Per method, over seeds: mean and 95% interval of each judged number."""
    out: dict[str, dict] = {}
    for m in dict.fromkeys(r["method"] for r in raw["runs"]):
        rs = [r for r in raw["runs"] if r["method"] == m]
        row = {}
        for key in ("area", "train solved", "test solved", "medium solved", "train seconds"):
            row[key] = interval([r[key] for r in rs])
        reached = [r["expansions to solve k"] for r in rs]
        row["expansions to solve k"] = (
            interval(reached) if all(e is not None for e in reached) else None
        )
        row["reached k"] = sum(e is not None for e in reached)
        row["seeds"] = len(rs)
        out[m] = row
    return out


def _headline(raw: dict) -> str:
    """√LTS-LH against the baselines: (a) counts, (b) area under the curve and test levels."""
    ran = [m for m in (METHOD, *BASELINES) if m in raw["search_only"]]
    n = raw["n_test"]
    line = "test levels solved, search only: " + ", ".join(
        f"{METHOD_LABELS[m]} {raw['search_only'][m]['solved']}/{n}" for m in ran
    )
    if raw["runs"]:
        summary = _summary(raw)
        ran = [m for m in ran if m in summary]
        area = ", ".join(f"{METHOD_LABELS[m]} {summary[m]['area'][0]:.3f}" for m in ran)
        test = ", ".join(f"{METHOD_LABELS[m]} {summary[m]['test solved'][0]:.1f}" for m in ran)
        seeds = max(r["seeds"] for r in summary.values())
        line += (
            f"; online training (mean of {seeds} seeds), "
            f"area under solved-vs-expansions {area}; trained networks, unfiltered test levels "
            f"solved of {raw['n_eval']}: {test}"
        )
    return line


def _metrics(raw: dict) -> dict:
    search_only = raw["search_only"]
    summary = _summary(raw) if raw["runs"] else {}

    def group(m: str) -> dict:
        g = {
            "search-only solved": search_only[m]["solved"],
            "search-only expansions": search_only[m]["expansions"],
            "search-only expansions/s": round(search_only[m]["expansions/s"], 1),
        }
        for key, ci in summary.get(m, {}).items():
            if isinstance(ci, tuple):
                g[key] = round(ci[0], 4)
                g[f"{key} 95% low"] = round(ci[1], 4)
                g[f"{key} 95% high"] = round(ci[2], 4)
            elif ci is not None:
                g[key] = ci
        return g

    metrics = {METHOD_LABELS[m]: group(m) for m in search_only}
    metrics["method"] = metrics.get(METHOD_LABELS[METHOD], {})
    metrics["baseline"] = metrics.get(METHOD_LABELS["lts"], {})
    return metrics


def _print_table(cfg, raw, results, out) -> None:
    n_test = raw["n_test"]
    print(
        f"\n(a) search only, uniform policy + hand-written h, {n_test} test levels, "
        f"budget {cfg.search_budget}"
    )
    print(f"{'method':10s} {'solved':>8s} {'expansions':>11s} {'exp/s':>8s}")
    for m, r in raw["search_only"].items():
        print(
            f"{METHOD_LABELS[m]:10s} {r['solved']:>5d}/{n_test:<2d} {r['expansions']:>11d} "
            f"{r['expansions/s']:>8.0f}"
        )
    if raw["runs"]:
        summary = _summary(raw)
        print(
            f"\n(b) authors' bootstrap on {raw['n_train']} training levels up to {raw['cap']} "
            f"expansions, {cfg.seeds} seeds (mean [95% interval]); trained networks at "
            f"{cfg.eval_budget} expansions on {raw['n_eval']} levels"
        )
        to_k = f"exp. to k={raw['k']}"
        print(
            f"{'method':10s} {'area':>22s} {'train solved':>14s} {to_k:>16s}"
            f" {'test':>7s} {'medium':>7s}"
        )
        for m, r in summary.items():
            a = r["area"]
            to_k = r["expansions to solve k"]
            to_k = f"{to_k[0]:>16.0f}" if to_k else f"{'reached ' + str(r['reached k']):>16s}"
            print(
                f"{METHOD_LABELS[m]:10s} {a[0]:>8.3f} [{a[1]:.3f}, {a[2]:.3f}] "
                f"{r['train solved'][0]:>14.1f} {to_k} {r['test solved'][0]:>7.1f} "
                f"{r['medium solved'][0]:>7.1f}"
            )
    print("\nclaims:")
    print_verdicts(results, out)
