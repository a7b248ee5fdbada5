import pytest
import torch
import torch.distributed as dist

from icml26.cdnv import (
    CDNVMetric,
    CDNVMonitor,
    ImageAugment,
    MLPEncoder,
    MultitaskGenerator,
    SmallCNN,
    StreamingClassStats,
    barlow_twins_loss,
    class_stats,
    load_digits_images,
    projector,
    simclr_loss,
    train_ssl,
    train_supervised,
    vicreg_loss,
)
from icml26.testing import run_distributed


@pytest.mark.parametrize("loss", [simclr_loss, vicreg_loss, barlow_twins_loss])
def test_losses_prefer_aligned_views(loss):
    z = torch.randn(64, 16)
    aligned = loss(z, z + 0.01 * torch.randn_like(z))
    unrelated = loss(z, torch.randn(64, 16))
    assert aligned < unrelated
    assert torch.isfinite(aligned)


def test_augment_keeps_shape_and_changes_pixels():
    x, _ = load_digits_images()
    aug = ImageAugment()
    out = aug(x[:32], torch.Generator().manual_seed(0))
    assert out.shape == x[:32].shape
    assert not torch.allclose(out, x[:32])


def test_ssl_training_lowers_the_loss_and_the_monitor_records():
    x, y = load_digits_images()
    x, y = x[:400], y[:400]
    aug = ImageAugment()
    monitor = CDNVMonitor(x, y, shots=(1, 5), episodes=5)

    def views(idx, gen):
        return aug(x[idx], gen), aug(x[idx], gen)

    torch.manual_seed(0)
    enc = MLPEncoder(64, 64, 16)
    losses = train_ssl(
        enc,
        projector(16, 64, 32),
        views,
        len(x),
        "vicreg",
        epochs=6,
        batch_size=64,
        on_epoch_end=monitor,
        progress=False,
    )
    assert losses[-1] < losses[0]
    assert [r["epoch"] for r in monitor.history] == list(range(7))
    row = monitor.history[-1]
    assert 0 < row["V~"] < row["V"]
    assert 0 <= row["5-shot error"] <= row["5-shot bound"] <= 1
    with pytest.raises(ValueError, match="objective"):
        train_ssl(enc, projector(16), views, len(x), "byol", epochs=1)


def test_supervised_training_fits_the_source_classes_with_a_flattening_cnn():
    x, y = load_digits_images()
    x, y = x[:400], y[:400] + 3  # any label values: the head sees them as 0..C-1
    torch.manual_seed(0)
    enc = SmallCNN(1, (8, 16), 16, image_size=8)
    assert enc(x[:2]).shape == (2, 16)
    seen = []
    losses = train_supervised(
        enc, x, y, epochs=4, batch_size=32, lr=5e-3, augment=ImageAugment(),
        on_epoch_end=lambda e, ep: seen.append(ep), progress=False,
    )  # fmt: skip
    assert losses[-1] < 0.75 * losses[0] and seen == list(range(5))
    assert isinstance(enc.net[-1], torch.nn.Linear) and enc.net[-1].in_features == 16 * 4 * 4
    assert enc.trunk(x[:2]).shape == (2, 16 * 4 * 4)  # the flattened map the linear layer reads
    with pytest.raises(ValueError, match="flattens 8x8"):
        enc(torch.zeros(2, 1, 28, 28))


def test_multitask_generator_labelings_are_independent_and_balanced():
    g = MultitaskGenerator(k=4, seed=0)
    x, z = g.sample(8000, seed=1)
    assert x.shape == (8000, g.dim) and z.shape == (8000, 4)
    assert torch.allclose(z.float().mean(0), torch.full((4,), 0.5), atol=0.03)
    corr = torch.corrcoef(z.float().T)
    assert corr[~torch.eye(4, dtype=bool)].abs().max() < 0.05


def _ddp_ssl_and_stats(epochs: int):
    torch.manual_seed(0)
    x, y = load_digits_images()
    x, y = x[:256], y[:256]
    aug = ImageAugment()

    def views(idx, gen):
        return aug(x[idx], gen), aug(x[idx], gen)

    enc = MLPEncoder(64, 32, 8)
    train_ssl(enc, projector(8, 32, 16), views, len(x), "simclr", epochs, 32, progress=False)
    # Each rank streams its own shard through both passes; all_reduce sums the partial sums.
    rank, world = dist.get_rank(), dist.get_world_size()
    feats = x.flatten(1)[rank::world].double()
    acc = StreamingClassStats(num_classes=10).update(feats, y[rank::world]).all_reduce()
    stats = acc.second_pass().update(feats, y[rank::world]).all_reduce().finalize()
    # The metric: rank 1 holds an empty shard (its sums exist up front from dim=), and a
    # second compute() must not reduce again.
    metric = CDNVMetric(num_classes=10, shots=(1,), dim=feats.shape[1])
    shard = (feats, y[rank::world]) if rank == 0 else (feats[:0], y[:0])
    metric.update(*shard)
    metric.second_pass()
    metric.update(*shard)
    first, second = metric.compute(), metric.compute()
    return [p.detach().clone() for p in enc.parameters()], stats, (first, second)


@pytest.mark.distributed
def test_two_gloo_ranks_train_identical_weights_and_reduce_the_statistics():
    ranks = run_distributed(_ddp_ssl_and_stats, 2, world_size=2)
    for a, b in zip(ranks[0][0], ranks[1][0], strict=True):
        assert torch.equal(a, b)
    x, y = load_digits_images()
    whole = class_stats(x[:256].flatten(1).double(), y[:256])
    for stats in (ranks[0][1], ranks[1][1]):
        for f in ("counts", "means", "total_variance", "directional_quadratic", "fourth"):
            torch.testing.assert_close(getattr(stats, f), getattr(whole, f), rtol=1e-9, atol=1e-9)
    rank0 = CDNVMetric(num_classes=10, shots=(1,)).measure([(x[:256:2].flatten(1), y[:256:2])])
    for first, second in (ranks[0][2], ranks[1][2]):
        assert repr(first) == repr(second)  # the same values, however often computed
        assert first["V~"] == pytest.approx(rank0["V~"], rel=1e-9)
