"""The shifting-dependency game: cooperative agents whose required partnerships change when a
hidden task type switches within the episode.

A *task type* is a matching of the agents into pairs (for n = 4 the three perfect matchings). Each
step every agent either idles (action 0) or reaches for one other agent (action k >= 1: the k-th
other agent, in index order). A pair (i, j) of the current type earns +1 when i reaches for j and j
reaches for i in the same step; every agent that reaches but is not part of a required, reciprocated
pair pays ``penalty`` (miscoordination, the relative-overgeneralisation trap of value
factorisation). The per-step reward is the sum divided by the number of required pairs, so a
perfect step earns 1. The type is hidden: each agent, each step, sees a one-hot cue of the current
type with probability ``cue_prob`` and zeros otherwise, so recognising the type needs memory. At a
random step in the middle third of the episode the type switches to another one.

``sparse=True`` pays the episode's total at its last step only (the sparse end-of-episode form);
the default pays every step, because at CPU-scale budgets the learners tried on the sparse form
(DCG, TACTIC; 40,000 steps) reach no successful step.

Two interfaces: :class:`ShiftingDependencyGame`, vectorised over environments in numpy (what the
trainer uses), and :class:`ShiftingDependencyParallelEnv`, one environment behind PettingZoo's
``ParallelEnv`` API.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from pettingzoo import ParallelEnv

__all__ = [
    "GameConfig",
    "ShiftingDependencyGame",
    "ShiftingDependencyParallelEnv",
    "VecStep",
    "task_matchings",
]


@dataclass(frozen=True)
class GameConfig:
    """The shifting-dependency game's settings."""

    n_agents: int = 4
    """Agents (2-8)."""
    n_types: int = 3
    """Hidden task types, each a matching of the agents into pairs."""
    episode_len: int = 12
    cue_prob: float = 0.6
    """Chance that an agent sees the current type's cue at a step."""
    penalty: float = 0.5
    """Cost paid by each agent that reaches for a partner without forming a required pair."""
    sparse: bool = False
    """Pay the episode's total at its last step only."""

    def check(self) -> None:
        if not 2 <= self.n_agents <= 8:
            raise ValueError(f"n_agents must be in 2..8, got {self.n_agents}")
        if self.n_types < 2:
            raise ValueError(f"n_types must be >= 2 (a switch needs two types), got {self.n_types}")
        if len(_all_matchings(self.n_agents)) < self.n_types:
            raise ValueError(f"{self.n_agents} agents have only "
                             f"{len(_all_matchings(self.n_agents))} distinct matchings, "
                             f"n_types={self.n_types} asked")  # fmt: skip
        if self.episode_len < 3:
            raise ValueError(f"episode_len must be >= 3, got {self.episode_len}")
        if not 0.0 <= self.cue_prob <= 1.0:
            raise ValueError(f"cue_prob must be in [0, 1], got {self.cue_prob}")
        if self.penalty < 0:
            raise ValueError(f"penalty must be >= 0, got {self.penalty}")

    @property
    def n_actions(self) -> int:
        """Idle plus one action per other agent."""
        return self.n_agents

    @property
    def obs_dim(self) -> int:
        """Cue (n_types) and time (1)."""
        return self.n_types + 1

    @property
    def state_dim(self) -> int:
        """Type one-hot, time, switched flag."""
        return self.n_types + 2


def _all_matchings(n: int) -> list[tuple[tuple[int, int], ...]]:
    """Every maximum matching of n agents into disjoint pairs (perfect for even n)."""
    if n < 2:
        return [()]
    out = []
    first, rest = 0, list(range(1, n))
    if n % 2:  # one agent sits out: recurse on every choice of it
        seen = set()
        for free in range(n):
            others = [a for a in range(n) if a != free]
            for m in _all_matchings(len(others)):
                mm = tuple(sorted((others[a], others[b]) for a, b in m))
                if mm not in seen:
                    seen.add(mm)
                    out.append(mm)
        return out
    for k, partner in enumerate(rest):
        remaining = rest[:k] + rest[k + 1 :]
        for m in _all_matchings(len(remaining)):
            out.append(((first, partner), *((remaining[a], remaining[b]) for a, b in m)))
    return out


