"""``icml26-tactic demo``: TACTIC against CASEC, DCG, QMIX, VDN and three ablations on the
shifting-dependency game (or, with ``--env sumo``, SUMO traffic-signal control).

Every arm gets the same environment steps, the same trainer and the same seeds. Per seed and arm:
greedy test success before and after the task switch (share of steps with every required pair
formed), test return, and for the class-conditioned arms the abstraction's adjusted Rand index
against the hidden task types and the frozen predictor's held-out accuracy; for the graph arms,
how often each edge is kept under each task type.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal

import numpy as np
from tqdm.auto import tqdm

from icml26.tactic.learner import ARMS
from icml26.testing.report import demo_config, finish_demo, jsonable, print_verdicts, run_folder
from icml26.testing.results import (
    claim_row,
    control,
    judge,
    resolve_device,
)

T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)
BASELINES = ("CASEC", "DCG", "QMIX", "VDN")
SUMO_ARMS = ("TACTIC", "CASEC", "QMIX")


@dataclass(frozen=True)
class DemoConfig:
    """TACTIC vs CASEC, DCG, QMIX, VDN and ablations at equal environment steps."""

    env: Literal["game", "sumo"] = "game"
    """game: the shifting-dependency game; sumo: SUMO 2x2grid traffic signals (needs the
    ``sumo`` extra) against a fixed-time controller."""
    seeds: int = 5
    steps: int = 40_000
    """Environment steps per arm and seed (game; over all parallel environments)."""
    arms: tuple[str, ...] = tuple(ARMS)
    sumo_steps: int = 7200
    """Environment steps (agent decisions of 5 s each) per arm and seed on SUMO."""
    sumo_seconds: int = 1800
    """Simulated seconds per SUMO episode."""
    quick: bool = False
    """Smoke run: one seed, a few hundred steps."""
    device: str = "auto"
    """auto (CUDA when present), cpu, cuda, cuda:N."""
    out: Path | None = None
    """Run folder (default runs/tactic/<timestamp>)."""

    def check(self) -> None:
        if not self.quick and self.seeds < 2:
            raise ValueError("--seeds must be >= 2 (an interval needs two)")
        if min(self.steps, self.sumo_steps, self.sumo_seconds) < 1:
            raise ValueError("--steps, --sumo-steps and --sumo-seconds must be >= 1")
        arms = SUMO_ARMS if self.env == "sumo" else self.arms
        unknown = [a for a in arms if a not in ARMS]
        if unknown:
            raise ValueError(f"unknown arms {unknown}; choose from {list(ARMS)}")
        if not arms:
            raise ValueError("--arms must name at least one arm")

    def effective(self) -> DemoConfig:
        if not self.quick:
            return self
        return replace(self, seeds=1, steps=480, sumo_steps=72, sumo_seconds=360)


def train_config(cfg: DemoConfig, seed: int, device: str):
    from icml26.tactic.train import TrainConfig

    if cfg.env == "sumo":
        # one simulation of num_seconds / 5 decisions per episode: few, long episodes, so
        # small episode batches, more updates per episode, a shorter abstraction fit
        return TrainConfig(steps=cfg.sumo_steps, num_envs=1, batch=4, buffer=200,
                           updates_per_rollout=8, target_every=5,
                           eval_every=max(1, cfg.sumo_steps // 4), eval_episodes=1,
                           final_eval_episodes=1, vq_steps=300, predictor_steps=100,
                           save_every=10**9, seed=seed, device=device)  # fmt: skip
    if cfg.quick:
        return TrainConfig(steps=cfg.steps, batch=8, buffer=100, eval_every=240, eval_episodes=8,
                           final_eval_episodes=16, vq_steps=20, predictor_steps=10,
                           pretrain_frac=0.25, target_every=16, seed=seed,
                           device=device)  # fmt: skip
    return TrainConfig(steps=cfg.steps, seed=seed, device=device)


def claims() -> dict[str, str]:
    """The paper's claims on the shifting-dependency game, one verdict row each."""
    # the first three rows are the expected order TACTIC >= CASEC > DCG > QMIX after the switch
    return {
        "vs_casec": "TACTIC matches or beats CASEC after the task switch",
        "casec_vs_dcg": "CASEC (pruned graph) beats DCG (full graph) after the switch",
        "dcg_vs_qmix": "DCG beats QMIX after the switch",
        "best": "TACTIC beats the strongest baseline (CASEC, DCG, QMIX, VDN) after the switch",
        "abstraction": "trajectory abstraction of joint observations finds the hidden task types "
        "(adjusted Rand index of the classes against the types > 0)",
        "predictor": "the frozen class predictor recognises the class from one agent's "
        "observation history (held-out accuracy above always guessing the most frequent class)",
        "frozen": "freezing the predictor is at least as good as training it with the TD loss",
        "variance": "pruning by payoff variance beats pruning at random (same share of edges)",
        "sparse": "the pruned graph is at least as good as the full graph with the same "
        "conditioning (TACTIC vs TACTIC with no pruning)",
    }


