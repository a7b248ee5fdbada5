"""Pretraining of the character GPT and LRPO's GRPO loop (torchrun-aware, resumable).

``pretrain`` fits the policy on supervised question/answer text whose languages follow a mix
(unequal data per language, so languages start unequal). ``train_grpo`` is GRPO with a
multilingual group: each step draws ``questions_per_step`` training questions per rank, builds
each one's group of G rollouts with :func:`multilingual_group` and the router, samples, scores
with :func:`calibrated_reward`, and takes one policy-gradient step on the token-mean of
``-A * log pi + beta * KL`` (verl's ``low_var_kl`` estimator against the frozen starting policy;
one update per batch, so PPO's ratio is 1 and its clip inactive). Every rollout's reward is fed
to the router, whose state is kept identical on every rank (rewards are all-gathered).
Under torchrun each rank draws its own questions (a shard of the step's batch) and DDP averages
the gradients. Checkpoints: ``step<N>/`` folders (policy and KL reference as safetensors +
config, ``optimizer.safetensors``, ``state.json`` with the step, router state and history, each
rank's random state), ``latest.json`` naming the newest, and the final ``policy/``.
"""

from __future__ import annotations

import copy
import json
import math
import os
import random
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist
from tqdm.auto import tqdm

from icml26.lrpo.baselines import make_router
from icml26.lrpo.data import (
    TOPICS,
    Question,
    TaskSplit,
    pretraining_texts,
    prompt,
    sample_questions,
)
from icml26.lrpo.group import grpo_advantages, multilingual_group
from icml26.lrpo.policy import CharGPT
from icml26.lrpo.reward import calibrated_reward
from icml26.testing.checks import integer, number


def _rank_world() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


