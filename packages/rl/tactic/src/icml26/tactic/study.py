"""``icml26-tactic demo``: TACTIC against CASEC, DCG, QMIX, VDN and three ablations on the
shifting-dependency game (or, with ``--env sumo``, SUMO traffic-signal control).

Every arm gets the same environment steps, the same trainer and the same seeds. Per seed and arm:
greedy test success before and after the task switch (share of steps with every required pair
formed), test return, and for the class-conditioned arms the abstraction's adjusted Rand index
against the hidden task types and the frozen predictor's held-out accuracy; for the graph arms,
how often each edge is kept under each task type.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

from tqdm.auto import tqdm

from icml26.tactic.baselines import ARMS
from icml26.tactic.verdict import SUMO_ARMS
from icml26.testing.command import DemoOptions
from icml26.testing.results import (
    resolve_device,
)


@dataclass(frozen=True)
class DemoConfig(DemoOptions):
    """TACTIC vs CASEC, DCG, QMIX, VDN and ablations at equal environment steps.

    ``--quick``: smoke run: one seed, a few hundred steps."""

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

    def quick_settings(self) -> dict:
        return dict(seeds=1, steps=480, sumo_steps=72, sumo_seconds=360)


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


# -- the experiment ----------------------------------------------------------------------------
def experiment(cfg: DemoConfig, progress: bool = True) -> dict:
    """Train and test every arm on every seed; raw per-run rows."""
    from icml26.tactic.baselines import arm_config
    from icml26.tactic.env import GameConfig, ShiftingDependencyGame
    from icml26.tactic.train import train

    cfg.check()
    cfg = cfg.resolved()
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
    from icml26.tactic.baselines import arm_config
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