def paired_interval(diffs: list[float]) -> tuple[float, float | None, float | None]:
    """Mean of paired differences and its two-sided 95% Student-t interval (None: one seed)."""
    m = sum(diffs) / len(diffs)
    if len(diffs) < 2:
        return m, None, None
    sd = math.sqrt(sum((d - m) ** 2 for d in diffs) / (len(diffs) - 1))
    h = T_975[min(len(diffs), len(T_975) + 1) - 2] * sd / math.sqrt(len(diffs))
    return m, m - h, m + h


def _per_seed(raw: dict, arm: str, metric: str) -> dict[int, float]:
    return {r["seed"]: r[metric] for r in raw["runs"] if r["arm"] == arm and metric in r}


def compare(raw: dict, a: str, b: str | tuple[str, ...], metric: str = "success_after",
            at_least: bool = False, lower_is_better: bool = False) -> tuple[str, str]:  # fmt: skip
    """Paired comparison of arm ``a`` with ``b`` (the strongest by mean of several) over seeds.

    The 95% interval of the paired difference decides: above 0, reproduced; below 0, not
    reproduced; holding 0, a tie: inconclusive, for strict claims (a beats b) and ``at_least``
    claims (a >= b) alike (a tie is consistent with >= but does not show it).
    """
    sign = -1.0 if lower_is_better else 1.0
    if isinstance(b, tuple):
        means = {x: sum(v.values()) / len(v) for x in b if (v := _per_seed(raw, x, metric))}
        if not means:
            return "untestable here", f"none of {b} ran"
        b = max(means, key=lambda x: sign * means[x])
    ra, rb = _per_seed(raw, a, metric), _per_seed(raw, b, metric)
    seeds = sorted(set(ra) & set(rb))
    if not seeds:
        return "untestable here", f"{a} or {b} did not run"
    m, lo, hi = paired_interval([ra[s] - rb[s] for s in seeds])
    text = (f"{metric}: {a} {np.mean([ra[s] for s in seeds]):.3f} vs {b} "
            f"{np.mean([rb[s] for s in seeds]):.3f}; difference {m:+.3f}"
            f"{' (lower is better)' if lower_is_better else ''}")  # fmt: skip
    if lo is None:
        return "untestable here", text + " (one seed: no interval)"
    text += f", 95% CI [{lo:+.3f}, {hi:+.3f}] over {len(seeds)} seeds"
    lo, hi = sorted((sign * lo, sign * hi))  # in the direction of "better"
    if lo > 0:
        return "reproduced", text
    if hi < 0:
        return "not reproduced", text + " (worse)"
    return "inconclusive", text + (
        " (a tie: consistent with >=, not shown)" if at_least else " (a tie: the interval holds 0)"
    )


