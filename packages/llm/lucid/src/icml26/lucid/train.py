"""Training loops for the demo: MQAR and multi-needle steps-to-solve, a character LM on Python's
docs.

Both run unchanged under ``torchrun``: with a process group initialised, the model is wrapped in
DistributedDataParallel and each rank draws its own batches (seed + rank).
"""

import math
import os
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from icml26.lucid.attention import LucidAttention, preconditioner_statistics
from icml26.lucid.model import TinyLM, TinyLMConfig
from icml26.lucid.tasks import char_tokens, mqar_batch, needle_batch, pydoc_text

TASKS = {"mqar": mqar_batch, "needle": needle_batch}
"""Recall tasks of ``train_mqar``: name -> batch maker (batch, T, pairs, vocab, gen, device)."""


@dataclass(frozen=True)
class MQARRun:
    """The outcome of one recall (MQAR or multi-needle) training run."""

    steps_to_solve: int | None
    """First evaluation step with accuracy >= the threshold (None: not within the budget)."""
    final_accuracy: float
    """Accuracy on the fixed evaluation batch at the end."""
    curve: list[tuple[int, float]]
    """(step, evaluation accuracy)."""
    device: str
    """The torch device the model trained on."""
    preconditioner: list[dict] = field(default_factory=list)
    """LUCID runs: at each evaluation, ``preconditioner_statistics`` of every layer on the
    evaluation batch's first sequences, as {"step", "layer", statistic: value}."""


def _rank_world() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _fresh_model(
    seed: int, lr: float, device: torch.device | str, **shape
) -> tuple[TinyLM, nn.Module, torch.optim.Optimizer]:
    """A new ``TinyLM(TinyLMConfig(**shape))`` on ``device``, the module to call (DDP-wrapped
    under a process group) and its AdamW."""
    torch.manual_seed(seed)  # same initial weights on every rank (DDP broadcasts them anyway)
    device = torch.device(device)
    distributed = _rank_world()[1] > 1
    if distributed and device.type == "cuda" and device.index is None:
        # under torchrun a bare "cuda" is this rank's own GPU, and "cuda" tensors made later
        # (the batches) land there too once it is the current device
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    # initialised on the CPU and then moved: a seed gives the same initial weights everywhere
    model = TinyLM(TinyLMConfig(**shape)).to(device)
    ids = [device.index] if device.type == "cuda" else None
    wrapped = nn.parallel.DistributedDataParallel(model, device_ids=ids) if distributed else model
    return model, wrapped, torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.1)


