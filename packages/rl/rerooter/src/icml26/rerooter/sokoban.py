"""Sokoban in the Boxoban format (10x10 levels, 4 boxes), as a search ``Environment``.

A state is ``(player, boxes)``: the player's cell index and a bitmask of box cells, so hashing and
copying cost nothing. Moving into a wall, or pushing a box into a wall or another box, is a no-op
(``step`` returns ``None``). Pushing a box onto a *dead square* (a non-goal cell from which no
sequence of pushes brings a box to any goal: corners, wall-bound corridors) makes the state dead,
and the searches prune it, as the authors' C++ code does with terminal non-solution states.

Boxoban levels: DeepMind's boxoban-levels (Apache-2.0); a subset ships in ``levels/``.
"""

import os
from collections.abc import Sequence
from functools import cached_property
from importlib import resources
from pathlib import Path

import numpy as np

WALL, FLOOR, PLAYER, BOX, GOAL, BOX_ON_GOAL, PLAYER_ON_GOAL = "#", " ", "@", "$", ".", "*", "+"
_VALID = frozenset("# @$.*+")
ACTIONS = ("up", "down", "left", "right")
_DELTAS = ((-1, 0), (1, 0), (0, -1), (0, 1))


class Sokoban:
    """One Sokoban level. ``Sokoban(rows)`` takes the level as a list of equal-length strings."""

    num_actions = 4

    def __init__(self, rows: Sequence[str], name: str = "") -> None:
        if isinstance(rows, str):
            rows = rows.splitlines()
        rows = [r.rstrip("\n") for r in rows]
        if not rows:
            raise ValueError(f"level {name!r}: no rows")
        width = len(rows[0])
        for i, row in enumerate(rows):
            if len(row) != width:
                raise ValueError(
                    f"level {name!r}: row {i} has {len(row)} characters, row 0 has {width}"
                )
            bad = set(row) - _VALID
            if bad:
                raise ValueError(
                    f"level {name!r}: row {i} has characters {sorted(bad)}; expected only "
                    "'#', ' ', '@', '$', '.', '*', '+'"
                )
        self.name = name
        self.height, self.width = len(rows), width
        self.observation_shape = (4, self.height, self.width)
        n = self.height * self.width
        self._cells = n
        walls = goals = boxes = 0
        players = []
        for r, row in enumerate(rows):
            for c, ch in enumerate(row):
                i = r * width + c
                if ch == WALL:
                    walls |= 1 << i
                if ch in (GOAL, BOX_ON_GOAL, PLAYER_ON_GOAL):
                    goals |= 1 << i
                if ch in (BOX, BOX_ON_GOAL):
                    boxes |= 1 << i
                if ch in (PLAYER, PLAYER_ON_GOAL):
                    players.append(i)
        if len(players) != 1:
            raise ValueError(f"level {name!r}: expected exactly one player, found {len(players)}")
        n_boxes, n_goals = boxes.bit_count(), goals.bit_count()
        if n_boxes == 0 or n_boxes != n_goals:
            raise ValueError(
                f"level {name!r}: {n_boxes} boxes and {n_goals} goals; need equal, > 0"
            )
        self.walls, self.goals = walls, goals
        self._start = (players[0], boxes)
        # _next[a][i]: the cell one step from i in direction a, or -1 (wall or off the grid).
        self._next = [[-1] * n for _ in ACTIONS]
        for i in range(n):
            r, c = divmod(i, width)
            for a, (dr, dc) in enumerate(_DELTAS):
                rr, cc = r + dr, c + dc
                if 0 <= rr < self.height and 0 <= cc < width:
                    j = rr * width + cc
                    if not walls >> j & 1:
                        self._next[a][i] = j
        self.dead = self._dead_squares()
        self._hash_shift = n.bit_length()

    @classmethod
    def from_string(cls, text: str, name: str = "") -> "Sokoban":
        """A level from its text (rows separated by newlines)."""
        return cls(text.strip("\n").splitlines(), name=name)

    # -- dead squares ---------------------------------------------------------------------------
    def _dead_squares(self) -> int:
        # A box can reach a goal from cell x iff x is reached from some goal by "pulls": a box at
        # y moves to y - delta when the player stands at y - delta and steps on to y - 2 delta.
        alive = 0
        stack = [i for i in range(self._cells) if self.goals >> i & 1]
        for i in stack:
            alive |= 1 << i
        opposite = (1, 0, 3, 2)
        while stack:
            y = stack.pop()
            for a in range(4):
                x = self._next[opposite[a]][y]  # box came from x, pushed in direction a
                if x < 0 or alive >> x & 1:
                    continue
                if self._next[opposite[a]][x] < 0:  # the player needs room behind the box
                    continue
                alive |= 1 << x
                stack.append(x)
        floor = ((1 << self._cells) - 1) & ~self.walls
        return floor & ~alive

    # -- the Environment protocol ---------------------------------------------------------------
    def initial_state(self) -> tuple[int, int]:
        return self._start

    def step(self, state: tuple[int, int], action: int) -> tuple[int, int] | None:
        player, boxes = state
        nxt = self._next[action]
        target = nxt[player]
        if target < 0:
            return None
        if boxes >> target & 1:
            beyond = nxt[target]
            if beyond < 0 or boxes >> beyond & 1:
                return None
            return target, boxes ^ (1 << target) ^ (1 << beyond)
        return target, boxes

    def is_goal(self, state: tuple[int, int]) -> bool:
        return state[1] == self.goals

    def is_dead(self, state: tuple[int, int]) -> bool:
        return bool(state[1] & self.dead)

    def hash(self, state: tuple[int, int]) -> int:
        return state[1] << self._hash_shift | state[0]

    def observe(self, state: tuple[int, int]) -> np.ndarray:
        """(4, H, W) float32 planes: walls, goals, boxes, player."""
        obs = np.zeros((4, self._cells), dtype=np.float32)
        obs[0] = self._wall_plane
        obs[1] = self._goal_plane
        obs[2, _bits(state[1])] = 1.0
        obs[3, state[0]] = 1.0
        return obs.reshape(4, self.height, self.width)

    def heuristic(self, state: tuple[int, int]) -> float:
        """Sum over boxes of the Manhattan distance to the nearest goal (a lower bound)."""
        dist = self._goal_distance
        return float(sum(dist[b] for b in _bits(state[1])))

    # -- helpers --------------------------------------------------------------------------------
    @cached_property
    def _wall_plane(self) -> np.ndarray:
        plane = np.zeros(self._cells, dtype=np.float32)
        plane[_bits(self.walls)] = 1.0
        return plane

    @cached_property
    def _goal_plane(self) -> np.ndarray:
        plane = np.zeros(self._cells, dtype=np.float32)
        plane[_bits(self.goals)] = 1.0
        return plane

    @cached_property
    def _goal_distance(self) -> list[int]:
        # Manhattan distance from every cell to its nearest goal, computed once per level.
        goals = [divmod(g, self.width) for g in _bits(self.goals)]
        return [
            min(abs(r - gr) + abs(c - gc) for gr, gc in goals)
            for r, c in (divmod(i, self.width) for i in range(self._cells))
        ]

    def render(self, state: tuple[int, int] | None = None) -> str:
        """The state in Boxoban text (the initial state by default)."""
        player, boxes = self._start if state is None else state
        out = []
        for i in range(self._cells):
            wall, goal = self.walls >> i & 1, self.goals >> i & 1
            box = boxes >> i & 1
            if wall:
                ch = WALL
            elif i == player:
                ch = PLAYER_ON_GOAL if goal else PLAYER
            elif box:
                ch = BOX_ON_GOAL if goal else BOX
            else:
                ch = GOAL if goal else FLOOR
            out.append(ch)
        return "\n".join(
            "".join(out[r * self.width : (r + 1) * self.width]) for r in range(self.height)
        )

    def __repr__(self) -> str:
        return f"Sokoban({self.name!r}, {self.height}x{self.width})"


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def parse_boxoban(text: str, source: str = "<string>") -> list[Sokoban]:
    """Parse a Boxoban-format text: blocks headed by ``; <id>`` lines, each a grid of rows.

    Raises ValueError naming the source and line number of the first malformed block.
    """
    levels: list[Sokoban] = []
    name: str | None = None
    rows: list[str] = []
    start_line = 0

    def flush() -> None:
        if name is None:
            return
        if not rows:
            raise ValueError(f"{source}:{start_line}: level '{name}' has no rows")
        try:
            levels.append(Sokoban(rows, name=name))
        except ValueError as e:
            raise ValueError(f"{source}:{start_line}: {e}") from None

    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.startswith(";"):
            flush()
            name, rows, start_line = line[1:].strip(), [], lineno
        elif line.strip() == "":
            continue
        elif name is None:
            raise ValueError(
                f"{source}:{lineno}: level rows before any '; <id>' header line: {line!r}"
            )
        else:
            rows.append(line)
    flush()
    if not levels:
        raise ValueError(f"{source}: no levels found (expected '; <id>' headers followed by rows)")
    return levels


def load_boxoban(path: str | os.PathLike) -> list[Sokoban]:
    """Load every level of a Boxoban-format file (e.g. ``unfiltered/test/000.txt``)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"Boxoban file {str(path)!r} does not exist")
    return parse_boxoban(path.read_text(), source=str(path))


BUNDLED = {
    "test": "unfiltered_test_000.txt",
    "train": "unfiltered_train_000.txt",
    "medium": "medium_valid_000.txt",
}


def bundled_levels(split: str = "test") -> list[Sokoban]:
    """The 1000 levels of the bundled Boxoban file ``split``: 'test' or 'train' (unfiltered
    test/000 and train/000) or 'medium' (medium valid/000)."""
    if split not in BUNDLED:
        raise ValueError(f"split must be one of {sorted(BUNDLED)}, got {split!r}")
    text = resources.files("icml26.rerooter").joinpath("levels", BUNDLED[split]).read_text()
    return parse_boxoban(text, source=f"bundled:{BUNDLED[split]}")
