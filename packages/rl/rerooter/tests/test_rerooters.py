import math

import pytest

from icml26.rerooter import (
    ClusterRerooter,
    HeuristicRerooter,
    MixedRerooter,
    SearchTree,
    UniformPolicy,
    bundled_levels,
    sqrt_lts,
)


def _tree(n: int, h: list[float] | None = None) -> SearchTree:
    # A chain 0 - 1 - 2 - ... with the given heuristic values; nothing expanded yet.
    return SearchTree(
        states=list(range(n)),
        parent=[-1, *list(range(n - 1))],
        action=[-1] + [0] * (n - 1),
        depth=list(range(n)),
        log_prob=[0.0] * n,
        h=h or [0.0] * n,
        w=[math.nan] * n,
    )


def test_heuristic_weight_formula():
    tree = _tree(4, h=[5.0, 0.0, 2.5, 5.0])
    r = HeuristicRerooter(alpha=10.0)
    r.reset(tree)
    assert r.weight(1) == 1.0
    assert r.weight(2) == pytest.approx(math.exp(-5.0))
    assert r.weight(3) == pytest.approx(math.exp(-10.0))
    tree0 = _tree(2, h=[0.0, 0.5])  # h(root) < 1: the scale is max(h(root), 1) = 1
    r.reset(tree0)
    assert r.weight(1) == pytest.approx(math.exp(-5.0))
    with pytest.raises(ValueError, match="alpha"):
        HeuristicRerooter(alpha=-1)


def test_cluster_weights_are_harmonic_per_community_and_inherited_before_clustering():
    tree = _tree(4)
    r = ClusterRerooter()
    r.reset(tree)
    for child in range(1, 4):
        r.generated(child - 1, child)
    r.recluster()
    # Louvain (seeded) keeps a 4-node chain in one community: pinned, so the weights below
    # are checked against one known partition rather than whichever came out.
    assert list(r.membership) == [0, 0, 0, 0]
    w1 = r.weight(1)
    tree.w[1] = w1
    w2 = r.weight(2)
    assert w1 == 1.0 and w2 == 0.5  # the 1st and 2nd expansions of one community: 1/1, 1/2
    # Nodes generated after the last clustering: w_parent / (w_parent + 1).
    tree.w[2] = w2
    for node in (4, 5):  # grow the chain
        tree.states.append(node)
        tree.parent.append(node - 1)
        tree.w.append(math.nan)
    r.generated(3, 4)
    r.generated(4, 5)
    r.w_cluster[3] = 0.25
    assert r.weight(4) == pytest.approx(0.25 / 1.25)
    assert r.weight(5) == pytest.approx(0.2 / 1.2)


def test_recluster_on_a_geometric_schedule():
    env = bundled_levels("test")[5]
    r = ClusterRerooter()
    sqrt_lts(env, UniformPolicy(heuristic=True), r, 3000, batch_size=4)
    batches = r.batches
    # Reclustering after batch 1, 2, 4, 8, ...: floor(log2(batches)) + 1 clusterings.
    assert r.clusterings == int(math.log2(batches)) + 1
    assert max(r.membership) + 1 < len(r.membership)  # communities, not singletons


def test_louvain_clustering_is_deterministic():
    env = bundled_levels("test")[5]
    runs = [
        sqrt_lts(env, UniformPolicy(), ClusterRerooter(seed=3), 2000, trace=True) for _ in range(2)
    ]
    assert runs[0].expansion_order == runs[1].expansion_order


def test_mixed_is_the_sum_of_its_parts():
    tree = _tree(3, h=[4.0, 1.0, 2.0])
    c1, h1 = ClusterRerooter(), HeuristicRerooter()
    mixed = MixedRerooter(ClusterRerooter(), HeuristicRerooter(), u_a=0.5, u_b=2.0)
    for r in (c1, h1, mixed):
        r.reset(tree)
    for r in (c1, mixed.cluster):
        r.generated(0, 1)
        r.generated(1, 2)
        r.recluster()
    assert mixed.weight(1) == pytest.approx(0.5 * c1.weight(1) + 2.0 * h1.weight(1))
    with pytest.raises(ValueError, match="u_a and u_b"):
        MixedRerooter(u_a=-1)
    with pytest.raises(ValueError, match="resolution"):
        ClusterRerooter(resolution=0)
    with pytest.raises(ValueError, match="update_factor"):
        ClusterRerooter(update_factor=1.0)


def test_heuristic_rerooter_finds_easy_levels_fast():
    # Expected behaviour: √LTS-H solves most early test levels at 20k expansions with a
    # uniform policy and a hand-written heuristic, where LTS solves few.
    levels = bundled_levels("test")[:6]
    guide = UniformPolicy(heuristic=True)
    solved = sum(sqrt_lts(e, guide, HeuristicRerooter(), 5000).solved for e in levels)
    assert solved >= 4
