"""Bad input at the public API ends in a ValueError / TypeError that names the argument."""

import numpy as np
import pytest
import torch

import icml26.cdnv as C
from icml26.cdnv import class_stats, ncc_fewshot_error
from icml26.cdnv.measure_cli import MeasureConfig, run_measure
from icml26.testing import assert_rejects

RETURNED = {
    "PairwiseCDNV": "cdnv and directional_cdnv return it",
}
"""Public names a user receives rather than builds (records the package returns): no input."""

LABELS = torch.tensor([0, 0, 1, 1])


@pytest.mark.parametrize("dtype", [torch.bool, torch.int64, torch.uint8])
def test_features_must_be_floating_point(dtype):
    x = torch.ones(4, 3, dtype=dtype)
    assert_rejects(lambda: class_stats(x, LABELS), "features")
    assert_rejects(lambda: ncc_fewshot_error(x, LABELS, [1], 2), "features")


def test_an_empty_list_of_shots_is_named():
    x = torch.randn(4, 3)
    assert_rejects(lambda: ncc_fewshot_error(x, LABELS, [], 2), "shots")  # returned []


def test_non_finite_features_and_mismatched_rows_are_named():
    x = torch.zeros(4, 3)
    x[1, 1] = float("nan")
    assert_rejects(lambda: class_stats(x, LABELS), "features")
    assert_rejects(lambda: class_stats(torch.zeros(5, 3), LABELS), "labels")


def test_measure_names_what_is_wrong_with_the_file(tmp_path):
    text = tmp_path / "notes.npz"
    text.write_text("hello")  # was reported as "pickled (object) data"
    message = str(assert_rejects(lambda: run_measure(MeasureConfig(path=text)), "path"))
    assert "not a .npz file" in message and "pickle" not in message
    np.savez(tmp_path / "nolabels.npz", features=np.zeros((4, 3)))
    message = str(
        assert_rejects(lambda: run_measure(MeasureConfig(path=tmp_path / "nolabels.npz")), "path")
    )
    assert "['labels']" in message and "is not a file" not in message
    assert_rejects(lambda: run_measure(MeasureConfig(path=tmp_path / "absent.npz")), "path")
    # a plain string path, as a Python caller writes it (was an AttributeError on str)
    absent = str(tmp_path / "absent.npz")
    assert_rejects(lambda: run_measure(MeasureConfig(path=absent)), "absent.npz")
    assert_rejects(lambda: MeasureConfig(path=3), "path")


from icml26.cdnv import (  # noqa: E402
    ImageAugment,
    MLPEncoder,
    barlow_twins_loss,
    cdnv,
    collapse_ratio,
    directional_cdnv,
    fewshot_bound,
    pairwise_bound,
    simclr_loss,
    vicreg_loss,
)


@pytest.mark.parametrize("loss", [simclr_loss, vicreg_loss, barlow_twins_loss])
def test_ssl_losses_name_views_that_do_not_match(loss):
    assert_rejects(lambda: loss(torch.randn(4, 3), torch.randn(5, 3)), "z1 and z2")
    assert_rejects(lambda: loss(torch.randn(4, 3), torch.randn(4, 2)), "z1 and z2")
    assert_rejects(lambda: loss(torch.randn(4, 3).long(), torch.randn(4, 3)), "z1")


def test_ssl_loss_weights_must_be_positive():
    z = torch.randn(4, 3)
    assert_rejects(lambda: simclr_loss(z, z, 0.0), "temperature")
    assert_rejects(lambda: vicreg_loss(z, z, var_w=-1.0), "var_w")
    assert_rejects(lambda: barlow_twins_loss(z, z, float("nan")), "lambd")


def test_encoders_and_augmentations_name_bad_sizes():
    assert_rejects(lambda: MLPEncoder(0), "in_dim")
    assert_rejects(lambda: MLPEncoder(4, depth=-1), "depth")
    assert_rejects(lambda: ImageAugment(rotate_deg=-5), "rotate_deg")
    assert_rejects(lambda: ImageAugment(erase=1.5), "erase")


def test_measures_and_bounds_name_a_bad_convention_shot_count_or_variant():
    stats = class_stats(torch.randn(40, 5), torch.arange(40) % 4)
    for measure in (cdnv, directional_cdnv, collapse_ratio, C.effective_collapse_ratio):
        assert_rejects(lambda measure=measure: measure(stats, "median"), "convention")
    for measure in (C.effective_dim, C.effective_collapse_ratio):
        assert_rejects(lambda measure=measure: measure(torch.ones(3, 2)), "stats")
    assert_rejects(lambda: fewshot_bound(stats, 0), "shots")
    assert_rejects(lambda: fewshot_bound(stats, []), "shots")  # an empty list returned []
    assert_rejects(lambda: fewshot_bound(stats, 1, ways=1), "ways")
    assert_rejects(lambda: fewshot_bound(stats, 1, variant="x"), "variant")
    assert_rejects(lambda: pairwise_bound(stats, 0), "shots")


