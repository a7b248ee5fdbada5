"""Watch V, V~ and few-shot error while a model trains.

``CDNVMonitor`` embeds a fixed labelled evaluation set with the model after every epoch and
records the class geometry. Call it from any loop (``monitor(model, epoch)``), pass it as
``train_ssl(..., on_epoch_end=monitor)``, or forward Lightning's hook to it: it has
``on_train_epoch_end(trainer, pl_module)`` with Lightning's signature (a two-line
``lightning.pytorch.Callback`` subclass can delegate to it; Lightning itself is not a dependency).
"""

import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from torch import nn

from icml26.cdnv.bound import fewshot_bound, ncc_fewshot_error
from icml26.cdnv.measures import cdnv, directional_cdnv
from icml26.cdnv.metric import collapse_ratio, effective_collapse_ratio, effective_dim
from icml26.cdnv.stats import class_stats


class CDNVMonitor:
    """Records per epoch: V, V~ (plug-in and cross-fitted), V~ d / V, m-shot NCC error and both
    bounds (ours and the authors')."""

    def __init__(
        self,
        inputs: torch.Tensor,
        labels: torch.Tensor,
        shots: Sequence[int] = (1, 5),
        episodes: int = 50,
        embed: Callable[[nn.Module, torch.Tensor], torch.Tensor] | None = None,
        batch_size: int = 1024,
        verbose: bool = False,
    ):
        if len(inputs) != len(labels):
            raise ValueError(f"inputs ({len(inputs)}) and labels ({len(labels)}) differ in length")
        if len(torch.unique(torch.as_tensor(labels))) < 2:
            raise ValueError("labels must hold at least 2 classes")
        if not shots or any(isinstance(m, bool) or not isinstance(m, int) or m < 1 for m in shots):
            raise ValueError(f"shots must be a non-empty sequence of ints m >= 1, got {shots!r}")
        for name, v in (("episodes", episodes), ("batch_size", batch_size)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        self.inputs, self.labels = inputs, torch.as_tensor(labels)
        self.shots, self.episodes = tuple(shots), episodes
        self.embed = embed
        self.batch_size = batch_size
        self.verbose = verbose
        self.history: list[dict] = []

    @torch.no_grad()
    def features(self, model: nn.Module) -> torch.Tensor:
        """Embed the evaluation inputs with ``model`` in eval mode (restoring its mode)."""
        was_training = model.training
        model.eval()
        try:
            device = next(model.parameters()).device
        except StopIteration:
            device = torch.device("cpu")
        out = []
        for i in range(0, len(self.inputs), self.batch_size):
            xb = self.inputs[i : i + self.batch_size].to(device)
            # Gathered in host memory, which a large evaluation set's features may need; the
            # measures run on whatever device their inputs are on.
            out.append((self.embed(model, xb) if self.embed else model(xb)).float().cpu())
        model.train(was_training)
        return torch.cat(out)

    def measure(self, features: torch.Tensor) -> dict:
        stats = class_stats(features, self.labels)
        row = {
            "V": cdnv(stats).mean,
            "V~": directional_cdnv(stats).mean,
            "V~ d / V": collapse_ratio(stats),
            "d_eff": effective_dim(stats),
            "V~ d_eff / V": effective_collapse_ratio(stats),
        }
        for name, measure in (("V", cdnv), ("V~", directional_cdnv)):
            try:  # too few samples in a class leaves the cross-fitted distance undefined
                row[f"{name} (cross-fit)"] = measure(stats, cross_fit=True).mean
            except ValueError:
                row[f"{name} (cross-fit)"] = float("nan")
        for m, err, ours, theirs in zip(
            self.shots,
            ncc_fewshot_error(features, self.labels, list(self.shots), self.episodes),
            fewshot_bound(stats, list(self.shots)),
            fewshot_bound(stats, list(self.shots), variant="authors"),
            strict=True,
        ):
            row[f"{m}-shot error"] = err
            row[f"{m}-shot bound"] = ours
            row[f"{m}-shot bound (authors)"] = theirs
        return row

    def __call__(self, model: nn.Module, epoch: int) -> dict:
        row = {"epoch": epoch, **self.measure(self.features(model))}
        self.history.append(row)
        if self.verbose:
            print(
                " ".join(
                    f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()
                )
            )
        return row

    # Lightning-style hook: Trainer(callbacks=[monitor]) calls it after each training epoch.
    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self(pl_module, int(getattr(trainer, "current_epoch", len(self.history))) + 1)

    def save(self, path: str | os.PathLike) -> None:
        """Write the history as JSON (atomically)."""
        path = Path(path)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "w") as f:
            json.dump(self.history, f, indent=2)
        os.replace(tmp, path)