def task_matchings(n_agents: int, n_types: int) -> list[tuple[tuple[int, int], ...]]:
    """The pairs each task type requires: ``n_types`` distinct matchings, chosen so that no pair
    is shared by two types where that is possible (for n = 4, K = 3: the three perfect
    matchings). Deterministic in (n_agents, n_types)."""
    for name, v, low in (("n_agents", n_agents, 2), ("n_types", n_types, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ValueError(f"{name} must be an int >= {low}, got {v!r}")
    every = _all_matchings(n_agents)
    if n_types > len(every):
        raise ValueError(f"n_types={n_types}: {n_agents} agents have only {len(every)} distinct "
                         "matchings")  # fmt: skip
    chosen: list[tuple[tuple[int, int], ...]] = []
    used: set[tuple[int, int]] = set()
    for m in every:  # greedy: pairs not used by an earlier type first
        if len(chosen) < n_types and not used & set(m):
            chosen.append(m)
            used |= set(m)
    for m in every:
        if len(chosen) < n_types and m not in chosen:
            chosen.append(m)
    return chosen


@dataclass
class VecStep:
    """What the vectorised game returns (B environments, n agents, A actions)."""

    obs: np.ndarray
    """(B, n, obs_dim) float32."""
    state: np.ndarray
    """(B, state_dim) float32."""
    avail: np.ndarray
    """(B, n, A) bool: available actions (all, in this game)."""
    reward: np.ndarray | None = None
    """(B,) float32 shared team reward (None after reset)."""
    done: np.ndarray | None = None
    """(B,) bool."""
    info: dict | None = None
    """success (B,) bool, task (B,) int (the type the step was played under), after_switch (B,)."""


class ShiftingDependencyGame:
    """The game vectorised over ``num_envs`` environments (numpy); all end at ``episode_len``."""

    max_envs = None  # no limit: one numpy array per quantity
    n_classes_true: int

    def __init__(self, cfg: GameConfig = GameConfig(), num_envs: int = 8, seed: int = 0):
        cfg.check()
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.cfg, self.num_envs = cfg, num_envs
        self.n_agents, self.n_actions = cfg.n_agents, cfg.n_actions
        self.obs_dim, self.state_dim = cfg.obs_dim, cfg.state_dim
        self.episode_limit = cfg.episode_len
        self.n_classes_true = cfg.n_types
        self.rng = np.random.default_rng(seed)
        n = cfg.n_agents
        # partner[i, a]: the agent that action a of agent i reaches for (-1: idle)
        self.partner = np.full((n, n), -1, dtype=np.int64)
        for i in range(n):
            others = [j for j in range(n) if j != i]
            self.partner[i, 1:] = others
        # want[k, i]: the action agent i must take under type k (0 where it sits out)
        self.want = np.zeros((cfg.n_types, n), dtype=np.int64)
        for k, m in enumerate(task_matchings(n, cfg.n_types)):
            for i, j in m:
                self.want[k, i] = 1 + (j if j < i else j - 1)
                self.want[k, j] = 1 + (i if i < j else i - 1)
        self.t = 0

    # -- episode state ---------------------------------------------------------------------------
    def reset(self) -> VecStep:
        cfg, B = self.cfg, self.num_envs
        self.t = 0
        self.type0 = self.rng.integers(0, cfg.n_types, B)
        shift = self.rng.integers(1, cfg.n_types, B)
        self.type1 = (self.type0 + shift) % cfg.n_types
        third = cfg.episode_len // 3
        self.switch_at = self.rng.integers(third, cfg.episode_len - third + 1, B)
        self.total = np.zeros(B, dtype=np.float32)
        return VecStep(self._obs(), self._state(), self._avail())

    def current_type(self) -> np.ndarray:
        """(B,) the hidden type now."""
        return np.where(self.t >= self.switch_at, self.type1, self.type0)

    def _obs(self) -> np.ndarray:
        cfg, B, n = self.cfg, self.num_envs, self.n_agents
        obs = np.zeros((B, n, cfg.obs_dim), dtype=np.float32)
        seen = self.rng.random((B, n)) < cfg.cue_prob
        typ = self.current_type()
        b, i = np.nonzero(seen)
        obs[b, i, typ[b]] = 1.0
        obs[:, :, -1] = self.t / cfg.episode_len
        return obs

    def _state(self) -> np.ndarray:
        cfg, B = self.cfg, self.num_envs
        s = np.zeros((B, cfg.state_dim), dtype=np.float32)
        s[np.arange(B), self.current_type()] = 1.0
        s[:, cfg.n_types] = self.t / cfg.episode_len
        s[:, cfg.n_types + 1] = self.t >= self.switch_at
        return s

    def _avail(self) -> np.ndarray:
        return np.ones((self.num_envs, self.n_agents, self.n_actions), dtype=bool)

    # -- dynamics --------------------------------------------------------------------------------
    def team_reward(self, actions: np.ndarray, types: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-step reward (B,) and success (B,) of joint actions (B, n) under types (B,)."""
        cfg, n = self.cfg, self.n_agents
        want = self.want[types]  # (B, n)
        partner = self.partner[np.arange(n)[None, :], actions]  # (B, n), -1 idle
        reaches = actions > 0
        back = np.take_along_axis(actions, np.clip(partner, 0, n - 1), 1)  # partner's action
        # reciprocated: my partner reaches for me
        me = np.arange(n)[None, :]
        partner_target = np.where(
            reaches, self.partner[np.clip(partner, 0, n - 1), back], -1
        )  # who my partner reaches for
        formed = reaches & (partner_target == me) & (actions == want)
        n_pairs = max(1, int((self.want[0] > 0).sum()) // 2)
        reward = (formed.sum(1) / 2.0 - cfg.penalty * (reaches & ~formed).sum(1)) / n_pairs
        required = want > 0
        success = np.all(formed == required, axis=1)
        return reward.astype(np.float32), success

    def step(self, actions) -> VecStep:
        actions = np.asarray(actions)
        B, n = self.num_envs, self.n_agents
        if actions.shape != (B, n):
            raise ValueError(f"actions must have shape (num_envs, n_agents) = {(B, n)}, "
                             f"got {actions.shape}")  # fmt: skip
        if not np.issubdtype(actions.dtype, np.integer):
            raise TypeError(f"actions must be integers, got {actions.dtype}")
        if actions.min() < 0 or actions.max() >= self.n_actions:
            raise ValueError(f"actions must be in 0..{self.n_actions - 1}, got "
                             f"{int(actions.min())}..{int(actions.max())}")  # fmt: skip
        if self.t >= self.episode_limit:
            raise ValueError("the episode has ended: call reset()")
        types = self.current_type()
        after = self.t >= self.switch_at
        reward, success = self.team_reward(actions, types)
        self.total += reward
        self.t += 1
        done = np.full(B, self.t >= self.episode_limit)
        if self.cfg.sparse:
            reward = np.where(done, self.total, 0.0).astype(np.float32)
        info = {"success": success, "task": types, "after_switch": after}
        return VecStep(self._obs(), self._state(), self._avail(), reward, done, info)

    # -- evaluation ------------------------------------------------------------------------------
    @staticmethod
    def episode_metrics(infos: list[dict], rewards: list[np.ndarray]) -> dict[str, float]:
        """Test metrics of a batch of episodes from its per-step infos and rewards: success before
        and after the switch (share of steps with every required pair formed), return."""
        success = np.stack([i["success"] for i in infos])  # (T, B)
        after = np.stack([i["after_switch"] for i in infos])
        ret = np.stack(rewards).sum(0)
        return {
            "success_before": float(success[~after].mean()),
            "success_after": float(success[after].mean()),
            "success": float(success.mean()),
            "return": float(ret.mean()),
        }


class ShiftingDependencyParallelEnv(ParallelEnv):
    """One shifting-dependency game behind PettingZoo's ``ParallelEnv`` API.

    Observations are each agent's cue and time (Box, float32); actions ``Discrete(n_agents)``;
    ``state()`` gives the global state; infos carry ``success`` and ``task``.
    """

    metadata: ClassVar[dict] = {"name": "shifting_dependency_v0", "render_modes": [],
                                "is_parallelizable": True}  # fmt: skip

    def __init__(self, cfg: GameConfig = GameConfig(), render_mode: str | None = None):
        from gymnasium import spaces

        if render_mode is not None:
            raise ValueError("the shifting-dependency game has no render modes")
        self.render_mode = None
        self._game = ShiftingDependencyGame(cfg, num_envs=1)
        self.possible_agents = [f"agent_{i}" for i in range(cfg.n_agents)]
        self.agents: list[str] = []
        self._obs_space = spaces.Box(0.0, 1.0, (cfg.obs_dim,), np.float32)
        self._act_space = spaces.Discrete(cfg.n_actions)
        self.state_space = spaces.Box(0.0, 1.0, (cfg.state_dim,), np.float32)
        self._last: VecStep | None = None

    def observation_space(self, agent):
        return self._obs_space

    def action_space(self, agent):
        return self._act_space

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._game.rng = np.random.default_rng(seed)
        self._last = self._game.reset()
        self.agents = list(self.possible_agents)
        obs = {a: self._last.obs[0, i] for i, a in enumerate(self.agents)}
        return obs, {a: {} for a in self.agents}

    def state(self) -> np.ndarray:
        if self._last is None:
            raise ValueError("call reset() first")
        return self._last.state[0]

    def step(self, actions: dict):
        if not self.agents:
            raise ValueError("the episode has ended: call reset()")
        missing = set(self.agents) - set(actions)
        if missing:
            raise ValueError(f"actions missing for {sorted(missing)}")
        unknown = set(actions) - set(self.agents)
        if unknown:
            raise ValueError(f"actions name agents not in this episode: {sorted(unknown)}")
        for a in self.possible_agents:
            if not _is_action(actions[a], int(self._act_space.n)):
                raise ValueError(f"actions[{a!r}] must be an integer in [0, {self._act_space.n}), "
                                 f"got {actions[a]!r}")  # fmt: skip
        joint = np.array([[int(actions[a]) for a in self.possible_agents]], dtype=np.int64)
        self._last = s = self._game.step(joint)
        agents = self.agents
        obs = {a: s.obs[0, i] for i, a in enumerate(agents)}
        rew = {a: float(s.reward[0]) for a in agents}
        done = bool(s.done[0])
        term = {a: done for a in agents}
        trunc = {a: False for a in agents}
        info = {a: {"success": bool(s.info["success"][0]), "task": int(s.info["task"][0])}
                for a in agents}  # fmt: skip
        if done:
            self.agents = []
        return obs, rew, term, trunc, info

    def render(self):
        return None

    def close(self):
        """Nothing to release: the game holds no external resources."""


def _is_action(a, n: int) -> bool:
    """An integer in [0, n) (1.7, "1" or True are not actions; a 0-d integer array is)."""
    if isinstance(a, np.ndarray) and a.shape == () and np.issubdtype(a.dtype, np.integer):
        a = a.item()
    return isinstance(a, int | np.integer) and not isinstance(a, bool) and 0 <= int(a) < n


def brute_force_best(game: ShiftingDependencyGame, task: int) -> np.ndarray:
    """The joint action (n,) with the highest reward under ``task`` (enumeration; small n)."""
    best, arg = -np.inf, None
    for a in itertools.product(range(game.n_actions), repeat=game.n_agents):
        r, _ = game.team_reward(np.array([a]), np.array([task]))
        if r[0] > best:
            best, arg = r[0], np.array(a)
    return arg
