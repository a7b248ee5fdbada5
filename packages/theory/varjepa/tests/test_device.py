"""Models, training and embeddings run where their inputs live, with the CPU's numbers there."""

import numpy as np
import torch

from icml26.varjepa import (
    TJEPA,
    FeatureTokenizer,
    ModelConfig,
    TrainConfig,
    VarTJEPA,
    embed_rows,
    pretrain,
    sample_masks,
)
from icml26.varjepa.evaluate import uncertainty_calibration

CFG = ModelConfig(dim=8, depth=1, heads=2, predictor_dim=8, predictor_depth=1)


def _rows():
    X = np.random.default_rng(0).normal(size=(64, 5))
    return FeatureTokenizer().fit_transform(X)


def test_var_tjepa_bound_matches_the_cpu(device):
    rows = _rows()
    torch.manual_seed(0)
    cpu = VarTJEPA(5, [], CFG)
    dev = VarTJEPA(5, [], CFG)
    dev.load_state_dict(cpu.state_dict())
    dev.to(device)
    masks = sample_masks(64, 5, torch.Generator().manual_seed(0))
    with torch.no_grad():
        # zero-variance draws: the same bound on both devices, whatever their generators
        mu_c, _ = cpu.posterior_context(rows, masks.context)
        want = cpu.conditional_prior(mu_c, masks)[0]
        mu_c_d, _ = dev.posterior_context(rows.to(device), masks.context.to(device))
        got = dev.conditional_prior(mu_c_d, masks.to(device))[0]
    assert got.device.type == torch.device(device).type
    torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-5)
    terms = dev.elbo(rows.to(device), masks.to(device))
    assert torch.isfinite(terms.elbo) and terms.elbo.device.type == torch.device(device).type


def test_training_and_embedding_on_device(device):
    rows = _rows()
    var = VarTJEPA(5, [], CFG)
    for model in (var, TJEPA(5, [], ModelConfig(**{**CFG.__dict__, "n_reg": 1}))):
        model.to(device)
        hist = pretrain(
            model, rows, TrainConfig(steps=3, batch_size=16, log_every=3, progress=False)
        )
        assert np.isfinite(hist[-1]["loss"])
        assert next(model.parameters()).device.type == torch.device(device).type
        Z = embed_rows(model, rows)
        assert Z.shape == (64, 40) and np.isfinite(Z).all()
    calib = uncertainty_calibration(var, rows.to(device))
    assert -1 <= calib["spearman"] <= 1 and calib["pairs"] > 64
