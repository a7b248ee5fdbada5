import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from icml26.rerooter import HeuristicRerooter, PuzzleEnv, UniformPolicy, bundled_levels, sqrt_lts


def test_passes_gymnasium_env_checker():
    check_env(PuzzleEnv(bundled_levels("train")[:5]), skip_render_check=True)


def test_replaying_a_search_solution_terminates_with_the_goal():
    levels = bundled_levels("test")[:3]
    env = PuzzleEnv(levels, max_steps=500)
    r = sqrt_lts(levels[2], UniformPolicy(heuristic=True), HeuristicRerooter(), 20000)
    assert r.solved
    obs, info = env.reset(options={"index": 2})
    assert obs.shape == (4, 10, 10) and info["index"] == 2
    total = 0.0
    for i, a in enumerate(r.actions):
        obs, reward, terminated, _truncated, info = env.step(a)
        total += reward
        assert terminated == (i == len(r.actions) - 1)
    assert info["solved"] and total == -len(r.actions)
    assert "@" in env.render() or "+" in env.render()


def test_bad_arguments():
    with pytest.raises(ValueError, match="non-empty"):
        PuzzleEnv([])
    env = PuzzleEnv(bundled_levels("test")[:2])
    with pytest.raises(ValueError, match="index"):
        env.reset(options={"index": 5})
    env.reset(seed=0)
    with pytest.raises(ValueError, match="not in"):
        env.step(7)
    assert isinstance(env.action_space, gym.spaces.Discrete)
    assert np.all(env.observation_space.high == 1.0)
