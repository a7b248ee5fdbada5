"""The multilingual GRPO group and its advantages.

From the authors' code: each training question gets G = 8 rollouts sharing one group id; the
first ``orig_min`` = 2 keep the question's own language and each of the others is routed
independently (with replacement: the question's language may be drawn again). Advantages are
plain GRPO over the whole multilingual group, (r - mean) / (std + 1e-6) with the unbiased std,
as verl's ``grpo`` estimator computes them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch

from icml26.lrpo.data import prompt


def multilingual_group(question, router, G: int = 8, orig_min: int = 2,
                       rng: random.Random | None = None) -> list[str]:  # fmt: skip
    """Target languages of one question's G rollouts: ``orig_min`` in the question's language,
    then ``G - orig_min`` drawn from ``router`` for the question's topic (and region).

    ``question`` is anything with ``language``, ``topic`` and optionally ``region`` attributes
    (a :class:`icml26.lrpo.data.Question`, or a dataset row wrapped by ``types.SimpleNamespace``).
    """
    if G < 1:
        raise ValueError(f"G must be >= 1 (an empty group has no advantages), got {G}")
    if not 0 <= orig_min <= G:
        raise ValueError(f"orig_min must be in [0, G = {G}], got {orig_min}")
    missing = [a for a in ("language", "topic") if not hasattr(question, a)]
    if missing:
        raise TypeError(f"question needs {missing} attributes (a Question, or a row wrapped by "
                        f"types.SimpleNamespace), got {type(question).__name__}")  # fmt: skip
    rng = rng or random.Random()
    region = getattr(question, "region", None)
    routed = [router.sample(question.topic, question.language, rng, region)
              for _ in range(G - orig_min)]  # fmt: skip
    return [question.language] * orig_min + routed


def grpo_advantages(
    rewards: torch.Tensor, group_ids: torch.Tensor, eps: float = 1e-6
) -> torch.Tensor:
    """GRPO advantages: each reward minus its group's mean, over the group's unbiased std + eps.

    rewards: (N,) float; group_ids: (N,) int. A group of one rollout gets advantage 0. Returns (N,).
    """
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps!r}")
    rewards = torch.as_tensor(rewards, dtype=torch.float64)
    group_ids = torch.as_tensor(group_ids)
    if rewards.ndim != 1 or group_ids.shape != rewards.shape:
        raise ValueError(f"rewards and group_ids must be 1-D of one length, got "
                         f"{tuple(rewards.shape)} and {tuple(group_ids.shape)}")  # fmt: skip
    if rewards.numel() == 0:
        raise ValueError("rewards is empty")
    if not torch.isfinite(rewards).all():
        raise ValueError("rewards must be finite")
    out = torch.zeros_like(rewards)
    for g in torch.unique(group_ids):
        m = group_ids == g
        r = rewards[m]
        if r.numel() > 1:
            out[m] = (r - r.mean()) / (r.std(unbiased=True) + eps)
    return out


def route_rows(rows: Sequence[dict], router, G: int = 8, orig_min: int = 2,
               rng: random.Random | None = None) -> list[dict]:  # fmt: skip
    """Expand dataset rows into G routed copies each, the copies of a row forming one GRPO group
    (as the authors' verl fork builds its batches): for a loop that groups by the ``group`` column.

    Each row needs ``question``, ``language``, ``topic`` (``region`` optional). Each copy adds
    ``prompt`` (question + target-language tag), ``target_language`` and ``group`` (the row's
    index). Rows without those keys raise a ValueError naming the row.
    """
    from types import SimpleNamespace

    out = []
    for k, row in enumerate(rows):
        missing = {"question", "language", "topic"} - set(row)
        if missing:
            raise ValueError(f"row {k} lacks {sorted(missing)}")
        targets = multilingual_group(
            SimpleNamespace(**{"region": None, **row}), router, G, orig_min, rng
        )
        for t in targets:
            out.append({**row, "prompt": prompt(row["question"], t), "target_language": t,
                        "group": k})  # fmt: skip
    return out
