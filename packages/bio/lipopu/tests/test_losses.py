"""Each PU risk against hand-computed values, its defining properties, and its input checks."""

import math

import pytest
import torch

from icml26.lipopu.losses import (
    bce_risk,
    lipopu_risk,
    multilabel_objective,
    nnpu_risk,
    pu_auc_risk,
    pu_objective,
    upu_risk,
)


def sig(z):
    return 1 / (1 + math.exp(-z))


def softplus(z):
    return math.log1p(math.exp(z))


P = torch.tensor([2.0, 0.5], dtype=torch.float64)
U = torch.tensor([1.0, -1.0, 0.0], dtype=torch.float64)


def test_nnpu_hand_computed():
    prior = 0.3
    pos = prior * (sig(-2.0) + sig(-0.5)) / 2
    neg = (sig(1.0) + sig(-1.0) + sig(0.0)) / 3 - prior * (sig(2.0) + sig(0.5)) / 2
    out = nnpu_risk(P, U, prior)
    assert neg > 0  # the correction is inactive here
    assert out.risk.item() == pytest.approx(pos + neg, rel=1e-12)
    assert out.objective.item() == pytest.approx(pos + neg, rel=1e-12)
    assert out.risk.item() == pytest.approx(upu_risk(P, U, prior).item(), rel=1e-12)


def test_nnpu_clamps_and_steps_on_the_negative_part_when_it_goes_below_minus_beta():
    # every unlabeled pocket scored far below the positives (hidden positives memorised as
    # negatives) makes E_U[l(-f)] small: the negative part goes below 0
    p = torch.tensor([3.0, 2.0], dtype=torch.float64, requires_grad=True)
    u = torch.tensor([-6.0, -5.0, -4.0], dtype=torch.float64, requires_grad=True)
    prior = 0.6

    def loss(z):  # the sigmoid loss
        return torch.sigmoid(-z)

    neg = loss(-u).mean() - prior * loss(-p).mean()
    assert neg.item() < 0
    out = nnpu_risk(p, u, prior, beta=0.0, gamma=1.0)
    assert out.risk.item() == pytest.approx((prior * loss(p).mean()).item(), rel=1e-12)  # clamped
    assert out.objective.item() == pytest.approx(-neg.item(), rel=1e-12)
    out.objective.backward()
    want_u = torch.autograd.grad(-neg, u, retain_graph=True)[0]
    torch.testing.assert_close(u.grad, want_u)
    # with beta above |neg| the correction stays off and the plain uPU objective is used
    loose = nnpu_risk(p.detach(), u.detach(), prior, beta=1.0)
    assert loose.objective.item() == pytest.approx(
        upu_risk(p.detach(), u.detach(), prior).item(), rel=1e-12
    )


def test_pu_auc_hand_computed_and_shift_invariant():
    want = sum(sig(-(a - b)) for a in P.tolist() for b in U.tolist()) / 6
    assert pu_auc_risk(P, U).item() == pytest.approx(want, rel=1e-12)
    for shift in (-7.5, 0.3, 12.0):  # a monotone shift of every score
        assert pu_auc_risk(P + shift, U + shift).item() == pytest.approx(want, rel=1e-12)


def test_lipopu_hand_computed():
    prior = 0.25
    pu = sum(softplus(-(a - b)) for a in P.tolist() for b in U.tolist()) / 6
    pp = (softplus(-(2.0 - 0.5)) + softplus(-(0.5 - 2.0))) / 2
    want = (pu - prior * pp) / (1 - prior)
    out = lipopu_risk(P, U, prior)
    assert out.risk.item() == pytest.approx(want, rel=1e-12)
    assert out.objective.item() == pytest.approx(want, rel=1e-12)


def test_lipopu_with_the_sigmoid_loss_is_an_affine_map_of_pu_auc():
    g = torch.Generator().manual_seed(0)
    p, u = torch.randn(7, generator=g), torch.randn(11, generator=g)
    prior = 0.2
    got = lipopu_risk(p, u, prior, loss="sigmoid").risk
    torch.testing.assert_close(got, (pu_auc_risk(p, u) - prior * 0.5) / (1 - prior))


