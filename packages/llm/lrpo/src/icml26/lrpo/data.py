"""The multilingual task: arithmetic and counting questions answered in number words.

Questions are written in one of eight languages and carry a topic (``add``, ``sub``, ``count``);
the numbers in a question are digits and the answer is a short sentence in the *target* language
whose number is written out by ``num2words`` ("the result is seven", "das ergebnis ist sieben").
The answer sentence is long enough for ``langid`` to tell the eight languages apart (every
reference answer is identified correctly), which the reward's language gate needs.

The prompt follows the authors' format, a tag after the question naming the answer's language
(``<|out_lang_fr|>`` there, ``<fr>`` here, to keep character sequences short)::

    what is 3 plus 4? <fr>=le résultat est sept\n

Splits hold out (operands, language) cells: a held-out question's operands were seen in other
languages, never in its own, so answering it takes transfer across languages (reading the
question in one language, the value learnt from others). Languages differ in difficulty through
the pretraining corpus (``pretraining_mix``): some get many examples, some few.
"""

from __future__ import annotations

import numbers
import random
from dataclasses import dataclass
from functools import cache

from num2words import num2words

LANGUAGES: tuple[str, ...] = ("en", "de", "fr", "es", "it", "pt", "nl", "pl")
"""Language codes (ISO 639-1). Each has question templates, an answer prefix and num2words."""
TOPICS: tuple[str, ...] = ("add", "sub", "count")
MAX_OPERAND = 5
"""Operands of ``add`` are 0..5 (sums 0..10); ``sub`` is a - b with b in 0..5 and a in b..10;
``count`` asks for the stars in a string of 1..5 stars and dots. Answers lie in 0..MAX_VALUE."""
MAX_VALUE = 2 * MAX_OPERAND
EOS = "\n"

QUESTIONS: dict[str, dict[str, str]] = {
    "add": {
        "en": "what is {a} plus {b}?", "de": "was ist {a} plus {b}?",
        "fr": "combien font {a} plus {b}?", "es": "cuánto es {a} más {b}?",
        "it": "quanto fa {a} più {b}?", "pt": "quanto é {a} mais {b}?",
        "nl": "wat is {a} plus {b}?", "pl": "ile to {a} dodać {b}?",
    },
    "sub": {
        "en": "what is {a} minus {b}?", "de": "was ist {a} minus {b}?",
        "fr": "combien font {a} moins {b}?", "es": "cuánto es {a} menos {b}?",
        "it": "quanto fa {a} meno {b}?", "pt": "quanto é {a} menos {b}?",
        "nl": "wat is {a} min {b}?", "pl": "ile to {a} odjąć {b}?",
    },
    "count": {
        "en": "how many stars: {s}?", "de": "wie viele sterne: {s}?",
        "fr": "combien d'étoiles: {s}?", "es": "cuántas estrellas: {s}?",
        "it": "quante stelle: {s}?", "pt": "quantas estrelas: {s}?",
        "nl": "hoeveel sterren: {s}?", "pl": "ile gwiazdek: {s}?",
    },
}  # fmt: skip
ANSWER_PREFIX: dict[str, str] = {
    "en": "the result is", "de": "das ergebnis ist", "fr": "le résultat est",
    "es": "el resultado es", "it": "il risultato è", "pt": "o resultado é",
    "nl": "het resultaat is", "pl": "wynik wynosi",
}  # fmt: skip


def check_language(language: str, argument: str = "language") -> str:
    """``language`` if it is one of :data:`LANGUAGES`, else a ValueError naming ``argument``."""
    if language not in LANGUAGES:
        raise ValueError(f"{argument} must be one of {list(LANGUAGES)}, got {language!r}")
    return language


def check_topic(topic: str, argument: str = "topic") -> str:
    """``topic`` if it is one of :data:`TOPICS`, else a ValueError naming ``argument``."""
    if topic not in TOPICS:
        raise ValueError(f"{argument} must be one of {list(TOPICS)}, got {topic!r}")
    return topic


