import json

import numpy as np
import pytest
import torch

from icml26.rerooter import (
    BootstrapConfig,
    ConvNetConfig,
    NetEvaluator,
    SlidingTile,
    TwoHeadedConvNet,
    bootstrap_train,
    is_solution,
)
from icml26.testing import run_distributed

TILE_NET = ConvNetConfig(
    in_channels=9, height=3, width=3, num_actions=4, channels=8, blocks=1, hidden=32
)


def _problems(n: int = 10, seed: int = 0) -> list[SlidingTile]:
    rng = np.random.default_rng(seed)
    return [SlidingTile.random_walk(3, int(rng.integers(6, 16)), rng) for _ in range(n)]


def _cfg(**kw) -> BootstrapConfig:
    base = dict(method="sqrt_lts_h", initial_budget=60, iterations=3, train_steps=20, minibatch=32)
    base.update(kw)
    return BootstrapConfig(**base)


def test_net_shapes_and_bad_input():
    net = TwoHeadedConvNet(TILE_NET)
    logits, h = net(torch.randn(5, 9, 3, 3))
    assert logits.shape == (5, 4) and h.shape == (5,)
    with pytest.raises(ValueError, match=r"obs must have shape \(B, 9, 3, 3\)"):
        net(torch.randn(5, 4, 10, 10))
    with pytest.raises(ValueError, match="must be >= 1"):
        TwoHeadedConvNet(ConvNetConfig(channels=0))


def test_save_and_load_pretrained_round_trip(tmp_path):
    torch.manual_seed(0)
    net = TwoHeadedConvNet(TILE_NET)
    net.save_pretrained(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "model.safetensors"]
    back = TwoHeadedConvNet.from_pretrained(tmp_path)
    x = torch.randn(3, 9, 3, 3)
    for a, b in zip(net(x), back(x), strict=True):
        torch.testing.assert_close(a, b)
    with pytest.raises(ValueError, match=r"no config\.json"):
        TwoHeadedConvNet.from_pretrained(tmp_path / "nothing")


def test_bootstrap_learns_and_its_solutions_are_valid():
    problems = _problems(12)
    torch.manual_seed(0)
    net = TwoHeadedConvNet(TILE_NET)
    hist = bootstrap_train(problems, net, _cfg(iterations=4, initial_budget=300), progress=False)
    # Later iterations solve problems the first could not (at the same budget: learning).
    assert hist.rows[-1]["budget"] == 300
    assert hist.num_solved >= hist.rows[0]["solved_total"] + 3
    assert hist.curve[-1] == (hist.cumulative_expansions, hist.num_solved)
    assert all(
        b[0] >= a[0] and b[1] >= a[1] for a, b in zip(hist.curve, hist.curve[1:], strict=False)
    )
    for i, sol in hist.solved.items():
        assert is_solution(problems[i], sol["actions"])
    # The trained network is a usable evaluator.
    log_pi, _h = NetEvaluator(net)(problems[0], [problems[0].initial_state()])
    assert log_pi.shape == (1, 4) and np.isclose(np.exp(log_pi).sum(), 1.0)


def test_checkpoint_resume_equals_an_uninterrupted_run(tmp_path):
    problems = _problems(8, seed=1)
    torch.manual_seed(0)
    straight = TwoHeadedConvNet(TILE_NET)
    h_straight = bootstrap_train(problems, straight, _cfg(iterations=2), progress=False)

    torch.manual_seed(0)
    first = TwoHeadedConvNet(TILE_NET)
    bootstrap_train(problems, first, _cfg(iterations=1), checkpoint_dir=tmp_path, progress=False)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == [
        "bootstrap_state.json",
        "config.json",
        "model.safetensors",
        "optimizer.safetensors",
    ]
    assert json.loads((tmp_path / "bootstrap_state.json").read_text())["history"]["iteration"] == 1
    resumed = TwoHeadedConvNet.from_pretrained(tmp_path)
    h_resumed = bootstrap_train(
        problems, resumed, _cfg(iterations=2), checkpoint_dir=tmp_path, resume=True, progress=False
    )
    assert h_resumed.rows == h_straight.rows
    assert h_resumed.curve == h_straight.curve
    for a, b in zip(straight.state_dict().values(), resumed.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b)


def test_bootstrap_bad_config_and_resume_errors(tmp_path):
    net = TwoHeadedConvNet(TILE_NET)
    with pytest.raises(ValueError, match="method must be one of"):
        bootstrap_train(_problems(2), net, _cfg(method="bfs"))
    with pytest.raises(ValueError, match="initial_budget <= max_budget"):
        bootstrap_train(_problems(2), net, _cfg(initial_budget=10, max_budget=5))
    with pytest.raises(ValueError, match="non-empty"):
        bootstrap_train([], net, _cfg())
    with pytest.raises(ValueError, match=r"no bootstrap_state\.json"):
        bootstrap_train(_problems(2), net, _cfg(), checkpoint_dir=tmp_path, resume=True)


