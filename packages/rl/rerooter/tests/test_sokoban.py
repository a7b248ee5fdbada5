import numpy as np
import pytest

from icml26.rerooter import (
    Sokoban,
    UniformPolicy,
    bundled_levels,
    is_solution,
    load_boxoban,
    lts,
    parse_boxoban,
)
from icml26.rerooter.sokoban import ACTIONS

UP, DOWN, LEFT, RIGHT = (ACTIONS.index(a) for a in ("up", "down", "left", "right"))

# A hand-checked corridor: the player pushes the box right onto the goal in two moves.
CORRIDOR = """
#######
#@ $ .#
#######
"""


def test_push_onto_goal_solves_the_corridor():
    env = Sokoban.from_string(CORRIDOR)
    s = env.initial_state()
    assert env.step(s, LEFT) is None  # wall
    assert env.step(s, UP) is None
    s = env.step(s, RIGHT)
    assert env.render(s).splitlines()[1] == "# @$ .#"
    s = env.step(s, RIGHT)  # push
    assert env.render(s).splitlines()[1] == "#  @$.#"
    s = env.step(s, RIGHT)
    assert env.is_goal(s)
    assert env.render(s).splitlines()[1] == "#   @*#"
    assert env.step(s, RIGHT) is None  # the box is against the wall: no push
    assert is_solution(env, [RIGHT, RIGHT, RIGHT])
    assert not is_solution(env, [RIGHT, RIGHT])
    assert not is_solution(env, [LEFT])


def test_box_cannot_be_pushed_into_another_box():
    env = Sokoban.from_string("#######\n#@$$..#\n#######")
    assert env.step(env.initial_state(), RIGHT) is None


def test_corner_and_wall_bound_squares_are_dead():
    env = Sokoban.from_string(
        """
######
#    #
# $@ #
#.   #
######
"""
    )
    # Corners are dead; the goal is in a corner but is not dead; the top wall row is dead
    # (a box there can never leave it and no goal is on it).
    dead = {divmod(i, env.width) for i in range(env.height * env.width) if env.dead >> i & 1}
    assert (1, 1) in dead and (1, 4) in dead and (3, 4) in dead
    assert (1, 2) in dead and (1, 3) in dead
    assert (3, 1) not in dead  # the goal
    assert (2, 2) not in dead
    s = env.step(env.initial_state(), LEFT)  # box to (2, 1): it can still go down to the goal
    assert s is not None and not env.is_dead(s)
    assert env.is_dead((s[0], 1 << (3 * env.width + 4)))  # a box in the bottom-right corner
    # The search never generates a dead state: pushing the box up into the top row is pruned.
    r = lts(env, UniformPolicy(), 10_000, trace=True)
    assert r.solved and is_solution(env, r.actions)
    assert all(not env.is_dead(st) for st in r.states)


def test_observation_planes_and_hash():
    env = bundled_levels("test")[0]
    s = env.initial_state()
    obs = env.observe(s)
    assert obs.shape == env.observation_shape == (4, 10, 10)
    assert obs.dtype == np.float32
    assert obs[2].sum() == 4 and obs[1].sum() == 4 and obs[3].sum() == 1
    moved = next(t for a in range(4) if (t := env.step(s, a)) is not None)
    assert env.hash(s) != env.hash(moved) and env.hash(s) == env.hash(env.initial_state())
    assert env.render() == env.render(s)
    assert env.heuristic(s) >= 0


def test_bundled_files_hold_1000_levels_each():
    test, train = bundled_levels("test"), bundled_levels("train")
    assert len(test) == len(train) == 1000
    assert test[0].name == "0" and (test[0].height, test[0].width) == (10, 10)
    with pytest.raises(ValueError, match="split must be one of"):
        bundled_levels("valid")


def test_malformed_level_file_names_the_line(tmp_path):
    text = "; 0\n#####\n#@$.#\n#####\n\n; 1\n#####\n#@$x#\n#####\n"
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match=r"bad.txt:6: .*row 1 has characters \['x'\]"):
        load_boxoban(path)
    with pytest.raises(ValueError, match=r"<string>:1: level rows before any"):
        parse_boxoban("#####\n")
    with pytest.raises(ValueError, match="exactly one player"):
        parse_boxoban("; 0\n#####\n# $.#\n#####\n")
    with pytest.raises(ValueError, match="2 boxes and 1 goals"):
        parse_boxoban("; 0\n######\n#@$$.#\n######\n")
    with pytest.raises(ValueError, match="row 1 has 4 characters"):
        parse_boxoban("; 0\n#####\n#@$.\n#####\n")
    with pytest.raises(ValueError, match="does not exist"):
        load_boxoban(tmp_path / "missing.txt")
    with pytest.raises(ValueError, match="no levels found"):
        parse_boxoban("\n\n")
