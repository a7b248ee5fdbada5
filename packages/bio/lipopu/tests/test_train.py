"""The training loop: it learns, resumes exactly, and runs under torch.distributed."""

import json

import numpy as np
import pytest
import torch

from icml26.lipopu import (
    CompositionBags,
    PocketAttentionMIL,
    PocketModelConfig,
    Standardiser,
    TrainConfig,
    fit,
    grouped_split,
    predict_scores,
    scar_labels,
    synthetic_cohort,
)
from icml26.lipopu.metrics import ranking_metrics


def _setup(n_proteins=150, c=0.5, multilabel=False):
    t = synthetic_cohort(n_proteins=n_proteins, seed=0)
    s = grouped_split(t.protein, 0)
    X = Standardiser.fit(t.descriptors[s.train])(t.descriptors)
    truth = t.category if multilabel else t.lipid
    return t, s, X, CompositionBags(t.composition), scar_labels(truth, c, 0), truth


@pytest.mark.parametrize("objective", ["bce", "nnpu", "pu_auc", "lipopu"])
def test_every_objective_learns_to_rank(objective):
    _t, s, X, bags, obs, truth = _setup(n_proteins=300)
    torch.manual_seed(0)
    model = PocketAttentionMIL(PocketModelConfig(dim=16, hidden=32))
    cfg = TrainConfig(objective=objective, epochs=6, batch_u=128, seed=0)
    result = fit(model, X, bags, obs, s.train, s.val, cfg, prior=float(truth[s.train].mean()))
    assert len(result.history) >= 1 and 1 <= result.best_epoch <= 6
    scores = predict_scores(model, X, bags, s.test)[:, 0]
    # a logistic probe on the true labels reaches about 0.9 on this cohort
    assert ranking_metrics(truth[s.test], scores)["auroc"] > 0.7


def test_golden_run():
    """One seeded LipoPU run on the synthetic cohort: its validation PU-AUROC per epoch."""
    _t, s, X, bags, obs, truth = _setup()
    torch.manual_seed(0)
    model = PocketAttentionMIL(PocketModelConfig(dim=16, hidden=32))
    cfg = TrainConfig(objective="lipopu", epochs=2, batch_u=128, seed=0)
    result = fit(model, X, bags, obs, s.train, s.val, cfg, prior=float(truth[s.train].mean()))
    got = [round(h["val_pu_auroc"], 3) for h in result.history]
    assert got == pytest.approx([0.681, 0.739], abs=0.005)  # the 80 / 10 / 10 split


def test_multilabel_training_gives_one_output_per_category():
    _t, s, X, bags, obs, truth = _setup(multilabel=True)
    model = PocketAttentionMIL(PocketModelConfig(n_outputs=2, dim=16, hidden=32))
    prior = truth[s.train].mean(0).tolist()
    fit(model, X, bags, obs, s.train, s.val, TrainConfig(epochs=1, batch_u=128), prior=prior)
    assert predict_scores(model, X, bags, s.test).shape == (len(s.test), 2)
    with pytest.raises(ValueError, match="prior needs 2"):
        fit(model, X, bags, obs, s.train, s.val, TrainConfig(epochs=1), prior=[0.1])


def test_fit_input_checks():
    _t, s, X, bags, obs, _truth = _setup()
    model = PocketAttentionMIL(PocketModelConfig(dim=8))
    with pytest.raises(ValueError, match="needs the class prior"):
        fit(model, X, bags, obs, s.train, s.val, TrainConfig(objective="nnpu"))
    with pytest.raises(ValueError, match=">= 2 labeled positives"):
        fit(model, X, bags, np.zeros_like(obs), s.train, s.val, TrainConfig(objective="bce"))
    with pytest.raises(ValueError, match="objective must be one of"):
        TrainConfig(objective="svm")


def test_checkpoint_and_exact_resume(tmp_path):
    _t, s, X, bags, obs, truth = _setup()
    prior = float(truth[s.train].mean())

    def run(epochs, resume, folder):
        torch.manual_seed(0)
        m = PocketAttentionMIL(PocketModelConfig(dim=16, hidden=32))
        cfg = TrainConfig(epochs=epochs, batch_u=128, patience=10, seed=0)
        r = fit(m, X, bags, obs, s.train, s.val, cfg, prior=prior, checkpoint_dir=folder,
                resume=resume)  # fmt: skip
        return m, r

    full, r_full = run(3, False, tmp_path / "a")
    run(2, False, tmp_path / "b")
    resumed, r_res = run(3, True, tmp_path / "b")
    assert json.loads((tmp_path / "b" / "training.json").read_text())["epoch"] == 3
    assert [h["val_pu_auroc"] for h in r_res.history] == [h["val_pu_auroc"] for h in r_full.history]
    for (k, v), w in zip(full.state_dict().items(), resumed.state_dict().values(), strict=True):
        torch.testing.assert_close(v, w, msg=k)


def _train_on_rank(folder, epochs, interrupt_after=None):
    """Train for ``epochs``; with ``interrupt_after``, stop there and resume in a fresh model."""
    import torch.distributed as dist

    _, s, X, bags, obs, truth = _setup(n_proteins=60)
    prior = float(truth[s.train].mean())

    def run(n, resume):
        torch.manual_seed(0)
        model = PocketAttentionMIL(PocketModelConfig(dim=8, hidden=16))
        cfg = TrainConfig(epochs=n, batch_u=64, batch_p=8, seed=0, patience=10)
        r = fit(model, X, bags, obs, s.train, s.val, cfg, prior=prior, checkpoint_dir=folder,
                resume=resume)  # fmt: skip
        return model, r

    if interrupt_after:
        run(interrupt_after, False)
    model, result = run(epochs, interrupt_after is not None)
    return dist.get_rank(), {k: v.clone() for k, v in model.state_dict().items()}, result.history


@pytest.mark.distributed
def test_two_processes_with_gloo_and_an_exact_resume(tmp_path):
    """DDP keeps the ranks' weights equal while each draws its own batches, and a resume under
    torchrun gives each rank its own sampler and generator back."""
    from icml26.testing import run_distributed

    (r0, w0, h0), (r1, w1, h1) = run_distributed(
        _train_on_rank, str(tmp_path / "a"), 2, world_size=2
    )
    assert {r0, r1} == {0, 1}
    for k, v in w0.items():
        torch.testing.assert_close(w1[k], v, rtol=0, atol=0, msg=k)
    assert [h["val_pu_auroc"] for h in h0] == [h["val_pu_auroc"] for h in h1]
    assert h0[0]["loss"] != h1[0]["loss"]
    (_, resumed, _), _ = run_distributed(_train_on_rank, str(tmp_path / "b"), 2, 1, world_size=2)
    assert {p.name for p in (tmp_path / "b").glob("rng.rank*.json")} == {
        "rng.rank0.json",
        "rng.rank1.json",
    }
    for k, v in w0.items():
        torch.testing.assert_close(resumed[k], v, msg=k)
