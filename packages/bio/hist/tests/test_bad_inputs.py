"""Bad input at the public API ends in a ValueError / TypeError that names the argument."""

import warnings

import numpy as np
import pytest

import icml26.hist as H
from icml26.hist import Slide
from icml26.hist.cli import load_slides, main
from icml26.testing import assert_rejects

RETURNED = {
    "TrainResult": "train returns it",
    "Lattice": "to_lattice returns it",
    "load_her2st_subset": "takes no arguments: it loads the bundled slides",
}
"""Public names a user receives rather than builds (records the package returns): no input."""


def _slide(counts):
    n = len(counts)
    xy = np.stack([np.arange(n), np.zeros(n)], 1).astype(float)
    return Slide("s", xy, np.zeros((n, 4)), counts, [f"g{j}" for j in range(counts.shape[1])])


def test_non_integer_counts_warn_that_they_look_normalised():
    counts = np.log1p(np.arange(12, dtype=float).reshape(4, 3))
    with pytest.warns(UserWarning, match="use-raw"):
        _slide(counts)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _slide(np.arange(12, dtype=float).reshape(4, 3))  # integer-valued floats are counts


@pytest.mark.parametrize("bad", [-1.0, np.nan])
def test_negative_or_missing_counts_are_refused(bad):
    counts = np.ones((4, 3))
    counts[1, 1] = bad
    assert_rejects(lambda: _slide(counts), "counts")


@pytest.mark.parametrize("step", [0.0, -2.0, float("nan"), (1.0, 0.0), (1.0, 2.0, 3.0), True])
def test_a_pitch_that_is_not_positive_is_named_when_the_slide_is_built(step):
    xy, features = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), np.zeros((3, 4))
    assert_rejects(lambda: Slide("s", xy, features, step=step), "step")  # was named only later


def test_repeated_gene_names_are_named():
    counts = np.ones((3, 2))
    xy, features = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), np.zeros((3, 4))
    assert_rejects(lambda: Slide("s", xy, features, counts, ["a", "a"]), ["gene names", "'a'"])


