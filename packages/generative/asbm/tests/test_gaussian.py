"""Stage 1 against its closed form on Gaussian data (icml26.asbm.gaussian)."""

import itertools

import pytest
import torch

from icml26.asbm import ASBM, VPSDE, BrownianSDE, GaussianEnergy
from icml26.asbm.gaussian import gaussian_stage1
from icml26.asbm.metrics import prior_match


def test_closed_form_reaches_the_prior_and_round_one_is_the_h0_optimum():
    rounds = gaussian_stage1(torch.tensor(1.0), torch.tensor(0.25), BrownianSDE(1.0), 1.0, 6)
    # round 1, h = 0: x1 = x0 / 2 + N(0, 1/2), so mean 0.5 and variance 0.25 / 4 + 0.5
    assert float(rounds[0].mean) == pytest.approx(0.5)
    assert float(rounds[0].var) == pytest.approx(0.5625)
    stds = [float(r.var.sqrt()) for r in rounds]
    assert all(b >= a for a, b in itertools.pairwise(stds))
    assert abs(float(rounds[-1].mean)) < 1e-3 and stds[-1] == pytest.approx(1.0, abs=1e-3)
    vp = gaussian_stage1(torch.tensor(1.0), torch.tensor(0.25), VPSDE(0.1, 2.0), 1.0, 8)
    assert float(vp[-1].var) == pytest.approx(1.0, abs=1e-2)
    with pytest.raises(ValueError, match="positive"):
        gaussian_stage1(torch.tensor(0.0), torch.tensor(0.0), BrownianSDE(1.0), 1.0, 2)


@pytest.mark.parametrize("sde", [BrownianSDE(1.0), VPSDE(0.1, 4.0)], ids=["brownian", "vp"])
def test_trained_stage1_follows_the_exact_iteration_round_by_round(sde):
    g = torch.Generator().manual_seed(0)
    data = 1.0 + 0.5 * torch.randn(4096, 1, generator=g)
    torch.manual_seed(0)
    model = ASBM((1,), sde, GaussianEnergy(1.0), sim_steps=40, hidden=64)
    model.fit_forward(data, rounds=3, adjoint_steps=500, corrector_steps=300, batch_size=512,
                      buffer_size=4096, corrector_buffer=8192, resimulate_every=100, lr=3e-3,
                      progress=False, diagnostics=4096, check_size=16384)  # fmt: skip
    m0, v0 = data.mean(0).double(), data.var(0).double()
    exact = gaussian_stage1(m0, v0, sde, 1.0, 3)
    for got, want in zip(model.log.rounds, exact, strict=True):
        print(got["round"], got["terminal_mean"], float(want.mean), got["terminal_std"],
              float(want.var.sqrt()))  # fmt: skip
        assert got["terminal_mean"] == pytest.approx(float(want.mean), abs=0.06)
        assert got["terminal_std"] == pytest.approx(float(want.var.sqrt()), abs=0.06)
        # the stopping rule's radial mean error is |E x1^2 - 1| = |m1^2 + v1 - 1| in 1-D
        radial = abs(float(want.mean**2 + want.var) - 1)
        assert got["prior_match"]["radial_mean_error"] == pytest.approx(radial, abs=0.1)
    last = model.log.rounds[-1]
    assert last["corrector_loss"] <= 1.1 * last["corrector_linear_floor"]


def test_prior_match_is_the_official_stopping_rule():
    g = torch.Generator().manual_seed(0)
    n = 51200
    good = prior_match(torch.randn(n, 2, generator=g), 1.0)
    assert good["passed"] and good["radial_mean_error"] < 0.03 and good["radial_var_error"] < 0.05
    # the eigenvalue half alone decides: radial statistics right, one direction 20% too wide
    # and another narrower to keep the mean of ||x||^2
    stretched = torch.randn(n, 64, generator=g)
    stretched[:, 0] *= 1.2
    stretched[:, 1] *= (2 - 1.2**2) ** 0.5
    wide = prior_match(stretched, 1.0)
    assert wide["radial_mean_error"] < 0.08 and wide["radial_var_error"] < 0.08
    assert not wide["passed"] and wide["top_eigenvalue"] > wide["prior_top_eigenvalue"]
    narrow = prior_match(0.85 * torch.randn(n, 2, generator=g), 1.0)
    assert not narrow["passed"] and narrow["radial_mean_error"] > 0.2
    scaled = prior_match(2.0 * torch.randn(n, 3, generator=g), 2.0)
    assert scaled["passed"] and scaled["radial_mean_error"] < 0.03
    with pytest.raises(ValueError, match="scale"):
        prior_match(torch.randn(8, 2), 0.0)


def test_exact_prior_draws_pass_the_rule_about_19_times_in_20():
    # the false alarm rate of the eigenvalue half: a law equal to the prior fails only when its
    # top eigenvalue beats all 19 reference draws
    g = torch.Generator().manual_seed(1)
    passed = [prior_match(torch.randn(4096, 8, generator=g), 1.0)["passed"] for _ in range(40)]
    assert sum(passed) >= 34


def test_stage1_stops_at_the_first_round_that_matches_the_prior(monkeypatch):
    model = ASBM((2,), VPSDE(), GaussianEnergy(), sim_steps=3, hidden=8)
    verdicts = iter([False, True, True, True])
    monkeypatch.setattr(model, "prior_match", lambda *a: {"passed": next(verdicts)})
    data = torch.randn(64, 2)
    kw = dict(batch_size=8, buffer_size=16, corrector_buffer=16, progress=False, diagnostics=0)
    model.fit_forward(data, rounds=4, adjoint_steps=2, corrector_steps=2,
                      stop_at_prior_match=True, check_size=64, **kw)  # fmt: skip
    assert model.log.matched_round == 2
    assert [row["round"] for row in model.log.rounds] == [1, 2]
    with pytest.raises(ValueError, match="check_size"):
        model.fit_forward(data, 1, 1, 1, stop_at_prior_match=True, check_size=0, **kw)
