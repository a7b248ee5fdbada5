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
import math
import random
import time
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from tqdm.auto import tqdm

from icml26.lrpo.data import LANGUAGES, TOPICS, heldout_questions, split_items
from icml26.lrpo.policy import CharGPT, GPTConfig
from icml26.lrpo.router import make_router
from icml26.lrpo.train import GRPOConfig, PretrainConfig, evaluate, pretrain, train_grpo
from icml26.testing.report import finish_demo, print_verdicts, run_folder
from icml26.testing.results import (
    claim_row,
    control,
    judge,
    resolve_device,
    summarise,
)

ARMS = ("original", "uniform", "english", "ucb", "exp3", "lrpo")
ARM_NAMES = {"original": "original language only", "uniform": "uniform routing",
             "english": "routed to English", "ucb": "UCB routing", "exp3": "EXP3 routing",
             "lrpo": "LRPO"}  # fmt: skip
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)
"""Student t 97.5% quantiles for 1..10 degrees of freedom (two-sided 95% intervals)."""
PLANTED_INFORMATIVE = ("de", "es")
"""Languages whose planted reward is high (0.8; the others 0.2) in the router check."""
PLANTED_STEPS = 100
PLANTED_MASS = 0.5
"""The check passes when LRPO's router puts at least this much probability on the informative
languages (2 of 8: 0.25 under uniform) after ``PLANTED_STEPS`` steps, on every topic."""


@dataclass(frozen=True)
class DemoConfig:
    """LRPO vs original-language, uniform, UCB and EXP3 routing at one rollout budget."""

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
    quick: bool = False
    """Smoke run: one seed, a few steps, a few test questions."""
    device: str = "auto"
    """auto (CUDA when present), cpu, cuda, cuda:N."""
    out: Path | None = None
    """Run folder (default runs/lrpo/<timestamp>)."""

    def check(self) -> None:
        """ValueError naming the flag when a setting is out of range (run before any work)."""
        if not self.quick and self.seeds < 2:
            raise ValueError("--seeds must be >= 2 (an interval needs two)")
        if self.seeds > len(T_975) + 1:
            raise ValueError(f"--seeds must be <= {len(T_975) + 1}")
        unknown = sorted(set(self.arms) - set(ARMS))
        if not self.arms or unknown or "lrpo" not in self.arms:
            raise ValueError(f"--arms must include lrpo and name arms from {list(ARMS)}, got "
                             f"{list(self.arms)}")  # fmt: skip
        if self.pretrain_steps < 1 or self.test_per_cell < 1:
            raise ValueError("--pretrain-steps and --test-per-cell must be >= 1")
        GRPOConfig(steps=self.steps, questions_per_step=self.questions_per_step, G=self.G,
                   orig_min=self.orig_min, lr=self.lr, beta=self.beta).check()  # fmt: skip

    def effective(self) -> DemoConfig:
        if not self.quick:
            return self
        return replace(self, seeds=1, pretrain_steps=10, steps=2, questions_per_step=2,
                       test_per_cell=1)  # fmt: skip


def claims() -> dict[str, str]:
    """The paper's claims, one verdict row each."""
    return {
        "vs_original": "adaptive language routing improves mean multilingual accuracy over "
        "original-language GRPO at a fixed rollout budget",
        "worst_language": "adaptive language routing improves the worst language's accuracy over "
        "original-language GRPO at a fixed rollout budget",
        "vs_fixed": "a learned router beats fixed routing (uniform over languages; all routed "
        "rollouts in English) at the same budget",
        "vs_bandits": "LRPO's router beats standard bandit routers (UCB, EXP3) at the same budget",
        "signal": "multilingual groups carry more learning signal: fewer GRPO groups whose "
        "rollouts are all correct or all wrong than original-language GRPO",
    }


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
    cfg = cfg.effective()
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


def paired_interval(diffs: list[float]) -> tuple[float, float | None, float | None]:
    """Mean of paired differences and its two-sided 95% Student-t interval (None for one seed)."""
    m = sum(diffs) / len(diffs)
    if len(diffs) < 2:
        return m, None, None
    sd = math.sqrt(sum((d - m) ** 2 for d in diffs) / (len(diffs) - 1))
    h = T_975[len(diffs) - 2] * sd / math.sqrt(len(diffs))
    return m, m - h, m + h


def _diffs(raw: dict, a: str, b: str, metric: str, sign: float = 1.0) -> list[float]:
    ra = {r["seed"]: r[metric] for r in raw["runs"][a]}
    rb = {r["seed"]: r[metric] for r in raw["runs"][b]}
    return [sign * (ra[s] - rb[s]) for s in sorted(ra) if s in rb]


