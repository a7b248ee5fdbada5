"""Bad input at the public API ends in a ValueError / TypeError that names the argument."""

import json
import random

import pytest
import torch

import icml26.lrpo as R
from icml26.lrpo import LanguageRouter, make_question
from icml26.lrpo.baselines import EXP3Router, UCBRouter, UniformRouter
from icml26.testing import assert_rejects

RETURNED = {
    "GRPOResult": "train_grpo returns it",
    "Question": "make_question builds it (tested above)",
    "RewardOutput": "the reward returns it",
}
"""Public names a user receives rather than builds (records the package returns): no input."""


@pytest.mark.parametrize(
    "topic, key",
    [
        ("add", (9, 99)),
        ("add", (-1, 2)),
        ("sub", (1, 3)),
        ("count", (2, 0)),
        ("count", ()),
        ("add", (2.0, 3)),
    ],  # a float operand found the key (2, 3) and printed "2.0 plus 3"
)
def test_make_question_rejects_operands_outside_the_task(topic, key):
    assert_rejects(lambda: make_question(topic, "en", key), "key")


def test_make_question_rejects_unknown_topics_languages_and_non_tuples():
    assert_rejects(lambda: make_question("mul", "en", (1, 2)), "topic")
    assert_rejects(lambda: make_question("add", "xx", (1, 2)), "language")
    assert_rejects(lambda: make_question("add", "en", 5), "key")
    assert make_question("add", "en", (5, 5)).value == 10  # the edge of the task is in it


@pytest.mark.parametrize("router", [LanguageRouter, UCBRouter, EXP3Router, UniformRouter])
def test_routers_refuse_unknown_topics_instead_of_opening_a_row(router):
    r = router()
    assert_rejects(lambda: r.observe("geometry", "en", 1.0), "topic")
    assert_rejects(lambda: r.sample("geometry", "en", random.Random(0)), "topic")
    assert_rejects(lambda: r.probabilities("geometry"), "topic")


def test_router_state_with_a_missing_key_names_it(tmp_path):
    r = LanguageRouter()
    state = r.state_dict()
    del state["schedule"]
    path = tmp_path / "router.json"
    path.write_text(json.dumps(state))
    assert_rejects(lambda: LanguageRouter().load(path), "schedule")
    path.write_text("[1, 2]")
    assert_rejects(lambda: LanguageRouter().load(path), "router state")


def test_a_router_for_another_task_takes_its_own_topics():
    r = LanguageRouter(topics=("geo",))
    r.observe("geo", "en", 1.0, region="Europe")
    assert_rejects(lambda: r.observe("add", "en", 1.0), "topic")
    LanguageRouter(topics=None).observe("anything", "en", 0.5)


from icml26.lrpo import (  # noqa: E402
    CharGPT,
    GPTConfig,
    GRPOConfig,
    PretrainConfig,
    RouterSchedule,
    answer_text,
    heldout_questions,
    low_var_kl,
    make_router,
    split_items,
)


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: GRPOConfig(G=1), "G"),
        (lambda: GRPOConfig(router="greedy"), "router"),
        (lambda: PretrainConfig(steps=-1), "steps"),
        (lambda: RouterSchedule(alpha=2.0), "alpha"),
        (lambda: CharGPT(GPTConfig(n_embd=-1)), "n_embd"),
        (lambda: make_router("x"), "router"),
        (lambda: split_items(1.5), "test_fraction"),
        (lambda: heldout_questions(split_items(), per_cell=0), "per_cell"),
        (lambda: answer_text(5, "xx"), "language"),
        (lambda: low_var_kl(torch.zeros(3), torch.zeros(4)), "ref_logp"),
    ],
)
def test_configs_and_helpers_name_a_bad_setting(make, name):
    assert_rejects(make, name)


def test_rewards_and_language_id_name_bad_inputs():
    assert_rejects(lambda: R.AnswerSimilarity(w_value=2), "w_value")
    assert_rejects(lambda: R.AnswerSimilarity()(5, "5"), "answer")
    assert_rejects(lambda: R.LangID(["xx"]), "languages")
    assert_rejects(lambda: R.LangID()(5), "text")
    assert_rejects(lambda: R.PairCalibration.from_translations(R.AnswerSimilarity(), n=0), "n")
    # a pair the calibration never measured shifts by 0 (documented), it is not an error
    assert R.PairCalibration({}, {}).shift("en", "de") == 0.0
    assert_rejects(lambda: R.calibrated_reward("5", "5", "xx", "en"), "question_language")
    assert_rejects(lambda: R.calibrated_reward(5, "5", "en", "en"), "answer")
    reward = R.trl_reward_function()
    assert_rejects(lambda: reward(["5"], ["5", "6"], ["en"], ["en"]), "reference")


def test_routers_groups_and_advantages_name_bad_inputs():
    assert_rejects(lambda: R.FixedRouter(language="xx"), "language")
    rng = random.Random(0)
    assert_rejects(lambda: R.OriginalRouter().sample("geo", "en", rng), "topic")
    assert_rejects(lambda: R.OriginalRouter().sample("add", "xx", rng), "language")
    question = make_question("add", "en", (1, 2))
    assert_rejects(lambda: R.multilingual_group(question, LanguageRouter(), G=0), "G")
    assert_rejects(lambda: R.multilingual_group(object(), LanguageRouter()), "question")
    assert_rejects(lambda: R.route_rows([{"question": "x"}], LanguageRouter()), "row 0")
    nan = torch.tensor([float("nan"), 1.0])
    assert_rejects(lambda: R.grpo_advantages(nan, torch.tensor([0, 0])), "rewards")
    assert_rejects(lambda: R.grpo_advantages(torch.zeros(3), torch.zeros(2)), "group_ids")
    assert_rejects(lambda: R.grpo_advantages(torch.zeros(3), torch.zeros(3), eps=-1.0), "eps")


def test_training_names_a_policy_or_split_of_the_wrong_kind():
    split = R.split_items()
    assert_rejects(lambda: R.pretrain(None, split, R.PretrainConfig()), "policy")
    assert_rejects(lambda: R.train_grpo(None, split, R.GRPOConfig()), "policy")
    assert_rejects(lambda: R.evaluate(None, [make_question("add", "en", (1, 2))]), "policy")
    assert_rejects(lambda: R.evaluate(None, []), "questions")


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: R.router.RouterSchedule(tau_min=0.0), "tau_min"),
        (lambda: R.router.RouterSchedule(eps_init=1.5), "eps_init"),
        (lambda: R.router.RouterSchedule(eps_decay=0.0), "eps_decay"),
        (lambda: R.policy.GPTConfig(n_layer=0).check(), "n_layer"),
        (lambda: R.train.PretrainConfig(batch=0), "batch"),
    ],
)
def test_config_messages_name_the_one_bad_field(make, name):
    err = assert_rejects(make, name)
    assert str(err).startswith(f"{name} must"), err


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from icml26.lrpo.data import MAX_OPERAND  # noqa: E402
from icml26.testing.strategies import out_of_range  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(a=out_of_range(0, MAX_OPERAND, integer=True), b=st.integers(0, MAX_OPERAND))
def test_every_operand_outside_the_add_task_is_named(a, b):
    """The add task's operands are integers in [0, MAX_OPERAND]: anything else -- negative, too
    large, a fraction, NaN or inf, a boolean -- names the key."""
    assert_rejects(lambda: make_question("add", "en", (a, b)), "key")
    assert_rejects(lambda: make_question("add", "en", (b, a)), "key")
