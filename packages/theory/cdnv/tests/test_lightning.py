"""The Lightning callback inside a real ``lightning.Trainer``."""

import pytest
import torch

lightning = pytest.importorskip("lightning")

from icml26.cdnv import CDNVMetric, class_stats, collapse_ratio  # noqa: E402
from icml26.cdnv.lightning import CDNVCallback  # noqa: E402


class Tiny(lightning.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)
        )
        self.head = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, _):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.head(self(x)), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def _data(n=300):
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, 3, (n,), generator=g)
    x = torch.randn(n, 6, generator=g) + 2 * torch.nn.functional.one_hot(y, 6).float()
    return torch.utils.data.TensorDataset(x, y)


def test_callback_logs_the_metric_every_epoch():
    torch.manual_seed(0)
    data = _data()
    train = torch.utils.data.DataLoader(data, batch_size=50, shuffle=True)
    probe = torch.utils.data.DataLoader(data, batch_size=64)
    callback = CDNVCallback(probe, num_classes=3, shots=(1, 5))
    model = Tiny()
    trainer = lightning.Trainer(
        max_epochs=2,
        accelerator="cpu",
        callbacks=[callback],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, train)
    assert [h["epoch"] for h in callback.history] == [1, 2]
    assert model.training  # the callback restored the mode
    logged = trainer.callback_metrics
    assert float(logged["cdnv/V~"]) == pytest.approx(callback.history[-1]["V~"], rel=1e-5)
    # The same numbers as the in-memory statistics of the final embeddings.
    model.eval()
    with torch.no_grad():
        feats = model(data.tensors[0])
    st = class_stats(feats, data.tensors[1])
    assert callback.history[-1]["V~ d / V"] == pytest.approx(collapse_ratio(st), rel=1e-6)
    again = CDNVMetric(3).measure(probe, embed=model)
    assert again["V"] == pytest.approx(callback.history[-1]["V"], rel=1e-6)