def test_a_garbage_h5ad_names_the_file(tmp_path, capsys):
    bad = tmp_path / "slide.h5ad"
    bad.write_text("not hdf5")
    assert_rejects(lambda: load_slides([str(bad)]), "slide.h5ad")
    assert main(["train", "--out", str(tmp_path / "run"), "--data", str(bad), "--steps", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "slide.h5ad" in err[0]


def test_ridge_probe_names_an_unknown_context_or_penalty():
    from icml26.hist import RidgeProbe
    from icml26.hist.linear import neighbourhood_mean

    assert_rejects(lambda: RidgeProbe("global"), "context")
    assert_rejects(lambda: RidgeProbe("multiscale", alphas=(0.0,)), "alphas")
    slide = _slide(np.ones((4, 3)))
    for radius in (0, 1.5, True):
        assert_rejects(lambda r=radius: neighbourhood_mean(slide, r), "radius")


@pytest.mark.parametrize(
    ("call", "names"),
    [
        (lambda: H.SyntheticWorld(num_features=0), "num_features"),
        (lambda: H.SyntheticWorld(num_genes=2.5), "num_genes"),
        (lambda: H.SyntheticWorld(stain_shift=-1.0), "stain_shift"),
        (lambda: H.SyntheticWorld(biology_shift=float("nan")), "biology_shift"),
        (lambda: H.make_slide(10.5, 0), "num_spots"),
        (lambda: H.make_slide(16, 0, pitch=0), "pitch"),
        (lambda: H.make_cohort(0, 16), "num_slides"),
    ],
)
def test_synthetic_cohorts_name_their_bad_sizes(call, names):
    assert_rejects(call, names)


@pytest.mark.parametrize(
    ("make", "names"),
    [
        (lambda: H.HiSTConfig(0, 5), "in_features"),
        (lambda: H.HiSTConfig(5, 5, dim=0), "dim"),
        (lambda: H.HiSTConfig(5, 5, dim=16, heads=3), ["dim", "heads"]),
        (lambda: H.HiSTConfig(5, 5, dim=16, stages="1-1"), "stages"),
        (lambda: H.HiSTConfig(5, 5, dim=16, stages="101-21"), "stages"),
        (lambda: H.HiSTConfig(5, 5, dim=16, dropout=1.0), "dropout"),
        (lambda: H.HiSTConfig(5, 5, dim=16, window=1), "window"),
        (lambda: H.BaselineConfig(5, 0), "num_genes"),
        (lambda: H.BaselineConfig(5, 5, layers=-1), "layers"),
        (lambda: H.BaselineConfig(5, 5, k=0), "k"),
    ],
)
def test_model_configs_check_themselves_when_built(make, names):
    assert_rejects(make, names)


def test_metrics_refuse_nan_and_models_refuse_what_is_not_a_slide():
    nan = np.full((3, 2), np.nan)
    for metric in (H.slide_metrics, H.gene_pearsons):
        assert_rejects(lambda m=metric: m(nan, np.ones((3, 2))), "finite")
    assert_rejects(lambda: H.MeanExpression().predict_log1p(_slide(np.ones((4, 3)))), "fit")
    model = H.HiST(H.HiSTConfig(4, 3, dim=16))
    assert_rejects(lambda: H.predict("model", _slide(np.ones((4, 3)))), "model")
    assert_rejects(lambda: H.predict_log1p(model, np.ones((4, 4))), "slide")
    assert_rejects(lambda: H.evaluate(model, [], scale="linear"), "slides")
    assert_rejects(lambda: H.train(model, [], H.TrainConfig(steps=1)), "slides")
    assert_rejects(lambda: H.TrainConfig(lr=-1), "lr")
    assert_rejects(lambda: H.highly_variable_genes([_slide(np.ones((4, 3)))], 0), "n")
    assert_rejects(lambda: H.highly_expressed_genes([], 5), "slides")


def test_models_images_and_files_name_what_is_wrong(tmp_path):
    cfg = H.BaselineConfig(4, 3, dim=16)
    for model in (H.SpotMLP, H.KNNAttention, H.FullAttention):
        assert_rejects(lambda m=model: m(H.HiSTConfig(4, 3, dim=16)), "BaselineConfig")
    for model in (H.HiST, H.DenseGridHiST):
        assert_rejects(lambda m=model: m(cfg), "HiSTConfig")
    assert_rejects(lambda: H.to_lattice(np.full((3, 2), np.nan), 1.0), "xy")
    assert_rejects(lambda: H.to_lattice(np.ones((3, 2)), 0.0), "step")
    image = np.zeros((40, 40, 3), np.uint8)
    assert_rejects(lambda: H.pseudo_spots(image, 0), "pitch_px")
    assert_rejects(lambda: H.spot_patches(image, np.ones((2, 2)), 0), "diameter_px")
    assert_rejects(lambda: H.slide_from_image(image[..., 0], 5), "image")
    for embed in (H.featurise_patches, H.embed_patches):
        assert_rejects(lambda e=embed: e(np.zeros((3, 4, 4))), "patches")
    assert_rejects(lambda: H.load_her2st(tmp_path, "A1"), "A1")
    model = H.HiST(H.HiSTConfig(4, 3, dim=16))
    assert_rejects(lambda: H.load_checkpoint(tmp_path, model), "checkpoint")


def _sites():
    import torch

    return torch.tensor([[0, 0], [0, 1], [1, 0]]), torch.ones(3, dtype=torch.bool)


def test_lattice_and_graph_builders_name_bad_sites_and_sizes():
    import torch

    coords, real = _sites()
    assert_rejects(lambda: H.add_sentinels(coords, 0), "levels")
    assert_rejects(lambda: H.add_sentinels(coords.float() + 0.5, 2), ["coords", "integer"])
    assert_rejects(lambda: H.add_sentinels(coords.numpy(), 2), ["coords", "tensor"])
    assert_rejects(lambda: H.coarsen(coords.float(), real), "coords")
    assert_rejects(lambda: H.coarsen(coords, real[:2]), "real")
    assert_rejects(lambda: H.coarsen(coords, real.long()), ["real", "bool"])
    for window in (0, 1, 2.5):
        assert_rejects(lambda w=window: H.local_edges(coords, real, w), "window")
        assert_rejects(lambda w=window: H.plan_windows(coords, real, w), "window")
    assert_rejects(lambda: H.local_edges(coords, real[:2], 4), "real")
    assert_rejects(lambda: H.plan_windows(coords, real[:2], 4), "real")
    assert_rejects(lambda: H.global_edges(real, -1), "num_tokens")
    assert_rejects(lambda: H.global_edges(real.long(), 3), "real")
    scores, dst = torch.randn(5, 2), torch.zeros(5, dtype=torch.long)
    assert_rejects(lambda: H.edge_softmax(scores[:, 0], dst, 3), "scores")
    assert_rejects(lambda: H.edge_softmax(scores, dst[:4], 3), "dst")
    assert_rejects(lambda: H.edge_softmax(scores, dst + 7, 3), ["dst", "0..2"])
    assert_rejects(lambda: H.edge_softmax(scores, dst, 0), "num_nodes")


def test_attention_modules_name_bad_sizes_shapes_and_offsets():
    import torch

    assert_rejects(lambda: H.RelativePositionBias(0, 4), "heads")
    assert_rejects(lambda: H.RelativePositionBias(2, 0), "window")
    assert_rejects(lambda: H.RelativePositionBias(2, 4, std=float("nan")), "std")
    rpb = H.RelativePositionBias(2, 4)
    assert_rejects(lambda: rpb(torch.tensor([9]), torch.tensor([0])), "dr")
    assert_rejects(lambda: H.SparseDown(0, 4), "dim_in")
    assert_rejects(lambda: H.SparseDown(4, 4, mode="avg"), "downsample")
    assert_rejects(lambda: H.PixelShuffleUp(4, -1), "dim_out")
    coords, real = _sites()
    c, _, ch = H.coarsen(coords, real)
    assert_rejects(lambda: H.SparseDown(4, 8)(torch.zeros(2, 4), None, ch), "x")
    assert_rejects(lambda: H.PixelShuffleUp(8, 4)(torch.zeros(len(c), 4), None, ch), "x")
    assert_rejects(lambda: H.SpotModel(H.HiSTConfig(4, 3, dim=16)), ["SpotModel", "HiST"])


def test_attention_functions_name_mismatched_q_k_v_plans_and_tokens():
    import torch

    coords, real = _sites()
    q = torch.randn(3, 2, 4)
    rpb = H.RelativePositionBias(2, 4)
    assert_rejects(lambda: H.local_attention_edges(q, q[:2], q, coords, real, 4, rpb), "k")
    small = H.RelativePositionBias(2, 2)
    assert_rejects(lambda: H.local_attention_edges(q, q, q, coords, real, 4, small), "rpb")
    plan = H.plan_windows(coords, real, 4)
    assert_rejects(lambda: H.window_attention(q, q, q, "plan"), "WindowPlan")
    assert_rejects(lambda: H.window_attention(q[:2], q[:2], q[:2], plan), "q")
    assert_rejects(lambda: H.window_attention(q, q[..., :2], q, plan), "v")
    assert_rejects(lambda: H.window_attention(q.long(), q, q, plan), "floating")
    t = q[:2]
    assert_rejects(lambda: H.token_attention(q, q, q, t[:, :1], t, t, real), "qt")
    assert_rejects(lambda: H.token_attention(q, q, q, t, t, t, real[:2]), "real")
    assert_rejects(lambda: H.token_attention(q, q, q, t[..., :2], t[..., :2], t[..., :2], real),
                   ["sites", "tokens"])  # fmt: skip


def test_predict_anndata_names_what_is_not_a_model_slide_or_anndata():
    model = H.HiST(H.HiSTConfig(4, 3, dim=16))
    slide = _slide(np.ones((4, 3)))
    assert_rejects(lambda: H.predict_anndata(model, np.ones((3, 4))), "slide")
    assert_rejects(lambda: H.predict_anndata("model", slide), "model")
    assert_rejects(lambda: H.predict_anndata(model, slide, template={"obs": 1}), "template")


def _demo_config(**kw):
    from icml26.hist.study import DemoConfig

    return DemoConfig(**kw)


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: H.TrainConfig(slides_per_step=0), "slides_per_step"),
        (lambda: _demo_config(dim=4).validate(), "dim"),
    ],
)
def test_config_messages_name_the_one_bad_field(make, name):
    err = assert_rejects(make, name)
    assert str(err).startswith(f"{name} must"), err


from hypothesis import given, settings  # noqa: E402

from icml26.testing.strategies import empty, non_finite, wrong_rank  # noqa: E402


@settings(max_examples=30, deadline=None)
@given(bad=non_finite((3, 2)) | wrong_rank((3, 2)) | empty((3, 2)))
def test_metrics_name_predictions_of_every_bad_kind(bad):
    """NaN / inf, a wrong rank, or no spots: named, never a NaN score."""
    for metric in (H.slide_metrics, H.gene_pearsons):
        assert_rejects(lambda m=metric: m(bad.numpy(), np.ones((3, 2))), "pred")
        assert_rejects(lambda m=metric: m(np.ones(tuple(bad.shape)), bad.numpy()), "true")


def test_metrics_refuse_complex_predictions():
    assert_rejects(lambda: H.slide_metrics(np.ones((3, 2)) * 1j, np.ones((3, 2))), "pred")
