import numpy as np
import pytest

from icml26.rerooter import SlidingTile, UniformPolicy, is_solution, lts


def test_moves_and_goal():
    env = SlidingTile([1, 0, 2, 3, 4, 5, 6, 7, 8])
    s = env.initial_state()
    assert env.step(s, 0) is None  # blank on the top row cannot move up
    assert env.step(s, 2) == (0, 1, 2, 3, 4, 5, 6, 7, 8)
    assert env.is_goal(env.step(s, 2))
    assert env.heuristic(s) == 1.0
    obs = env.observe(s)
    assert obs.shape == (9, 3, 3) and obs.sum() == 9 and obs[0, 0, 1] == 1


def test_random_walk_instances_are_solvable_and_solved():
    rng = np.random.default_rng(0)
    for steps in (0, 5, 12):
        env = SlidingTile.random_walk(3, steps, rng)
        r = lts(env, UniformPolicy(), 20000)
        assert r.solved and is_solution(env, r.actions)
        assert len(r.actions) <= steps


def test_bad_tiles_are_rejected():
    with pytest.raises(ValueError, match="permutation"):
        SlidingTile([0, 1, 1, 3])
    with pytest.raises(ValueError, match="not solvable"):
        SlidingTile([0, 2, 1, 3, 4, 5, 6, 7, 8])
    with pytest.raises(ValueError, match="n\\*n entries"):
        SlidingTile([0, 1, 2])
