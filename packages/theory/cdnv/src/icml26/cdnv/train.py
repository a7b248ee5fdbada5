"""The training loops: an encoder and projector trained with one of ``ssl.py``'s objectives
(SimCLR, VICReg, Barlow Twins) on two augmented views of each image, the pretraining whose
features the bounds and measures are read from; and the supervised reference, an encoder
trained on the source classes' labels."""

from collections.abc import Callable

import torch
import torch.distributed as dist
from torch import nn
from tqdm.auto import tqdm

from icml26.cdnv.ssl import LOSSES, Objective
from icml26.testing.checks import integer, number


def train_ssl(
    encoder: nn.Module,
    head: nn.Module,
    views: Callable[[torch.Tensor, torch.Generator], tuple[torch.Tensor, torch.Tensor]],
    n_samples: int,
    objective: Objective = "vicreg",
    epochs: int = 20,
    batch_size: int = 256,
    lr: float = 1e-3,
    seed: int = 0,
    on_epoch_end: Callable[[nn.Module, int], None] | None = None,
    progress: bool = True,
) -> list[float]:
    """Train ``encoder`` + ``head`` with an SSL objective; returns the mean loss per epoch.

    ``views(idx, gen)`` returns two augmented views of the samples ``idx``. ``on_epoch_end``
    is called as ``f(encoder, epoch)`` before training (epoch 0) and after every epoch. Under
    torchrun (an initialised process group) the model is wrapped in DDP and each rank takes its
    own shard of every epoch's permutation.

    Training runs where ``encoder`` and ``head`` live; ``views`` returns views on that device. The
    permutations and the generator handed to ``views`` are CPU ones, so a seed gives the same
    batches and augmentations on every device.
    """
    if objective not in LOSSES:
        raise ValueError(f"objective must be one of {sorted(LOSSES)}, got {objective!r}")
    if epochs < 0 or batch_size < 2:
        raise ValueError("epochs must be >= 0 and batch_size >= 2")
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive int, got {n_samples!r}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr!r}")
    loss_fn = LOSSES[objective]
    model = nn.Sequential(encoder, head)
    distributed = dist.is_available() and dist.is_initialized()
    rank, world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
    # Two forward passes per step (one per view): broadcasting buffers at each forward rewrites
    # BatchNorm's running statistics in place between them, which autograd rejects on torch 2.6.
    # Each rank keeps its own running statistics; the weights stay identical (gradients are
    # all-reduced), and a single process trains exactly as before.
    wrapped = (
        nn.parallel.DistributedDataParallel(model, broadcast_buffers=False)
        if distributed
        else model
    )
    opt = torch.optim.Adam(wrapped.parameters(), lr=lr, weight_decay=1e-5)
    gen = torch.Generator().manual_seed(seed)
    aug_gen = torch.Generator().manual_seed(seed + 1 + rank)
    if on_epoch_end is not None:
        on_epoch_end(encoder, 0)
    history = []
    bar = tqdm(range(1, epochs + 1), desc=f"SSL {objective}", disable=not progress or rank != 0)
    for epoch in bar:
        wrapped.train()
        perm = torch.randperm(n_samples, generator=gen)[rank::world]  # same perm on all ranks
        losses = []
        n_batches = max(1, n_samples // world // batch_size)  # equal on every rank (DDP)
        for b in range(n_batches):
            idx = perm[b * batch_size : (b + 1) * batch_size]
            if len(idx) < 2:
                continue
            v1, v2 = views(idx, aug_gen)
            loss = loss_fn(wrapped(v1), wrapped(v2))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        history.append(sum(losses) / max(len(losses), 1))
        bar.set_postfix(loss=f"{history[-1]:.3f}")
        if on_epoch_end is not None:
            on_epoch_end(encoder, epoch)
    return history


def train_supervised(
    encoder: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    epochs: int = 20,
    batch_size: int = 128,
    lr: float = 1e-3,
    seed: int = 0,
    augment: Callable[[torch.Tensor, torch.Generator], torch.Tensor] | None = None,
    on_epoch_end: Callable[[nn.Module, int], None] | None = None,
    progress: bool = True,
) -> list[float]:
    """Train ``encoder`` with a linear classifier on its features (cross-entropy over the classes
    in ``labels``); returns the mean loss per epoch. The reference encoder for transfer: features
    learnt from the source classes' labels, measured on classes it never saw.

    The same schedule as ``train_ssl`` (Adam, weight decay 1e-5, seeded CPU permutations,
    ``on_epoch_end(encoder, epoch)`` at epoch 0 and after every epoch); ``augment(x, gen)``, when
    given, transforms each batch."""
    if not isinstance(images, torch.Tensor) or not isinstance(labels, torch.Tensor):
        raise ValueError("images and labels must be tensors")
    if len(images) != len(labels) or len(images) < 2:
        raise ValueError(f"images ({len(images)}) and labels ({len(labels)}) must be equally "
                         "long, with at least 2 samples")  # fmt: skip
    integer("epochs", epochs, low=0)
    integer("batch_size", batch_size, low=2)
    number("lr", lr, above=0)
    classes, targets = torch.unique(labels, return_inverse=True)
    if len(classes) < 2:
        raise ValueError("labels must hold at least 2 classes")
    with torch.no_grad():
        was_training = encoder.training
        dim = encoder.eval()(images[:2]).shape[1]
        encoder.train(was_training)
    head = nn.Linear(dim, len(classes)).to(images.device)
    model = nn.Sequential(encoder, nn.ReLU(), head)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=1e-5)
    gen, aug_gen = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed + 1)
    if on_epoch_end is not None:
        on_epoch_end(encoder, 0)
    history = []
    for epoch in tqdm(range(1, epochs + 1), desc="supervised", disable=not progress):
        model.train()
        perm = torch.randperm(len(images), generator=gen).to(images.device)
        losses = []
        for b in range(max(1, len(images) // batch_size)):
            idx = perm[b * batch_size : (b + 1) * batch_size]
            xb = images[idx] if augment is None else augment(images[idx], aug_gen)
            loss = nn.functional.cross_entropy(model(xb), targets[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        history.append(sum(losses) / len(losses))
        if on_epoch_end is not None:
            on_epoch_end(encoder, epoch)
    return history
