"""The sparse attention against its definitions: dense masked attention and the edge lists."""

import pytest
import torch

from icml26.hist import (
    PixelShuffleUp,
    RelativePositionBias,
    coarsen,
    edge_softmax,
    global_edges,
    local_attention_edges,
    local_edges,
    plan_windows,
    token_attention,
    window_attention,
)
from icml26.hist.attention import edge_attention


def _grid(rows, cols, keep, seed):
    g = torch.Generator().manual_seed(seed)
    rr, cc = torch.meshgrid(torch.arange(rows), torch.arange(cols), indexing="ij")
    sites = torch.stack([rr.flatten(), cc.flatten()], 1)
    return sites[torch.rand(len(sites), generator=g) < keep]


def _window_mask(c, w):
    def same(shift):
        cell = torch.div(c + shift, w, rounding_mode="floor")
        return (cell[:, None] == cell[None]).all(-1)

    return same(0) | same(w // 2)


def _dense_reference(q, k, v, c, real, w, rpb):
    """Dense N x N attention, masked to the union of regular and shifted windows."""
    mask = _window_mask(c, w) & real[None] & real[:, None]
    d = (c[:, None] - c[None]).clamp(-(w - 1), w - 1)  # masked pairs may be farther apart
    s = torch.einsum("ihd,jhd->hij", q, k) * q.shape[-1] ** -0.5
    s = s + rpb(d[..., 0], d[..., 1]).permute(2, 0, 1)
    p = s.masked_fill(~mask, -torch.inf).softmax(-1).nan_to_num()
    return torch.einsum("hij,jhd->ihd", p, v)


@pytest.mark.parametrize(
    ("shape", "keep", "window", "dtype", "tol"),
    [
        ((13, 17), 0.6, 6, torch.float32, 1e-5),
        ((29, 11), 0.25, 6, torch.float64, 1e-12),
        ((9, 9), 1.0, 4, torch.float32, 1e-5),
        ((40, 40), 0.05, 6, torch.float64, 1e-12),  # scattered spots: mostly lonely windows
    ],
)
def test_sparse_window_attention_equals_dense_masked_attention(shape, keep, window, dtype, tol):
    c = _grid(*shape, keep, seed=shape[0])
    n, heads, d = len(c), 3, 5
    real = torch.ones(n, dtype=torch.bool)
    real[::7] = False  # a few sentinel-like sites: neither keys nor queries
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(n, heads, d, generator=g, dtype=dtype) for _ in range(3))
    rpb = RelativePositionBias(heads, window).to(dtype)
    with torch.no_grad():
        rpb.table.normal_(generator=g)
    ref = _dense_reference(q, k, v, c, real, window, rpb)
    fast = window_attention(q, k, v, plan_windows(c, real, window), rpb)
    edges = local_attention_edges(q, k, v, c, real, window, rpb)
    assert (fast - ref).abs().max() < tol
    assert (edges - ref).abs().max() < tol
    assert fast[~real].abs().max() == 0


