"""T-JEPA and Var-T-JEPA: shapes, the bound's terms, gradients, EMA, save and load."""

import numpy as np
import pandas as pd
import pytest
import torch

from icml26.testing import assert_close
from icml26.varjepa import (
    TJEPA,
    FeatureTokenizer,
    ModelConfig,
    VarTJEPA,
    gaussian_kl,
    load_pretrained,
    sample_masks,
)

CFG = ModelConfig(dim=8, depth=1, heads=2, predictor_dim=8, predictor_depth=1)


def _rows(n=40, seed=0):
    g = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "a": g.normal(size=n),
            "b": g.normal(size=n),
            "c": np.where(g.random(n) < 0.2, np.nan, g.normal(size=n)),
            "k": g.choice(["u", "v", "w"], n),
        }
    )
    tok = FeatureTokenizer().fit(frame)
    return tok, tok.transform(frame)


def test_var_tjepa_terms_are_finite_and_every_part_gets_gradient():
    tok, rows = _rows()
    torch.manual_seed(0)
    model = VarTJEPA(3, tok.cardinalities, CFG)
    masks = sample_masks(len(rows), 4, torch.Generator().manual_seed(0))
    terms = model.elbo(rows, masks)
    for name, value in terms._asdict().items():
        assert torch.isfinite(value), name
    assert terms.kl_target >= 0 and terms.kl_context >= 0
    assert (
        terms.elbo == terms.recon_target + terms.recon_context - terms.kl_target - terms.kl_context
    )
    loss, logged = model.loss(rows, masks)
    loss.backward()
    assert set(logged) >= {"loss", "kl_target", "kl_context", "recon_target", "recon_context"}
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
    # the two encoders and the prior all learn: no stop-gradient anywhere
    for part in ("context_encoder", "target_encoder", "prior"):
        grads = [p.grad.abs().sum() for n, p in model.named_parameters() if n.startswith(part)]
        assert sum(grads) > 0, part


def test_kl_target_is_the_kl_to_the_conditional_prior():
    tok, rows = _rows()
    torch.manual_seed(1)
    model = VarTJEPA(3, tok.cardinalities, CFG)
    masks = sample_masks(len(rows), 4, torch.Generator().manual_seed(0))
    g = torch.Generator().manual_seed(5)
    terms = model.elbo(rows, masks, generator=g)
    # recompute with the same draws
    g = torch.Generator().manual_seed(5)
    mu_c, lv_c = model.posterior_context(rows, masks.context)
    mu_t, lv_t = model.posterior_target(rows, masks.target)
    z_c = mu_c + (0.5 * lv_c).exp() * torch.randn(mu_c.shape, generator=g)
    mu_p, lv_p = model.conditional_prior(z_c, masks)
    want = gaussian_kl(mu_t, lv_t, mu_p, lv_p).sum((1, 2)).mean()
    assert_close(terms.kl_target, want, rtol=1e-5, atol=1e-6)


def test_missing_numerical_values_do_not_enter_the_likelihood():
    tok, rows = _rows()
    torch.manual_seed(2)
    model = VarTJEPA(3, tok.cardinalities, CFG)
    cols = torch.tensor([[2]]).expand(len(rows), 1)  # the column with missing values
    z = torch.randn(len(rows), 1, 8)
    ll = model.log_likelihood(rows, z, cols)
    missing = rows.num_missing[:, 2]
    assert missing.any() and (ll[missing] == 0).all() and (ll[~missing] != 0).all()
    changed = type(rows)(rows.num.clone(), rows.num_missing, rows.cat)
    changed.num[missing, 2] = 99.0  # whatever sits under the mask is never read
    assert torch.equal(model.log_likelihood(changed, z, cols), ll)


