"""The (n^2 - 1) sliding-tile puzzle as a search ``Environment``.

A state is a tuple of n*n tile numbers in row-major order, 0 the blank; the goal is
``(0, 1, ..., n*n - 1)``. Actions move the blank up, down, left, right. Instances are made by
random walks from the goal, so every instance is solvable and its difficulty grows with the walk.
"""

from collections.abc import Sequence

import numpy as np

ACTIONS = ("up", "down", "left", "right")


class SlidingTile:
    """One sliding-tile instance: ``SlidingTile(tiles)``, ``tiles`` a permutation of 0..n*n-1."""

    num_actions = 4

    def __init__(self, tiles: Sequence[int], name: str = "") -> None:
        tiles = tuple(int(t) for t in tiles)
        n = round(len(tiles) ** 0.5)
        if n < 2 or n * n != len(tiles):
            raise ValueError(f"tiles must have n*n entries with n >= 2, got {len(tiles)}")
        if sorted(tiles) != list(range(n * n)):
            raise ValueError(f"tiles must be a permutation of 0..{n * n - 1}, got {tiles}")
        if not _solvable(tiles, n):
            raise ValueError(f"tiles {tiles} are not solvable (wrong permutation parity)")
        self.n = n
        self.name = name
        self.observation_shape = (n * n, n, n)
        self._start = tiles
        self._goal = tuple(range(n * n))
        self._moves = []  # _moves[a][blank] = new blank index or -1
        for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            row = []
            for i in range(n * n):
                r, c = divmod(i, n)
                rr, cc = r + dr, c + dc
                row.append(rr * n + cc if 0 <= rr < n and 0 <= cc < n else -1)
            self._moves.append(row)

    @classmethod
    def random_walk(cls, n: int, steps: int, rng: np.random.Generator) -> "SlidingTile":
        """An instance ``steps`` random moves (no immediate undo) away from the goal."""
        if steps < 0:
            raise ValueError(f"steps must be >= 0, got {steps}")
        probe = cls(range(n * n))
        state, prev = probe._goal, -1
        for _ in range(steps):
            options = [a for a in range(4) if probe.step(state, a) is not None and a != prev ^ 1]
            a = int(rng.choice(options))
            state, prev = probe.step(state, a), a
        return cls(state, name=f"walk{steps}")

    def initial_state(self) -> tuple[int, ...]:
        return self._start

    def step(self, state: tuple[int, ...], action: int) -> tuple[int, ...] | None:
        blank = state.index(0)
        target = self._moves[action][blank]
        if target < 0:
            return None
        s = list(state)
        s[blank], s[target] = s[target], 0
        return tuple(s)

    def is_goal(self, state: tuple[int, ...]) -> bool:
        return state == self._goal

    def is_dead(self, state: tuple[int, ...]) -> bool:
        return False

    def hash(self, state: tuple[int, ...]) -> tuple[int, ...]:
        return state

    def observe(self, state: tuple[int, ...]) -> np.ndarray:
        """(n*n, n, n) float32 one-hot: channel t marks the cell holding tile t."""
        obs = np.zeros((self.n * self.n, self.n * self.n), dtype=np.float32)
        obs[list(state), np.arange(self.n * self.n)] = 1.0
        return obs.reshape(self.n * self.n, self.n, self.n)

    def heuristic(self, state: tuple[int, ...]) -> float:
        """Manhattan distance of every tile (not the blank) to its goal cell."""
        n = self.n
        total = 0
        for i, t in enumerate(state):
            if t:
                r, c = divmod(i, n)
                gr, gc = divmod(t, n)
                total += abs(r - gr) + abs(c - gc)
        return float(total)

    def __repr__(self) -> str:
        return f"SlidingTile({self.name!r}, n={self.n})"


def _solvable(tiles: tuple[int, ...], n: int) -> bool:
    # Standard parity argument: count inversions among tiles (blank excluded); for even n the
    # blank's row distance to the goal row (row 0) adds to the parity.
    seq = [t for t in tiles if t]
    inversions = sum(1 for i in range(len(seq)) for j in range(i + 1, len(seq)) if seq[i] > seq[j])
    if n % 2:
        return inversions % 2 == 0
    blank_row = tiles.index(0) // n
    return (inversions + blank_row) % 2 == 0
