"""The search-problem interface every tree search in this package runs on.

One object is one problem instance (a Sokoban level, a sliding-tile start position). States are
small immutable Python values; the search keeps them in its tree and deduplicates them by
``hash(state)``. Nothing here is specific to a domain: implement these methods for your own puzzle
and ``lts``, ``phs_star`` and ``sqrt_lts`` run on it unchanged.
"""

from collections.abc import Hashable
from typing import Any, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Environment(Protocol):
    """A deterministic single-agent problem with unit action costs.

    ``num_actions`` actions exist in every state; an action that does nothing (walking into a
    wall) makes ``step`` return ``None``, so the search never generates a self-loop.
    """

    num_actions: int
    """Size of the action set A."""
    observation_shape: tuple[int, ...]
    """Shape (C, H, W) of ``observe``'s array, the input of a convolutional policy."""

    def initial_state(self) -> Any:
        """The start state n_0 (the root of the search tree)."""
        ...

    def step(self, state: Any, action: int) -> Any | None:
        """The successor of ``state`` under ``action``, or ``None`` if the action is a no-op."""
        ...

    def is_goal(self, state: Any) -> bool:
        """Whether ``state`` solves the problem."""
        ...

    def is_dead(self, state: Any) -> bool:
        """Whether ``state`` provably cannot reach a goal (e.g. a box pushed into a corner)."""
        ...

    def hash(self, state: Any) -> Hashable:
        """A key equal for equal states; the search's duplicate detection uses it."""
        ...

    def observe(self, state: Any) -> np.ndarray:
        """A float32 array of shape ``observation_shape`` describing ``state``."""
        ...

    def heuristic(self, state: Any) -> float:
        """A hand-written estimate of the number of moves to a goal (>= 0)."""
        ...


def replay(env: Environment, actions: list[int]) -> list[Any]:
    """The states visited by ``actions`` from the initial state (both ends included).

    Raises ValueError if an action is a no-op or out of range: a solution is a sequence of moves
    that each change the state.
    """
    state = env.initial_state()
    states = [state]
    for i, a in enumerate(actions):
        if not 0 <= a < env.num_actions:
            raise ValueError(f"actions[{i}] = {a} is not in [0, {env.num_actions})")
        state = env.step(state, a)
        if state is None:
            raise ValueError(f"actions[{i}] = {a} is a no-op in the state reached after {i} moves")
        states.append(state)
    return states


def is_solution(env: Environment, actions: list[int]) -> bool:
    """Whether ``actions`` is a valid move sequence from the initial state to a goal."""
    try:
        states = replay(env, actions)
    except ValueError:
        return False
    return env.is_goal(states[-1])
