"""The RL loop: objectives, the golden number, exact resume, two ranks with gloo."""

import pytest
import torch

from icml26.fidia.data import ideal_helix
from icml26.fidia.policy import MPNNPolicy
from icml26.fidia.reward import CompositeReward
from icml26.fidia.train import Task, TrainConfig, train


def _tasks(k=1):
    tasks = []
    for length in (16, 18)[:k]:
        bb = ideal_helix(length)
        # reward helix formers: the fraction of A, L, E, K (a cheap stand-in for the proxy)
        ale = torch.tensor([0, 9, 3, 8])
        reward = CompositeReward(
            bb, fixed=[0], designability=lambda s, ale=ale: torch.isin(s, ale).double().mean(1),
            hydrophobic=(0.0, 1.0), charge=(-20, 20), max_repeat=20,
        )  # fmt: skip
        tasks.append(Task(bb, reward, fixed=(0,)))
    return tasks


def _run(objective, steps=3, folder=None, resume=False, k=1):
    torch.manual_seed(0)
    policy = MPNNPolicy.from_package()
    cfg = TrainConfig(objective=objective, N=4, n=8, steps=steps, lr=3e-3, temperature=1.0)
    result = train(policy, _tasks(k), cfg, checkpoint_dir=folder, resume=resume)
    return policy, result


@pytest.mark.parametrize("objective", ["maxn", "passn", "grpo", "mean"])
def test_each_objective_runs_and_moves_only_the_trained_layers(objective):
    policy, result = _run(objective, steps=2)
    base = MPNNPolicy.from_package()
    assert len(result.history) == 2 and result.history[-1]["kl"] > 0
    for (name, p), q in zip(policy.mpnn.named_parameters(), base.mpnn.parameters(), strict=True):
        moved = not torch.equal(p, q)
        assert moved == (name.startswith("W_out") or name.startswith("decoder_layers.2")), name


def test_golden_reward_after_seeded_steps():
    """One end-to-end number: FIDIA, 6 steps of 8 samples on a 16-residue helix."""
    _, result = _run("maxn", steps=6)
    rewards = [h["reward"] for h in result.history]
    assert rewards[-1] > rewards[0] + 0.1  # the policy learns to write helix formers
    assert rewards[-1] == pytest.approx(0.9635, abs=1e-3)
    assert result.history[-1]["kl"] == pytest.approx(24.22, abs=0.05)


def test_resume_is_exact(tmp_path):
    straight, _ = _run("maxn", steps=4)
    _run("maxn", steps=2, folder=tmp_path)
    resumed, result = _run("maxn", steps=4, folder=tmp_path, resume=True)
    assert [h["step"] for h in result.history] == [1, 2, 3, 4]
    for p, q in zip(resumed.trainable_parameters(), straight.trainable_parameters(), strict=True):
        torch.testing.assert_close(p, q)
    with pytest.raises(ValueError, match="another config"):
        torch.manual_seed(0)
        train(MPNNPolicy.from_package(), _tasks(), TrainConfig(objective="grpo", N=4, n=8, steps=5,
              lr=3e-3, temperature=1.0), checkpoint_dir=tmp_path, resume=True)  # fmt: skip


def test_bad_configs_raise():
    # a bad config is refused when it is built, before any training
    for kwargs, message in [({"n": 4, "N": 8}, r"n must be an integer >= max\(N, 2\) = 8"),
                            ({"lr": 0}, "lr must be a finite number > 0, got 0"),
                            ({"objective": "ppo"}, "objective")]:  # fmt: skip
        with pytest.raises(ValueError, match=message):
            TrainConfig(**kwargs)
    with pytest.raises(ValueError, match="tasks is empty"):
        train(MPNNPolicy.from_package(), [], TrainConfig())


def test_an_interrupted_save_leaves_the_previous_step(tmp_path):
    _run("maxn", steps=2, folder=tmp_path)
    assert sorted(p.name for p in tmp_path.glob("step*")) == ["step000002"]
    (tmp_path / "step000003").mkdir()  # a crash after the next step began writing
    (tmp_path / "step000003" / "policy.safetensors").write_bytes(b"partial")
    _, result = _run("maxn", steps=3, folder=tmp_path, resume=True)
    assert [h["step"] for h in result.history] == [1, 2, 3]


def test_resume_refuses_other_backbones(tmp_path):
    _run("maxn", steps=1, folder=tmp_path)
    with pytest.raises(ValueError, match="other backbones"):
        _run("maxn", steps=2, folder=tmp_path, resume=True, k=2)


def _train_on_rank(folder, steps, resume):
    import torch.distributed as dist

    policy, result = _run("maxn", steps=steps, folder=folder, resume=resume, k=2)
    weights = {k: v.clone() for k, v in policy.trainable_state_dict().items()}
    return dist.get_rank(), weights, result.history


def _one_backbone_on_rank():
    try:
        _run("maxn", steps=1, k=1)
    except ValueError as e:
        return str(e)
    return "no error"


@pytest.mark.distributed
def test_fewer_backbones_than_ranks_fails_on_every_rank():
    from icml26.testing import run_distributed

    messages = run_distributed(_one_backbone_on_rank, world_size=2)
    assert all("cannot be split over 2 ranks" in m for m in messages)


@pytest.mark.distributed
def test_two_ranks_split_the_backbones_and_keep_equal_weights(tmp_path):
    from icml26.testing import run_distributed

    (r0, w0, h0), (r1, w1, h1) = run_distributed(_train_on_rank, str(tmp_path), 2, False,
                                                  world_size=2)  # fmt: skip
    assert {r0, r1} == {0, 1}
    for k, v in w0.items():
        torch.testing.assert_close(w1[k], v, rtol=0, atol=0, msg=k)
    assert h0[0]["reward"] != h1[0]["reward"]  # each rank scores its own backbone
    names = {p.name for p in tmp_path.glob("step*/rng.rank*")}
    assert names == {"rng.rank0.safetensors", "rng.rank1.safetensors"}
    (_, resumed, _), _ = run_distributed(_train_on_rank, str(tmp_path), 3, True, world_size=2)
    (_, straight, _), _ = run_distributed(_train_on_rank, str(tmp_path / "s"), 3, False,
                                          world_size=2)  # fmt: skip
    for k, v in straight.items():
        torch.testing.assert_close(resumed[k], v, msg=k)
