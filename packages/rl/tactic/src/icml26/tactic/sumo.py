"""SUMO traffic-signal control through sumo-rl, as a vectorised environment for the trainer.

``pip install icml26-tactic[sumo]`` brings the simulator (``eclipse-sumo``), its in-process
binding (``libsumo``) and sumo-rl's networks. sumo-rl's ``SumoEnvironment`` dict API is used
directly (its PettingZoo wrapper breaks on current PettingZoo), with libsumo for speed: libsumo
allows one simulation per process, so this environment runs one simulation (``num_envs = 1``,
evaluation in place); under ``torchrun`` each rank runs its own.

The agents are the 2x2grid's four traffic signals; each chooses the next green phase every
``delta_time`` simulated seconds; observations are sumo-rl's default (phase one-hot, min-green
flag, lane densities and queues), the state is their concatenation, and the team reward is the
sum of the signals' ``diff-waiting-time`` rewards. An episode is ``num_seconds // delta_time``
decisions. The measure is sumo-rl's ``system_mean_waiting_time`` averaged over the episode.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from icml26.tactic.env import VecStep

__all__ = ["SumoGrid", "fixed_time_metrics", "sumo_available"]


def sumo_available() -> bool:
    try:
        import libsumo  # noqa: F401
        import sumo  # noqa: F401
        import sumo_rl  # noqa: F401
    except ImportError:
        return False
    return True


def _sumo_rl():
    """Import sumo-rl with SUMO_HOME from the ``sumo`` package and libsumo as traci."""
    try:
        import sumo
    except ImportError as e:
        raise ImportError("SUMO is not installed: pip install 'icml26-tactic[sumo]'") from e
    os.environ.setdefault("SUMO_HOME", sumo.SUMO_HOME)
    os.environ["LIBSUMO_AS_TRACI"] = "1"  # read by sumo-rl at import
    import sumo_rl

    return sumo_rl


def _net_files(net: str) -> tuple[str, str]:
    sumo_rl = _sumo_rl()
    nets = {"2x2grid": ("2x2grid", "2x2.net.xml", "2x2.rou.xml")}
    if net not in nets:
        raise ValueError(f"unknown net {net!r}; choose from {list(nets)}")
    folder, netf, rou = nets[net]
    d = Path(sumo_rl.__file__).parent / "nets" / folder
    return str(d / netf), str(d / rou)


class SumoGrid:
    """sumo-rl's multi-signal environment behind the trainer's vectorised interface."""

    max_envs = 1
    single_simulation = True
    n_classes_true = None  # no ground-truth task types

    def __init__(self, net: str = "2x2grid", num_seconds: int = 1800, delta_time: int = 5,
                 seed: int = 0, fixed_ts: bool = False):  # fmt: skip
        if num_seconds < delta_time or delta_time < 3:
            raise ValueError("num_seconds >= delta_time >= 3 needed")
        sumo_rl = _sumo_rl()
        net_file, route_file = _net_files(net)
        self.sim = sumo_rl.SumoEnvironment(
            net_file=net_file, route_file=route_file, num_seconds=num_seconds,
            delta_time=delta_time, sumo_seed=seed, sumo_warnings=False,
            add_per_agent_info=False, fixed_ts=fixed_ts,
        )  # fmt: skip
        self.fixed_ts = fixed_ts
        self.ts_ids = list(self.sim.ts_ids)
        self.num_envs = 1
        self.n_agents = len(self.ts_ids)
        self.n_actions = max(int(self.sim.action_spaces(t).n) for t in self.ts_ids)
        self._n_act = [int(self.sim.action_spaces(t).n) for t in self.ts_ids]
        self.obs_dim = max(self.sim.observation_spaces(t).shape[0] for t in self.ts_ids)
        self.state_dim = self.obs_dim * self.n_agents
        self.episode_limit = num_seconds // delta_time
        self.rng = np.random.default_rng(seed)
        self.t = 0

    def _pack(self, obs: dict) -> VecStep:
        o = np.zeros((1, self.n_agents, self.obs_dim), np.float32)
        for i, ts in enumerate(self.ts_ids):
            o[0, i, : len(obs[ts])] = obs[ts]
        avail = np.zeros((1, self.n_agents, self.n_actions), bool)
        for i, k in enumerate(self._n_act):
            avail[0, i, :k] = True
        return VecStep(o, o.reshape(1, -1).copy(), avail)

    def reset(self) -> VecStep:
        self.t = 0
        return self._pack(self.sim.reset(seed=int(self.rng.integers(0, 2**31 - 1))))

    def step(self, actions) -> VecStep:
        actions = np.asarray(actions)
        if actions.shape != (1, self.n_agents):
            raise ValueError(f"actions must have shape (1, {self.n_agents}), got {actions.shape}")
        if self.fixed_ts:
            obs, rew, _, info = self.sim.step(None)
        else:
            obs, rew, _, info = self.sim.step(
                {ts: int(actions[0, i]) for i, ts in enumerate(self.ts_ids)}
            )
        self.t += 1
        s = self._pack(obs)
        # the episode is a fixed number of decisions (sumo-rl's own end can come a step early)
        s.reward = np.array([sum(rew.values())], np.float32)
        s.done = np.array([self.t >= self.episode_limit])
        s.info = {"waiting_time": np.array([info["system_mean_waiting_time"]])}
        return s

    @staticmethod
    def episode_metrics(infos: list[dict], rewards: list[np.ndarray]) -> dict[str, float]:
        return {"mean_waiting_time": float(np.mean([i["waiting_time"] for i in infos])),
                "return": float(np.stack(rewards).sum(0).mean())}  # fmt: skip

    def close(self) -> None:
        self.sim.close()


def fixed_time_metrics(seed: int = 0, num_seconds: int = 1800, net: str = "2x2grid",
                       episodes: int = 1) -> dict[str, float]:  # fmt: skip
    """The network's own fixed-time signal plans over ``episodes`` episodes."""
    env = SumoGrid(net, num_seconds, seed=seed + 2 * 10**6, fixed_ts=True)
    try:
        out = []
        for _ in range(episodes):
            env.reset()
            infos, rewards = [], []
            for _ in range(env.episode_limit):
                s = env.step(np.zeros((1, env.n_agents), np.int64))
                infos.append(s.info)
                rewards.append(s.reward)
            out.append(env.episode_metrics(infos, rewards))
        return {k: float(np.mean([m[k] for m in out])) for k in out[0]}
    finally:
        env.close()