@cache
def number_words(value: int, language: str) -> str:
    """``value`` written out in ``language`` by num2words, lower-case."""
    check_language(language)
    return num2words(int(value), lang=language).lower()


def answer_text(value: int, language: str) -> str:
    """The reference answer sentence: the language's prefix, then the number in words."""
    return f"{ANSWER_PREFIX[check_language(language)]} {number_words(value, language)}"


def tag(language: str) -> str:
    """The target-language tag appended to a question."""
    return f" <{check_language(language)}>="


def prompt(question: str, target: str) -> str:
    """The policy's input: the question, then the tag naming the answer's language."""
    return question + tag(target)


@cache
def _value_tables() -> dict[str, dict[str, int]]:
    top = MAX_VALUE
    return {lang: {answer_text(v, lang): v for v in range(top + 1)} for lang in LANGUAGES}


def parse_answer(text: str, language: str) -> int | None:
    """The value of an answer written in ``language`` (exact reference form), else None."""
    return _value_tables()[check_language(language)].get(text.strip())


def parse_any(text: str) -> tuple[int, str] | None:
    """(value, language) of an answer in any supported language, else None."""
    for lang in LANGUAGES:
        v = parse_answer(text, lang)
        if v is not None:
            return v, lang
    return None


@dataclass(frozen=True)
class Question:
    """One question: its text in ``language``, its ``topic``, the numeric ``value`` of its answer.
    ``region`` is None here (the router supports regional tables for tasks that have them)."""

    text: str
    topic: str
    language: str
    value: int
    key: tuple[int, ...]
    region: str | None = None

    def reference(self, language: str | None = None) -> str:
        """The reference answer, in the question's language unless ``language`` is given."""
        return answer_text(self.value, language or self.language)


def _items(topic: str) -> list[tuple[int, ...]]:
    if topic == "add":
        return [(a, b) for a in range(MAX_OPERAND + 1) for b in range(MAX_OPERAND + 1)]
    if topic == "sub":
        return [(a, b) for b in range(MAX_OPERAND + 1) for a in range(b, MAX_VALUE + 1)]
    if topic == "count":  # a string of stars (1) and dots (0), as the bits of a key
        return [tuple(int(c) for c in format(i, f"0{n}b")) for n in range(1, MAX_OPERAND + 1)
                for i in range(2**n)]  # fmt: skip
    raise ValueError(f"topic must be one of {list(TOPICS)}, got {topic!r}")


_RANGES = {
    "add": f"two operands in 0..{MAX_OPERAND}",
    "sub": f"a - b with b in 0..{MAX_OPERAND} and b <= a <= {MAX_VALUE}",
    "count": f"1 to {MAX_OPERAND} bits (0 or 1)",
}


@cache
def _keys(topic: str) -> frozenset[tuple[int, ...]]:
    return frozenset(_items(topic))


def make_question(topic: str, language: str, key: tuple[int, ...]) -> Question:
    """The question of ``topic`` with operands ``key`` written in ``language``."""
    check_language(language)
    check_topic(topic)
    if not isinstance(key, tuple | list):
        raise TypeError(f"key must be a tuple of operands, got {type(key).__name__}")
    # True == 1 and 2.0 == 2 would find the keys (1, ...) and (2, ...) in the set
    if any(isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in key):
        raise TypeError(f"key must hold integer operands, got {tuple(key)!r}")
    if tuple(key) not in _keys(topic):
        raise ValueError(
            f"key {tuple(key)!r} is not a {topic!r} question of this task: {_RANGES[topic]}"
        )
    template = QUESTIONS[topic][language]
    if topic == "count":
        stars = "".join("*" if bit else "." for bit in key)
        return Question(template.format(s=stars), topic, language, sum(key), tuple(key))
    a, b = key
    value = a + b if topic == "add" else a - b
    return Question(template.format(a=a, b=b), topic, language, value, tuple(key))


Cells = dict[str, dict[str, list[tuple[int, ...]]]]
"""topic -> language -> operand keys."""