def _above(raw: dict, arm: str, metric: str, floor: float | str, what: str
           ) -> tuple[str, str]:  # fmt: skip
    """Is ``metric`` above ``floor`` (a number, or another metric of the same run: paired per
    seed) with 95% confidence over seeds?"""
    vals = _per_seed(raw, arm, metric)
    floors = _per_seed(raw, arm, floor) if isinstance(floor, str) else dict.fromkeys(vals, floor)
    seeds = sorted(set(vals) & set(floors))
    if not seeds:
        return "untestable here", f"{arm} has no {metric}" + (
            f" or {floor}" if isinstance(floor, str) else ""
        )
    m, lo, hi = paired_interval([vals[s] - floors[s] for s in seeds])
    null = float(np.mean([floors[s] for s in seeds]))
    text = f"{what}: {np.mean([vals[s] for s in seeds]):.3f} (null {null:.3f}); " \
        f"difference {m:+.3f}"  # fmt: skip
    if lo is None:
        return "untestable here", text + " (one seed: no interval)"
    text += f", 95% CI [{lo:+.3f}, {hi:+.3f}] over {len(seeds)} seeds"
    if lo > 0:
        return "reproduced", text
    if hi < 0:
        return "not reproduced", text + " (below the null)"
    return "inconclusive", text + " (the interval holds the null)"


LEARNS = "a coordination-graph learner solves the game after the switch"
LEARNS_FLOOR = 0.5
SUMO_LEARNS = "a learned baseline controller beats the fixed-time plan"


def _learns(raw: dict) -> dict:
    """Positive control: the game is learnable at this budget. The full coordination graph
    (DCG) reaches at least ``LEARNS_FLOOR`` success after the switch (mean over seeds); if no
    graph learner does, comparisons among graph learners read noise."""
    vals = _per_seed(raw, "DCG", "success_after")
    if not vals:
        return control(LEARNS, "positive", False, "DCG did not run")
    mean = float(np.mean(list(vals.values())))
    return control(
        LEARNS, "positive", mean >= LEARNS_FLOOR,
        f"DCG success after the switch {mean:.3f} over {len(vals)} seeds (floor {LEARNS_FLOOR})",
    )  # fmt: skip


def verdict(raw: dict) -> dict:
    """One row per claim of :func:`claims` (game), the learnability control, counts, summary;
    a SUMO run's measurements (``env`` "sumo") are judged by :func:`sumo_verdict`."""
    if raw.get("env", raw.get("config", {}).get("env")) == "sumo":
        return sumo_verdict(raw)
    c = claims()
    rows = [
        claim_row(c["vs_casec"], *compare(raw, "TACTIC", "CASEC", at_least=True), [LEARNS]),
        claim_row(c["casec_vs_dcg"], *compare(raw, "CASEC", "DCG"), [LEARNS]),
        claim_row(c["dcg_vs_qmix"], *compare(raw, "DCG", "QMIX"), [LEARNS]),
        claim_row(c["best"], *compare(raw, "TACTIC", BASELINES), [LEARNS]),
        claim_row(c["abstraction"], *_above(raw, "TACTIC", "class_ari", 0.0, "class ARI")),
        claim_row(
            c["predictor"],
            *_above(raw, "TACTIC", "predictor_acc", "predictor_majority", "predictor accuracy"),
        ),
        claim_row(
            c["frozen"],
            *compare(raw, "TACTIC", "TACTIC, predictor trained", at_least=True),
            [LEARNS],
        ),
        claim_row(c["variance"], *compare(raw, "TACTIC", "TACTIC, random pruning"), [LEARNS]),
        claim_row(
            c["sparse"], *compare(raw, "TACTIC", "TACTIC, no pruning", at_least=True), [LEARNS]
        ),
    ]
    return judge(rows, [_learns(raw)])


def sumo_claims() -> dict[str, str]:
    return {
        "vs_fixed": "TACTIC lowers the mean waiting time below a fixed-time controller (SUMO)",
        "vs_qmix": "TACTIC lowers the mean waiting time below QMIX at equal steps (SUMO)",
        "vs_casec": "TACTIC's waiting time is at most CASEC's (SUMO)",
    }