def test_tjepa_target_gets_no_gradient_and_follows_by_ema():
    tok, rows = _rows()
    torch.manual_seed(3)
    model = TJEPA(3, tok.cardinalities, ModelConfig(**{**CFG.__dict__, "n_reg": 2}))
    masks = sample_masks(len(rows), 4, torch.Generator().manual_seed(0))
    loss, _ = model.loss(rows, masks)
    loss.backward()
    assert all(p.grad is None for p in model.target_encoder.parameters())
    assert model.reg.grad is not None and model.reg.grad.abs().sum() > 0
    before = [p.clone() for p in model.target_encoder.parameters()]
    with torch.no_grad():
        for p in model.context_encoder.parameters():
            p.add_(1.0)
    reg_before = model.target_reg.clone()
    with torch.no_grad():
        model.reg.add_(1.0)
    model.update_target(0.75)
    assert_close(model.target_reg, 0.75 * reg_before + 0.25 * model.reg)  # [REG] follow by EMA too
    for b, t, c in zip(
        before, model.target_encoder.parameters(), model.context_encoder.parameters(), strict=True
    ):
        assert_close(t, 0.75 * b + 0.25 * c)
    assert model.embed(rows).shape == (40, 4 * 8)  # [REG] tokens are not part of the embedding
    assert not torch.equal(model.embed(rows), model.embed(rows, encoder="context"))
    with pytest.raises(ValueError, match="encoder"):
        model.embed(rows, encoder="both")


def test_categorical_likelihoods_are_normalised_over_each_columns_codes():
    torch.manual_seed(5)
    model = VarTJEPA(1, [2, 5], CFG)  # two categorical columns of different sizes
    z = torch.randn(1, 1, 8)
    rows_type = type(_rows()[1])
    for column, n_codes in ((1, 3), (2, 6)):  # codes 0 (missing) .. k of each column
        p = []
        for code in range(n_codes):
            cat = torch.zeros(1, 2, dtype=torch.long)
            cat[0, column - 1] = code
            rows = rows_type(torch.zeros(1, 1), torch.zeros(1, 1, dtype=torch.bool), cat)
            p.append(model.log_likelihood(rows, z, torch.tensor([[column]])).exp().item())
        assert sum(p) == pytest.approx(1.0, abs=1e-5) and min(p) > 0


def test_target_encoder_embedding_sees_every_column():
    tok, rows = _rows()
    model = VarTJEPA(3, tok.cardinalities, CFG)
    z, s = model.embed(rows, return_std=True, encoder="target")
    assert z.shape == s.shape == (40, 32) and not torch.equal(z, model.embed(rows))


def test_embeddings_and_std_shapes():
    tok, rows = _rows()
    model = VarTJEPA(3, tok.cardinalities, CFG)
    z, s = model.embed(rows, return_std=True)
    assert z.shape == s.shape == (40, 32) and (s > 0).all()
    mean = VarTJEPA(3, tok.cardinalities, ModelConfig(**{**CFG.__dict__, "pooling": "mean"}))
    z, s = mean.embed(rows, return_std=True)
    assert z.shape == s.shape == (40, 8)


@pytest.mark.parametrize("kind", [VarTJEPA, TJEPA])
def test_save_and_load_pretrained(tmp_path, kind):
    tok, rows = _rows()
    torch.manual_seed(4)
    model = kind(3, tok.cardinalities, CFG)
    model.save_pretrained(tmp_path / "m")
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == [
        "config.json",
        "model.safetensors",
    ]
    again = load_pretrained(tmp_path / "m")
    assert type(again) is kind
    assert torch.equal(again.embed(rows), model.embed(rows))
    with pytest.raises(ValueError, match=r"no config\.json"):
        load_pretrained(tmp_path)
    (tmp_path / "m" / "config.json").write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_pretrained(tmp_path / "m")


def test_bad_settings_are_clear_errors():
    with pytest.raises(ValueError, match="multiples of heads"):
        ModelConfig(dim=10, heads=4)
    with pytest.raises(ValueError, match="pooling"):
        ModelConfig(pooling="max")
    with pytest.raises(ValueError, match="at least 2 columns"):
        VarTJEPA(1, [], CFG)
    with pytest.raises(ValueError, match="beta"):
        VarTJEPA(2, [], CFG, beta=-0.5)


def test_rankme_counts_the_directions_used():
    from icml26.varjepa import rankme

    g = torch.Generator().manual_seed(0)
    iso = torch.randn(2000, 8, generator=g, dtype=torch.float64)
    assert 7.5 < rankme(iso) <= 8.0  # isotropic: all 8 directions
    line = torch.randn(500, 1, generator=g) * torch.ones(1, 8)
    assert rankme(line) == pytest.approx(1.0, abs=0.01)  # collapsed to one direction
    two = torch.cat([torch.randn(500, 2, generator=g), torch.zeros(500, 6)], 1)
    assert 1.8 < rankme(two) < 2.05
    with pytest.raises(ValueError, match="NaN"):
        rankme(torch.full((3, 2), float("nan")))
