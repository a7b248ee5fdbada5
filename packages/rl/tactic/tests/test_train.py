import numpy as np
import pytest
import torch
from sklearn.metrics import adjusted_rand_score

from icml26.tactic import (
    ClassPredictor,
    GameConfig,
    ShiftingDependencyGame,
    TrainConfig,
    arm_config,
    fit_classes,
    train,
    train_predictor,
)
from icml26.testing import run_distributed

SMALL = TrainConfig(steps=960, num_envs=8, batch=8, buffer=200, eval_every=480, eval_episodes=8,
                    final_eval_episodes=8, vq_steps=30, predictor_steps=20, pretrain_frac=0.25,
                    target_every=16, save_every=480)  # fmt: skip


def make_env(num_envs, seed):
    return ShiftingDependencyGame(GameConfig(), num_envs, seed)


def _params(module):
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def test_frozen_predictor_does_not_change_during_rl_and_the_ablation_does():
    res = train(make_env, arm_config("TACTIC"), SMALL)
    assert res.predictor.frozen and not any(p.requires_grad for p in res.predictor.parameters())
    # the predictor after fitting is what the checkpoint at the end holds: refit and compare
    res2 = train(make_env, arm_config("TACTIC"), SMALL, stop_at=int(SMALL.steps * 0.25) + 96)
    for k, v in _params(res2.predictor).items():
        torch.testing.assert_close(v, res.predictor.state_dict()[k])
    thawed = train(make_env, arm_config("TACTIC, predictor trained"), SMALL)
    changed = [k for k, v in _params(res2.predictor).items()
               if not torch.equal(v, thawed.predictor.state_dict()[k])]  # fmt: skip
    assert changed, "the unfrozen predictor should be trained by the TD loss"
    assert {"predictor_acc", "class_ari", "codes_used"} <= set(res.abstraction)


def test_exact_resume(tmp_path):
    cfg = SMALL
    full = train(make_env, arm_config("TACTIC"), cfg)
    part = train(make_env, arm_config("TACTIC"), cfg, checkpoint=tmp_path, stop_at=480)
    assert part.stopped and part.steps == 480
    rest = train(make_env, arm_config("TACTIC"), cfg, checkpoint=tmp_path, resume=True)
    assert rest.steps == full.steps and rest.updates == full.updates
    for k, v in full.learner.state_dict().items():
        torch.testing.assert_close(rest.learner.state_dict()[k], v)
    assert rest.final == full.final
    with pytest.raises(ValueError, match="another learner"):
        train(make_env, arm_config("QMIX"), cfg, checkpoint=tmp_path, resume=True)
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        train(make_env, arm_config("TACTIC"), cfg, checkpoint=tmp_path / "none", resume=True)


@pytest.mark.parametrize("arm", ["VDN", "QMIX", "DCG", "CASEC", "TACTIC, random pruning"])
def test_every_arm_trains_and_reports(arm):
    res = train(make_env, arm_config(arm), SMALL)
    assert res.updates > 0 and len(res.curve) == 2
    assert {"success_before", "success_after", "return"} <= set(res.final)
    if arm != "VDN" and arm != "QMIX":
        counts = np.array(res.final["edge_counts"])  # (task, edge): steps the edge was kept
        steps = counts.sum(1)  # per task: kept edges x steps under it
        assert counts.shape == (3, 6) and (steps > 0).all()
        if arm == "DCG":
            assert (counts == counts[:, :1]).all()  # every edge, every step
        else:  # 2 of 6 edges per step: the per-task total is a third of DCG's
            assert (counts.max(1) < steps).all() and (steps % 2 == 0).all()


def test_the_same_seed_gives_the_same_learner_bit_for_bit():
    a = train(make_env, arm_config("CASEC"), SMALL)
    b = train(make_env, arm_config("CASEC"), SMALL)
    for k, v in a.learner.state_dict().items():
        torch.testing.assert_close(b.learner.state_dict()[k], v, rtol=0, atol=0)


def test_fit_classes_recovers_planted_task_types():
    g = torch.Generator().manual_seed(0)
    task = torch.randint(0, 3, (40, 1)).expand(40, 12).clone()
    task[:, 6:] = (task[:, 6:] + 1) % 3  # a switch half way
    means = torch.randn(3, 5, generator=g) * 3
    traj = means[task] + 0.3 * torch.randn(40, 12, 5, generator=g)
    fit = fit_classes(traj, 3, window=1, steps=300, seed=0)
    assert adjusted_rand_score(task.ravel().numpy(), fit.labels.ravel()) > 0.9
    obs = traj.unsqueeze(2).expand(40, 12, 2, 5)
    pred = ClassPredictor(5, 2, 3)
    acc = train_predictor(pred, obs, torch.as_tensor(fit.labels), steps=150)
    assert acc["test_acc"] > 0.9
    pred.freeze()
    with pytest.raises(ValueError, match="frozen"):
        train_predictor(pred, obs, torch.as_tensor(fit.labels))


def test_bad_settings_raise_clear_errors():
    with pytest.raises(ValueError, match="unknown arm"):
        arm_config("MAPPO")
    with pytest.raises(ValueError, match="pretrain_frac"):
        train(make_env, arm_config("VDN"), TrainConfig(pretrain_frac=0.0))
    with pytest.raises(ValueError, match="NaN"):
        fit_classes(torch.full((2, 3, 4), float("nan")), 2)
    with pytest.raises(ValueError, match="resume=True needs"):
        train(make_env, arm_config("VDN"), SMALL, resume=True)


def _distributed_train():
    import torch.distributed as dist

    res = train(make_env, arm_config("TACTIC"), SMALL)
    return {"rank": dist.get_rank(),
            "learner": [v.clone() for v in res.learner.state_dict().values()],
            "predictor": [v.clone() for v in res.predictor.state_dict().values()]}  # fmt: skip


@pytest.mark.distributed
def test_two_ranks_stay_in_sync():
    out = run_distributed(_distributed_train, world_size=2)
    for key in ("learner", "predictor"):
        for a, b in zip(out[0][key], out[1][key], strict=True):
            torch.testing.assert_close(a, b)


def _distributed_resume(ckpt: str):
    import torch.distributed as dist

    full = train(make_env, arm_config("CASEC"), SMALL)
    train(make_env, arm_config("CASEC"), SMALL, checkpoint=ckpt, stop_at=480)
    rest = train(make_env, arm_config("CASEC"), SMALL, checkpoint=ckpt, resume=True)
    pairs = zip(full.learner.state_dict().values(), rest.learner.state_dict().values(),
                strict=True)  # fmt: skip
    same = all(torch.equal(a, b) for a, b in pairs)
    return {"rank": dist.get_rank(), "same": same, "steps": rest.steps}


@pytest.mark.distributed
def test_two_ranks_resume_exactly_from_their_own_checkpoints(tmp_path):
    out = run_distributed(_distributed_resume, str(tmp_path), world_size=2)
    assert all(o["same"] and o["steps"] == SMALL.steps for o in out)
    assert (tmp_path / "rank0" / "state.json").is_file()
    assert (tmp_path / "rank1" / "state.json").is_file()