def test_fast_path_gradients_match_the_edge_path():
    c = _grid(15, 14, 0.5, seed=3)
    real = torch.ones(len(c), dtype=torch.bool)
    g = torch.Generator().manual_seed(0)
    qkv = [
        torch.randn(len(c), 2, 4, generator=g, dtype=torch.float64, requires_grad=True)
        for _ in range(3)
    ]
    rpb = RelativePositionBias(2, 6).double()
    out_w = window_attention(*qkv, plan_windows(c, real, 6), rpb)
    grads_w = torch.autograd.grad(out_w.square().sum(), [*qkv, rpb.table])
    out_e = local_attention_edges(*qkv, c, real, 6, rpb)
    grads_e = torch.autograd.grad(out_e.square().sum(), [*qkv, rpb.table])
    for a, b in zip(grads_w, grads_e, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_local_edges_are_exactly_the_window_union_plus_self_loops():
    c = _grid(20, 23, 0.4, seed=5)
    real = torch.ones(len(c), dtype=torch.bool)
    real[3] = False
    src, dst = local_edges(c, real, 6)
    adj = torch.zeros(len(c), len(c), dtype=torch.bool)
    adj[dst, src] = True
    expect = _window_mask(c, 6) & real[None] & real[:, None]  # includes self-loops
    assert torch.equal(adj, expect)
    assert len(src) == int(expect.sum())  # no duplicate edges
    # a site's neighbours lie within its window: offsets below the window side
    assert (c[src] - c[dst]).abs().max() < 6


def test_tokens_see_every_site_and_sites_see_only_tokens_in_the_global_graph():
    n, t = 11, 3
    real = torch.ones(n, dtype=torch.bool)
    real[-2:] = False
    src, dst = global_edges(real, t)
    pairs = set(zip(src.tolist(), dst.tolist(), strict=True))
    sites, tokens = [i for i in range(n) if real[i]], range(n, n + t)
    for tok in tokens:
        assert {s for s, d in pairs if d == tok} == set(sites) | set(tokens)
    for s in range(n):
        expect = set(tokens) if real[s] else set()
        assert {a for a, d in pairs if d == s} == expect
    assert not any(a < n and d < n for a, d in pairs)  # no site -> site edge here


def test_token_attention_equals_edge_attention_on_the_global_graph():
    n, t, h, d = 17, 3, 2, 4
    real = torch.ones(n, dtype=torch.bool)
    real[5] = False
    g = torch.Generator().manual_seed(2)
    qs, ks, vs = (torch.randn(n, h, d, generator=g, dtype=torch.float64) for _ in range(3))
    qt, kt, vt = (torch.randn(t, h, d, generator=g, dtype=torch.float64) for _ in range(3))
    out_s, out_t = token_attention(qs, ks, vs, qt, kt, vt, real)
    src, dst = global_edges(real, t)
    ref = edge_attention(torch.cat([qs, qt]), torch.cat([ks, kt]), torch.cat([vs, vt]), src, dst)
    torch.testing.assert_close(out_s, ref[:n])
    torch.testing.assert_close(out_t, ref[n:])


def test_edge_softmax_sums_to_one_per_destination():
    scores = torch.randn(50, 3) * 30  # large scores: the max subtraction matters
    dst = torch.randint(0, 9, (50,))
    p = edge_softmax(scores, dst, 9)
    sums = torch.zeros(9, 3).index_add(0, dst, p)
    present = torch.bincount(dst, minlength=9) > 0
    torch.testing.assert_close(sums[present], torch.ones(int(present.sum()), 3))


def test_window_passes_cover_exactly_the_input_sites():
    c = _grid(31, 27, 0.3, seed=8)
    plan = plan_windows(c, torch.ones(len(c), dtype=torch.bool), 6)
    for buckets in plan.passes:  # regular and shifted partition
        seen = torch.cat([b.members[b.members >= 0] for b in buckets])
        assert torch.equal(torch.sort(seen).values, torch.arange(len(c)))


def test_down_then_up_returns_exactly_the_cached_children():
    c = _grid(13, 10, 0.45, seed=4)
    perm = torch.randperm(len(c), generator=torch.Generator().manual_seed(0))
    c = c[perm]
    real = torch.ones(len(c), dtype=torch.bool)
    parents, preal, ch = coarsen(c, real)
    # each parent holds exactly the children that map to it, none invented
    assert torch.equal(torch.div(c, 2, rounding_mode="floor"), parents[ch.parent])
    assert len(parents) == len({tuple(x) for x in (c // 2).tolist()}) and preal.all()
    up = PixelShuffleUp(4, 3, tokens=False)
    x = torch.randn(len(parents), 4)
    out, _ = up(x, None, ch)
    assert out.shape == (len(c), 3)  # the cached active set, in its order
    # child i's features come from its own parent's slot (r % 2, c % 2)
    slots = up.proj(x).view(len(parents), 4, 3)
    expect = up.norm(slots[ch.parent, (c[:, 0] % 2) * 2 + c[:, 1] % 2])
    torch.testing.assert_close(out, expect)


def test_sentinel_parent_is_real_once_it_merges_with_a_spot():
    c = torch.tensor([[0, 0], [0, 1], [7, 7]])
    real = torch.tensor([False, True, False])
    parents, preal, _ = coarsen(c, real)
    assert parents.tolist() == [[0, 0], [3, 3]] and preal.tolist() == [True, False]