def _distributed_bootstrap():
    problems = _problems(8, seed=2)
    torch.manual_seed(0)
    net = TwoHeadedConvNet(TILE_NET)
    hist = bootstrap_train(problems, net, _cfg(iterations=2), progress=False)
    return {"weights": [p.detach().clone() for p in net.parameters()], "rows": hist.rows}


@pytest.mark.distributed
def test_bootstrap_runs_unchanged_under_two_gloo_ranks():
    results = run_distributed(_distributed_bootstrap, world_size=2)
    assert results[0]["rows"] == results[1]["rows"]
    assert results[0]["rows"][-1]["solved_total"] >= 1
    for a, b in zip(results[0]["weights"], results[1]["weights"], strict=True):
        torch.testing.assert_close(a, b)


def test_lts_cm_budget_rule():
    from icml26.rerooter.bootstrap import lts_cm_budget

    # Both flags (the solved set grew by > 10% of 100, and this iteration solved > 1.1x the
    # problems solved before): keep the budget.
    assert lts_cm_budget(4000, 100, 20, 40, 30, 9000) == 4000
    # Growth too small: 2 b + expansions of the solved / problems still unsolved.
    assert lts_cm_budget(4000, 100, 20, 25, 30, 9000) == 8000 + 9000 // 75
    # This iteration solved too few (re-solves included): same rule.
    assert lts_cm_budget(4000, 100, 20, 40, 21, 9000) == 8000 + 9000 // 60
    # Nothing solved yet, nothing now: doubles.
    assert lts_cm_budget(4000, 100, 0, 0, 0, 0) == 8000
    # Everything solved: no division by zero, no change.
    assert lts_cm_budget(4000, 10, 10, 10, 10, 500) == 4000


def test_authors_loop_searches_every_problem_and_stops_on_validation():
    from icml26.rerooter.bootstrap import AuthorsBootstrapConfig, bootstrap_train_authors

    torch.manual_seed(0)
    net = TwoHeadedConvNet(TILE_NET)
    rng = np.random.default_rng(4)
    train = _problems(12, seed=3)
    val = [SlidingTile.random_walk(3, n, rng) for n in (2, 3, 14, 16)]  # two easy, two harder
    cfg = AuthorsBootstrapConfig(
        method="sqrt_lts_h",
        initial_budget=60,
        problems_per_batch=5,
        grad_steps=2,
        learning_batch=16,
        validation_ratio=0.5,
        max_iterations=6,
    )
    assert cfg.resolved_epsilon() == 0.01  # the C++'s default for √LTS
    hist = bootstrap_train_authors(train, val, net, cfg, progress=False)
    rows = hist.rows
    assert all(r["searched"] == len(train) for r in rows)  # every problem, every iteration
    assert len(hist.curve) == len(train) * len(rows)
    assert any(r["loss"] is not None for r in rows)
    budgets = [r["budget"] for r in rows]
    assert budgets == sorted(budgets)  # never falls
    # Stop rule: one more iteration after the validation union reaches 50%.
    reached = next(i for i, r in enumerate(rows) if r["validation_solved_ever"] >= 2)
    assert len(rows) == min(reached + 2, cfg.max_iterations)
    for i, sol in hist.solved.items():
        assert is_solution(train[i], sol["actions"])
    with pytest.raises(ValueError, match="non-empty"):
        bootstrap_train_authors(train, [], net, cfg, progress=False)


def test_authors_loop_stops_at_the_expansion_cap():
    from icml26.rerooter.bootstrap import AuthorsBootstrapConfig, bootstrap_train_authors

    torch.manual_seed(0)
    train = _problems(12, seed=3)
    val = _problems(2, seed=5)
    cfg = AuthorsBootstrapConfig(
        method="lts",
        initial_budget=40,
        problems_per_batch=4,
        grad_steps=1,
        learning_batch=16,
        validation_ratio=1.0,
        max_iterations=50,
        max_expansions=700,
    )
    hist = bootstrap_train_authors(train, val, TwoHeadedConvNet(TILE_NET), cfg, progress=False)
    rows = hist.rows
    # It stopped on the cap, not on the iteration limit, within one chunk of it.
    assert rows[-1]["stopped_at_expansion_cap"] and len(rows) < cfg.max_iterations
    last_chunk = cfg.problems_per_batch * rows[-1]["budget"]
    assert 700 <= hist.cumulative_expansions < 700 + last_chunk
    assert not any(r["stopped_at_expansion_cap"] for r in rows[:-1])
    assert sum(r["expansions"] for r in rows) == hist.cumulative_expansions
    with pytest.raises(ValueError, match="max_expansions"):
        AuthorsBootstrapConfig(max_expansions=0).validate()
