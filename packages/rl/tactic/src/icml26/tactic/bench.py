"""``icml26-tactic bench``: environment steps per second of the vectorised game, and learner
updates per second of every arm, as ratios to VDN's (the cheapest learner) in one run."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml26.tactic.baselines import ARMS
from icml26.testing.command import DeviceOption
from icml26.testing.results import resolve_device
from icml26.testing.timing import median_time, torch_threads


@dataclass(frozen=True)
class BenchConfig(DeviceOption):
    """Throughput of the game and of each learner's update (batch of episodes, one process)."""

    num_envs: int = 64
    batch: int = 32
    repeats: int = 20
    threads: int = 1
    """torch threads (1 gives steadier ratios on a shared CPU)."""


def run_bench(cfg: BenchConfig) -> dict[str, float]:
    """Environment steps per second and each arm's learner updates per second, as ratios to
    VDN's time measured in one run."""
    if min(cfg.num_envs, cfg.batch, cfg.repeats, cfg.threads) < 1:
        raise ValueError("--num-envs, --batch, --repeats and --threads must be >= 1")
    device = resolve_device(cfg.device)
    with torch_threads(cfg.threads, device):  # restored after: the caller's setting is theirs
        return _measure(cfg, device)


def _measure(cfg: BenchConfig, device: str) -> dict[str, float]:
    from icml26.tactic.baselines import arm_config
    from icml26.tactic.env import GameConfig, ShiftingDependencyGame
    from icml26.tactic.train import TrainConfig, _Run

    game = ShiftingDependencyGame(GameConfig(), cfg.num_envs, seed=0)
    rng = np.random.default_rng(0)
    acts = [rng.integers(0, game.n_actions, (cfg.num_envs, game.n_agents))
            for _ in range(game.episode_limit)]  # fmt: skip

    def episode():
        game.reset()
        for a in acts:
            game.step(a)

    sec = median_time(episode, cfg.repeats, warmup=1)
    env_rate = cfg.num_envs * game.episode_limit / sec
    print(f"game: {env_rate:,.0f} environment steps / s ({cfg.num_envs} envs, numpy)")

    def make_env(num_envs, seed):
        return ShiftingDependencyGame(GameConfig(), num_envs, seed)

    out = {"env_steps_per_s": env_rate}
    print(f"learner update (batch {cfg.batch} episodes x {game.episode_limit} steps) on {device}:")
    for arm in ARMS:
        tc = TrainConfig(batch=cfg.batch, buffer=cfg.batch, device=device, num_envs=cfg.batch)
        run = _Run(make_env, arm_config(arm), tc)
        ep, _ = run.play(run.env, 1.0, run.rng)
        run.buffer.add(ep)
        if run.predictor is not None:  # condition on a fitted predictor, as after pretraining
            run.predictor_ready = True
            if run.lcfg.freeze_predictor:
                run.predictor.freeze()
        sec = median_time(run.learn, cfg.repeats, device, warmup=1)
        out[f"{arm} updates_per_s"] = 1 / sec
    vdn = 1 / out["VDN updates_per_s"]
    for arm in ARMS:
        sec = 1 / out[f"{arm} updates_per_s"]
        out[f"{arm} time_vs_vdn"] = sec / vdn
        print(f"  {arm:28s} {1 / sec:7.1f} updates / s   {sec / vdn:5.2f}x VDN's time")
    return out
