"""The routers LRPO's bandit router is compared with, all in the same GRPO loop at the same
budget (``train.py``): the question's own language (plain GRPO), uniform over languages, always
English, and the classic bandits UCB1 and EXP3 over languages. ``make_router`` builds any of
them, or LRPO's own (``router.LanguageRouter``), by name."""

from __future__ import annotations

import math
import random
from collections import defaultdict

from icml26.lrpo.data import LANGUAGES, TOPICS, check_language
from icml26.lrpo.router import LanguageRouter, _check_reward, _Router, softmax


class OriginalRouter(_Router):
    """Always the question's own language: plain (monolingual) GRPO."""

    name = "original"

    def sample(self, topic: str, language: str, rng: random.Random, region=None) -> str:
        self._topic(topic)
        return check_language(language)

    def probabilities(self, topic: str, region=None) -> list[float]:
        self._topic(topic)
        raise ValueError("OriginalRouter has no distribution over languages: it copies the "
                         "question's language")  # fmt: skip


class UniformRouter(_Router):
    """Every language equally likely, always."""

    name = "uniform"

    def probabilities(self, topic: str, region=None) -> list[float]:
        self._topic(topic)
        return [1 / len(self.languages)] * len(self.languages)


class UCBRouter(_Router):
    """UCB1 per topic over languages: untried languages first, then the largest
    mean + c sqrt(2 ln n / n_l). Rewards are expected in [0, 1]. Deterministic given its state;
    ``sample`` draws each routed rollout after the previous one was counted as pulled, so one
    group spreads over the top arms instead of repeating one."""

    name = "ucb"

    def __init__(self, languages=LANGUAGES, c: float = 1.0, *, topics=TOPICS):
        super().__init__(languages, topics=topics)
        if not c >= 0:
            raise ValueError(f"c must be >= 0, got {c}")
        self.c = c
        L = len(self.languages)
        self.counts: dict[str, list[float]] = defaultdict(lambda: [0.0] * L)
        self.sums: dict[str, list[float]] = defaultdict(lambda: [0.0] * L)
        self._pending: dict[str, list[float]] = defaultdict(lambda: [0.0] * L)

    def _scores(self, topic: str) -> list[float]:
        n = [a + b for a, b in zip(self.counts[topic], self._pending[topic], strict=True)]
        total = sum(n)
        out = []
        for i, ni in enumerate(n):
            if ni == 0:
                out.append(math.inf)
                continue
            mean = self.sums[topic][i] / self.counts[topic][i] if self.counts[topic][i] else 0.5
            out.append(mean + self.c * math.sqrt(2 * math.log(max(total, 1)) / ni))
        return out

    def probabilities(self, topic: str, region=None) -> list[float]:
        self._topic(topic)
        s = self._scores(topic)
        top = max(s)
        winners = [i for i, x in enumerate(s) if x == top]
        return [1 / len(winners) if i in winners else 0.0 for i in range(len(s))]

    def sample(self, topic: str, language: str, rng: random.Random, region=None) -> str:
        self._topic(topic)
        check_language(language)
        choice = rng.choices(self.languages, self.probabilities(topic))[0]
        self._pending[topic][self._index(choice)] += 1
        return choice

    def observe(self, topic: str, language: str, reward: float, region=None,
                routed: bool = True) -> None:  # fmt: skip
        self._topic(topic)
        i = self._index(language)  # any sample of a language's reward informs its mean
        self.counts[topic][i] += 1
        self.sums[topic][i] += _check_reward(reward)

    def step(self) -> None:
        self.t += 1
        self._pending.clear()

    def state_dict(self) -> dict:
        return {**super().state_dict(), "c": self.c, "counts": dict(self.counts),
                "sums": dict(self.sums)}  # fmt: skip

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        L = len(self.languages)
        self.c = float(state["c"])
        self.counts = defaultdict(lambda: [0.0] * L, state["counts"])
        self.sums = defaultdict(lambda: [0.0] * L, state["sums"])


class EXP3Router(_Router):
    """EXP3 per topic over languages: p = (1 - gamma) w / sum(w) + gamma / L, importance-weighted
    reward estimates r_hat = r / p, w <- w exp(gamma r_hat / L), one round per training step.
    Rewards are expected in [0, 1]. The default gamma = 0.3 is the textbook
    sqrt(L ln L / ((e - 1) T)) for L = 8 languages and T = 100 rounds (the demo's budget)."""

    name = "exp3"

    def __init__(self, languages=LANGUAGES, gamma: float = 0.3, *, topics=TOPICS):
        super().__init__(languages, topics=topics)
        if not 0 < gamma <= 1:
            raise ValueError(f"gamma must be in (0, 1], got {gamma}")
        self.gamma = gamma
        self.log_w: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(self.languages))
        self._buffer: dict[str, list[tuple[int, float]]] = defaultdict(list)

    def probabilities(self, topic: str, region=None) -> list[float]:
        self._topic(topic)
        L, g = len(self.languages), self.gamma
        w = softmax(self.log_w[topic], 1.0)
        return [(1 - g) * x + g / L for x in w]

    def observe(self, topic: str, language: str, reward: float, region=None,
                routed: bool = True) -> None:  # fmt: skip
        self._topic(topic)
        i, r = self._index(language), _check_reward(reward)
        if routed:  # importance weights hold only for pulls drawn from p
            self._buffer[topic].append((i, r))

    def step(self) -> None:
        """One EXP3 round per topic and training step: the step's pulls give the importance-
        weighted estimate r_hat_l = sum_{pulls of l} r / (p_l n_pulls), under the probabilities
        the pulls were drawn from (the weights change only here)."""
        L, g = len(self.languages), self.gamma
        for topic, pulls in self._buffer.items():
            p = self.probabilities(topic)
            for i, r in pulls:
                self.log_w[topic][i] += g * r / (p[i] * len(pulls)) / L
        self._buffer.clear()
        self.t += 1

    def state_dict(self) -> dict:
        return {**super().state_dict(), "gamma": self.gamma, "log_w": dict(self.log_w)}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.gamma = float(state["gamma"])
        self.log_w = defaultdict(lambda: [0.0] * len(self.languages), state["log_w"])


class FixedRouter(_Router):
    """Every routed rollout in one ``language`` (default English, the best-resourced): the
    "reason in the dominant language" baseline."""

    name = "fixed"

    def __init__(self, languages=LANGUAGES, language: str = "en", *, topics=TOPICS):
        super().__init__(languages, topics=topics)
        self.language = language
        self._index(language)

    def probabilities(self, topic: str, region=None) -> list[float]:
        self._topic(topic)
        return [float(x == self.language) for x in self.languages]

    def state_dict(self) -> dict:
        return {**super().state_dict(), "language": self.language}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.language = state["language"]


ROUTERS = {"original": OriginalRouter, "uniform": UniformRouter, "english": FixedRouter,
           "ucb": UCBRouter, "exp3": EXP3Router, "lrpo": LanguageRouter}  # fmt: skip


def make_router(name: str, languages=LANGUAGES) -> _Router:
    """A router by name: original, uniform, english (fixed), ucb, exp3 or lrpo."""
    if name not in ROUTERS:
        raise ValueError(f"router must be one of {list(ROUTERS)}, got {name!r}")
    return ROUTERS[name](languages)