def _sumo_learns(raw: dict) -> dict:
    """Positive control: RL learns traffic control here. The best learned baseline's (QMIX or
    CASEC; TACTIC itself is left out, so the control does not lean on the method's own numbers)
    mean waiting time lies below the fixed-time plan's (paired 95% interval), else comparing
    TACTIC with baselines that never learned says nothing."""
    m = "mean_waiting_time"
    learned = [a for a in SUMO_ARMS if a != "TACTIC" and _per_seed(raw, a, m)]
    if not learned or not _per_seed(raw, "fixed-time", m):
        return control(SUMO_LEARNS, "positive", False, "the learned arms or fixed-time did not run")
    best = min(learned, key=lambda a: float(np.mean(list(_per_seed(raw, a, m).values()))))
    verdict_, text = compare(raw, best, "fixed-time", m, lower_is_better=True)
    return control(SUMO_LEARNS, "positive", verdict_ == "reproduced", text)


def sumo_verdict(raw: dict) -> dict:
    c, m = sumo_claims(), "mean_waiting_time"
    rows = [
        claim_row(c["vs_fixed"], *compare(raw, "TACTIC", "fixed-time", m, lower_is_better=True)),
        claim_row(
            c["vs_qmix"], *compare(raw, "TACTIC", "QMIX", m, lower_is_better=True), [SUMO_LEARNS]
        ),
        claim_row(
            c["vs_casec"],
            *compare(raw, "TACTIC", "CASEC", m, at_least=True, lower_is_better=True),
            [SUMO_LEARNS],
        ),
    ]
    return judge(rows, [_sumo_learns(raw)])


# -- the experiment ----------------------------------------------------------------------------
def experiment(cfg: DemoConfig, progress: bool = True) -> dict:
    """Train and test every arm on every seed; raw per-run rows."""
    from icml26.tactic.env import GameConfig, ShiftingDependencyGame
    from icml26.tactic.learner import arm_config
    from icml26.tactic.train import train

    cfg.check()
    cfg = cfg.effective()
    device = resolve_device(cfg.device)
    if cfg.env == "sumo":
        return _sumo_experiment(cfg, device, progress)
    game = GameConfig()

    def make_env(num_envs, seed):
        return ShiftingDependencyGame(game, num_envs, seed)

    runs, curves, edges = [], {}, {}
    bar = tqdm(total=cfg.seeds * len(cfg.arms), desc="tactic demo", disable=not progress)
    for seed in range(cfg.seeds):
        for arm in cfg.arms:
            bar.set_postfix_str(f"seed {seed} {arm}")
            res = train(make_env, arm_config(arm), train_config(cfg, seed, device))
            row = {"arm": arm, "seed": seed, "seconds": round(res.seconds, 1),
                   **{k: v for k, v in res.final.items() if isinstance(v, float)},
                   **res.abstraction}  # fmt: skip
            runs.append(row)
            curves.setdefault(arm, []).append(res.curve)
            if "edge_counts" in res.final and seed == 0:
                edges[arm] = res.final["edge_counts"]
            bar.update()
    bar.close()
    return {"runs": runs, "curves": curves, "edge_counts": edges, "device": device,
            "n_classes": game.n_types, "game": asdict(game)}  # fmt: skip


def _sumo_experiment(cfg: DemoConfig, device: str, progress: bool) -> dict:
    from icml26.tactic.learner import arm_config
    from icml26.tactic.sumo import SumoGrid, fixed_time_metrics
    from icml26.tactic.train import train

    runs, curves = [], {}
    bar = tqdm(total=cfg.seeds * (len(SUMO_ARMS) + 1), desc="tactic sumo", disable=not progress)
    for seed in range(cfg.seeds):
        m = fixed_time_metrics(seed=seed, num_seconds=cfg.sumo_seconds)
        runs.append({"arm": "fixed-time", "seed": seed, **m})
        bar.update()
        for arm in SUMO_ARMS:

            def make_env(num_envs, s):
                return SumoGrid(num_seconds=cfg.sumo_seconds, seed=s)

            res = train(make_env, arm_config(arm), train_config(cfg, seed, device))
            final = {k: v for k, v in res.final.items() if isinstance(v, float)}
            runs.append({"arm": arm, "seed": seed, "seconds": round(res.seconds, 1), **final})
            curves.setdefault(arm, []).append(res.curve)
            bar.update()
    bar.close()
    return {"runs": runs, "curves": curves, "edge_counts": {}, "device": device, "n_classes": 3,
            "env": "sumo"}  # fmt: skip


