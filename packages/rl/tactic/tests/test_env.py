import numpy as np
import pytest

from icml26.tactic.env import (
    GameConfig,
    ShiftingDependencyGame,
    ShiftingDependencyParallelEnv,
    brute_force_best,
    task_matchings,
)


def test_task_types_are_distinct_matchings():
    types = task_matchings(4, 3)
    assert len(types) == 3 and len(set(types)) == 3
    pairs = [p for m in types for p in m]
    assert len(pairs) == len(set(pairs)) == 6  # no pair shared: each type needs other partners
    for m in task_matchings(6, 4):
        agents = [a for p in m for a in p]
        assert len(agents) == len(set(agents)) == 6


def test_reward_only_for_the_current_types_joint_actions():
    game = ShiftingDependencyGame(GameConfig(), num_envs=1)
    for k in range(3):
        best = brute_force_best(game, k)
        assert np.array_equal(best, game.want[k])
        r, ok = game.team_reward(best[None], np.array([k]))
        assert r[0] == pytest.approx(1.0) and ok[0]
        for other in range(3):  # the same joint action under another type is penalised
            if other != k:
                r2, ok2 = game.team_reward(best[None], np.array([other]))
                assert r2[0] < 0 and not ok2[0]
    # a one-sided reach costs; idling is free
    idle = np.zeros((1, 4), np.int64)
    assert game.team_reward(idle, np.array([0]))[0][0] == 0.0
    half = idle.copy()
    half[0, 0] = game.want[0, 0]
    assert game.team_reward(half, np.array([0]))[0][0] < 0


def test_the_dependency_structure_changes_at_the_switch():
    cfg = GameConfig(cue_prob=1.0)
    game = ShiftingDependencyGame(cfg, num_envs=64, seed=0)
    s = game.reset()
    before, after = game.type0.copy(), game.type1.copy()
    assert (before != after).all()
    third = cfg.episode_len // 3
    assert ((game.switch_at >= third) & (game.switch_at <= cfg.episode_len - third)).all()
    # always play the pre-switch type's optimal joint action
    rewards, afters = [], []
    for _ in range(cfg.episode_len):
        assert np.array_equal(s.obs[:, 0, :3].argmax(1), game.current_type())  # the cue
        s = game.step(game.want[before])
        rewards.append(s.reward)
        afters.append(s.info["after_switch"])
        assert np.array_equal(s.info["task"], np.where(s.info["after_switch"], after, before))
    rewards, afters = np.stack(rewards), np.stack(afters)
    assert np.allclose(rewards[~afters], 1.0)
    assert (rewards[afters] < 0).all()
    assert s.done.all()
    m = ShiftingDependencyGame.episode_metrics(
        [{"success": r > 0.99, "after_switch": a} for r, a in zip(rewards, afters, strict=True)],
        list(rewards),
    )
    assert m["success_before"] == 1.0 and m["success_after"] == 0.0


def test_sparse_reward_pays_the_total_at_the_end():
    game = ShiftingDependencyGame(GameConfig(sparse=True), num_envs=4, seed=1)
    game.reset()
    got = []
    for _ in range(game.episode_limit):
        got.append(game.step(game.want[game.current_type()]).reward)
    got = np.stack(got)
    assert (got[:-1] == 0).all() and np.allclose(got[-1], game.episode_limit)


def test_pettingzoo_parallel_api():
    from pettingzoo.test import parallel_api_test

    parallel_api_test(ShiftingDependencyParallelEnv(), num_cycles=30)
    env = ShiftingDependencyParallelEnv(GameConfig(n_agents=6, n_types=4))
    obs, _ = env.reset(seed=0)
    assert len(obs) == 6 and env.state().shape == (6,)


def test_bad_actions_and_settings_raise_clear_errors():
    game = ShiftingDependencyGame(num_envs=2)
    game.reset()
    with pytest.raises(ValueError, match="shape"):
        game.step(np.zeros((2, 3), np.int64))
    with pytest.raises(ValueError, match=r"actions must be in 0\.\.3"):
        game.step(np.full((2, 4), 4))
    with pytest.raises(TypeError, match="integers"):
        game.step(np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match="distinct matchings"):
        GameConfig(n_agents=3, n_types=4).check()
    with pytest.raises(ValueError, match="cue_prob"):
        ShiftingDependencyGame(GameConfig(cue_prob=2.0))
    env = ShiftingDependencyParallelEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="actions missing"):
        env.step({"agent_0": 0})
