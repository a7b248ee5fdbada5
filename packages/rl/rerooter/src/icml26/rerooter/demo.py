"""The headline experiment at small scale, on Boxoban.

(a) Search only, no learning: a uniform policy and the hand-written heuristic (sum of box-to-
    nearest-goal Manhattan distances) guide LTS, PHS*, √LTS-H, √LTS-L and √LTS-LH on the first
    levels of the unfiltered test set at one expansion budget; problems solved, expansions spent.
(b) Online bootstrap training: for each method a fresh two-headed network (same seed, same initial
    weights) is trained on the first training levels; the curve of problems solved against
    cumulative expansions is the paper's "online training efficiency"; then each trained network
    searches the test levels at a fixed budget.

Verdict (``verdict``, one row per claim; rules fixed before the first run): the method is √LTS-LH
(the hybrid rerooter), the baselines are LTS and PHS*. Searches are deterministic and the demo
trains one seed, so the counts are compared as they are.
  1. equal budget, search only: √LTS-LH solves more test levels than LTS and than PHS* (a);
  2. online training efficiency: after the same bootstrap schedule (same levels, budgets and
     iterations), √LTS-LH has solved more training problems than LTS and than PHS* (b);
  3. the trained network: √LTS-LH with its network solves at least as many test levels as LTS and
     PHS* with theirs (b).
Rows 2-3 were one pooled rule before; the thresholds are unchanged. A row whose methods or part
were not run (``--methods``, ``--skip-training``) is "untestable here".
"""

import json
import time
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path

import torch
from tqdm.auto import tqdm

from icml26.rerooter._results import (
    as_smoke,
    claim_row,
    demo_command,
    package_version,
    resolve_device,
    summarise,
    write_results,
)
from icml26.rerooter.bootstrap import (
    METHOD_LABELS,
    METHODS,
    BootstrapConfig,
    bootstrap_train,
    run_search,
)
from icml26.rerooter.environment import is_solution
from icml26.rerooter.evaluators import NetEvaluator, UniformPolicy
from icml26.rerooter.model import ConvNetConfig, TwoHeadedConvNet
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
    device: str = "auto"
    """auto (CUDA when present), cpu, cuda, cuda:N (where the networks of (b) run)"""

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


def _bootstrap(method: str, train, test, cfg: DemoConfig, device: str) -> tuple[dict, list, str]:
    """(b) for one method: a fresh network (same initial weights for every method), bootstrap on
    the training levels, then search the test levels with it; (numbers, curve, device)."""
    torch.manual_seed(cfg.seed)  # built on the CPU, then moved: the same weights on every device
    net = TwoHeadedConvNet(ConvNetConfig(blocks=cfg.blocks)).to(device)
    bcfg = BootstrapConfig(
        method=method,
        initial_budget=cfg.initial_budget,
        max_budget=max(cfg.initial_budget * 2**cfg.iterations, cfg.initial_budget),
        iterations=cfg.iterations,
        train_steps=cfg.train_steps,
        seed=cfg.seed,
    )
    t = time.perf_counter()
    hist = bootstrap_train(train, net, bcfg)
    train_s = time.perf_counter() - t
    label = f"(b) test {METHOD_LABELS[method]}"
    tested = _search_all(method, test, NetEvaluator(net), cfg.test_budget, label)
    numbers = {
        "train solved": hist.num_solved,
        "train expansions": hist.cumulative_expansions,
        "train seconds": train_s,
        "test solved": tested["solved"],
        "test expansions": tested["expansions"],
    }
    return numbers, [list(p) for p in hist.curve], str(next(net.parameters()).device)


def experiment(cfg: DemoConfig) -> dict:
    """(a) search only and (b) bootstrap training; the raw counts (no verdict, no files)."""
    cfg.validate()
    cfg = cfg.resolved()
    device = resolve_device(cfg.device)
    test = _levels(cfg.test_file, "test", cfg.test_levels)
    train = [] if cfg.skip_training else _levels(cfg.train_file, "train", cfg.train_levels)
    torch.set_num_threads(1)  # searches call the network on small batches: threads only add noise
    guide = UniformPolicy(heuristic=True)  # (a): uniform policy + hand-written heuristic
    search_only = {
        m: _search_all(m, test, guide, cfg.search_budget, f"(a) {METHOD_LABELS[m]}")
        for m in cfg.methods
    }
    # With --skip-training nothing runs in torch: (a)'s searches and guide are host-side NumPy, so
    # the host is the device that ran; (b) records the device its networks ran on.
    ran_on = "cpu"
    boot, curves = {}, {}
    for m in [] if cfg.skip_training else cfg.methods:
        boot[m], curves[m], ran_on = _bootstrap(m, train, test, cfg, device)
    return {
        "n_test": len(test),
        "n_train": len(train),
        "search_only": search_only,
        "bootstrap": boot,
        "curves": curves,
        "device": ran_on,
    }


# ---- verdict: a pure function of the counts, one row per claim ----

CLAIMS = {
    "search": "at an equal expansion budget, √LTS-LH solves more problems than LTS and PHS* "
    "(search only, hand-written heuristic)",
    "online": "online bootstrap training with √LTS-LH solves more training problems than with LTS "
    "and PHS* for the same schedule (online training efficiency)",
    "trained": "the network trained with √LTS-LH solves at least as many test problems as those "
    "trained with LTS and PHS*",
}


