import itertools

import pytest
import torch

from icml26.tactic.graph import (
    all_edges,
    brute_force_greedy,
    max_sum,
    payoff_matrix,
    payoff_variance,
    q_tot,
    select_edges,
)


def _random_graph(B, n, A, seed, rank=3):
    g = torch.Generator().manual_seed(seed)
    edges = all_edges(n)
    q = torch.randn(B, n, A, generator=g, dtype=torch.float64)
    p = torch.randn(B, len(edges), A, rank, generator=g, dtype=torch.float64)
    r = torch.randn(B, len(edges), A, rank, generator=g, dtype=torch.float64)
    return q, payoff_matrix(p, r), edges, p, r


def _tree_mask(B, edges, n, seed):
    """A random spanning tree of the complete graph per row (random-attachment trees)."""
    g = torch.Generator().manual_seed(seed)
    index = {tuple(e.tolist()): k for k, e in enumerate(edges)}
    mask = torch.zeros(B, len(edges), dtype=torch.bool)
    for b in range(B):
        order = torch.randperm(n, generator=g).tolist()
        for k in range(1, n):
            parent = order[int(torch.randint(0, k, (1,), generator=g))]
            i, j = sorted((order[k], parent))
            mask[b, index[(i, j)]] = True
    return mask


@pytest.mark.parametrize("n,A", [(3, 4), (4, 3), (4, 5)])
def test_max_sum_is_exact_on_trees(n, A):
    q, f, edges, _, _ = _random_graph(64, n, A, seed=n * 10 + A)
    mask = _tree_mask(64, edges, n, seed=1)
    got = max_sum(q, f, edges, mask, iters=n + 2)
    _, best_val = brute_force_greedy(q, f, edges, mask)
    torch.testing.assert_close(q_tot(q, f, edges, got, mask), best_val)


def test_max_sum_on_loopy_graphs_mostly_agrees_and_never_beats_the_optimum():
    q, f, edges, _, _ = _random_graph(200, 4, 4, seed=3)
    got = max_sum(q, f, edges, iters=8)
    _, best_val = brute_force_greedy(q, f, edges)
    val = q_tot(q, f, edges, got)
    assert bool((val <= best_val + 1e-9).all())
    agreement = float(torch.isclose(val, best_val).double().mean())
    print(f"max-sum agreement with brute force on complete 4-agent graphs: {agreement:.2f}")
    assert agreement >= 0.8


def test_unavailable_actions_are_never_chosen():
    q, f, edges, _, _ = _random_graph(50, 4, 4, seed=4)
    avail = torch.rand(50, 4, 4, generator=torch.Generator().manual_seed(0)) > 0.4
    avail[..., 0] = True
    a = max_sum(q, f, edges, avail=avail)
    assert bool(avail.gather(2, a.unsqueeze(-1)).all())
    best, _ = brute_force_greedy(q, f, edges, avail=avail)
    assert bool(avail.gather(2, best.unsqueeze(-1)).all())


def test_pruning_every_edge_reduces_q_tot_to_vdn():
    q, f, edges, p, r = _random_graph(16, 4, 3, seed=5)
    none = select_edges(payoff_variance(p, r), rho=0.0)
    assert not none.any()
    a = torch.randint(0, 3, (16, 4))
    vdn = q.gather(2, a.unsqueeze(-1)).squeeze(-1).mean(1)
    torch.testing.assert_close(q_tot(q, f, edges, a, none), vdn)
    # and max-sum on the empty graph is the per-agent argmax
    torch.testing.assert_close(max_sum(q, f, edges, none), q.argmax(-1))


@pytest.mark.parametrize("A,R", [(2, 1), (5, 3), (7, 8)])
def test_closed_form_payoff_variance_equals_enumeration(A, R):
    g = torch.Generator().manual_seed(A * R)
    p = torch.randn(3, 6, A, R, generator=g, dtype=torch.float64)
    r = torch.randn(3, 6, A, R, generator=g, dtype=torch.float64)
    enumerated = payoff_matrix(p, r).flatten(-2).var(-1, unbiased=False)
    torch.testing.assert_close(payoff_variance(p, r), enumerated)


def test_select_edges_keeps_the_top_share():
    scores = torch.tensor([[0.1, 0.9, 0.5, 0.2, 0.8, 0.0]])
    mask = select_edges(scores, rho=1 / 3)
    assert mask.tolist() == [[False, True, False, False, True, False]]
    assert select_edges(scores, 1.0).all()
    rnd = select_edges(scores.expand(100, 6), 1 / 3, torch.Generator().manual_seed(0), random=True)
    assert (rnd.sum(1) == 2).all() and rnd.float().mean(0).min() > 0.1  # every edge drawn sometimes


def test_edges_enumerate_pairs():
    assert all_edges(4).tolist() == list(map(list, itertools.combinations(range(4), 2)))


def test_bad_inputs_raise_clear_errors():
    q, f, edges, p, r = _random_graph(2, 4, 3, seed=6)
    with pytest.raises(ValueError, match="payoffs must have shape"):
        max_sum(q, f[:, :3], edges)
    with pytest.raises(ValueError, match="at least one available action"):
        max_sum(q, f, edges, avail=torch.zeros(2, 4, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="rho must be in"):
        select_edges(torch.zeros(1, 6), 1.5)
    with pytest.raises(ValueError, match="actions must have shape"):
        q_tot(q, f, edges, torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="share a shape"):
        payoff_variance(p, r[..., :1])
    with pytest.raises(ValueError, match=">= 2 agents"):
        all_edges(1)
