import random
from types import SimpleNamespace

import pytest
import torch

from icml26.lrpo import (
    LanguageRouter,
    grpo_advantages,
    make_question,
    multilingual_group,
    route_rows,
)
from icml26.lrpo.baselines import UniformRouter


@pytest.mark.parametrize("orig_min", [0, 2, 5, 8])
def test_orig_min_rollouts_stay_in_question_language(orig_min):
    q = make_question("add", "pl", (3, 4))
    rng = random.Random(0)
    for _ in range(20):
        targets = multilingual_group(q, UniformRouter(), G=8, orig_min=orig_min, rng=rng)
        assert len(targets) == 8
        assert targets[:orig_min] == ["pl"] * orig_min
        assert sum(t == "pl" for t in targets) >= orig_min


def test_routed_rollouts_follow_the_router():
    router = LanguageRouter()
    router.schedule = router.schedule.__class__(eps_init=0.0, tau_init=1e-3, tau_min=1e-3)
    router.topic_q["count"][router.languages.index("nl")] = 1.0
    q = make_question("count", "en", (1, 0, 1))
    assert multilingual_group(q, router, 8, 2, random.Random(0)) == ["en"] * 2 + ["nl"] * 6


def test_group_bad_inputs():
    q = make_question("add", "en", (1, 2))
    with pytest.raises(ValueError, match="orig_min"):
        multilingual_group(q, UniformRouter(), G=2, orig_min=3)
    with pytest.raises(ValueError, match="empty group"):
        multilingual_group(q, UniformRouter(), G=0, orig_min=0)
    with pytest.raises(ValueError, match="language"):
        multilingual_group(SimpleNamespace(topic="add", language="xx"), UniformRouter(), 4, 1)


def test_advantages_zero_for_constant_group_and_sum_to_zero():
    rewards = torch.tensor([0.5, 0.5, 0.5, 0.0, 1.0, 0.25, 0.9])
    gids = torch.tensor([0, 0, 0, 1, 1, 1, 2])
    a = grpo_advantages(rewards, gids)
    assert torch.equal(a[:3], torch.zeros(3, dtype=a.dtype))
    assert a[3:6].sum().abs() < 1e-12
    assert a[6] == 0  # a group of one has no comparison
    r = rewards[3:6].double()
    assert a[3:6] == pytest.approx(((r - r.mean()) / (r.std() + 1e-6)).tolist())


def test_advantages_bad_inputs():
    with pytest.raises(ValueError, match="empty"):
        grpo_advantages(torch.zeros(0), torch.zeros(0, dtype=torch.long))
    with pytest.raises(ValueError, match="one length"):
        grpo_advantages(torch.zeros(3), torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError, match="finite"):
        grpo_advantages(torch.tensor([1.0, float("nan")]), torch.zeros(2, dtype=torch.long))


def test_route_rows_builds_tagged_copies():
    rows = [{"question": "what is 2 plus 2?", "language": "en", "topic": "add", "reference": "x"}]
    out = route_rows(rows, UniformRouter(), G=4, orig_min=2, rng=random.Random(0))
    assert len(out) == 4 and {r["group"] for r in out} == {0}
    assert [r["target_language"] for r in out[:2]] == ["en", "en"]
    assert all(r["prompt"].endswith(f"<{r['target_language']}>=") for r in out)
    with pytest.raises(ValueError, match="row 0 lacks"):
        route_rows([{"question": "q"}], UniformRouter())
