"""Pretraining: it learns, checkpoints resume where they stopped, and torchrun ranks agree."""

import copy
import json

import numpy as np
import pytest
import torch

from icml26.varjepa import (
    TJEPA,
    FeatureTokenizer,
    ModelConfig,
    TrainConfig,
    VarTJEPA,
    pretrain,
    sample_masks,
)
from icml26.varjepa.train import load_checkpoint

CFG = ModelConfig(dim=8, depth=1, heads=2, predictor_dim=8, predictor_depth=1)


def _rows(n=64):
    # two latent factors behind six columns: something to predict across columns
    g = np.random.default_rng(0)
    f = g.normal(size=(n, 2))
    X = np.concatenate([f, f @ g.normal(size=(2, 4))], 1) + 0.1 * g.normal(size=(n, 6))
    return FeatureTokenizer().fit_transform(X)


def _weights(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_var_tjepa_pretraining_raises_the_elbo():
    rows = _rows(256)
    torch.manual_seed(0)
    model = VarTJEPA(6, [], CFG)
    before = copy.deepcopy(model)  # the same initialisation, untrained
    hist = pretrain(
        model, rows, TrainConfig(steps=150, batch_size=64, lr=3e-3, log_every=50, progress=False)
    )
    assert [h["step"] for h in hist] == [50, 100, 150]
    assert all(np.isfinite(h["loss"]) for h in hist)
    masks = sample_masks(256, 6, torch.Generator().manual_seed(9))

    @torch.no_grad()
    def bound(m):
        draws = [torch.Generator().manual_seed(s) for s in range(8)]
        return np.mean([m.elbo(rows, masks, g).elbo.item() for g in draws])

    assert bound(model) > bound(before) + 1.0


class _Killed(Exception):
    pass


def _kill_at(step):
    seen = []

    def monitor(model):
        seen.append(1)
        if len(seen) == step:
            raise _Killed
        return {}

    return monitor


def test_resume_continues_exactly_where_it_stopped(tmp_path):
    rows = _rows()
    cfg = TrainConfig(steps=6, batch_size=16, log_every=1, checkpoint_every=3, progress=False)
    torch.manual_seed(0)
    straight = TJEPA(6, [], CFG)
    pretrain(straight, rows, cfg)
    torch.manual_seed(0)
    with pytest.raises(_Killed):  # the run dies at step 4, after the checkpoint at step 3
        pretrain(TJEPA(6, [], CFG), rows, cfg, checkpoint_dir=tmp_path, monitor=_kill_at(4))
    assert json.loads((tmp_path / "training.json").read_text())["step"] == 3
    torch.manual_seed(123)  # a fresh process: its own initialisation, overwritten by the checkpoint
    resumed = TJEPA(6, [], CFG)
    hist = pretrain(resumed, rows, cfg, checkpoint_dir=tmp_path, resume=True)
    assert [h["step"] for h in hist] == [4, 5, 6]
    for k, v in _weights(straight).items():
        torch.testing.assert_close(resumed.state_dict()[k], v, rtol=0, atol=0)
    # a finished run resumes to nothing
    assert pretrain(resumed, rows, cfg, checkpoint_dir=tmp_path, resume=True) == []


def test_checkpoint_of_the_other_model_is_refused(tmp_path):
    rows = _rows()
    pretrain(TJEPA(6, [], CFG), rows, TrainConfig(steps=1, progress=False), checkpoint_dir=tmp_path)
    model = VarTJEPA(6, [], CFG)
    opt = torch.optim.AdamW(model.parameters())
    with pytest.raises(ValueError, match="tjepa checkpoint, not a vartjepa"):
        load_checkpoint(tmp_path, model, opt, torch.Generator())


def test_bad_training_settings_are_clear_errors():
    with pytest.raises(ValueError, match="steps"):
        TrainConfig(steps=0)
    with pytest.raises(ValueError, match="lr"):
        TrainConfig(lr=0.0)
    with pytest.raises(ValueError, match="ema"):
        TrainConfig(ema=(1.0, 0.9))
    with pytest.raises(ValueError, match="at least 2 rows"):
        pretrain(TJEPA(6, [], CFG), _rows()[:1], TrainConfig(steps=1, progress=False))


def _train_on_rank(kind: str):
    torch.manual_seed(0)
    model = {"tjepa": TJEPA, "vartjepa": VarTJEPA}[kind](6, [], CFG)
    init = _weights(model)
    hist = pretrain(model, _rows(), TrainConfig(steps=4, batch_size=8, log_every=4, progress=False))
    return init, _weights(model), hist[-1]["loss"]


def test_two_gloo_ranks_stay_in_sync():
    # Var-T-JEPA on numerical columns only: every parameter must reach the loss, or DDP stalls
    from icml26.testing import run_distributed

    (init0, w0, loss0), (_, w1, loss1) = run_distributed(_train_on_rank, "vartjepa", world_size=2)
    for k, v in w0.items():
        torch.testing.assert_close(w1[k], v, rtol=0, atol=0)  # DDP averaged the gradients
    assert any(not torch.equal(init0[k], v) for k, v in w0.items())
    assert np.isfinite(loss0) and np.isfinite(loss1) and loss0 != loss1  # each rank its own batch