@dataclass(frozen=True)
class TaskSplit:
    """Operand keys per topic and language for training and held-out evaluation (disjoint)."""

    train: Cells
    test: Cells


def split_items(test_fraction: float = 0.3, seed: int = 0) -> TaskSplit:
    """Hold out ``test_fraction`` of each topic's (operands, language) cells."""
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    rng = random.Random(seed)
    train: Cells = {t: {lang: [] for lang in LANGUAGES} for t in TOPICS}
    test: Cells = {t: {lang: [] for lang in LANGUAGES} for t in TOPICS}
    for topic in TOPICS:
        for key in _items(topic):
            for lang in LANGUAGES:
                (test if rng.random() < test_fraction else train)[topic][lang].append(key)
    return TaskSplit(train, test)


def sample_questions(
    cells: Cells,
    n: int,
    rng: random.Random,
    languages: tuple[str, ...] = LANGUAGES,
    topics: tuple[str, ...] = TOPICS,
) -> list[Question]:
    """``n`` questions, language and topic uniform, operands uniform within the cell's keys."""
    out = []
    for _ in range(n):
        topic, lang = rng.choice(topics), rng.choice(languages)
        out.append(make_question(topic, lang, rng.choice(cells[topic][lang])))
    return out


def heldout_questions(split: TaskSplit, per_cell: int = 20, seed: int = 0) -> list[Question]:
    """Held-out questions: up to ``per_cell`` per topic and language, drawn from that language's
    held-out cells (each language has its own keys; the topic mix is the same up to the cells'
    sizes)."""
    if isinstance(per_cell, bool) or not isinstance(per_cell, int) or per_cell < 1:
        raise ValueError(f"per_cell must be a positive integer, got {per_cell!r}")
    rng = random.Random(seed + 1)
    out = []
    for topic in TOPICS:
        for lang in LANGUAGES:
            keys = split.test[topic][lang]
            out += [
                make_question(topic, lang, k) for k in rng.sample(keys, min(per_cell, len(keys)))
            ]
    return out


DEFAULT_MIX: dict[str, float] = {
    "en": 8.0, "de": 4.0, "fr": 4.0, "es": 4.0, "it": 1.0, "pt": 1.0, "nl": 0.5, "pl": 0.5,
}  # fmt: skip
"""Relative pretraining data per language: two well-resourced, three medium, three scarce
(Italian and Portuguese are close to Spanish, Dutch to German: transfer can help them)."""


def pretraining_mix(mix: dict[str, float] | None = None) -> dict[str, float]:
    """Normalised language weights of the pretraining corpus (validated)."""
    mix = dict(DEFAULT_MIX if mix is None else mix)
    for lang, w in mix.items():
        check_language(lang, "mix")
        if not w >= 0:
            raise ValueError(f"mix weight of {lang!r} must be >= 0, got {w}")
    total = sum(mix.values())
    if not total > 0:
        raise ValueError("mix must give some language a positive weight")
    return {lang: w / total for lang, w in mix.items()}


def pretraining_texts(
    split: TaskSplit,
    n: int,
    rng: random.Random,
    mix: dict[str, float] | None = None,
    cross_lingual: float = 0.25,
) -> list[str]:
    """``n`` supervised sequences (prompt + reference answer + EOS) from the training keys.

    The question's language follows ``mix``; with probability ``cross_lingual`` the answer is
    asked for in another language drawn from ``mix`` too (so the tags mean something before RL).
    """
    weights = pretraining_mix(mix)
    langs, w = list(weights), list(weights.values())
    out = []
    for _ in range(n):
        q_lang = rng.choices(langs, w)[0]
        topic = rng.choice(TOPICS)
        q = make_question(topic, q_lang, rng.choice(split.train[topic][q_lang]))
        target = rng.choices(langs, w)[0] if rng.random() < cross_lingual else q_lang
        out.append(prompt(q.text, target) + q.reference(target) + EOS)
    return out
