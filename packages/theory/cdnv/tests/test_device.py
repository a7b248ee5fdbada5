"""The public API runs where its inputs live and gives the CPU's numbers there."""

import pytest
import torch

from icml26.cdnv import (
    CDNVMonitor,
    ImageAugment,
    MLPEncoder,
    MultitaskGenerator,
    StreamingClassStats,
    barlow_twins_loss,
    cdnv,
    class_stats,
    decision_axis_cosines,
    directional_cdnv,
    fewshot_bound,
    load_digits_images,
    ncc_fewshot_error,
    projector,
    simclr_loss,
    train_ssl,
    vicreg_loss,
)
from icml26.cdnv.data import stratified_split


def _classes(C=4, d=6, n=60):
    g = torch.Generator().manual_seed(0)
    means = 3 * torch.randn(C, d, generator=g, dtype=torch.float64)
    x = torch.cat(
        [means[c] + torch.randn(n, d, generator=g, dtype=torch.float64) for c in range(C)]
    )
    return x, torch.arange(C).repeat_interleave(n)


def test_measures_and_bound_run_on_the_features_device(device):
    x, y = _classes()
    want, got = class_stats(x, y), class_stats(x.to(device), y.to(device))
    assert got.means.device.type == torch.device(device).type
    assert got.classes.device == got.counts.device == got.directional_quadratic.device
    for f in (
        "means",
        "total_variance",
        "frob_sq",
        "directional_quadratic",
        "fourth",
        "fold_means",
    ):
        torch.testing.assert_close(getattr(got, f).cpu(), getattr(want, f), rtol=1e-9, atol=1e-12)
    for measure in (cdnv, directional_cdnv):
        for cross_fit in (False, True):
            a, b = measure(want, cross_fit=cross_fit), measure(got, cross_fit=cross_fit)
            assert b.matrix.device == got.means.device
            assert b.mean == pytest.approx(a.mean, rel=1e-9)
    assert fewshot_bound(got, [1, 5], ways=2) == pytest.approx(fewshot_bound(want, [1, 5], ways=2))
    sub = got.subset([0, 2])
    assert sub.means.device == got.means.device and sub.n_classes == 2
    # The episodes are drawn on the CPU: the same episodes, the same error, on every device.
    err = ncc_fewshot_error(x.to(device), y.to(device), [1, 5], episodes=5, ways=3, seed=1)
    assert err == ncc_fewshot_error(x, y, [1, 5], episodes=5, ways=3, seed=1)


def test_streaming_stats_stay_on_the_first_chunks_device(device):
    x, y = _classes()
    acc = StreamingClassStats().update(x[:100].to(device), y[:100])
    acc.update(x[100:], y[100:].to(device)).second_pass()  # later chunks follow the first
    got = acc.update(x, y).finalize()
    assert got.means.device.type == torch.device(device).type
    torch.testing.assert_close(got.means.cpu(), class_stats(x, y).means, rtol=1e-9, atol=1e-12)


def test_decision_axes_and_split_on_device(device):
    g = MultitaskGenerator(k=3, seed=0, device=device)
    x, z = g.sample(500, seed=1)
    assert x.device.type == z.device.type == torch.device(device).type
    x_cpu, z_cpu = MultitaskGenerator(k=3, seed=0).sample(500, seed=1)
    assert torch.equal(z.cpu(), z_cpu)
    torch.testing.assert_close(x.cpu(), x_cpu, rtol=1e-5, atol=1e-6)
    cos = decision_axis_cosines(x, z.cpu())  # labelings follow the features
    assert cos.device == x.device
    # a list of per-labeling tensors on the features' device, or mixed with numpy arrays
    as_list = decision_axis_cosines(x, [z[:, 0], z[:, 1].cpu().numpy(), z[:, 2]])
    torch.testing.assert_close(as_list, cos)
    torch.testing.assert_close(cos.cpu(), decision_axis_cosines(x_cpu, z_cpu), rtol=1e-5, atol=1e-6)
    train, held = stratified_split(z[:, 0], 0.3, seed=2)
    _, held_cpu = stratified_split(z_cpu[:, 0], 0.3, seed=2)
    assert train.device == z.device and torch.equal(held.cpu(), held_cpu)


def test_augment_and_losses_on_device(device):
    x, _ = load_digits_images(device)
    assert x.device.type == torch.device(device).type
    aug = ImageAugment()
    got = aug(x[:16], torch.Generator().manual_seed(0))
    want = aug(x[:16].cpu(), torch.Generator().manual_seed(0))
    assert got.device == x.device
    torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-4)
    z = torch.randn(32, 8, device=device)
    for loss in (simclr_loss, vicreg_loss, barlow_twins_loss):
        value = loss(z, z + 0.01)
        assert value.device == z.device and torch.isfinite(value)


def test_ssl_training_and_monitor_on_device(device):
    x, y = load_digits_images(device)
    x, y = x[:400], y[:400]
    aug = ImageAugment()
    monitor = CDNVMonitor(x, y, shots=(1,), episodes=3)

    def views(idx, gen):
        xb = x[idx.to(x.device)]
        return aug(xb, gen), aug(xb, gen)

    torch.manual_seed(0)
    enc = MLPEncoder(64, 32, 8).to(device)
    losses = train_ssl(
        enc,
        projector(8, 32, 16).to(device),
        views,
        len(x),
        "simclr",
        1,
        64,
        progress=False,
        on_epoch_end=monitor,
    )
    assert next(enc.parameters()).device.type == torch.device(device).type
    assert all(torch.isfinite(torch.tensor(losses)))
    assert len(monitor.history) == 2 and monitor.history[-1]["V~"] > 0
