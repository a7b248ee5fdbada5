"""Language routers: which language each routed rollout of a GRPO group is asked to answer in.

:class:`LanguageRouter` is LRPO's router, a bandit over languages that is neither UCB nor EXP3.
Facts taken from the authors' code (``LangBanditPolicy`` in their verl fork):

- value tables ``Q[topic, :]`` and, for regional questions, ``Q[region, :]``, all zero at first;
  sampling logits are their **sum**;
- with probability eps a language is drawn uniformly, else from ``softmax(logits / tau)``;
- every rollout's reward is buffered under (topic, region, language); every ``update_every``
  (5) training steps the buffer's mean reward per language is z-scored across the languages seen
  in each (topic, region) cell (population std, + 1e-6) and ``Q <- (1 - alpha) Q + alpha z``
  (alpha = 0.1); a language without rollouts in the window keeps its value;
- tau = max(0.3, 0.999^t), eps = max(0, 0.2 * 0.995^t), t the number of training steps so far.

:class:`UCBRouter` (UCB1), :class:`EXP3Router`, :class:`UniformRouter` and :class:`FixedRouter`
(every routed rollout in English) are the baselines; :class:`OriginalRouter` always answers in the
question's language (plain GRPO).

Every router has ``sample(topic, language, rng, region=None) -> str`` (one routed language),
``observe(topic, language, reward, region=None)`` (one rollout's reward) and ``step()`` (once per
training step, after the rewards), and ``state_dict()`` / ``load_state_dict()`` as plain JSON.
"""

from __future__ import annotations

import json
import math
import os
import random
import tempfile
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from icml26.lrpo.data import LANGUAGES, TOPICS, check_language


def _check_languages(languages) -> tuple[str, ...]:
    languages = tuple(languages)
    if not languages:
        raise ValueError("languages must not be empty")
    if len(set(languages)) != len(languages):
        raise ValueError(f"languages must be distinct, got {list(languages)}")
    for lang in languages:
        check_language(lang, "languages")
    return languages


def _check_reward(reward: float) -> float:
    reward = float(reward)
    if not math.isfinite(reward):
        raise ValueError(f"reward must be finite, got {reward}")
    return reward


def _require(state, keys: tuple[str, ...]) -> None:
    if not isinstance(state, dict):
        raise ValueError(f"router state must be a JSON object, got {type(state).__name__}")
    missing = [k for k in keys if k not in state]
    if missing:
        raise ValueError(f"router state lacks {missing} (was it written by save()?)")


def softmax(logits: list[float], tau: float) -> list[float]:
    """softmax(logits / tau), stable; tau -> 0 puts all mass on the argmax (ties shared)."""
    if tau <= 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    top = max(logits)
    e = [math.exp((x - top) / tau) for x in logits]
    s = sum(e)
    return [x / s for x in e]


