"""Bad input at the searches ends in a named error, not a silent run."""

import numpy as np
import pytest

from icml26.rerooter.evaluators import check_output
from icml26.testing import assert_rejects

RETURNED = {
    "BootstrapHistory": "bootstrap returns it",
    "SearchResult": "the searches return it",
}
"""Public names a user receives rather than builds (records the package returns): no input."""


def test_an_unnormalised_log_policy_is_named():
    zeros = np.zeros((2, 4))  # log pi = 0 everywhere: probabilities summing to 4
    assert_rejects(lambda: check_output(zeros, np.zeros(2), 2, 4), ["log_pi", "sum to 4", "1"])
    logits = np.array([[2.0, 1.0, 0.0, -1.0]])
    assert_rejects(lambda: check_output(logits, np.zeros(1), 1, 4), ["log_softmax"])
    uniform = np.full((2, 4), np.log(0.25))
    check_output(uniform, np.zeros(2), 2, 4)  # a distribution passes


@pytest.mark.parametrize(
    "log_pi, h, names",
    [
        (np.zeros((2, 3)), np.zeros(2), ["(2, 4)"]),
        (np.full((2, 4), np.nan), np.zeros(2), ["NaN"]),
        (np.full((2, 4), np.log(0.25)), np.array([0.0, np.inf]), ["infinite"]),
    ],
)
def test_wrong_shapes_and_values_are_named(log_pi, h, names):
    assert_rejects(lambda: check_output(log_pi, h, 2, 4), names)


from icml26.rerooter import (  # noqa: E402
    AuthorsBootstrapConfig,
    BootstrapConfig,
    ClusterRerooter,
    ConvNetConfig,
    HeuristicRerooter,
    NetEvaluator,
    PuzzleEnv,
    SlidingTile,
    Sokoban,
    TwoHeadedConvNet,
    UniformPolicy,
    bundled_levels,
    is_solution,
    load_boxoban,
    lts,
    lts_cm_budget,
    parse_boxoban,
    phs_star,
    replay,
    rerooted_cost_reference,
    run_search,
    sqrt_lts,
)


@pytest.fixture(scope="module")
def level():
    return bundled_levels("test")[0]


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: bundled_levels("x"), "split"),
        (lambda: parse_boxoban("hello"), "header"),
        (lambda: Sokoban(["#####", "#.$ #", "#####"]), "player"),
        (lambda: SlidingTile([0, 1, 1, 3]), "permutation"),
        (lambda: HeuristicRerooter(alpha=-1), "alpha"),
        (lambda: ClusterRerooter(resolution=0), "resolution"),
        (lambda: TwoHeadedConvNet(ConvNetConfig(channels=-1)), "size"),
        (lambda: NetEvaluator("net"), "net"),
        (lambda: PuzzleEnv([]), "problems"),
        (lambda: BootstrapConfig(initial_budget=0), "initial_budget"),
        (lambda: AuthorsBootstrapConfig(method="bfs"), "method"),
        (lambda: rerooted_cost_reference([-1.0, -2.0], [1.0]), "weights"),
        (lambda: lts_cm_budget(-1, 10, 0, 0, 0, 0), "budget"),
    ],
)
def test_builders_and_helpers_name_a_bad_setting(make, name):
    assert_rejects(make, name)


def test_searches_name_a_bad_budget_or_method(level, tmp_path):
    ev = UniformPolicy(heuristic=True)
    assert_rejects(lambda: lts(level, ev, 0), "budget")
    assert_rejects(lambda: phs_star(level, ev, -1), "budget")
    assert_rejects(lambda: sqrt_lts(level, ev, HeuristicRerooter(), 0), "budget")
    for budget in (2.5, True, float("nan")):  # 2.5 and True ran as 3 and 1 expansions
        assert_rejects(lambda b=budget: lts(level, ev, b), "budget")
        assert_rejects(lambda b=budget: lts(level, ev, 10, batch_size=b), "batch_size")
    assert_rejects(lambda: run_search("bfs", level, ev, 10), "method")
    assert_rejects(lambda: replay(level, [-1]), "actions")
    assert not is_solution(level, [99])  # documented: an invalid sequence is not a solution
    assert_rejects(lambda: load_boxoban(tmp_path / "absent.txt"), "absent.txt")


