"""SUMO traffic-signal control (runs only with the ``sumo`` extra installed)."""

import numpy as np
import pytest

from icml26.tactic.sumo import sumo_available

pytestmark = pytest.mark.skipif(not sumo_available(), reason="needs icml26-tactic[sumo]")


def test_sumo_grid_steps_and_trains():
    from icml26.tactic import arm_config, train
    from icml26.tactic.sumo import SumoGrid, fixed_time_metrics
    from icml26.tactic.train import TrainConfig

    fixed = fixed_time_metrics(seed=0, num_seconds=150)
    assert fixed["mean_waiting_time"] >= 0
    env = SumoGrid(num_seconds=100, seed=0)
    s = env.reset()
    assert s.obs.shape == (1, 4, env.obs_dim) and s.avail.all()
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros((1, 3), np.int64))
    env.close()
    cfg = TrainConfig(steps=40, num_envs=1, batch=1, buffer=4, eval_every=40, eval_episodes=1,
                      final_eval_episodes=1, vq_steps=5, predictor_steps=2,
                      pretrain_frac=0.5)  # fmt: skip
    res = train(lambda n, seed: SumoGrid(num_seconds=100, seed=seed), arm_config("TACTIC"), cfg)
    assert res.updates > 0 and res.final["mean_waiting_time"] >= 0
    assert "class_ari" not in res.abstraction  # no ground-truth task types in traffic