def summary_table(raw: dict, keys: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """Mean and std over seeds of each metric per arm."""
    out: dict[str, dict[str, float]] = {}
    for arm in dict.fromkeys(r["arm"] for r in raw["runs"]):
        rows = [r for r in raw["runs"] if r["arm"] == arm]
        out[arm] = {}
        for k in keys:
            vals = [r[k] for r in rows if k in r]
            if vals:
                out[arm][k] = float(np.mean(vals))
                out[arm][f"{k}_std"] = float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0
    return out


def run_demo(cfg: DemoConfig) -> dict:
    """Run, judge, write results.json and the figures, print the table; return the results."""
    from icml26.tactic.plots import plot_curves, plot_edges

    cfg.check()
    eff = cfg.effective()
    out = run_folder(cfg.out, "tactic")
    t0 = time.perf_counter()
    raw = experiment(cfg)
    sumo = cfg.env == "sumo"
    if sumo:
        judged = verdict(raw)
        keys = ("mean_waiting_time", "return")
        method, baseline = "TACTIC", "fixed-time"
        m = summary_table(raw, keys)
        headline = (f"SUMO 2x2grid mean waiting time: TACTIC {m['TACTIC']['mean_waiting_time']:.1f}"
                    f" s, QMIX {m['QMIX']['mean_waiting_time']:.1f}, fixed-time "
                    f"{m['fixed-time']['mean_waiting_time']:.1f}")  # fmt: skip
    else:
        judged = verdict(raw)
        keys = ("success_before", "success_after", "return", "class_ari", "predictor_acc")
        m = summary_table(raw, keys)
        method = "TACTIC" if "TACTIC" in m else next(iter(m))
        baseline = next((b for b in BASELINES if b in m), method)
        headline = "success after the switch: " + ", ".join(
            f"{a} {m[a]['success_after']:.2f}" for a in ("TACTIC", *BASELINES) if a in m
        )
    metrics = {**m, "method": m[method], "baseline": m[baseline]}
    config = demo_config("icml26-tactic", cfg)
    config["train"] = jsonable(asdict(train_config(eff, 0, raw["device"])))
    results = finish_demo(
        out,
        package="icml26-tactic",
        module_file=__file__,
        cfg=cfg,
        experiment=(
            "SUMO 2x2grid traffic-signal control: TACTIC, CASEC, QMIX vs fixed-time"
            if sumo
            else "shifting-dependency game (4 agents, 3 task types, a switch "
            "mid-episode): TACTIC vs CASEC, DCG, QMIX, VDN and ablations at equal "
            "environment steps"
        ),
        claim="conditioning a sparse coordination graph on task classes from a frozen "
        "trajectory-abstraction predictor coordinates better when dependencies shift",
        headline=headline,
        judged=judged,
        metrics=metrics,
        seconds=time.perf_counter() - t0,
        config=config,
        seed=0,
        device=raw["device"],
        measurements={k: raw[k] for k in ("runs", "curves", "edge_counts")},
    )
    if "game" in raw:
        results["config"]["game"] = raw["game"]
    out.mkdir(parents=True, exist_ok=True)
    plot_curves(raw["curves"], out / "curves.png",
                "mean_waiting_time" if sumo else "success_after")  # fmt: skip
    if raw["edge_counts"]:
        plot_edges(raw["edge_counts"], out / "edges.png")
    print(f"\nicml26-tactic {results['version']}: {results['headline']}")
    for arm, v in m.items():
        print(f"  {arm:28s} " + "  ".join(f"{k} {v[k]:.3f}" for k in keys if k in v))
    print_verdicts(results, out)
    return results
