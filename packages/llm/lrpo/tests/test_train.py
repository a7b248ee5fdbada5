import pytest
import torch

from icml26.lrpo import (
    GRPOConfig,
    PretrainConfig,
    evaluate,
    low_var_kl,
    pretrain,
    split_items,
    train_grpo,
)
from icml26.lrpo.data import heldout_questions

SPLIT = split_items()


def test_pretraining_lowers_the_loss(tiny):
    losses = pretrain(tiny, SPLIT, PretrainConfig(steps=40, batch=16, lr=1e-2))
    assert sum(losses[-5:]) / 5 < 0.7 * sum(losses[:5]) / 5


def test_grpo_steps_log_signal_and_router(tiny):
    res = train_grpo(tiny, SPLIT, GRPOConfig(router="lrpo", steps=2, questions_per_step=3, G=4,
                                             max_new=8))  # fmt: skip
    assert len(res.history) == 2
    h = res.history[-1]
    assert 0 <= h["zero_variance"] <= 1 and 0 <= h["reward"] <= 1 and h["kl"] >= 0
    assert set(h["probabilities"]) == {"add", "sub", "count"}
    assert sum(h["languages"].values()) == pytest.approx(1.0)
    assert res.router.t == 2


def test_original_router_keeps_every_rollout_in_the_question_language(tiny):
    seen = []

    def reward(answer, q, target):
        seen.append((q.language, target))
        return float(len(answer) % 3)

    train_grpo(tiny, SPLIT, GRPOConfig(router="original", steps=1, questions_per_step=4, G=4,
                                       max_new=4), reward_fn=reward)  # fmt: skip
    assert len(seen) == 16 and all(a == b for a, b in seen)


def test_policy_gradient_moves_towards_rewarded_answers(tiny):
    # reward short answers: the mean completion length must fall
    def reward(answer, q, target):
        return 1.0 - len(answer) / 12

    cfg = GRPOConfig(router="uniform", steps=15, questions_per_step=4, G=8, max_new=12, lr=1e-2)
    rewards = [h["reward"] for h in train_grpo(tiny, SPLIT, cfg, reward_fn=reward).history]
    assert sum(rewards[-3:]) / 3 > sum(rewards[:3]) / 3 + 0.3


def test_low_var_kl_is_nonnegative_and_zero_at_equality():
    a = torch.randn(50)
    assert torch.all(low_var_kl(a, a) == 0)
    assert torch.all(low_var_kl(a, a + torch.randn(50)) >= 0)


def test_resume_continues_exactly(tiny, tmp_path):
    import copy

    start = copy.deepcopy(tiny)
    kw = dict(router="lrpo", questions_per_step=2, G=4, max_new=6, seed=1)
    straight = train_grpo(copy.deepcopy(start), SPLIT, GRPOConfig(steps=4, **kw), tmp_path / "a")
    train_grpo(copy.deepcopy(start), SPLIT, GRPOConfig(steps=2, **kw), tmp_path / "b")
    p = copy.deepcopy(start)
    resumed = train_grpo(p, SPLIT, GRPOConfig(steps=4, **kw), tmp_path / "b", resume=True)
    assert [h["reward"] for h in resumed.history] == [h["reward"] for h in straight.history]
    from icml26.lrpo import CharGPT

    a = CharGPT.from_pretrained(tmp_path / "a" / "policy").state_dict()
    for k, v in p.state_dict().items():
        torch.testing.assert_close(v, a[k], rtol=0, atol=0, msg=k)
    assert resumed.router.state_dict() == straight.router.state_dict()
    with pytest.raises(ValueError, match="other settings"):
        train_grpo(copy.deepcopy(start), SPLIT, GRPOConfig(steps=4, **{**kw, "G": 8}),
                   tmp_path / "b", resume=True)  # fmt: skip
    with pytest.raises(ValueError, match=r"latest\.json"):
        train_grpo(p, SPLIT, GRPOConfig(steps=4, **kw), tmp_path / "none", resume=True)
    with pytest.raises(ValueError, match="holds a run already"):
        train_grpo(p, SPLIT, GRPOConfig(steps=4, **kw), tmp_path / "b")
    from icml26.lrpo.train import latest_checkpoint

    assert latest_checkpoint(tmp_path / "b").name == "step000004"
    assert not list((tmp_path / "b").glob(".*partial"))


def test_config_errors():
    for bad in (dict(G=1), dict(orig_min=9), dict(router="thompson"), dict(lr=0.0),
                dict(temperature=0.0)):  # fmt: skip
        with pytest.raises(ValueError):
            GRPOConfig(**bad).check()
    with pytest.raises(ValueError):
        PretrainConfig(cross_lingual=2.0).check()


def test_evaluate_reports_every_language(tiny):
    qs = heldout_questions(SPLIT, per_cell=1)
    r = evaluate(tiny, qs)
    assert len(r["by_language"]) == 8 and r["worst_language"] <= r["accuracy"] <= 1
    with pytest.raises(ValueError, match="empty"):
        evaluate(tiny, [])


def _train_on_rank(tmp: str, steps: int, resume: bool):
    import torch.distributed as dist

    from icml26.lrpo import CharGPT, GPTConfig

    torch.manual_seed(0)
    policy = CharGPT(GPTConfig(n_layer=1, n_head=2, n_embd=16))
    cfg = GRPOConfig(router="lrpo", steps=steps, questions_per_step=2, G=4, max_new=5, save_every=1)
    res = train_grpo(policy, SPLIT, cfg, checkpoint_dir=tmp, resume=resume)
    return dist.get_rank(), policy.state_dict(), res.history, res.router.state_dict()


@pytest.mark.distributed
def test_two_ranks_keep_equal_weights_and_router_and_resume(tmp_path):
    from icml26.testing import run_distributed

    (r0, w0, h0, s0), (r1, w1, _, s1) = run_distributed(_train_on_rank, str(tmp_path), 2, False,
                                                          world_size=2)  # fmt: skip
    assert {r0, r1} == {0, 1}
    for k, v in w0.items():
        torch.testing.assert_close(w1[k], v, rtol=0, atol=0, msg=k)
    assert s0 == s1  # the router saw both ranks' rewards
    names = {p.name for p in tmp_path.glob("step000002/rng-rank*.json")}
    assert names == {"rng-rank0.json", "rng-rank1.json"}
    assert sorted(p.name for p in tmp_path.glob("step*")) == ["step000001", "step000002"]
    (_, a, ha, sa), (_, b, _, sb) = run_distributed(_train_on_rank, str(tmp_path), 3, True,
                                                    world_size=2)  # fmt: skip
    assert len(ha) == 3 and ha[:2] == h0 and sa == sb and sa["t"] == 3
    for k, v in a.items():
        torch.testing.assert_close(b[k], v, rtol=0, atol=0, msg=k)