def _count_row(claim: str, counts: dict | None, key: str, n: int, at_least: bool, why: str):
    """√LTS-LH's count against each baseline's: more (or at least as many) than every one."""
    if counts is None:
        return claim_row(claim, "untestable here", why)
    ours = counts[METHOD][key]
    holds = all(ours >= counts[b][key] if at_least else ours > counts[b][key] for b in BASELINES)
    theirs = ", ".join(f"{METHOD_LABELS[b]} {counts[b][key]}/{n}" for b in BASELINES)
    rule = "at least as many as" if at_least else "more than"
    evidence = f"{key}: √LTS-LH {ours}/{n} vs {theirs} (rule: {rule} each)"
    return claim_row(claim, "reproduced" if holds else "not reproduced", evidence)


def verdict(results: dict) -> tuple[list[dict], str]:
    """One row per claim from the counts of :func:`experiment`, and their summary."""
    needed = {METHOD, *BASELINES}
    search, boot = results["search_only"], results["bootstrap"]
    missing = f"needs {', '.join(sorted(needed))}; ran {', '.join(search)} (--methods)"
    if not needed <= set(search):
        search = boot = None
    elif not boot:
        boot, missing = None, "not run (--skip-training)"
    n_test, n_train = results["n_test"], results["n_train"]
    claims = [
        _count_row(CLAIMS["search"], search, "solved", n_test, False, missing),
        _count_row(CLAIMS["online"], boot, "train solved", n_train, False, missing),
        _count_row(CLAIMS["trained"], boot, "test solved", n_test, True, missing),
    ]
    if boot is not None:  # the expansions the schedule spent, for the reader
        spent = ", ".join(
            f"{METHOD_LABELS[m]} {boot[m]['train expansions']}" for m in (METHOD, *BASELINES)
        )
        claims[1]["evidence"] += f"; cumulative expansions {spent}"
    return claims, summarise([r["verdict"] for r in claims])


# ---- run: experiment -> verdict -> results.json, figure, table ----


def run_demo(cfg: DemoConfig) -> dict:
    """Run (a) and (b), write results.json (+ PNG) into the run folder, return the results."""
    cfg.validate()
    run_cfg = cfg.resolved()
    out = cfg.out or Path("runs") / "rerooter" / datetime.now().strftime("%Y%m%d-%H%M%S")
    start = time.perf_counter()
    raw = experiment(run_cfg)
    claims, verdict_ = verdict(raw)
    if run_cfg.quick:
        claims, verdict_ = as_smoke(claims)
    seconds = time.perf_counter() - start
    config = json.loads(json.dumps(asdict(run_cfg), default=str))
    results = {
        "package": PACKAGE,
        "version": package_version(PACKAGE, __file__),
        "experiment": f"Boxoban unfiltered: (a) search only on {raw['n_test']} test levels at "
        f"{run_cfg.search_budget} expansions; (b) bootstrap on {raw['n_train']} training levels "
        f"({run_cfg.iterations} iterations from budget {run_cfg.initial_budget}), "
        f"test at {run_cfg.test_budget}",
        "claim": "√LTS with (learned) rerooters solves more problems than LTS and PHS* at equal "
        "budget, and trains online with fewer expansions",
        "headline": _headline(raw),
        "claims": claims,
        "metrics": _metrics(raw),
        "verdict": verdict_,
        "quick": run_cfg.quick,
        "seconds": round(seconds, 2),
        "config": config | {"command": demo_command("icml26-rerooter", cfg)},
        "seed": run_cfg.seed,
        "device": raw["device"],
        "torch": torch.__version__,
        "curves": raw["curves"],
    }
    write_results(out / "results.json", results)
    if run_cfg.plot:
        from icml26.rerooter.plots import plot_results

        plot_results(
            raw["search_only"], raw["curves"], raw["n_test"], raw["n_train"], out / "solved.png"
        )
    _print_table(run_cfg, raw, claims, verdict_, out, seconds)
    return results


def _headline(raw: dict) -> str:
    """√LTS-LH against the baselines, in counts: (a) test levels, (b) training / test problems."""

    def counts(part: dict, key: str, n: int) -> str:
        ran = [m for m in (METHOD, *BASELINES) if m in part]
        return ", ".join(f"{METHOD_LABELS[m]} {part[m][key]}/{n}" for m in ran)

    line = f"test levels solved, search only: {counts(raw['search_only'], 'solved', raw['n_test'])}"
    if raw["bootstrap"]:
        boot, n_train, n_test = raw["bootstrap"], raw["n_train"], raw["n_test"]
        line += (
            f"; after bootstrap, training problems solved {counts(boot, 'train solved', n_train)}"
            f", test levels {counts(boot, 'test solved', n_test)}"
        )
    return line


def _metrics(raw: dict) -> dict:
    search_only, boot = raw["search_only"], raw["bootstrap"]

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

    metrics = {METHOD_LABELS[m]: group(m) for m in search_only}
    metrics["method"] = metrics.get(METHOD_LABELS[METHOD], {})
    metrics["baseline"] = metrics.get(METHOD_LABELS["lts"], {})
    return metrics


def _print_table(cfg, raw, claims, verdict_, out, seconds) -> None:
    n_test, n_train = raw["n_test"], raw["n_train"]
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
    if raw["bootstrap"]:
        print(
            f"\n(b) bootstrap on {n_train} training levels ({cfg.iterations} iterations from "
            f"budget {cfg.initial_budget}); test budget {cfg.test_budget}"
        )
        print(f"{'method':10s} {'train solved':>12s} {'train exp':>10s} {'test solved':>11s}")
        for m, r in raw["bootstrap"].items():
            print(
                f"{METHOD_LABELS[m]:10s} {r['train solved']:>8d}/{n_train:<3d} "
                f"{r['train expansions']:>10d} {r['test solved']:>8d}/{n_test:<2d}"
            )
    print("\nclaims:")
    for r in claims:
        print(f"  {r['verdict']:<15} {r['claim']}\n  {'':<15} {r['evidence']}")
    print(f"\nverdict: {verdict_}   ({seconds:.0f} s; results in {out})")