def test_decision_axes_monitors_and_generators_name_bad_values():
    x, y = torch.randn(20, 4), torch.arange(20) % 2
    nan = torch.full((4, 2), float("nan"))
    for axes in (C.decision_axis_cosines, C.axis_cosine_bound):
        assert_rejects(lambda f=axes: f(nan, torch.tensor([0, 1, 0, 1])), "features")
        assert_rejects(lambda f=axes: f(x, y[:5]), "labelings")
    assert_rejects(lambda: C.decision_axis_cosines(x, torch.arange(20) % 3), "2 classes")
    assert_rejects(lambda: C.CDNVMonitor(x, torch.zeros(20)), "labels")
    for kw, name in (({"shots": (0,)}, "shots"), ({"episodes": 0}, "episodes"),
                     ({"batch_size": 0}, "batch_size")):  # fmt: skip
        assert_rejects(lambda k=kw: C.CDNVMonitor(x, y, **k), name)
    assert_rejects(lambda: C.CDNVMetric(1), "num_classes")
    assert_rejects(lambda: C.CDNVMetric(2).update(torch.ones(2, 2), torch.tensor([0, 5])), "label")
    assert_rejects(lambda: C.StreamingClassStats(0), "num_classes")
    assert_rejects(lambda: C.StreamingClassStats(2).update(nan[:2], torch.tensor([0, 1])), "NaN")
    assert_rejects(lambda: C.exact_class_stats(torch.ones(4, 2), torch.tensor([0, 1, 0])), "labels")
    assert_rejects(lambda: C.MultitaskGenerator(k=1), "k")
    assert_rejects(lambda: C.MultitaskGenerator(noise=-1.0), "noise")
    assert_rejects(lambda: C.MultitaskGenerator().sample(0), "n")
    assert isinstance(C.cdnv(class_stats(x, y)), C.PairwiseCDNV)  # a record cdnv() returns


def test_encoders_loaders_and_training_name_bad_values():
    assert_rejects(lambda: C.SmallCNN(0), "in_channels")
    assert_rejects(lambda: C.SmallCNN(1, (4,), 0), "out_dim")
    assert_rejects(lambda: C.SmallCNN(1, (4,), 8, image_size=0), "image_size")
    assert_rejects(lambda: C.projector(0), "in_dim")
    for load in (C.load_digits_images, C.load_mnist_images):
        assert_rejects(lambda f=load: f("gpu0"), "device")
    x = torch.randn(20, 4)

    def views(i, g):
        return x[i], x[i]

    enc, head = C.MLPEncoder(4), C.projector(64)
    assert_rejects(lambda: C.train_ssl(enc, head, views, 20, "byol"), "objective")
    assert_rejects(lambda: C.train_ssl(enc, head, views, 0), "n_samples")
    assert_rejects(lambda: C.train_ssl(enc, head, views, 20, lr=-1.0), "lr")
    y = torch.arange(20) % 2
    assert_rejects(lambda: C.train_supervised(enc, x, y[:5]), "labels")
    assert_rejects(lambda: C.train_supervised(enc, x, torch.zeros(20)), "2 classes")
    assert_rejects(lambda: C.train_supervised(enc, x.numpy(), y), "tensors")
    assert_rejects(lambda: C.train_supervised(enc, x, y, lr=0.0), "lr")


def test_class_stats_built_by_hand_are_checked():
    good = C.class_stats(torch.randn(12, 3, dtype=torch.float64), torch.arange(12) % 3)
    fields = dict(vars(good))
    C.ClassStats(**fields)  # the record the package returns passes its own checks
    nan_means = good.means.clone()
    nan_means[0, 0] = float("nan")
    assert_rejects(lambda: C.ClassStats(**{**fields, "means": nan_means}), "means")
    assert_rejects(lambda: C.ClassStats(**{**fields, "fourth": good.fourth[:2]}), "fourth")
    assert_rejects(lambda: C.ClassStats(**{**fields, "counts": good.counts * 0}), "counts")
    assert_rejects(lambda: C.ClassStats(**{**fields, "means": good.means.long()}), "means",
                   TypeError)  # fmt: skip


from hypothesis import given, settings  # noqa: E402

from icml26.testing.strategies import bad_tensors  # noqa: E402


@settings(max_examples=30, deadline=None)
@given(x=bad_tensors((4, None)))
def test_features_of_every_bad_kind_are_named(x):
    """NaN / inf, a wrong rank, integer, boolean or complex values, or no rows."""
    assert_rejects(lambda: class_stats(x, LABELS), "features")
    assert_rejects(lambda: ncc_fewshot_error(x, LABELS, [1], 2), "features")
