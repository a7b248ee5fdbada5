"""The baseline LUCID is compared with: softmax attention, at full strength. In the probe it runs
at every temperature of ``TEMPERATURES`` and the best of them at each point is the tuned baseline
(an oracle choice, in its favour); in the trained tasks (MQAR, needles, the character LM) it is the
same model with ``kind="softmax"`` (``attention.py``), trained with the same budget and recipe,
its attention PyTorch's ``scaled_dot_product_attention``."""

import torch

TEMPERATURES = (1.0, 0.5, 0.25, 0.1, 0.05, 0.02, 0.01)
"""Softmax temperatures of the probe; the best of them at each point is the tuned baseline (down
to 0.01: near zero temperature softmax is nearest-key lookup, which a query close to its own key
gets right)."""

SOFTMAX_ARMS = tuple(f"softmax (T={t:g})" for t in TEMPERATURES)
"""The probe's softmax arms, one per temperature."""


def softmax_outputs(logits: torch.Tensor, v: torch.Tensor) -> dict[str, torch.Tensor]:
    """Softmax attention's output for one query's ``logits`` (n,) over values ``v`` (n, d) at
    every temperature of the grid, by arm name."""
    return {
        name: torch.softmax(logits / t, -1) @ v
        for name, t in zip(SOFTMAX_ARMS, TEMPERATURES, strict=True)
    }


def best_temperature(scores: dict[str, list[float]], n: int) -> list[float]:
    """The tuned constant: at each of ``n`` points, the best score over the softmax arms."""
    return [max(scores[name][i] for name in SOFTMAX_ARMS) for i in range(n)]