def train_mqar(
    kind: str,
    seq_len: int,
    pairs: int,
    steps: int,
    seed: int,
    *,
    vocab: int = 65,
    dim: int = 64,
    layers: int = 2,
    heads: int = 2,
    batch: int = 64,
    lr: float = 3e-3,
    eval_every: int = 25,
    threshold: float = 0.99,
    rope_base: float | None = None,
    task: str = "mqar",
    beta: float = 1.0,
    detach_preconditioner: bool = False,
    device: torch.device | str = "cpu",
    progress: bool = False,
) -> MQARRun:
    """Train a fresh ``TinyLM`` (attention ``kind``) on a recall ``task`` ("mqar", or "needle"
    with ``pairs`` needles) on ``device``; stop once it is solved. ``beta`` and
    ``detach_preconditioner`` pick a diagnostic variant of LUCID's preconditioner."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {sorted(TASKS)}, got {task!r}")
    make_batch = TASKS[task]
    rank, world = _rank_world()
    model, wrapped, opt = _fresh_model(
        seed,
        lr,
        device,
        vocab_size=vocab,
        max_len=seq_len,
        dim=dim,
        layers=layers,
        heads=heads,
        kind=kind,
        rope_base=rope_base,
        beta=beta,
        detach_preconditioner=detach_preconditioner,
    )
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 50))
    data_gen = torch.Generator().manual_seed(seed * 1000 + 1 + rank)
    eval_x, eval_y = make_batch(
        256, seq_len, pairs, vocab, torch.Generator().manual_seed(10_000 + seed), device
    )
    curve: list[tuple[int, float]] = []
    stats: list[dict] = []
    solved_at = None
    for step in tqdm(
        range(1, steps + 1),
        desc=f"{task} {kind} T={seq_len} P={pairs} seed {seed}",
        disable=not progress,
        leave=False,
    ):
        x, y = make_batch(batch // world, seq_len, pairs, vocab, data_gen, device)
        loss = F.cross_entropy(wrapped(x).flatten(0, 1), y.flatten(), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % eval_every == 0 or step == steps:
            acc = mqar_accuracy(model, eval_x, eval_y)
            curve.append((step, acc))
            if kind == "lucid":
                stats += _preconditioner_log(model, eval_x[:16], step, beta)
            if acc >= threshold:
                solved_at = step
                break
    device = str(next(model.parameters()).device)
    return MQARRun(solved_at, curve[-1][1], curve, device, stats)


@torch.no_grad()
def _preconditioner_log(model: TinyLM, x: torch.Tensor, step: int, beta: float) -> list[dict]:
    layers = [m for m in model.modules() if isinstance(m, LucidAttention)]
    for m in layers:
        m.record = True
    model.eval()
    model(x)
    model.train()
    rows = []
    for i, m in enumerate(layers):
        m.record = False
        k, v = m.recorded
        m.recorded = None
        stats = preconditioner_statistics(k, v, beta)
        rows.append({"step": step, "layer": i, **{n: round(v, 4) for n, v in stats.items()}})
    return rows


@torch.no_grad()
def mqar_accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of query positions whose argmax is the right value."""
    model.eval()
    pred = model(x).argmax(-1)
    model.train()
    asked = y != -100
    return (pred[asked] == y[asked]).double().mean().item()


def train_char_lm(
    kind: str,
    steps: int,
    seed: int,
    *,
    seq_len: int = 128,
    dim: int = 64,
    layers: int = 2,
    heads: int = 2,
    batch: int = 32,
    lr: float = 3e-3,
    rope_base: float | None = None,
    device: torch.device | str = "cpu",
    progress: bool = False,
) -> dict[str, float]:
    """Train a character LM on ``pydoc_data.topics`` (90% train / 10% held out) on ``device``;
    return the held-out loss in nats per character, and the train loss at the end."""
    rank, world = _rank_world()
    tokens = char_tokens(pydoc_text())
    split = int(0.9 * len(tokens))
    train, held = tokens[:split], tokens[split:]
    model, wrapped, opt = _fresh_model(
        seed,
        lr,
        device,
        vocab_size=128,
        max_len=seq_len,
        dim=dim,
        layers=layers,
        heads=heads,
        kind=kind,
        rope_base=rope_base,
    )
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 50) * 0.5 * (1 + math.cos(math.pi * s / steps))
    )
    g = torch.Generator().manual_seed(seed * 1000 + 7 + rank)

    def sample(source: torch.Tensor, n: int, gen: torch.Generator) -> torch.Tensor:
        # the text and the CPU generator stay on the host; only the drawn windows move
        starts = torch.randint(0, len(source) - seq_len - 1, (n,), generator=gen)
        return torch.stack([source[s : s + seq_len + 1] for s in starts.tolist()]).to(device)

    train_loss = math.nan
    for _ in tqdm(
        range(steps), desc=f"char LM {kind} seed {seed}", disable=not progress, leave=False
    ):
        chunk = sample(train, batch // world, g)
        logits = wrapped(chunk[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), chunk[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        train_loss = loss.item()
    held_batch = sample(held, 128, torch.Generator().manual_seed(99))
    model.eval()
    with torch.no_grad():
        held_loss = F.cross_entropy(
            model(held_batch[:, :-1]).flatten(0, 1), held_batch[:, 1:].flatten()
        ).item()
    return {"held-out loss": held_loss, "train loss": train_loss}
