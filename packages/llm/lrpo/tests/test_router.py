import json
import math
import random

import pytest

from icml26.lrpo import (
    EXP3Router,
    LanguageRouter,
    RouterSchedule,
    UCBRouter,
    UniformRouter,
    make_router,
)
from icml26.lrpo.baselines import FixedRouter, OriginalRouter
from icml26.lrpo.router import softmax

LANGS = ("en", "de", "fr")


def router(**kw) -> LanguageRouter:
    return LanguageRouter(LANGS, RouterSchedule(update_every=1, **kw), topics=None)


def test_update_matches_hand_computed_zscore_and_ema():
    r = router()
    # window 1: en rewards 1, 0 (mean .5), de 1 (mean 1), fr not routed
    for lang, rew in (("en", 1.0), ("en", 0.0), ("de", 1.0)):
        r.observe("add", lang, rew)
    r.step()
    # mean .75, population std .25: z = -1, +1; Q = 0.1 z; fr untouched
    assert r.topic_q["add"] == pytest.approx([-0.1, 0.1, 0.0], abs=1e-5)
    for lang, rew in (("en", 1.0), ("de", 0.0), ("fr", 0.5)):
        r.observe("add", lang, rew)
    r.step()
    z = 0.5 / math.sqrt(1 / 6)  # (1 - .5) / std(1, 0, .5)
    assert r.topic_q["add"] == pytest.approx(
        [0.9 * -0.1 + 0.1 * z, 0.9 * 0.1 - 0.1 * z, 0.0], abs=1e-5
    )
    assert r.topic_q["sub"] == [0.0, 0.0, 0.0]  # other topics are separate cells


def test_update_waits_for_update_every_and_buffers():
    r = LanguageRouter(LANGS)  # authors' default: every 5 steps
    for t in range(4):
        r.observe("add", "en", 1.0)
        r.observe("add", "de", 0.0)
        r.step()
        assert r.topic_q["add"] == [0.0, 0.0, 0.0], t
    r.observe("add", "en", 1.0)
    r.observe("add", "de", 0.0)
    r.step()  # t = 5: the whole window's means (1 and 0) -> z = +-1
    assert r.topic_q["add"] == pytest.approx([0.1, -0.1, 0.0], abs=1e-5)


def test_single_language_cell_gets_zero_z():
    r = router()
    r.observe("add", "fr", 0.7)
    r.step()
    assert r.topic_q["add"] == [0.0, 0.0, 0.0]


def test_schedules_follow_authors_settings():
    s = RouterSchedule()
    assert s.tau(0) == 1.0 and s.eps(0) == pytest.approx(0.2)
    assert s.tau(1000) == pytest.approx(0.999**1000)
    assert s.tau(5000) == 0.3
    assert s.eps(100) == pytest.approx(0.2 * 0.995**100)
    r = router()
    for _ in range(7):
        r.step()
    assert r.tau == pytest.approx(0.999**7) and r.eps == pytest.approx(0.2 * 0.995**7)


def test_region_table_adds_to_topic_logits():
    r = router()
    for lang, rew in (("en", 1.0), ("de", 0.0)):
        r.observe("geo", lang, rew, region="Europe")
    r.step()
    assert r.region_q["Europe"] == pytest.approx([0.1, -0.1, 0.0], abs=1e-5)
    assert r.logits("geo", "Europe") == pytest.approx([0.2, -0.2, 0.0], abs=1e-5)
    assert r.logits("geo") == pytest.approx([0.1, -0.1, 0.0], abs=1e-5)


def test_eps_one_is_uniform_and_tau_to_zero_is_greedy():
    r = router(eps_init=1.0, eps_decay=1.0, eps_min=1.0)
    r.topic_q["add"] = [5.0, 0.0, 0.0]
    assert r.probabilities("add") == pytest.approx([1 / 3] * 3)
    rng = random.Random(0)
    draws = [r.sample("add", "en", rng) for _ in range(3000)]
    assert all(abs(draws.count(x) / 3000 - 1 / 3) < 0.04 for x in LANGS)
    g = router(eps_init=0.0, tau_init=1e-4, tau_min=1e-4)
    g.topic_q["add"] = [0.0, 0.01, -0.5]
    assert g.probabilities("add") == pytest.approx([0.0, 1.0, 0.0], abs=1e-12)
    assert {g.sample("add", "en", rng) for _ in range(50)} == {"de"}


