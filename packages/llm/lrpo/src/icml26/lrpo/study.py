"""``icml26-lrpo demo``: adaptive language routing vs fixed and bandit routing, one rollout budget.

Per seed, a character GPT is pretrained on the task with unequal data per language (see
:data:`icml26.lrpo.data.DEFAULT_MIX`); from that same starting policy each arm runs GRPO with the
same questions per step, G rollouts per question and steps (so the same rollout budget), the same
optimiser and the same reward, and differs only in who picks the routed rollouts' languages:

- ``original``: every rollout in the question's language (plain GRPO);
- ``uniform``: orig_min in the question's language, the rest uniform over languages;
- ``english``: the rest all in English, the best-resourced language (a fixed router);
- ``ucb`` / ``exp3``: the rest from a UCB1 / EXP3 bandit per topic on the same rewards;
- ``lrpo``: the rest from LRPO's router.

Reported on held-out questions (operand pairs never seen in training, in every language), each
answered greedily in its own language: mean and worst-language accuracy, the share of GRPO groups
whose rollouts are all correct or all wrong (no signal about correctness), and the router's
probabilities over training. A planted-bandit check runs the routers alone on Bernoulli rewards
with known means. When no arm moves held-out accuracy away from the pretrained start beyond
noise, GRPO is inert at this budget and the accuracy rows read "untestable here".
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass

import torch
from tqdm.auto import tqdm

from icml26.lrpo.baselines import make_router
from icml26.lrpo.data import TOPICS, heldout_questions, split_items
from icml26.lrpo.policy import CharGPT, GPTConfig
from icml26.lrpo.train import GRPOConfig, PretrainConfig, evaluate, pretrain, train_grpo
from icml26.lrpo.verdict import PLANTED_MASS
from icml26.testing.command import DemoOptions
from icml26.testing.results import (
    resolve_device,
)

ARMS = ("original", "uniform", "english", "ucb", "exp3", "lrpo")


PLANTED_INFORMATIVE = ("de", "es")
"""Languages whose planted reward is high (0.8; the others 0.2) in the router check."""


PLANTED_STEPS = 100


@dataclass(frozen=True)
class DemoConfig(DemoOptions):
    """LRPO vs original-language, uniform, UCB and EXP3 routing at one rollout budget.

    ``--quick``: smoke run: one seed, a few steps, a few test questions."""

    seeds: int = 5
    """Seeds: each pretrains its own starting policy, shared by that seed's arms."""
    arms: tuple[str, ...] = ARMS
    pretrain_steps: int = 600
    """Supervised steps before RL (batch 64)."""
    steps: int = 100
    """GRPO steps of every arm."""
    questions_per_step: int = 8
    G: int = 8
    """Rollouts per question (the authors' 8)."""
    orig_min: int = 2
    """Rollouts per group kept in the question's language (the authors' 2)."""
    lr: float = 3e-5
    """Adam learning rate of every arm."""
    beta: float = 0.001
    test_per_cell: int = 20
    """Held-out operand keys per topic (each asked in every language)."""

    def check(self) -> None:
        """ValueError naming the flag when a setting is out of range (run before any work)."""
        if not self.quick and self.seeds < 2:
            raise ValueError("--seeds must be >= 2 (an interval needs two)")
        unknown = sorted(set(self.arms) - set(ARMS))
        if not self.arms or unknown or "lrpo" not in self.arms:
            raise ValueError(f"--arms must include lrpo and name arms from {list(ARMS)}, got "
                             f"{list(self.arms)}")  # fmt: skip
        if self.pretrain_steps < 1 or self.test_per_cell < 1:
            raise ValueError("--pretrain-steps and --test-per-cell must be >= 1")
        GRPOConfig(steps=self.steps, questions_per_step=self.questions_per_step, G=self.G,
                   orig_min=self.orig_min, lr=self.lr, beta=self.beta).check()  # fmt: skip

    def quick_settings(self) -> dict:
        return dict(seeds=1, pretrain_steps=10, steps=2, questions_per_step=2,
                       test_per_cell=1)  # fmt: skip