def _compare(raw: dict, b: str, metric: str, label: str, sign: float = 1.0) -> tuple[str, str]:
    """LRPO vs arm ``b`` on ``metric`` (sign -1: lower is better): the verdict and evidence."""
    if b not in raw["runs"] or not raw["runs"][b]:
        return "untestable here", f"the {ARM_NAMES[b]} arm was not run"
    d = _diffs(raw, "lrpo", b, metric, sign)
    m, lo, hi = paired_interval(d)
    text = (
        f"{label}: LRPO {_mean(raw, 'lrpo', metric):.3f} vs {ARM_NAMES[b]} "
        f"{_mean(raw, b, metric):.3f}; paired difference {m:+.3f}"
    )
    if lo is None:
        return "untestable here", text + " (one seed: no interval)"
    text += f", 95% CI [{lo:+.3f}, {hi:+.3f}] over {len(d)} seeds"
    if lo > 0:
        return "reproduced", text
    if hi < 0:
        return "not reproduced", text + " (LRPO is worse)"
    return "inconclusive", text + " (a tie: the interval holds 0)"


def _mean(raw: dict, arm: str, metric: str) -> float:
    vals = [r[metric] for r in raw["runs"][arm]]
    return sum(vals) / len(vals)


def _either(raw: dict, arms: tuple[str, str], metric: str, label: str) -> tuple[str, str]:
    """LRPO vs two baselines of one claim: reproduced if it beats both, partly if one, not
    reproduced if it loses to both, inconclusive otherwise (ties)."""
    parts = [_compare(raw, b, metric, label) for b in arms]
    verdicts = [v for v, _ in parts]
    if "untestable here" in verdicts and any(v != "untestable here" for v in verdicts):
        verdicts = [v for v in verdicts if v != "untestable here"]
        v = "partly" if "reproduced" in verdicts else summarise(verdicts)
    else:
        v = summarise(verdicts)
    return v, "; ".join(e for _, e in parts)


GRPO_LEARNS = "original-language GRPO improves on the pretrained policy"
PLANTED = "LRPO's router finds the informative languages of a planted bandit"


def rl_effect_check(raw: dict) -> dict:
    """Positive control: does GRPO move held-out accuracy at all at this budget?
    Original-language GRPO vs the pretrained start, paired over seeds: a routing comparison
    means little when RL itself does not improve the policy."""
    parts, passed = [], False
    for arm in raw["runs"]:
        if arm == "pretrained" or not raw["runs"][arm]:
            continue
        m, lo, hi = paired_interval(_diffs(raw, arm, "pretrained", "accuracy"))
        ci = "" if lo is None else f" [{lo:+.3f}, {hi:+.3f}]"
        parts.append(f"{ARM_NAMES[arm]} {m:+.3f}{ci}")
        if arm == "original" and lo is not None and lo > 0:
            passed = True
    return {"passed": passed, "evidence": "held-out accuracy minus the pretrained start's "
            "(95% CI over seeds): " + "; ".join(parts)}  # fmt: skip


def planted_check(raw: dict) -> dict:
    planted = raw["planted"]
    return {
        "passed": bool(planted["passed"]),
        "evidence": f"LRPO's router puts {planted['lrpo_min_mass']:.2f} (lowest topic) of its "
        f"probability on the 2 informative languages of 8 after {planted['steps']} steps "
        f"(uniform 0.25; threshold {PLANTED_MASS}); UCB "
        f"{min(planted['routers']['ucb']['mass'].values()):.2f}, EXP3 "
        f"{min(planted['routers']['exp3']['mass'].values()):.2f}",
    }


def verdict(raw: dict) -> dict:
    """One row per claim of :func:`claims`, the controls they rest on, counts and summary.

    The accuracy rows rest on GRPO improving the pretrained policy (else no routing can show);
    the router rows also on the planted bandit (the router can find informative languages).
    """
    c = claims()
    acc = "mean accuracy"
    rows = [
        claim_row(c["vs_original"], *_compare(raw, "original", "accuracy", acc), [GRPO_LEARNS]),
        claim_row(c["worst_language"],
                  *_compare(raw, "original", "worst_language", "worst-language accuracy"),
                  [GRPO_LEARNS]),
        claim_row(c["vs_fixed"], *_either(raw, ("uniform", "english"), "accuracy", acc),
                  [GRPO_LEARNS, PLANTED]),
        claim_row(c["vs_bandits"], *_either(raw, ("ucb", "exp3"), "accuracy", acc),
                  [GRPO_LEARNS, PLANTED]),
        claim_row(c["signal"], *_compare(
            raw, "original", "zero_variance", "share of groups all correct or all wrong (lower "
            "is better; difference = original - LRPO)", sign=-1.0)),
    ]  # fmt: skip
    checks = [(GRPO_LEARNS, rl_effect_check(raw)), (PLANTED, planted_check(raw))]
    return judge(rows, [control(n, "positive", c["passed"], c["evidence"]) for n, c in checks])


