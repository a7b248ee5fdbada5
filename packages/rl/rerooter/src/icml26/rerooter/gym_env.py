"""A gymnasium ``Env`` over any search ``Environment``, for single-agent RL use of the same puzzles.

Each ``reset`` draws one problem from the list (or takes ``options={"index": i}``); rewards are -1
per move (the unit action cost the searches minimise); the episode terminates on a goal or a dead
state and is truncated after ``max_steps``. A no-op action leaves the state unchanged.
"""

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from icml26.rerooter.environment import Environment


class PuzzleEnv(gym.Env):
    """gymnasium wrapper: ``PuzzleEnv(bundled_levels("train")[:100])``."""

    metadata = {"render_modes": ["ansi"]}  # noqa: RUF012 (gymnasium reads a class dict)

    def __init__(
        self, problems: Sequence[Environment], max_steps: int = 120, render_mode: str | None = None
    ) -> None:
        if not problems:
            raise ValueError("problems must be a non-empty sequence of environments")
        shapes = {tuple(p.observation_shape) for p in problems}
        if len(shapes) != 1 or len({p.num_actions for p in problems}) != 1:
            raise ValueError(
                f"problems must share one observation shape and action count: {shapes}"
            )
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.problems = list(problems)
        self.max_steps = max_steps
        self.render_mode = render_mode
        self.action_space = gym.spaces.Discrete(problems[0].num_actions)
        self.observation_space = gym.spaces.Box(
            0.0, 1.0, shape=tuple(problems[0].observation_shape), dtype=np.float32
        )
        self._problem: Environment = self.problems[0]
        self._state: Any = None
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if options and "index" in options:
            index = int(options["index"])
            if not 0 <= index < len(self.problems):
                raise ValueError(f"options['index'] = {index} not in [0, {len(self.problems)})")
        else:
            index = int(self.np_random.integers(len(self.problems)))
        self._problem = self.problems[index]
        self._state = self._problem.initial_state()
        self._t = 0
        return self._problem.observe(self._state), {"index": index}

    def step(self, action):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        if not self.action_space.contains(action):
            raise ValueError(f"action {action!r} is not in {self.action_space}")
        nxt = self._problem.step(self._state, int(action))
        if nxt is not None:
            self._state = nxt
        self._t += 1
        solved = self._problem.is_goal(self._state)
        dead = self._problem.is_dead(self._state)
        info = {"solved": solved, "dead": dead, "noop": nxt is None}
        truncated = self._t >= self.max_steps and not (solved or dead)
        return self._problem.observe(self._state), -1.0, solved or dead, truncated, info

    def render(self):
        render = getattr(self._problem, "render", None)
        return render(self._state) if render else repr(self._state)
