import pytest

from icml26.lrpo import (
    LANGUAGES,
    AnswerSimilarity,
    LangID,
    PairCalibration,
    answer_text,
    calibrated_reward,
)
from icml26.lrpo.data import MAX_VALUE
from icml26.lrpo.reward import char_trigram_cosine, denoted_value, trl_reward_function


def test_langid_identifies_reference_answers():
    lid = LangID()
    misses = [(lang, v) for lang in LANGUAGES for v in range(MAX_VALUE + 1)
              if lid(answer_text(v, lang)) != lang]  # fmt: skip
    assert misses == []  # a correct answer is never gated out
    assert lid("   ") is None and lid("?!*.") is None


def test_gate_zeroes_a_wrong_language_answer():
    ref = answer_text(9, "de")
    wrong = calibrated_reward(answer_text(9, "fr"), ref, "de", "es")
    assert wrong.reward == 0.0 and not wrong.language_ok and wrong.detected == "fr"
    right = calibrated_reward(answer_text(9, "es"), ref, "de", "es")
    assert right.language_ok and right.reward > 0.5


def test_reward_orders_by_meaning():
    ref = answer_text(7, "en")
    exact = calibrated_reward(answer_text(7, "en"), ref, "en", "en").reward
    near = calibrated_reward(answer_text(8, "en"), ref, "en", "en").reward
    far = calibrated_reward(answer_text(1, "en"), ref, "en", "en").reward
    assert exact > near > far > 0


def test_calibration_removes_a_pairs_mean_similarity():
    def sim(answer, reference):  # a similarity biased towards one pair
        return 0.9 if ("resultado" in answer) == ("resultado" in reference) else 0.5

    cal = PairCalibration.from_translations(sim, languages=("es", "pt", "de"), n=5)
    assert cal.means[("es", "pt")] == pytest.approx(0.9)
    assert cal.means[("de", "es")] == pytest.approx(0.5)
    weights = {k: 5 for k in cal.means}
    mu_ref = sum(cal.means[k] * weights[k] for k in cal.means) / sum(weights.values())
    assert cal.mu_ref == pytest.approx(mu_ref)
    out = calibrated_reward(answer_text(3, "pt"), answer_text(3, "es"), "es", "pt",
                            similarity=sim, calibration=cal)  # fmt: skip
    assert out.similarity == 0.9
    assert out.calibrated == pytest.approx(0.9 - (0.9 - mu_ref))  # the pair's mean is gone
    assert out.reward == pytest.approx((out.calibrated + 1) / 2)
    # a pair without a mean stays uncalibrated
    assert cal.shift("en", "es") == 0.0


def test_default_calibration_evens_out_look_alike_pairs():
    s = AnswerSimilarity()
    cal = PairCalibration.from_translations(s)
    assert cal.means[("es", "pt")] > cal.means[("de", "es")]  # surface bias exists...
    for a, b in (("es", "pt"), ("de", "es")):  # ...and calibration puts the pairs level
        v = [
            s(answer_text(x, b), answer_text(x, a)) - cal.shift(a, b) for x in range(MAX_VALUE + 1)
        ]
        assert sum(v) / len(v) == pytest.approx(cal.mu_ref, abs=0.02)


def test_similarity_pieces():
    assert denoted_value("the result is seven") == 7
    assert denoted_value("le résultat est dix") == 10
    assert denoted_value("the result is") is None
    assert char_trigram_cosine("abc", "abc") == pytest.approx(1.0)
    assert char_trigram_cosine("", "abc") == 0.0
    assert AnswerSimilarity()("nonsense", answer_text(4, "en")) < 0.2
    with pytest.raises(ValueError):
        AnswerSimilarity(w_value=2.0)


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="target_language"):
        calibrated_reward("x", "y", "en", "zh")
    with pytest.raises(ValueError, match="question_language"):
        calibrated_reward("x", "y", "klingon", "en")
    with pytest.raises(TypeError):
        calibrated_reward(None, "y", "en", "en")
    with pytest.raises(ValueError, match="similarity returned"):
        calibrated_reward(
            answer_text(1, "en"), "y", "en", "en", similarity=lambda a, b: float("nan")
        )


def test_trl_reward_function_matches_calibrated_reward():
    f = trl_reward_function()
    refs = [answer_text(5, "de")] * 3
    completions = [answer_text(5, "de"), answer_text(5, "en"), [{"role": "assistant",
                   "content": answer_text(6, "en")}]]  # fmt: skip
    out = f(completions=completions, reference=refs, language=["de"] * 3,
            target_language=["de", "fr", "en"], prompts=["p"] * 3)  # fmt: skip
    assert out[1] == 0.0  # English answer asked for in French
    assert out[0] == calibrated_reward(completions[0], refs[0], "de", "de").reward
    assert 0 < out[2] < out[0]