def summary_table(raw: dict) -> dict[str, dict[str, float]]:
    """Per arm: mean and std over seeds of accuracy, worst language, zero-variance share."""
    out = {}
    for arm, runs in raw["runs"].items():
        row = {}
        for metric in ("accuracy", "worst_language", "zero_variance", "zero_reward_variance",
                       "train_reward", "train_accuracy"):  # fmt: skip
            vals = [r[metric] for r in runs if metric in r]
            if vals:
                m = sum(vals) / len(vals)
                sd = (
                    math.sqrt(sum((v - m) ** 2 for v in vals) / (len(vals) - 1))
                    if len(vals) > 1
                    else 0.0
                )
                row[metric], row[f"{metric}_std"] = m, sd
        for lang in LANGUAGES:
            row[f"acc_{lang}"] = sum(r["by_language"][lang] for r in runs) / len(runs)
        out["pretrained" if arm == "pretrained" else ARM_NAMES[arm]] = row
    return out


def headline(raw: dict) -> str:
    t = summary_table(raw)
    lrpo, orig = t[ARM_NAMES["lrpo"]], t.get(ARM_NAMES["original"])
    text = f"held-out accuracy: LRPO {lrpo['accuracy']:.3f}"
    if orig:
        text += f" vs original-language GRPO {orig['accuracy']:.3f}"
    best = max((k for k in t if k not in ("pretrained", ARM_NAMES["lrpo"])),
               key=lambda k: t[k]["accuracy"], default=None)  # fmt: skip
    if best and best != ARM_NAMES.get("original"):
        text += f", best other arm {best} {t[best]['accuracy']:.3f}"
    return (
        text + f" (pretrained {t['pretrained']['accuracy']:.3f}; {len(raw['runs']['lrpo'])} seeds)"
    )


def run_demo(cfg: DemoConfig) -> dict:
    """Run, judge, write results.json and the figure, print the table; return the results."""
    from icml26.lrpo.plots import plot_study

    out = run_folder(cfg.out, "lrpo")
    t0 = time.perf_counter()
    raw = experiment(cfg)
    metrics = summary_table(raw)
    metrics["method"] = metrics[ARM_NAMES["lrpo"]]
    metrics["baseline"] = metrics.get(ARM_NAMES["original"], metrics["pretrained"])
    results = finish_demo(
        out,
        package="icml26-lrpo",
        module_file=__file__,
        cfg=cfg,
        experiment="character GPT on multilingual arithmetic/counting; GRPO with original-"
        "language, uniform, UCB, EXP3 and LRPO routing at one rollout budget; held-out accuracy "
        "answered in each question's own language",
        claim="adaptive routing improves multilingual performance at a fixed rollout budget",
        headline=headline(raw),
        judged=verdict(raw),
        metrics=metrics,
        seconds=time.perf_counter() - t0,
        seed=0,
        device=raw["device"],
        measurements={k: raw[k] for k in ("parameters", "n_test", "runs", "planted")},
    )
    out.mkdir(parents=True, exist_ok=True)
    plot_study(results, out / "study.png")
    _print(results)
    return results


def _jsonable(d: dict) -> dict:
    return {k: (str(v) if isinstance(v, Path) else list(v) if isinstance(v, tuple) else v)
            for k, v in d.items()}  # fmt: skip


def _print(results: dict) -> None:
    print(f"\nicml26-lrpo {results['version']}: {results['headline']}")
    cols = ("accuracy", "worst_language", "zero_variance")
    print(f"{'arm':26s}" + "".join(f"{c:>22s}" for c in cols))
    for arm, m in results["metrics"].items():
        if arm in ("method", "baseline"):
            continue
        cells = "".join(f"{m[c]:>14.3f} ± {m[c + '_std']:.3f}" if c in m else f"{'-':>22s}"
                        for c in cols)  # fmt: skip
        print(f"{arm:26s}{cells}")
    print_verdicts(results)
