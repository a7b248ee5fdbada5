"""A Lightning callback that measures the class geometry of a model's embeddings every epoch.

Needs ``lightning`` (``pip install "icml26-cdnv[lightning]"``)::

    from icml26.cdnv.lightning import CDNVCallback

    trainer = lightning.Trainer(callbacks=[CDNVCallback(probe_loader, num_classes=10)])

After every ``every_n_epochs`` training epochs the callback embeds ``dataloader`` twice (the two
passes of ``CDNVMetric``; O(C^2 + C d) memory), logs ``cdnv/V``, ``cdnv/V~``, ``cdnv/V~ d / V``
and the bounds through ``pl_module.log_dict``, and appends them to ``history``. Under DDP give
each rank its shard (a ``DistributedSampler``); the sums are all-reduced, so every rank logs the
same numbers.
"""

from collections.abc import Callable, Sequence

import torch
from lightning.pytorch import Callback

from icml26.cdnv.metric import CDNVMetric


class CDNVCallback(Callback):
    def __init__(
        self,
        dataloader,
        num_classes: int,
        embed: Callable | None = None,
        shots: Sequence[int] = (1, 5),
        every_n_epochs: int = 1,
    ):
        if every_n_epochs < 1:
            raise ValueError(f"every_n_epochs must be >= 1, got {every_n_epochs}")
        self.dataloader, self.embed, self.every = dataloader, embed, every_n_epochs
        self.metric = CDNVMetric(num_classes, shots=shots)
        self.history: list[dict] = []

    @torch.no_grad()
    def on_train_epoch_end(self, trainer, pl_module) -> None:
        epoch = trainer.current_epoch + 1
        if epoch % self.every:
            return
        was_training = pl_module.training
        pl_module.eval()

        def embed(x):
            x = x.to(pl_module.device)
            return self.embed(pl_module, x) if self.embed else pl_module(x)

        try:
            values = self.metric.measure(self.dataloader, embed)
        finally:
            pl_module.train(was_training)
        self.history.append({"epoch": epoch, **values})
        finite = {f"cdnv/{k}": v for k, v in values.items() if v == v and abs(v) != float("inf")}
        pl_module.log_dict(finite, on_epoch=True, sync_dist=False)  # already reduced