@dataclass(frozen=True)
class PretrainConfig:
    """Supervised pretraining of the character GPT on the task's text."""

    steps: int = 600
    batch: int = 64
    lr: float = 3e-3
    mix: dict[str, float] | None = None
    """Relative data per language (default :data:`icml26.lrpo.data.DEFAULT_MIX`)."""
    cross_lingual: float = 0.25
    """Share of examples whose answer is asked for in another language."""
    seed: int = 0

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        for name in ("steps", "batch"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if not 0 <= self.cross_lingual <= 1:
            raise ValueError(f"cross_lingual must be in [0, 1], got {self.cross_lingual}")


def _check_policy(policy, split) -> None:
    if not isinstance(policy, CharGPT):
        raise TypeError(f"policy must be a CharGPT, got {type(policy).__name__}")
    if not isinstance(split, TaskSplit):
        raise TypeError(f"split must be a TaskSplit (split_items), got {type(split).__name__}")


def pretrain(
    policy: CharGPT, split: TaskSplit, cfg: PretrainConfig, progress: bool = False
) -> list[float]:
    """AdamW with cosine decay on next-character loss; returns the loss per step."""
    _check_policy(policy, split)
    cfg.check()
    rng = random.Random(cfg.seed)
    torch.manual_seed(cfg.seed)
    opt = torch.optim.AdamW(policy.parameters(), lr=cfg.lr, weight_decay=0.01)
    warmup = max(1, min(50, cfg.steps // 10))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * s / cfg.steps))
    )
    losses = []
    policy.train()
    for _ in tqdm(range(cfg.steps), desc="pretrain", disable=not progress, leave=False):
        loss = policy.loss(pretraining_texts(split, cfg.batch, rng, cfg.mix, cfg.cross_lingual))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    policy.eval()
    return losses


@dataclass(frozen=True)
class GRPOConfig:
    """LRPO's GRPO loop (defaults: the authors' G, orig_min and KL estimator; lr for this model)."""

    router: str = "lrpo"
    """Which router fills the routed rollouts: lrpo, ucb, exp3, uniform, original."""
    steps: int = 100
    questions_per_step: int = 8
    """Training questions per step and rank (each gets a group of G rollouts)."""
    G: int = 8
    orig_min: int = 2
    """Rollouts per group kept in the question's language (all G for router=original)."""
    lr: float = 3e-5
    """Adam learning rate (the authors' 1e-6 is for a 1.5B-parameter LLM)."""
    beta: float = 0.001
    """KL weight (verl's low_var_kl to the starting policy; the authors use 0.001)."""
    temperature: float = 1.0
    max_new: int = 40
    seed: int = 0
    save_every: int = 0
    """Checkpoint every this many steps (0: only at the end, when a checkpoint folder is given)."""

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        make_router(self.router)
        if self.G < 2:
            raise ValueError(
                f"G must be >= 2 (GRPO compares rollouts within a group), got {self.G}"
            )
        if not 0 <= self.orig_min <= self.G:
            raise ValueError(f"orig_min must be in [0, G = {self.G}], got {self.orig_min}")
        integer("steps", self.steps, low=0)
        integer("questions_per_step", self.questions_per_step, low=1)
        number("lr", self.lr, above=0)
        number("beta", self.beta, low=0)
        number("temperature", self.temperature, above=0)
        integer("max_new", self.max_new, low=1)
        integer("save_every", self.save_every, low=0)

    def identity(self) -> dict:
        """Settings a resumed run must share with the run it continues."""
        d = asdict(self)
        d.pop("steps")
        d.pop("save_every")
        return d


@dataclass
class GRPOResult:
    history: list[dict] = field(default_factory=list)
    """Per step: reward, zero-variance group share, routed-language shares, router probabilities."""
    router: object = None


def low_var_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """verl's ``low_var_kl`` (Schulman's k3): exp(ref - logp) - (ref - logp) - 1, clamped to
    [-10, 10]; an unbiased, non-negative estimate of KL(pi || ref) per token."""
    if logp.shape != ref_logp.shape:
        raise ValueError(f"logp and ref_logp must be per-token log-probabilities of one shape, "
                         f"got {tuple(logp.shape)} and {tuple(ref_logp.shape)}")  # fmt: skip
    d = (ref_logp - logp).clamp(-20, 20)
    return (d.exp() - d - 1).clamp(-10, 10)


def _gather(obj):
    world = _rank_world()[1]
    if world == 1:
        return [obj]
    out = [None] * world
    dist.all_gather_object(out, obj)
    return out


def train_grpo(
    policy: CharGPT,
    split: TaskSplit,
    cfg: GRPOConfig,
    checkpoint_dir: str | os.PathLike | None = None,
    resume: bool = False,
    progress: bool = False,
    reward_fn=None,
) -> GRPOResult:
    """Run ``cfg.steps`` GRPO steps on ``policy`` in place; see the module docstring.

    ``reward_fn(answer, question, target) -> float`` replaces LRPO's calibrated reward when given.
    """
    _check_policy(policy, split)
    cfg.check()
    rank, world = _rank_world()
    orig_min = cfg.G if cfg.router == "original" else cfg.orig_min
    router = make_router(cfg.router)
    reference = copy.deepcopy(policy).eval().requires_grad_(False)
    model = policy
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(policy)
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
    rng = random.Random(cfg.seed * 1_000 + rank)
    gen = torch.Generator().manual_seed(cfg.seed * 1_000 + rank)
    result = GRPOResult(router=router)
    start = 0
    ckpt = Path(checkpoint_dir) if checkpoint_dir is not None else None
    if resume:
        if ckpt is None or latest_checkpoint(ckpt) is None:
            raise ValueError(f"--resume needs a checkpoint folder with latest.json, got {ckpt}")
        start = _load(ckpt, policy, reference, opt, router, rng, gen, cfg, rank, result)
    elif ckpt is not None and latest_checkpoint(ckpt) is not None:
        raise ValueError(f"{ckpt} holds a run already: continue it with resume (--resume) or "
                         "write to another folder")  # fmt: skip
    if reward_fn is None:

        def reward_fn(answer: str, q: Question, target: str) -> float:
            return calibrated_reward(answer, q.reference(), q.language, target).reward

    bar = tqdm(range(start, cfg.steps), desc=f"GRPO ({cfg.router})", disable=not progress or rank,
               leave=False, initial=start, total=cfg.steps)  # fmt: skip
    for step in bar:
        questions = sample_questions(split.train, cfg.questions_per_step, rng)
        group_targets = [multilingual_group(q, router, cfg.G, orig_min, rng) for q in questions]
        owners, routed, answers, rewards, gids, kl = _grpo_step(
            policy, model, reference, opt, questions, group_targets, orig_min, reward_fn, gen, cfg
        )
        # the router sees every rank's rollouts, so its state stays identical everywhere
        local = [(q.topic, t, float(r), q.region, k)
                 for (_, q, t), r, k in zip(owners, rewards, routed, strict=True)]  # fmt: skip
        observed = [x for part in _gather(local) for x in part]
        for topic, target, r, region, k in observed:
            router.observe(topic, target, r, region, routed=k)
        router.step()
        correct = torch.tensor([a.strip() == q.reference(t)
                                for a, (_, q, t) in zip(answers, owners, strict=True)])  # fmt: skip
        result.history.append(
            _log(step, rewards, correct, gids, observed, router, float(kl.detach()), cfg)
        )
        bar.set_postfix(reward=f"{result.history[-1]['reward']:.3f}")
        if ckpt is not None and cfg.save_every and (step + 1) % cfg.save_every == 0:
            _save(ckpt, policy, reference, opt, router, rng, gen, cfg, step + 1, rank, result)
    if ckpt is not None:
        if not (cfg.save_every and cfg.steps % cfg.save_every == 0 and cfg.steps > start):
            _save(ckpt, policy, reference, opt, router, rng, gen, cfg, cfg.steps, rank, result)
        if rank == 0:  # the final policy where `evaluate` looks for it
            policy.save_pretrained(ckpt / "policy", meta={"router": cfg.router, "steps": cfg.steps})
    policy.eval()
    return result


def _grpo_step(
    policy, model, reference, opt, questions, group_targets, orig_min, reward_fn, gen, cfg
):
    """One GRPO step on the groups of ``questions`` (each answered once per target language):
    sample, reward, group-normalised advantages, then the policy gradient with the KL to the
    reference (k3 estimator), its norm clipped at 1. Returns each rollout's (group, question,
    target), whether it was routed, the answers, rewards, group ids and the KL."""
    prompts, owners, routed = [], [], []
    for gi, (q, targets) in enumerate(zip(questions, group_targets, strict=True)):
        prompts += [prompt(q.text, t) for t in targets]
        owners += [(gi, q, t) for t in targets]
        routed += [k >= orig_min for k in range(len(targets))]
    policy.eval()
    answers, ended = policy.sample(prompts, cfg.max_new, cfg.temperature, gen,
                                   return_ended=True)  # fmt: skip
    scored = zip(answers, owners, strict=True)
    rewards = torch.tensor([reward_fn(a, q, t) for a, (_, q, t) in scored],
                           dtype=torch.float64)  # fmt: skip
    gids = torch.tensor([gi for gi, _, _ in owners])
    adv = grpo_advantages(rewards, gids).float().to(policy.device)
    policy.train()
    logp, mask = policy.logprobs(prompts, answers, forward=model, ended=ended)
    with torch.no_grad():
        ref_logp, _ = reference.logprobs(prompts, answers, ended=ended)
    m = mask.float()
    pg = -(adv[:, None] * logp * m).sum() / m.sum()
    kl = (low_var_kl(logp, ref_logp) * m).sum() / m.sum()
    loss = pg + cfg.beta * kl
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
    opt.step()
    return owners, routed, answers, rewards, gids, kl


@torch.no_grad()
def evaluate(policy: CharGPT, questions: list[Question], batch: int = 256) -> dict:
    """Greedy answers in each question's own language; accuracy = exact reference answer.

    Returns {"accuracy", "worst_language", "by_language": {lang: acc}, "by_topic": {topic: acc}}.
    """
    if not questions:
        raise ValueError("questions is empty")
    if not isinstance(policy, CharGPT):
        raise TypeError(f"policy must be a CharGPT, got {type(policy).__name__}")
    policy.eval()
    correct = []
    for i in range(0, len(questions), batch):
        chunk = questions[i : i + batch]
        answers = policy.sample([prompt(q.text, q.language) for q in chunk], temperature=0.0)
        correct += [a.strip() == q.reference() for a, q in zip(answers, chunk, strict=True)]
    by_lang: dict[str, list[bool]] = {}
    by_topic: dict[str, list[bool]] = {}
    for q, c in zip(questions, correct, strict=True):
        by_lang.setdefault(q.language, []).append(c)
        by_topic.setdefault(q.topic, []).append(c)
    lang_acc = {k: sum(v) / len(v) for k, v in by_lang.items()}
    return {"accuracy": sum(lang_acc.values()) / len(lang_acc),
            "worst_language": min(lang_acc.values()),
            "by_language": lang_acc,
            "by_topic": {k: sum(v) / len(v) for k, v in by_topic.items()}}  # fmt: skip


def _log(step, rewards, correct, gids, observed, router, kl, cfg) -> dict:
    """One step's record. ``zero_variance``: share of groups whose rollouts are all correct or
    all wrong (no signal about correctness); ``zero_reward_variance``: share with identical
    rewards (GRPO's advantages all zero)."""
    ids = torch.unique(gids)
    no_signal = sum(bool(correct[gids == g].all() or ~correct[gids == g].any()) for g in ids)
    flat = sum(float(rewards[gids == g].max() - rewards[gids == g].min()) < 1e-9 for g in ids)
    routed = {}
    for _, target, _, _, _ in observed:
        routed[target] = routed.get(target, 0) + 1
    entry = {"step": step, "reward": float(rewards.mean()),
             "accuracy": float(correct.double().mean()),
             "zero_variance": no_signal / len(ids), "zero_reward_variance": flat / len(ids),
             "kl": kl,
             "languages": {k: v / len(observed) for k, v in sorted(routed.items())}}  # fmt: skip
    if cfg.router != "original":
        entry["probabilities"] = {t: router.probabilities(t) for t in TOPICS}
    return entry


def _write_json(path: Path, obj) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(obj, f)
    os.replace(tmp, path)


def _barrier() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def _save(ckpt: Path, policy, reference, opt, router, rng, gen, cfg, step, rank, result) -> None:
    """One folder per save, ``step<N>/``: every rank writes its random state (its own questions
    and samples), rank 0 the policy, the KL reference, the optimizer and ``state.json``. The
    folder is built under a temporary name and renamed when complete, then ``latest.json`` is
    pointed at it (atomically), so a crash never leaves a half-written checkpoint in use. The
    two newest folders are kept."""
    from safetensors.torch import save_file

    name = f"step{step:06d}"
    tmp = ckpt / f".{name}.partial"
    if rank == 0:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    _barrier()
    rng_state = {"python": list(rng.getstate()[1]), "python_pos": rng.getstate()[2],
                 "torch": gen.get_state().tolist()}  # fmt: skip
    _write_json(tmp / f"rng-rank{rank}.json", rng_state)
    _barrier()
    if rank == 0:
        policy.save_pretrained(tmp / "policy", meta={"router": cfg.router, "steps": step})
        reference.save_pretrained(tmp / "reference", meta={"role": "KL reference"})
        tensors = {}
        for i, p in enumerate(policy.parameters()):
            st = opt.state.get(p, {})
            for k in ("exp_avg", "exp_avg_sq"):
                if k in st:
                    tensors[f"{i}.{k}"] = st[k].detach().cpu().contiguous()
            if "step" in st:
                tensors[f"{i}.step"] = torch.as_tensor(st["step"], dtype=torch.float64).reshape(1)
        save_file(tensors, tmp / "optimizer.safetensors")
        _write_json(tmp / "state.json", {"step": step, "config": cfg.identity(),
                                         "router": router.state_dict(),
                                         "history": result.history})  # fmt: skip
        shutil.rmtree(ckpt / name, ignore_errors=True)
        os.replace(tmp, ckpt / name)
        _write_json(ckpt / "latest.json", {"step": step, "folder": name})
        for old in sorted(ckpt.glob("step*"))[:-2]:
            shutil.rmtree(old, ignore_errors=True)
    _barrier()


def latest_checkpoint(ckpt: str | os.PathLike) -> Path | None:
    """The newest complete checkpoint folder under ``ckpt`` (per ``latest.json``), else None."""
    pointer = Path(ckpt) / "latest.json"
    if not pointer.is_file():
        return None
    try:
        folder = Path(ckpt) / json.loads(pointer.read_text())["folder"]
    except (json.JSONDecodeError, KeyError) as e:
        raise ValueError(f"{pointer} is malformed: {e}") from None
    if not (folder / "state.json").is_file():
        raise ValueError(f"{pointer} names {folder.name}, which has no state.json")
    return folder


def _load(ckpt: Path, policy, reference, opt, router, rng, gen, cfg, rank, result) -> int:
    from safetensors.torch import load_file

    folder = latest_checkpoint(ckpt)
    state = json.loads((folder / "state.json").read_text())
    if state["config"] != cfg.identity():
        diff = {k: (state["config"].get(k), v) for k, v in cfg.identity().items()
                if state["config"].get(k) != v}  # fmt: skip
        raise ValueError(f"{ckpt} was written by a run with other settings (saved, now): {diff}")
    policy.load_state_dict(CharGPT.from_pretrained(folder / "policy").state_dict())
    reference.load_state_dict(CharGPT.from_pretrained(folder / "reference").state_dict())
    tensors = load_file(folder / "optimizer.safetensors")
    for i, p in enumerate(policy.parameters()):
        if f"{i}.exp_avg" in tensors:
            opt.state[p] = {"exp_avg": tensors[f"{i}.exp_avg"].to(p.device),
                            "exp_avg_sq": tensors[f"{i}.exp_avg_sq"].to(p.device),
                            "step": tensors[f"{i}.step"].reshape(()).float()}  # fmt: skip
    router.load_state_dict(state["router"])
    path = folder / f"rng-rank{rank}.json"
    if not path.is_file():
        raise ValueError(f"{path} is missing: resume with the world size the run was saved with")
    r = json.loads(path.read_text())
    rng.setstate((3, tuple(r["python"]), r["python_pos"]))
    gen.set_state(torch.tensor(r["torch"], dtype=torch.uint8))
    result.history[:] = state["history"]
    return int(state["step"])
