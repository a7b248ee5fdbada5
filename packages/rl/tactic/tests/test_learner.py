import pytest
import torch

from icml26.tactic import Learner, StepOut, arm_config, brute_force_greedy, q_tot
from icml26.tactic.graph import all_edges


def _learner(arm, **kw):
    torch.manual_seed(0)
    return Learner(arm_config(arm, **kw), n_agents=4, n_actions=4, input_dim=10, state_dim=5,
                   n_classes=3)  # fmt: skip


def test_acting_maximises_the_trained_q_tot_when_dropped_edges_do_not_matter():
    """Pruning keeps the top edges by payoff variance; when the others are constant payoffs, the
    greedy joint action on the pruned graph is the argmax of the full Q_tot the TD loss trains."""
    learner = _learner("CASEC")
    g = torch.Generator().manual_seed(1)
    B, E = 64, 6
    q = torch.randn(B, 4, 4, generator=g)
    f = torch.randn(B, E, 4, 4, generator=g)
    keep = torch.stack([torch.randperm(E, generator=g)[:2] for _ in range(B)])
    const = torch.ones(B, E, dtype=torch.bool).scatter_(1, keep, False)
    f = torch.where(const[..., None, None], torch.randn(B, E, 1, 1, generator=g), f)
    out = StepOut(q, f, f.flatten(-2).var(-1, unbiased=False))
    actions, mask = learner.greedy(out, torch.ones(B, 4, 4, dtype=torch.bool))
    assert torch.equal(mask, ~const)
    _, best = brute_force_greedy(q, f, learner.edges)  # full graph, every edge
    torch.testing.assert_close(learner.q_tot(out, actions, torch.zeros(B, 5)), best)


def test_pruned_and_full_graph_learners_keep_the_right_number_of_edges():
    g = torch.Generator().manual_seed(2)
    out = StepOut(torch.randn(8, 4, 4, generator=g), torch.randn(8, 6, 4, 4, generator=g),
                  torch.rand(8, 6, generator=g))  # fmt: skip
    avail = torch.ones(8, 4, 4, dtype=torch.bool)
    assert _learner("DCG").greedy(out, avail)[1].all()
    assert (_learner("CASEC").greedy(out, avail)[1].sum(1) == 2).all()
    assert (_learner("TACTIC, random pruning").greedy(out, avail, g)[1].sum(1) == 2).all()
    none = _learner("CASEC", rho=0.0)
    a, mask = none.greedy(out, avail)
    assert not mask.any() and torch.equal(a, out.q.argmax(-1))  # VDN's greedy


def test_payoffs_are_symmetric_in_the_pair():
    learner = _learner("TACTIC")
    h = torch.randn(3, 4, learner.cfg.hidden)
    e = torch.randn(3, 4, learner.cfg.class_dim)
    f, var = learner._payoffs(h, e)
    perm = torch.tensor([1, 0, 2, 3])  # swap agents 0 and 1: edge (0, 1) sees (h_1, h_0)
    f2, var2 = learner._payoffs(h[:, perm], e[:, perm])
    torch.testing.assert_close(f2[:, 0], f[:, 0].transpose(-1, -2))
    torch.testing.assert_close(var2[:, 0], var[:, 0])
    # and the closed-form variance is the enumerated one
    torch.testing.assert_close(var, f.flatten(-2).var(-1, unbiased=False), rtol=1e-4, atol=1e-5)


def test_qmix_is_monotonic_and_vdn_sums():
    qmix = _learner("QMIX")
    q = torch.randn(16, 4, 4, requires_grad=True)
    a = torch.randint(0, 4, (16, 4))
    total = qmix.q_tot(StepOut(q, None, None), a, torch.randn(16, 5))
    (grad,) = torch.autograd.grad(total.sum(), q)
    assert (grad >= 0).all() and (grad.sum(-1) > 0).all()
    vdn = _learner("VDN")
    torch.testing.assert_close(vdn.q_tot(StepOut(q, None, None), a, torch.zeros(16, 5)),
                               q.gather(2, a[..., None]).squeeze(-1).sum(1))  # fmt: skip


def test_graph_q_tot_is_the_full_graph_value():
    learner = _learner("DCG")
    q, f = torch.randn(4, 4, 4), torch.randn(4, 6, 4, 4)
    a = torch.randint(0, 4, (4, 4))
    torch.testing.assert_close(learner.q_tot(StepOut(q, f, None), a, torch.zeros(4, 5)),
                               q_tot(q, f, all_edges(4), a))  # fmt: skip


def test_bad_configs_raise():
    with pytest.raises(ValueError, match="kind must be"):
        _learner("VDN", kind="mappo")
    with pytest.raises(ValueError, match="class conditioning"):
        _learner("QMIX", classes=True)
    with pytest.raises(ValueError, match="needs class probabilities"):
        _learner("TACTIC").step(torch.zeros(2, 4, 10), torch.zeros(2, 4, 64))
