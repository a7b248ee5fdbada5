import random

import pytest

from icml26.lrpo.data import (
    LANGUAGES,
    TOPICS,
    answer_text,
    heldout_questions,
    make_question,
    parse_answer,
    parse_any,
    pretraining_mix,
    pretraining_texts,
    prompt,
    sample_questions,
    split_items,
)


def test_split_holds_out_cells_disjointly():
    s = split_items(seed=3)
    for topic in TOPICS:
        for lang in LANGUAGES:
            assert not set(s.train[topic][lang]) & set(s.test[topic][lang])
            assert s.train[topic][lang] and s.test[topic][lang]
    # a held-out key is still seen in some other language: transfer is possible
    key = s.test["add"]["pl"][0]
    assert any(key in s.train["add"][lang] for lang in LANGUAGES if lang != "pl")


def test_questions_and_answers():
    q = make_question("sub", "fr", (9, 4))
    assert q.value == 5 and q.text == "combien font 9 moins 4?"
    assert q.reference() == "le résultat est cinq" and q.reference("de") == "das ergebnis ist fünf"
    c = make_question("count", "en", (1, 0, 1, 1))
    assert c.text == "how many stars: *.**?" and c.value == 3
    assert prompt(q.text, "it") == "combien font 9 moins 4? <it>="
    assert parse_answer(answer_text(7, "nl"), "nl") == 7
    assert parse_answer(answer_text(7, "nl"), "de") is None
    assert parse_any(answer_text(0, "pl")) == (0, "pl")


def test_sampling_and_pretraining_text():
    s = split_items()
    rng = random.Random(0)
    qs = sample_questions(s.train, 200, rng)
    assert {q.language for q in qs} == set(LANGUAGES) and {q.topic for q in qs} == set(TOPICS)
    assert all(q.key in s.train[q.topic][q.language] for q in qs)
    texts = pretraining_texts(s, 300, rng, mix={"en": 1.0, "pl": 0.0}, cross_lingual=0.0)
    assert all(t.endswith("\n") and " <en>=the result is " in t for t in texts)
    held = heldout_questions(s, per_cell=3)
    assert len(held) == 3 * len(TOPICS) * len(LANGUAGES)
    assert all(q.key in s.test[q.topic][q.language] for q in held)


def test_bad_inputs():
    with pytest.raises(ValueError, match="language must be one of"):
        make_question("add", "zh", (1, 2))
    with pytest.raises(ValueError, match="topic must be one of"):
        make_question("mul", "en", (1, 2))
    with pytest.raises(ValueError, match="test_fraction"):
        split_items(test_fraction=1.0)
    with pytest.raises(ValueError, match="mix"):
        pretraining_mix({"en": -1.0})
    with pytest.raises(ValueError, match="positive"):
        pretraining_mix({"en": 0.0})