def test_sample_law_matches_probabilities():
    r = router()
    r.topic_q["add"] = [1.0, 0.0, -1.0]
    rng = random.Random(1)
    n = 20_000
    draws = [r.sample("add", "fr", rng) for _ in range(n)]
    for lang, p in zip(LANGS, r.probabilities("add"), strict=True):
        assert abs(draws.count(lang) / n - p) < 4 * math.sqrt(p * (1 - p) / n)


def test_state_round_trips_through_json(tmp_path):
    r = router()
    r.observe("add", "en", 1.0, region="Europe")
    r.observe("add", "de", 0.2)
    r.step()
    r.observe("sub", "fr", 0.3)  # still buffered
    path = r.save(tmp_path / "router.json")
    json.loads(path.read_text())
    s = LanguageRouter(LANGS).load(path)
    assert s.state_dict() == r.state_dict()
    s.step(), r.step()
    assert s.topic_q == r.topic_q


def test_state_mismatch_and_bad_input_raise(tmp_path):
    r = router()
    with pytest.raises(ValueError, match="router 'ucb'"):
        r.load_state_dict(UCBRouter(LANGS).state_dict())
    with pytest.raises(ValueError, match="routes"):
        r.load_state_dict(LanguageRouter(("en", "de")).state_dict())
    with pytest.raises(ValueError, match="language must be one of"):
        r.sample("add", "xx", random.Random(0))
    with pytest.raises(ValueError, match="not routed"):
        r.observe("add", "pl", 1.0)
    with pytest.raises(ValueError, match="finite"):
        r.observe("add", "en", math.nan)
    with pytest.raises(ValueError, match="languages must be one of"):
        LanguageRouter(("en", "zz"))
    with pytest.raises(ValueError, match="distinct"):
        LanguageRouter(("en", "en"))
    with pytest.raises(ValueError, match="alpha"):
        LanguageRouter(LANGS, RouterSchedule(alpha=0))
    with pytest.raises(ValueError, match="router must be one of"):
        make_router("thompson")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="cannot read"):
        r.load(tmp_path / "bad.json")


def test_softmax_stable():
    assert softmax([1000.0, 0.0], 1.0) == pytest.approx([1.0, 0.0])
    with pytest.raises(ValueError):
        softmax([0.0], 0.0)


def test_ucb_tries_each_language_then_prefers_the_best():
    r = UCBRouter(LANGS, c=0.1)
    rng = random.Random(0)
    first = [r.sample("add", "en", rng) for _ in range(3)]
    assert sorted(first) == sorted(LANGS)  # untried arms first, one group spreads over them
    means = {"en": 0.2, "de": 0.9, "fr": 0.1}
    for lang in first:
        r.observe("add", lang, means[lang])
    r.step()
    for _ in range(50):
        lang = r.sample("add", "en", rng)
        r.observe("add", lang, means[lang])
        r.step()
    assert max(range(3), key=lambda i: r.counts["add"][i]) == LANGS.index("de")


def test_exp3_update_is_importance_weighted():
    r = EXP3Router(LANGS, gamma=0.3)
    assert sum(r.probabilities("add")) == pytest.approx(1.0)
    p = r.probabilities("add")
    r.observe("add", "de", 1.0)
    r.observe("add", "en", 0.5)
    r.step()
    # one round with 2 pulls: r_hat = r / (p * 2); log w += gamma r_hat / L
    assert r.log_w["add"] == pytest.approx(
        [0.3 * 0.5 / (p[0] * 2) / 3, 0.3 * 1.0 / (p[1] * 2) / 3, 0.0]
    )
    assert r.probabilities("add")[1] > r.probabilities("add")[0] > r.probabilities("add")[2]


def test_uniform_and_original():
    assert UniformRouter(LANGS).probabilities("add") == pytest.approx([1 / 3] * 3)
    assert OriginalRouter(LANGS).sample("add", "fr", random.Random(0)) == "fr"


def test_exp3_ignores_rollouts_it_did_not_route():
    r = EXP3Router(LANGS)
    assert r.gamma == 0.3
    r.observe("add", "en", 1.0, routed=False)  # a forced original-language rollout
    r.step()
    assert r.log_w["add"] == [0.0, 0.0, 0.0]


def test_fixed_router_routes_everything_to_one_language():
    r = FixedRouter(LANGS, "de")
    assert {r.sample("add", "fr", random.Random(0)) for _ in range(10)} == {"de"}
    assert make_router("english").sample("sub", "pl", random.Random(0)) == "en"
    with pytest.raises(ValueError, match="not routed"):
        FixedRouter(LANGS, "pl")