def test_searches_and_training_name_arguments_of_the_wrong_kind(level):
    from icml26.rerooter import (
        Environment,
        Evaluator,
        MixedRerooter,
        Rerooter,
        SearchTree,
        bootstrap_train,
        bootstrap_train_authors,
    )

    ev = UniformPolicy(heuristic=True)
    assert isinstance(level, Environment)  # a protocol: anything with its methods is one
    assert_rejects(lambda: sqrt_lts("level", ev, Rerooter(), 10), "Environment")
    assert_rejects(lambda: sqrt_lts(level, "policy", Rerooter(), 10), "evaluator")
    assert_rejects(lambda: sqrt_lts(level, ev, "cluster", 10), "rerooter")
    assert_rejects(lambda: MixedRerooter(u_a=float("nan")), "u_a")
    assert_rejects(lambda: MixedRerooter(u_b=-1.0), "u_b")
    net = TwoHeadedConvNet(ConvNetConfig())
    assert_rejects(lambda: bootstrap_train([], net), "problems")
    assert_rejects(lambda: bootstrap_train(["level"], net), "Environment")
    assert_rejects(lambda: bootstrap_train([level], "net"), "net")
    assert_rejects(lambda: bootstrap_train_authors([level], [], net), "validation")
    assert_rejects(lambda: bootstrap_train_authors([level], ["x"], net), "Environment")
    assert callable(ev) and Evaluator is not None  # the evaluator protocol: (env, states) -> ...
    tree = SearchTree()
    assert tree.states == [] and MixedRerooter().u_a == 1.0  # a record the search fills


def test_the_net_names_a_garbled_config(tmp_path):
    from icml26.rerooter import TwoHeadedConvNet

    folder = tmp_path
    (folder / "config.json").write_text("{not json")  # a garbled config
    (folder / "model.safetensors").write_bytes(b"")
    assert_rejects(lambda: TwoHeadedConvNet.from_pretrained(folder), "config.json")


def test_every_search_names_an_evaluator_whose_log_policy_is_unnormalised(level):
    """Through the public searches, not only the check they share."""

    def zeros(env, states):  # log pi = 0: probabilities summing to the number of actions
        return np.zeros((len(states), env.num_actions)), np.zeros(len(states))

    for search in (lts, phs_star):
        assert_rejects(lambda s=search: s(level, zeros, 50), "log_pi")
    assert_rejects(lambda: sqrt_lts(level, zeros, HeuristicRerooter(), 50), "log_pi")


from hypothesis import given, settings  # noqa: E402

from icml26.testing.strategies import bad_tensors, empty, non_finite, wrong_rank  # noqa: E402

# integer heuristics are accepted on purpose (costs-to-go are often counts)
BAD_H = non_finite((2,)) | wrong_rank((2,)) | empty((2,))


@settings(max_examples=30, deadline=None)
@given(log_pi=bad_tensors((2, 4)), h=BAD_H)
def test_evaluator_outputs_of_every_bad_kind_are_named(log_pi, h):
    """NaN / inf, a wrong rank, non-float values (log_pi), or no rows."""
    uniform = np.full((2, 4), np.log(0.25))
    assert_rejects(lambda: check_output(log_pi.numpy(), np.zeros(2), 2, 4), "log_pi")
    assert_rejects(lambda: check_output(uniform, h.numpy(), 2, 4), "h")


def test_boolean_or_complex_evaluator_outputs_are_refused():
    uniform = np.full((2, 4), np.log(0.25))
    assert_rejects(lambda: check_output(uniform, np.array([True, False]), 2, 4), "h")
    assert_rejects(lambda: check_output(uniform + 0j, np.zeros(2), 2, 4), "log_pi")
