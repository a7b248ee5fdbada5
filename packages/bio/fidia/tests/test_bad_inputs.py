"""Bad input at the public API ends in a ValueError / TypeError that names the argument."""

import pytest
import torch

from icml26.fidia.data import load_backbone
from icml26.fidia.reward import CompositeReward, DesignabilityProxy
from icml26.testing import assert_rejects

RETURNED = {
    "RewardOutput": "the reward returns it",
    "Samples": "the policy returns it",
    "Scores": "the policy returns it",
    "Encoding": "the policy's encoder returns it",
    "TrainResult": "train returns it",
}
"""Public names a user receives rather than builds (records the package returns): no input."""


@pytest.fixture(scope="module")
def proxy(helix):
    return DesignabilityProxy(helix)


@pytest.mark.parametrize(
    "seqs",
    [
        torch.full((2, 20), 99),  # integer codes outside the 21-letter alphabet
        torch.full((2, 20), -1),
        torch.rand(2, 20),  # a float "sequence"
        torch.zeros(2, 19, dtype=torch.long),  # the wrong length
    ],
)
def test_the_reward_refuses_what_is_not_a_sequence(helix, proxy, seqs):
    reward = CompositeReward(helix, designability=lambda s: torch.full((len(s),), 0.5))
    assert_rejects(lambda: reward(seqs), "seqs")
    assert_rejects(lambda: proxy(seqs), "seqs")


@pytest.mark.parametrize("content", [b"garbage text\n", b"ATOM  garbage\n", b"\x00\x01garbage"])
def test_load_backbone_names_the_file_it_cannot_read(tmp_path, content):
    for suffix in (".pdb", ".cif"):
        path = tmp_path / f"broken{suffix}"
        path.write_bytes(content)
        assert_rejects(lambda path=path: load_backbone(path), str(path))
    assert_rejects(lambda: load_backbone(tmp_path / "absent.pdb"), "absent.pdb")


from icml26.fidia import (  # noqa: E402
    TrainConfig,
    decode,
    encode,
    example_backbone,
    load_mpnn,
    log_binom,
    maxn_value,
    maxn_weights,
    passn_value,
    passn_weights,
    policy_weights,
)


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: encode("AB1Z"), "sequence"),
        (lambda: decode(torch.tensor([99])), "indices"),
        (lambda: example_backbone("x"), "example"),
        (lambda: load_mpnn("x"), "weights"),
        (lambda: TrainConfig(steps=-1), "steps"),
        (lambda: maxn_value(torch.rand(8), 0), "N"),
        (lambda: maxn_value(torch.rand(8), 20), "N"),
        (lambda: maxn_weights(torch.full((8,), float("nan")), 4), "rewards"),
        (lambda: maxn_weights(torch.rand(8), 4, baseline="y"), "baseline"),
        (lambda: passn_value(torch.rand(8), 4), "successes"),
        (lambda: passn_weights(torch.rand(8), 4), "successes"),
        (lambda: policy_weights(torch.rand(8), "x", 4), "objective"),
    ],
)
def test_estimators_and_helpers_name_a_bad_setting(make, name):
    assert_rejects(make, name)


def test_log_binom_of_an_empty_choice_is_minus_infinity():
    assert log_binom(3, 5).item() == float("-inf")  # documented: C(3, 5) = 0


def test_backbones_tasks_policies_and_training_name_bad_values():
    from icml26.fidia import Backbone, MPNNPolicy, Task, train
    from icml26.fidia.data import ideal_helix

    bb = ideal_helix(8)
    fields = dict(name="x", X=bb.X, native=bb.native, residue_idx=bb.residue_idx,
                  chain_encoding=bb.chain_encoding, res_ids=bb.res_ids)  # fmt: skip
    assert_rejects(lambda: Backbone(**{**fields, "X": bb.X.numpy()}), "X")
    assert_rejects(lambda: Backbone(**{**fields, "native": bb.native + 30}), "native")
    assert_rejects(lambda: Task("5pti", None), "backbone")
    assert_rejects(lambda: Task(bb, None), "reward")
    assert_rejects(lambda: MPNNPolicy(torch.nn.Linear(2, 2)), "mpnn")
    assert_rejects(lambda: train("policy", [], TrainConfig()), "policy")


def test_rewards_name_what_is_not_a_backbone_and_policies_a_garbled_config(tmp_path):
    from icml26.fidia import MPNNPolicy

    assert_rejects(lambda: DesignabilityProxy("x"), "Backbone")
    assert_rejects(lambda: CompositeReward("x"), "Backbone")
    folder = tmp_path
    (folder / "config.json").write_text("{not json")  # a garbled config
    (folder / "policy.safetensors").write_bytes(b"")
    assert_rejects(lambda: MPNNPolicy.from_pretrained(folder), "config.json")


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from icml26.fidia.baselines import grpo_weights, rloo_weights  # noqa: E402
from icml26.testing.strategies import (  # noqa: E402
    empty,
    non_finite,
    out_of_range,
    wrong_dtype,
    wrong_rank,
)

DRAWS = settings(max_examples=30, deadline=None)

BAD_REWARDS = st.one_of(
    non_finite((None, 4)),
    non_finite((4,)),
    empty((None,)),
    wrong_rank((2, None, 4)).filter(lambda x: x.ndim == 4),  # (n,) and (groups, n) are both fine
    wrong_dtype((2, 4)).filter(torch.is_complex),  # integers and booleans are 0/1 outcomes
)


@DRAWS
@given(rewards=BAD_REWARDS)
def test_every_estimator_names_bad_rewards(rewards):
    for make in (
        lambda: maxn_value(rewards, 2),
        lambda: maxn_weights(rewards, 2),
        lambda: policy_weights(rewards, "maxn", 2),
        lambda: policy_weights(rewards, "grpo", 2),
        lambda: rloo_weights(rewards),
        lambda: grpo_weights(rewards),
    ):
        assert_rejects(make, "rewards")


@DRAWS
@given(N=out_of_range(1, 8, integer=True))
def test_every_subset_size_outside_1_to_n_is_named(N):
    rewards = torch.rand(8)
    assert_rejects(lambda: maxn_value(rewards, N), "N")
    assert_rejects(lambda: maxn_weights(rewards, N), "N")
    assert_rejects(lambda: passn_value((rewards > 0.5).double(), N), "N")


@DRAWS
@given(code=out_of_range(0, 20, integer=True))
def test_the_reward_names_every_residue_code_outside_the_alphabet(helix, proxy, code):
    seqs = [[code] * len(helix)] * 2  # as a user's nested list: as_tensor may overflow on it
    assert_rejects(lambda: proxy(seqs), "seqs")