class _Router:
    name = "router"

    def __init__(self, languages=LANGUAGES, *, topics: tuple[str, ...] | None = TOPICS):
        self.languages = _check_languages(languages)
        self.topics = None if topics is None else tuple(topics)
        """The topics this router routes (None: any, for a task with topics of its own)."""
        self.t = 0

    def probabilities(self, topic: str, region: str | None = None) -> list[float]:
        self._topic(topic)
        raise NotImplementedError

    def sample(self, topic: str, language: str, rng: random.Random, region=None) -> str:
        """One routed language for a rollout of a ``topic`` question written in ``language``."""
        self._topic(topic)
        check_language(language)
        return rng.choices(self.languages, self.probabilities(topic, region))[0]

    def observe(self, topic: str, language: str, reward: float, region=None,
                routed: bool = True) -> None:  # fmt: skip
        """One rollout's reward; ``routed`` is False for the rollouts kept in the question's
        language (LRPO and UCB learn from them too; EXP3's importance weights cannot)."""
        self._topic(topic)
        _check_reward(reward)
        self._index(language)

    def step(self) -> None:
        self.t += 1

    def _topic(self, topic: str) -> str:
        if self.topics is not None and topic not in self.topics:
            raise ValueError(f"topic must be one of {list(self.topics)} (routers for other tasks: "
                             f"topics=None or their own), got {topic!r}")  # fmt: skip
        return topic

    def _index(self, language: str) -> int:
        try:
            return self.languages.index(language)
        except ValueError:
            raise ValueError(f"language {language!r} is not routed by this router "
                             f"({list(self.languages)})") from None  # fmt: skip

    def state_dict(self) -> dict:
        return {"name": self.name, "languages": list(self.languages), "t": self.t}

    def load_state_dict(self, state: dict) -> None:
        _require(state, ("name", "languages", "t"))
        if state.get("name") != self.name:
            raise ValueError(f"state is for router {state.get('name')!r}, not {self.name!r}")
        if tuple(state["languages"]) != self.languages:
            raise ValueError(f"state routes {state['languages']}, this router "
                             f"{list(self.languages)}")  # fmt: skip
        self.t = int(state["t"])

    def save(self, path: str | os.PathLike) -> Path:
        """Write the state as JSON, atomically."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(self.state_dict(), f, indent=1)
        os.replace(tmp, path)
        return path

    def load(self, path: str | os.PathLike) -> _Router:
        try:
            state = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise ValueError(f"cannot read router state {path}: {e}") from None
        self.load_state_dict(state)
        return self


@dataclass(frozen=True)
class RouterSchedule:
    """LRPO's router settings, defaults from the authors' training script."""

    alpha: float = 0.1
    """EMA weight of the z-scored mean reward in ``Q <- (1 - alpha) Q + alpha z``."""
    update_every: int = 5
    """Training steps between updates of Q."""
    tau_init: float = 1.0
    tau_decay: float = 0.999
    tau_min: float = 0.3
    eps_init: float = 0.2
    eps_decay: float = 0.995
    eps_min: float = 0.0
    z_eps: float = 1e-6
    """Added to the population std when z-scoring."""

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        if not 0 < self.alpha <= 1:
            raise ValueError(f"alpha must be in (0, 1], got {self.alpha}")
        if self.update_every < 1:
            raise ValueError(f"update_every must be >= 1, got {self.update_every}")
        for name in ("tau_init", "tau_min"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("eps_init", "eps_min"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        for name in ("tau_decay", "eps_decay"):
            if not 0 < getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in (0, 1], got {getattr(self, name)}")

    def tau(self, t: int) -> float:
        return max(self.tau_min, self.tau_init * self.tau_decay**t)

    def eps(self, t: int) -> float:
        return max(self.eps_min, self.eps_init * self.eps_decay**t)


class LanguageRouter(_Router):
    """LRPO's language router (see the module docstring for the rule and its source)."""

    name = "lrpo"

    def __init__(
        self, languages=LANGUAGES, schedule: RouterSchedule | None = None, *, topics=TOPICS
    ):
        super().__init__(languages, topics=topics)
        self.schedule = schedule or RouterSchedule()
        self.schedule.check()
        L = len(self.languages)
        self.topic_q: dict[str, list[float]] = defaultdict(lambda: [0.0] * L)
        self.region_q: dict[str, list[float]] = defaultdict(lambda: [0.0] * L)
        self._buffer: dict[tuple[str, str, int], list[float]] = defaultdict(list)

    @property
    def tau(self) -> float:
        return self.schedule.tau(self.t)

    @property
    def eps(self) -> float:
        return self.schedule.eps(self.t)

    def logits(self, topic: str, region: str | None = None) -> list[float]:
        self._topic(topic)
        q = list(self.topic_q[topic])
        if region is not None:  # the authors add the region row for regional questions only
            q = [a + b for a, b in zip(q, self.region_q[region], strict=True)]
        return q

    def probabilities(self, topic: str, region: str | None = None) -> list[float]:
        """eps-uniform mixture with softmax(logits / tau): the law ``sample`` draws from."""
        self._topic(topic)
        L = len(self.languages)
        p = softmax(self.logits(topic, region), self.tau)
        return [self.eps / L + (1 - self.eps) * x for x in p]

    def sample(self, topic: str, language: str, rng: random.Random, region=None) -> str:
        self._topic(topic)
        check_language(language)
        if rng.random() < self.eps:
            return rng.choice(self.languages)
        return rng.choices(self.languages, softmax(self.logits(topic, region), self.tau))[0]

    def observe(self, topic: str, language: str, reward: float, region=None,
                routed: bool = True) -> None:  # fmt: skip
        self._topic(topic)
        # the authors buffer every rollout, the forced original-language ones included
        self._buffer[(topic, "" if region is None else region, self._index(language))].append(
            _check_reward(reward))  # fmt: skip

    def step(self) -> None:
        """End of a training step: t += 1, and every ``update_every`` steps update Q."""
        self.t += 1
        if self.t % self.schedule.update_every == 0:
            self.update()

    def update(self) -> None:
        """Q <- (1 - alpha) Q + alpha z per (topic, region) cell, z the buffered mean reward per
        language z-scored across the languages seen in the cell; then empty the buffer."""
        cells: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
        for (topic, region, i), rewards in self._buffer.items():
            cells[(topic, region)][i] = sum(rewards) / len(rewards)
        a, z_eps = self.schedule.alpha, self.schedule.z_eps
        for (topic, region), means in sorted(cells.items()):
            vals = list(means.values())
            mu = sum(vals) / len(vals)
            sd = math.sqrt(sum((v - mu) ** 2 for v in vals) / len(vals))
            z = {i: (v - mu) / (sd + z_eps) for i, v in means.items()}
            tables = [self.topic_q[topic]] + ([self.region_q[region]] if region else [])
            for q in tables:
                for i, zi in z.items():
                    q[i] = (1 - a) * q[i] + a * zi
        self._buffer.clear()

    def state_dict(self) -> dict:
        return {
            **super().state_dict(),
            "schedule": asdict(self.schedule),
            "topic_q": dict(self.topic_q),
            "region_q": dict(self.region_q),
            "buffer": [[t, r, i, v] for (t, r, i), v in self._buffer.items()],
        }

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        _require(state, ("schedule", "topic_q", "region_q", "buffer"))
        try:
            self.schedule = RouterSchedule(**state["schedule"])
        except TypeError as e:
            raise ValueError(f"router state: bad schedule {state['schedule']!r} ({e})") from None
        L = len(self.languages)
        for key in ("topic_q", "region_q"):
            table = defaultdict(lambda: [0.0] * L)
            for k, v in state[key].items():
                if len(v) != L:
                    raise ValueError(f"{key}[{k!r}] has {len(v)} values, expected {L}")
                table[k] = [float(x) for x in v]
            setattr(self, key, table)
        self._buffer = defaultdict(
            list, {(t, r, int(i)): list(v) for t, r, i, v in state["buffer"]}
        )
