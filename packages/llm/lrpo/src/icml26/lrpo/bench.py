"""``icml26-lrpo bench``: what language routing costs. Seconds per GRPO step with LRPO's bandit
router against plain GRPO (every rollout in the question's own language), and against the UCB1
router, on the same policy, questions and group size, as ratios measured in one run (best of
``repeats``, device-synchronised, one CPU thread). The router's own bookkeeping is a few
dictionary updates per step; the difference, if any, is the rollouts' languages (answer lengths
differ between languages)."""

import copy
import json
from dataclasses import dataclass, replace

import torch

from icml26.testing.command import DeviceOption
from icml26.testing.results import resolve_device
from icml26.testing.timing import best_time, torch_threads


@dataclass(frozen=True)
class BenchConfig(DeviceOption):
    """Seconds per GRPO step: LRPO's router against plain GRPO and UCB1, as ratios."""

    steps: int = 3
    """GRPO steps per timing."""
    questions_per_step: int = 8
    G: int = 8
    """Rollouts per question (the group)."""
    n_layer: int = 2
    n_embd: int = 64
    repeats: int = 3
    """Best of this many timings."""

    def validate(self) -> None:
        values = (self.steps, self.questions_per_step, self.n_layer, self.n_embd, self.repeats)
        if min(values) < 1 or self.G < 2:
            raise ValueError("--steps, --questions-per-step, --n-layer, --n-embd and --repeats "
                             "must be >= 1 and --G >= 2")  # fmt: skip


def run_bench(cfg: BenchConfig) -> dict:
    """Measure, print and return the timings and ratios (JSON)."""
    from icml26.lrpo.data import split_items
    from icml26.lrpo.policy import CharGPT, GPTConfig
    from icml26.lrpo.train import GRPOConfig, train_grpo

    cfg.validate()
    device = resolve_device(cfg.device)
    torch.manual_seed(0)
    policy = CharGPT(GPTConfig(n_layer=cfg.n_layer, n_head=2, n_embd=cfg.n_embd)).to(device)
    split = split_items(seed=0)
    grpo = GRPOConfig(steps=cfg.steps, questions_per_step=cfg.questions_per_step, G=cfg.G)
    report: dict = {"device": device, "seconds per step": {}}
    with torch_threads(1, device):
        for router in ("original", "ucb", "lrpo"):
            run = replace(grpo, router=router)
            seconds = best_time(
                lambda run=run: train_grpo(copy.deepcopy(policy), split, run),
                cfg.repeats,
                device,
                warmup=1,
            )
            report["seconds per step"][router] = seconds / cfg.steps
    per_step = report["seconds per step"]
    report["LRPO / plain GRPO"] = per_step["lrpo"] / per_step["original"]
    report["LRPO / UCB1"] = per_step["lrpo"] / per_step["ucb"]
    print(json.dumps(report, indent=2))
    return report