def test_lipopu_non_negative_correction():
    # positives spread far apart, U far above them: the numerator estimate goes negative
    p = torch.tensor([-30.0, 30.0], dtype=torch.float64, requires_grad=True)
    u = torch.tensor([0.0, 0.1], dtype=torch.float64)
    out = lipopu_risk(p, u, 0.9)
    assert out.risk.item() == 0.0
    assert out.objective.item() > 0  # -gamma * (negative numerator) / (1 - pi)
    out.objective.backward()
    assert p.grad[1] > 0  # the step pulls the spread positives back together (defitting)


def test_bce_treats_unlabeled_as_negative():
    s = torch.tensor([0.3, -1.2, 2.0])
    o = torch.tensor([1.0, 0.0, 0.0])
    want = -(math.log(sig(0.3)) + math.log(1 - sig(-1.2)) + math.log(1 - sig(2.0))) / 3
    assert bce_risk(s, o).item() == pytest.approx(want, rel=1e-6)
    # pu_objective's BCE: P sample labeled 1, U sample its observed labels
    got = pu_objective("bce", s[:1], s[1:], o[1:], 0.5)
    assert got.item() == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: nnpu_risk(torch.zeros(0), U, 0.3), "scores_p is empty"),
        (lambda: nnpu_risk(P, torch.zeros(0), 0.3), "scores_u is empty"),
        (lambda: nnpu_risk(P, U, 0.0), "strictly inside (0, 1)"),
        (lambda: lipopu_risk(P, U, 1.2), "strictly inside (0, 1)"),
        (lambda: pu_auc_risk(torch.tensor([float("nan")]), U), "NaN"),
        (lambda: lipopu_risk(P[:1], U, 0.3), "at least 2"),
        (lambda: nnpu_risk(P[None], U, 0.3), "1-D"),
        (lambda: nnpu_risk(P, U, 0.3, loss="hinge"), "loss must be one of"),
        (lambda: pu_objective("mse", P, U, U, 0.3), "objective must be one of"),
    ],
)
def test_bad_inputs_are_clear_errors(call, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()


@pytest.mark.parametrize("name", ["bce", "nnpu", "pu_auc", "lipopu"])
def test_categories_are_independent_risks(name):
    """Category B's risk reads only B's labels: a pocket labeled for A enters B's risk exactly
    as any other pocket of the sample does (for a PU risk: unlabeled, never a negative)."""
    g = torch.Generator().manual_seed(1)
    scores_p, scores_u = torch.randn(6, 2, generator=g), torch.randn(9, 2, generator=g)
    obs_p = torch.tensor([[1, 0], [1, 0], [1, 0], [0, 1], [0, 1], [0, 1]])
    obs_u = torch.zeros(9, 2, dtype=torch.long)
    with_a = obs_u.clone()
    with_a[0, 0] = 1  # pocket 0 of U is a labeled A positive
    priors = [0.2, 0.3]

    def risk_b(obs):
        return multilabel_objective(name, scores_p[:, 1:], obs_p[:, 1:], scores_u[:, 1:],
                                    obs[:, 1:], priors[1:])  # fmt: skip

    torch.testing.assert_close(risk_b(with_a), risk_b(obs_u))
    total = multilabel_objective(name, scores_p, obs_p, scores_u, with_a, priors)
    per = [
        pu_objective(name, scores_p[obs_p[:, k] == 1, k], scores_u[:, k], with_a[:, k], priors[k])
        for k in range(2)
    ]
    torch.testing.assert_close(total, per[0] + per[1])
    # and B's labels do move B's risk
    with_b = obs_u.clone()
    with_b[0, 1] = 1
    if name == "bce":
        assert not torch.allclose(risk_b(with_b), risk_b(obs_u))


def test_multilabel_checks():
    s = torch.zeros(4, 2)
    with pytest.raises(ValueError, match="one value per category"):
        multilabel_objective("nnpu", s, torch.ones(4, 2), s, torch.zeros(4, 2), [0.2])
    with pytest.raises(ValueError, match="labeled positives"):
        multilabel_objective("nnpu", s, torch.zeros(4, 2), s, torch.zeros(4, 2), [0.2, 0.2])
