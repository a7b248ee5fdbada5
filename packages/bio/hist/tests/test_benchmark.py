"""The evaluation of the field: normalised log1p targets, gene panels chosen on training slides,
closed-form baselines, early stopping, genes matched by name."""

import numpy as np
import pytest
import torch

from icml26.hist import HiST, HiSTConfig, Slide, TrainConfig, evaluate, make_cohort, train
from icml26.hist.baselines import BaselineConfig, SpotMLP
from icml26.hist.data import load_her2st_subset
from icml26.hist.genes import highly_expressed_genes, highly_variable_genes
from icml26.hist.linear import MeanExpression, RidgeProbe, neighbourhood_mean
from icml26.hist.metrics import gene_pearsons
from icml26.hist.model import SpotModel


def _slide(counts, genes, library_size=None, name="s", features=None):
    n = len(counts)
    xy = np.stack([np.arange(n) % 10, np.arange(n) // 10], 1) * 100.0
    feats = np.zeros((n, 2)) if features is None else features
    return Slide(name, xy, feats, counts, genes, library_size=library_size)


def test_expression_is_scanpy_normalize_total_then_log1p():
    counts = np.array([[1, 3, 0], [0, 0, 0], [10, 0, 30]])
    s = _slide(counts, ["a", "b", "c"], library_size=np.array([8.0, 0.0, 100.0]))
    want = np.log1p(np.array([[1e4 / 8, 3e4 / 8, 0], [0, 0, 0], [1e3, 0, 3e3]]))
    np.testing.assert_allclose(s.expression(1e4), want, rtol=1e-6)
    np.testing.assert_allclose(s.expression(None), np.log1p(counts), rtol=1e-6)
    # without a library size, the genes held are the library
    plain = _slide(counts, ["a", "b", "c"])
    np.testing.assert_allclose(plain.expression(4.0)[0], np.log1p([1.0, 3.0, 0.0]), rtol=1e-6)
    sub = s.select_genes(["c", "a"])
    assert sub.genes == ["c", "a"] and sub.counts[2].tolist() == [30, 10]
    np.testing.assert_allclose(sub.expression(1e4), want[:, [2, 0]], rtol=1e-6)
    with pytest.raises(ValueError, match="lacks 1 of the genes"):
        s.select_genes(["a", "zz"])


def test_gene_panels_use_training_slides_only():
    rng = np.random.default_rng(0)
    genes = ["MT-CO1", "RPL3", "flat", "wild", "rare", "steady", "mid"]
    n = 200
    counts = np.stack(
        [
            rng.poisson(500, n),  # mitochondrial: excluded however variable
            rng.poisson(300, n),  # ribosomal: excluded
            np.full(n, 20),  # expressed, never varies
            rng.poisson(rng.choice([1, 60], n)),  # most variable
            (rng.random(n) < 0.05) * 50,  # detected in 5% of spots: filtered out
            rng.poisson(40, n),
            rng.poisson(rng.choice([5, 15], n)),
        ],
        1,
    )
    lib = np.full(n, 2000.0)
    a = _slide(counts, genes, lib, "a")
    assert highly_variable_genes([a], 2) == ["wild", "mid"]
    assert highly_expressed_genes([a], 2) == ["steady", "flat"]
    # a held-out slide where "flat" varies wildly changes nothing when it is not passed in
    b_counts = counts.copy()
    b_counts[:, 2] = rng.poisson(rng.choice([1, 500], n))
    b = _slide(b_counts, genes, lib, "b")
    assert highly_variable_genes([a], 2) == ["wild", "mid"]
    assert "flat" in highly_variable_genes([a, b], 2)
    with pytest.raises(ValueError, match="only 4 genes pass"):
        highly_variable_genes([a], 5)


def test_bundled_subset_holds_every_fold_panel_and_library_sizes():
    slides = load_her2st_subset()
    for held in slides:
        rest = [s for n, s in slides.items() if n != held]
        assert len(highly_variable_genes(rest, 50)) == 50
        assert len(highly_expressed_genes(rest, 50)) == 50
    for s in slides.values():
        # the library counts every gene measured, far more than the bundled panel's total
        assert (s.library_size > 2 * s.counts.sum(1)).all()


def test_ridge_recovers_a_linear_map_and_chooses_its_penalty_on_validation():
    rng = np.random.default_rng(1)
    w = rng.normal(size=(4, 3))

    def make(name, n=300):
        x = rng.normal(size=(n, 4))
        expr = x @ w * 0.3 + 2.0
        # counts whose normalised log1p is the linear map (library 1e4, target 1e4)
        counts = np.expm1(expr)
        return _slide(counts, ["g0", "g1", "g2"], np.full(n, 1e4), name, features=x)

    train_s, val, test = make("t"), make("v"), make("x")
    probe = RidgeProbe("spot", alphas=(1e-3, 1e4)).fit([train_s], [val])
    assert probe.alpha == 1e-3  # the heavy penalty flattens the fit; validation sees it
    np.testing.assert_allclose(probe.predict_log1p(test), test.expression(1e4), atol=1e-3)
    mean = MeanExpression().fit([train_s])
    assert gene_pearsons(mean.predict_log1p(test), test.expression(1e4)).tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match="context must be"):
        RidgeProbe("global")


def test_neighbourhood_mean_averages_the_3x3_block():
    xy = np.array([[0, 0], [1, 0], [2, 0], [0, 1], [5, 5]], dtype=float)
    feats = np.array([[1.0], [2.0], [3.0], [4.0], [10.0]])
    s = Slide("n", xy, feats, sites=np.array([[0, 0], [0, 1], [0, 2], [1, 0], [5, 5]]))
    got = neighbourhood_mean(s)[:, 0]
    np.testing.assert_allclose(got, [(1 + 2 + 4) / 3, (1 + 2 + 3 + 4) / 4, 2.5, 7 / 3, 10.0])
    assert RidgeProbe("neighbours").design(s).shape == (5, 2)
    assert RidgeProbe("slide").design(s).shape == (5, 3)
    # the 5 x 5 block reaches two sites away: spot (0, 0) now also sees (0, 2)
    wide = neighbourhood_mean(s, radius=2)[:, 0]
    np.testing.assert_allclose(wide[[0, 4]], [(1 + 2 + 3 + 4) / 4, 10.0])
    # spot, 3 x 3, 5 x 5, slide mean and std
    assert RidgeProbe("multiscale").design(s).shape == (5, 5)


def test_early_stopping_keeps_the_best_validation_weights():
    slides = make_cohort(3, 60, seed=0)
    torch.manual_seed(0)
    model = SpotMLP(BaselineConfig(32, 50, dim=16))
    cfg = TrainConfig(steps=12, lr=3e-2, augment=False, eval_every=3)
    res = train(model, slides[:2], cfg, progress=False, validation=slides[2:])
    steps = [s for s, _ in res.validation]
    assert steps == [3, 6, 9, 12]
    best_step, best = max(res.validation, key=lambda t: t[1])
    assert res.best_step == best_step
    # the model holds the weights of the best check, not the last step's
    again = evaluate(model, slides[2:])["mean"]["gene_pearson"]
    assert again == pytest.approx(best, abs=1e-5)


def test_the_saved_checkpoint_is_the_early_stopped_model(tmp_path):
    from icml26.hist.train import load_checkpoint

    slides = make_cohort(3, 60, seed=0)
    torch.manual_seed(0)
    model = SpotMLP(BaselineConfig(32, 50, dim=16))
    cfg = TrainConfig(steps=12, lr=3e-2, augment=False, eval_every=3)
    train(model, slides[:2], cfg, out_dir=tmp_path, progress=False, validation=slides[2:])
    saved = SpotMLP(BaselineConfig(32, 50, dim=16))
    load_checkpoint(tmp_path, saved)
    for k, v in model.state_dict().items():
        torch.testing.assert_close(saved.state_dict()[k], v, rtol=0, atol=0)


def test_checkpoints_keep_gene_names_and_normalisation_and_align_by_name(tmp_path):
    slides = make_cohort(2, 60, seed=0)
    torch.manual_seed(0)
    model = HiST(HiSTConfig(32, 50, dim=16, heads=2))
    train(model, slides, TrainConfig(steps=2, lr=1e-3, target_sum=1e3), progress=False)
    assert model.genes == slides[0].genes and model.target_sum == 1e3
    model.save_pretrained(tmp_path / "m")
    back = SpotModel.from_pretrained(tmp_path / "m")
    assert back.genes == model.genes and back.target_sum == 1e3
    # a slide with its genes in another order scores the same as the original
    order = list(reversed(slides[1].genes))
    shuffled = slides[1].select_genes(order)
    a = evaluate(back, [slides[1]])["mean"]
    b = evaluate(back, [shuffled])["mean"]
    assert a == pytest.approx(b)
    with pytest.raises(ValueError, match="lacks 1 of the genes"):
        evaluate(back, [slides[1].select_genes(order[1:] + order[:0])])