def planted_bandit(steps: int = PLANTED_STEPS, seed: int = 0, questions_per_topic: int = 8,
                   G: int = 8, orig_min: int = 2) -> dict:  # fmt: skip
    """Routers alone on Bernoulli rewards: 0.8 for :data:`PLANTED_INFORMATIVE`, 0.2 otherwise.

    Each step, per topic, ``questions_per_topic`` groups of ``G - orig_min`` routed pulls (the
    demo's shape). Returns each router's probability mass on the informative languages per
    topic at the end, and LRPO's mass after every step (topic ``add``)."""
    out = {}
    for name in ("lrpo", "ucb", "exp3", "uniform"):
        router, rng = make_router(name), random.Random(seed)
        trace = []
        for _ in range(steps):
            for topic in TOPICS:
                for _ in range(questions_per_topic):
                    for _ in range(G - orig_min):
                        lang = router.sample(topic, "en", rng)
                        p = 0.8 if lang in PLANTED_INFORMATIVE else 0.2
                        router.observe(topic, lang, float(rng.random() < p))
            router.step()
            trace.append(_mass(router, "add"))
        out[name] = {"mass": {t: _mass(router, t) for t in TOPICS}, "trace": trace}
    lrpo = min(out["lrpo"]["mass"].values())
    return {"routers": out, "steps": steps, "informative": list(PLANTED_INFORMATIVE),
            "lrpo_min_mass": lrpo, "passed": lrpo >= PLANTED_MASS}  # fmt: skip


def _mass(router, topic: str) -> float:
    p = router.probabilities(topic)
    return sum(p[router.languages.index(x)] for x in PLANTED_INFORMATIVE)


def experiment(cfg: DemoConfig, progress: bool = True) -> dict:
    """Pretrain per seed, run every arm from it, evaluate on held-out questions."""
    cfg.check()
    cfg = cfg.resolved()
    device = resolve_device(cfg.device)
    split = split_items(seed=0)
    test = heldout_questions(split, per_cell=cfg.test_per_cell, seed=0)
    runs: dict[str, list[dict]] = {arm: [] for arm in ("pretrained", *cfg.arms)}
    bar = tqdm(total=cfg.seeds * (1 + len(cfg.arms)), desc="lrpo demo", disable=not progress)
    for seed in range(cfg.seeds):
        torch.manual_seed(seed)
        base = CharGPT(GPTConfig()).to(device)
        losses = pretrain(base, split, PretrainConfig(steps=cfg.pretrain_steps, seed=seed))
        runs["pretrained"].append({"seed": seed, **evaluate(base, test), "loss": losses[-1]})
        bar.update()
        for arm in cfg.arms:
            policy = copy.deepcopy(base)
            gcfg = GRPOConfig(
                router=arm,
                steps=cfg.steps,
                questions_per_step=cfg.questions_per_step,
                G=cfg.G,
                orig_min=cfg.orig_min,
                lr=cfg.lr,
                beta=cfg.beta,
                seed=seed,
            )
            res = train_grpo(policy, split, gcfg)
            hist = res.history
            runs[arm].append({
                "seed": seed, **evaluate(policy, test),
                "zero_variance": sum(h["zero_variance"] for h in hist) / max(len(hist), 1),
                "zero_reward_variance":
                    sum(h["zero_reward_variance"] for h in hist) / max(len(hist), 1),
                "train_accuracy": sum(h["accuracy"] for h in hist) / max(len(hist), 1),
                "train_reward": sum(h["reward"] for h in hist) / max(len(hist), 1),
                "routed": _routed_share(hist),
                "trajectory": [h.get("probabilities") for h in hist] if seed == 0 else None,
                "zero_variance_curve": [h["zero_variance"] for h in hist],
            })  # fmt: skip
            bar.update()
    bar.close()
    return {"runs": runs, "planted": planted_bandit(), "device": device,
            "n_test": len(test), "parameters": CharGPT(GPTConfig()).num_parameters()}  # fmt: skip


def _routed_share(history: list[dict]) -> dict[str, float]:
    total: dict[str, float] = {}
    for h in history:
        for k, v in h["languages"].items():
            total[k] = total.get(k, 0.0) + v / len(history)
    return total
