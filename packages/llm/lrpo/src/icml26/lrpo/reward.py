"""LRPO's reward: a language gate, then a similarity to the reference answer calibrated per
language pair.

From the authors' code (``calibrated_rs.py``): the reward is 0 unless language ID says the answer
is in the target language; otherwise it is the cosine similarity ``s`` of the answer to the
reference answer (written in the question's language), calibrated as

    cal = s - (mu_pair - mu_ref),   reward = clamp((clip(cal, -1, 1) + 1) / 2, 0, 1)

where ``mu_pair`` is the mean similarity of translations across the (question language, answer
language) pair and ``mu_ref`` the count-weighted mean over all pairs, so a pair whose surface
forms look alike (Spanish and Portuguese) is not favoured over one that does not.

What differs here, because nothing can be downloaded: the authors use fastText ``lid.176`` for
language ID and ``mmBERT-small`` embeddings for the similarity. Language ID here is ``langid``
(its bundled model, restricted to the task's languages); the similarity is pluggable and
defaults to :class:`AnswerSimilarity`, a reconstruction that scores meaning (the value the number
words denote) and surface (character trigrams), so it carries the cross-lingual surface bias the
calibration exists to remove. Pair means are measured on translations of the same answers, 30 per
pair, as the authors' table was.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache

from icml26.lrpo.data import LANGUAGES, MAX_VALUE, answer_text, check_language, number_words

Similarity = Callable[[str, str], float]
LanguageID = Callable[[str], "str | None"]


class LangID:
    """``langid``'s bundled model restricted to ``languages``: text -> code, or None when the
    text is too weak to judge (fewer than 5% alphanumeric characters, as the authors' gate)."""

    def __init__(self, languages: Sequence[str] = LANGUAGES):
        from langid.langid import LanguageIdentifier, model

        self.languages = tuple(check_language(x, "languages") for x in languages)
        self._identifier = LanguageIdentifier.from_modelstring(model, norm_probs=False)
        self._identifier.set_languages(list(self.languages))

    def __call__(self, text: str) -> str | None:
        if not isinstance(text, str):
            raise TypeError(f"text must be str, got {type(text).__name__}")
        text = text.strip()
        if not text or sum(c.isalnum() for c in text) / len(text) < 0.05:
            return None
        return self._identifier.classify(text)[0]


@cache
def default_language_id() -> LangID:
    return LangID()


def _trigrams(text: str) -> Counter:
    text = f" {text.lower()} "
    return Counter(text[i : i + 3] for i in range(len(text) - 2))


def char_trigram_cosine(a: str, b: str) -> float:
    """Cosine of the character-trigram count vectors of two texts (0 for an empty text)."""
    ca, cb = _trigrams(a), _trigrams(b)
    dot = sum(v * cb[k] for k, v in ca.items())
    na, nb = math.sqrt(sum(v * v for v in ca.values())), math.sqrt(sum(v * v for v in cb.values()))
    return dot / (na * nb) if na and nb else 0.0


@cache
def _number_lexicon() -> dict[str, int]:
    lexicon = {}
    for lang in LANGUAGES:
        for v in range(MAX_VALUE + 1):
            lexicon.setdefault(number_words(v, lang), v)
    return lexicon


def denoted_value(text: str) -> int | None:
    """The number an answer ends with, read as number words of any task language, else None."""
    words = re.split(r"\s+", text.strip().lower())
    lexicon = _number_lexicon()
    for i in range(len(words)):
        v = lexicon.get(" ".join(words[i:]))
        if v is not None:
            return v
    return None


@dataclass(frozen=True)
class AnswerSimilarity:
    """``w_value * exp(-(v - v_ref)^2 / (4 sigma^2)) + (1 - w_value) * trigram cosine``: the first
    term is the cosine of Gaussian value codes (meaning), the second the surface overlap. An answer
    that denotes no number gets only the surface term. Values in [0, 1]."""

    w_value: float = 0.8
    sigma: float = 1.0

    def __post_init__(self):
        if not 0 <= self.w_value <= 1 or not self.sigma > 0:
            raise ValueError(f"need 0 <= w_value <= 1 and sigma > 0, got {self.w_value}, "
                             f"{self.sigma}")  # fmt: skip

    def __call__(self, answer: str, reference: str) -> float:
        if not isinstance(answer, str) or not isinstance(reference, str):
            raise TypeError("answer and reference must be str")
        v, r = denoted_value(answer), denoted_value(reference)
        meaning = 0.0 if v is None or r is None else math.exp(-((v - r) ** 2) / (4 * self.sigma**2))
        return self.w_value * meaning + (1 - self.w_value) * char_trigram_cosine(answer, reference)


@dataclass(frozen=True)
class PairCalibration:
    """Mean similarity per unordered language pair (``mu_pair``) and their count-weighted mean
    (``mu_ref``); ``shift(a, b) = mu_pair - mu_ref`` (0 for a pair without a mean)."""

    means: dict[tuple[str, str], float]
    counts: dict[tuple[str, str], int]

    @property
    def mu_ref(self) -> float:
        n = sum(self.counts.values())
        return sum(self.means[k] * self.counts[k] for k in self.means) / n if n else 0.0

    def shift(self, a: str, b: str) -> float:
        key = tuple(sorted((a, b)))
        return self.means[key] - self.mu_ref if key in self.means else 0.0

    @classmethod
    def from_translations(
        cls,
        similarity: Similarity,
        languages: Sequence[str] = LANGUAGES,
        n: int = 30,
        seed: int = 0,
    ) -> PairCalibration:
        """Measure each pair's mean similarity on ``n`` answers and their translations (values
        drawn once, shared by all pairs), same-language pairs included."""
        import random

        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        values = random.Random(seed).choices(range(MAX_VALUE + 1), k=n)
        means, counts = {}, {}
        for i, a in enumerate(languages):
            for b in languages[i:]:
                key = tuple(sorted((a, b)))
                sims = [similarity(answer_text(v, a), answer_text(v, b)) for v in values]
                means[key], counts[key] = sum(sims) / n, n
        return cls(means, counts)


@cache
def default_calibration() -> PairCalibration:
    return PairCalibration.from_translations(AnswerSimilarity())


@lru_cache(maxsize=8)
def _calibration_for(similarity: Similarity) -> PairCalibration:
    return PairCalibration.from_translations(similarity)


@dataclass(frozen=True)
class RewardOutput:
    """One rollout's reward and its parts."""

    reward: float
    language_ok: bool
    similarity: float
    calibrated: float
    detected: str | None


def calibrated_reward(
    answer: str,
    reference: str,
    question_language: str,
    target_language: str,
    *,
    similarity: Similarity | None = None,
    language_id: LanguageID | None = None,
    calibration: PairCalibration | None = None,
) -> RewardOutput:
    """LRPO's reward of ``answer`` (asked for in ``target_language``) against ``reference`` (the
    reference answer in ``question_language``): 0 if language ID disagrees with the target, else
    clamp((clip(s - (mu_pair - mu_ref), -1, 1) + 1) / 2, 0, 1). A custom ``similarity`` without
    a ``calibration`` gets one measured on the task's translations (cached per similarity)."""
    check_language(question_language, "question_language")
    check_language(target_language, "target_language")
    if not isinstance(answer, str) or not isinstance(reference, str):
        raise TypeError("answer and reference must be str")
    if similarity is None:
        similarity = AnswerSimilarity()
        calibration = calibration or default_calibration()
    elif calibration is None:
        calibration = _calibration_for(similarity)
    language_id = language_id or default_language_id()
    detected = language_id(answer)
    if detected != target_language:
        return RewardOutput(0.0, False, 0.0, 0.0, detected)
    s = float(similarity(answer, reference))
    if not math.isfinite(s):
        raise ValueError(f"similarity returned {s} for {answer!r}")
    shift = calibration.shift(question_language, detected) if calibration is not None else 0.0
    cal = min(1.0, max(-1.0, s - shift))
    return RewardOutput(min(1.0, max(0.0, (cal + 1) / 2)), True, s, cal, detected)


def trl_reward_function(
    similarity: Similarity | None = None,
    language_id: LanguageID | None = None,
    calibration: PairCalibration | None = None,
) -> Callable[..., list[float]]:
    """LRPO's reward as a TRL ``GRPOTrainer`` reward function. TRL calls it with the batch's
    ``completions`` and the dataset's columns as keyword lists; the dataset needs the columns
    ``reference``, ``language`` (the question's) and ``target_language`` (see
    :func:`icml26.lrpo.group.route_rows`). Plain-text completions and chat completions (lists of
    messages) are both accepted."""

    def lrpo_reward(completions, reference, language, target_language, **_) -> list[float]:
        columns = {"reference": reference, "language": language, "target_language": target_language}
        short = {k: len(v) for k, v in columns.items() if len(v) != len(completions)}
        if short:
            raise ValueError(f"{len(completions)} completions but column lengths {short}: each "
                             "dataset column needs one entry per completion")  # fmt: skip
        out = []
        for c, ref, q_lang, t_lang in zip(completions, reference, language, target_language,
                                          strict=True):  # fmt: skip
            text = c if isinstance(c, str) else c[-1]["content"]
            out.append(calibrated_reward(text, ref, q_lang, t_lang, similarity=similarity,
                                         language_id=language_id,
                                         calibration=calibration).reward)  # fmt: skip
        return out

    return lrpo_reward
