"""SANTA decode: the estimator's statistics on the reference, and the Triton kernel (through the
interpreter) against the reference with the same seed."""

import pytest
import torch

from icml26.kernels import Backend, triton_available
from icml26.kernels.santa import (
    MODES,
    counts_at_offsets,
    expected_output,
    largest_remainder,
    offsets,
    santa_decode,
    santa_decode_reference,
    ternary_queries,
)
from icml26.testing import assert_close, assert_unbiased, assert_variance_order


def problem(B=1, Hq=4, Hkv=2, N=150, D=16, peak=2.0, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = peak * torch.randn(B, Hq, D, generator=g, dtype=dtype)
    k = torch.randn(B, Hkv, N, D, generator=g, dtype=dtype)
    v = torch.randn(B, Hkv, N, D, generator=g, dtype=dtype)
    return q, k, v


def dense(q, k, v):
    group = q.shape[1] // k.shape[1]
    kk, vv = k.repeat_interleave(group, 1).double(), v.repeat_interleave(group, 1).double()
    p = torch.softmax(torch.einsum("bhd,bhnd->bhn", q.double(), kk) / q.shape[-1] ** 0.5, -1)
    return torch.einsum("bhn,bhnd->bhd", p, vv)


@pytest.mark.parametrize("mode", MODES)
def test_counts_sum_to_the_budget(mode):
    q, k, v = problem()
    S, block_n = 24, 32
    _, counts = santa_decode_reference(q, k, v, S, mode, block_n, seed=3, return_counts=True)
    assert torch.equal(counts, counts.round()) and (counts >= 0).all()
    if mode == "tile_fixed":
        per_tile = torch.nn.functional.pad(counts, (0, 160 - 150)).view(1, 4, 5, 32).sum(-1)
        assert (per_tile == 4).all()  # 24 draws over 5 tiles: 4 per tile
    else:
        assert (counts.sum(-1) == S).all()


@pytest.mark.parametrize("mode", ["iid", "systematic", "tile_fixed"])
def test_unbiased_modes(mode):
    q, k, v = problem(N=90)
    outs = torch.stack(
        [santa_decode_reference(q, k, v, 16, mode, 32, seed=s).out for s in range(1500)]
    )
    assert_unbiased(outs, dense(q, k, v), name=mode)


def test_systematic_has_lower_variance_than_iid_on_peaked_rows():
    q, k, v = problem(N=120, peak=4.0)
    target = dense(q, k, v)
    sys_ = torch.stack(
        [santa_decode_reference(q, k, v, 32, "systematic", seed=s).out for s in range(400)]
    )
    iid = torch.stack([santa_decode_reference(q, k, v, 32, "iid", seed=s).out for s in range(400)])
    assert_variance_order(sys_, iid, target=target, names=("systematic", "iid"))


def test_deterministic_for_a_seed():
    q, k, v = problem()
    a = santa_decode_reference(q, k, v, 20, "tile_prop", 32, seed=9)
    b = santa_decode_reference(q, k, v, 20, "tile_prop", 32, seed=9)
    assert torch.equal(a.out, b.out) and torch.equal(a.rows_read, b.rows_read)


def test_rows_read_is_the_union_of_the_groups_draws_worked_by_hand():
    # One KV head, 4 keys, S = 2, one tile. Query head 0 is 0: p uniform, x_r = 1/2, so its
    # systematic grid at offset a draws rows {1, 3} when a < 1/2 and {0, 2} otherwise. Query
    # head 1 points at key 0 (p_0 = 1 to double precision): both draws are row 0. The group
    # reads the union: 3 rows when a < 1/2, else 2.
    q = torch.tensor([[[0.0, 0.0], [10.0, 0.0]]], dtype=torch.float64)
    k = torch.zeros(1, 1, 4, 2, dtype=torch.float64)
    k[0, 0, 0, 0] = 10.0
    v = torch.randn(1, 1, 4, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    seen = set()
    for seed in range(12):
        a = offsets(1, 2, 1, "systematic", seed)[0, 0, 0].item()
        res = santa_decode_reference(q, k, v, 2, "systematic", 4, seed=seed)
        assert res.rows_read.tolist() == [[3 if a < 0.5 else 2]], (seed, a)
        want = v[0, 0, [1, 3]].mean(0) if a < 0.5 else v[0, 0, [0, 2]].mean(0)
        assert_close(res.out[0, 0], want, atol=1e-12, rtol=0)
        assert_close(res.out[0, 1], v[0, 0, 0], atol=1e-12, rtol=0)
        seen.add(a < 0.5)
    assert seen == {True, False}  # both branches were exercised


def test_ternary_queries_are_unbiased_and_ternary():
    q, _, _ = problem(N=10)
    g = torch.Generator().manual_seed(0)
    draws = torch.stack([ternary_queries(q, g) for _ in range(4000)])
    assert_unbiased(draws, q, name="ternary queries")
    c = q.abs().amax(-1, keepdim=True)
    assert torch.all((draws == 0) | ((draws.abs() - c).abs() < 1e-12))  # values in {-c, 0, c}


def test_bernoulli_scores_run_through_the_estimator():
    q, k, v = problem(N=60)
    outs = torch.stack(
        [
            santa_decode_reference(q, k, v, 60, "systematic", 64, seed=s, bernoulli_scores=True).out
            for s in range(50)
        ]
    )
    assert torch.isfinite(outs).all()
    assert not torch.equal(outs[0], outs[1])  # the queries are redrawn per seed


def test_largest_remainder():
    w = torch.tensor([[5.0, 3.0, 2.0], [1.0, 1.0, 1.0]])
    r = largest_remainder(w, 7)
    assert r.sum(-1).tolist() == [7, 7]
    assert r[0].tolist() == [4, 2, 1]  # shares 3.5, 2.1, 1.4: the 0.5 remainder wins


@pytest.mark.parametrize(
    "change,match",
    [
        (dict(num_samples=0), "num_samples"),
        (dict(mode="topk"), "mode"),
        (
            dict(
                k=torch.zeros(1, 3, 10, 16, dtype=torch.float64),
                v=torch.zeros(1, 3, 10, 16, dtype=torch.float64),
            ),
            "multiple",
        ),
        (dict(q=torch.full((1, 4, 16), float("nan"), dtype=torch.float64)), "NaN"),
        (dict(v=torch.zeros(1, 2, 11, 16, dtype=torch.float64)), "same shape"),
    ],
)
def test_bad_inputs(change, match):
    q, k, v = problem(N=10)
    args = dict(q=q, k=k, v=v, num_samples=4, mode="systematic")
    args.update(change)
    with pytest.raises(ValueError, match=match):
        santa_decode_reference(**args)


def test_nan_checks_read_only_what_the_estimator_reads():
    q, k, v = problem(N=40)
    k[0, 0, 3, 0] = float("nan")
    with pytest.raises(ValueError, match="k contains NaN"):
        santa_decode_reference(q, k, v, 8, "systematic", 16)
    q, k, v = problem(N=40)
    q[0, 1], q[0, 3] = q[0, 0], q[0, 2]  # each group's heads score row 5 alike
    k[0, :, 5] = -50 * q[0, ::2] / q[0, ::2].norm(dim=-1, keepdim=True)  # weight ~ exp(-200)
    v[0, :, 5] = float("nan")  # a row no head can draw is never read
    res, counts = santa_decode_reference(q, k, v, 8, "systematic", 16, return_counts=True)
    assert counts[0, :, 5].sum() == 0 and torch.isfinite(res.out).all()
    v[0, :, 6] = float("nan")
    with pytest.raises(ValueError, match="value row that was drawn"):
        santa_decode_reference(q, k, v, 10_000, "systematic", 16)  # every row is drawn


needs_triton = pytest.mark.skipif(not triton_available(), reason="Triton is not installed")


@needs_triton
@pytest.mark.parametrize("mode", ["systematic", "tile_fixed", "tile_prop"])
@pytest.mark.parametrize("N,D", [(1, 16), (7, 17), (150, 24)])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_triton_interpreter_matches_the_reference(monkeypatch, mode, N, D, dtype):
    monkeypatch.setenv("ICML26_KERNELS", "interpret")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    q, k, v = problem(B=2, N=N, D=D, dtype=dtype)
    k = k.transpose(2, 3).contiguous().transpose(2, 3)  # non-contiguous view of the same values
    got, gc = santa_decode(q, k, v, 12, mode, 32, seed=4, return_counts=True)
    assert santa_decode.last_backend is Backend.TRITON
    ref, rc = santa_decode_reference(q, k, v, 12, mode, 32, seed=4, return_counts=True)
    assert torch.equal(gc, rc)
    assert torch.equal(got.rows_read, ref.rows_read)
    atol, rtol = santa_decode.tolerance(dtype)
    assert_close(got.out, ref.out, atol=atol, rtol=rtol)


@needs_triton
@pytest.mark.parametrize("mode", ["systematic", "tile_fixed", "tile_prop"])
@pytest.mark.parametrize("Hq,Hkv", [(3, 3), (6, 2), (8, 1)])  # groups of 1, 3 and 8 heads
def test_triton_group_kernel_reads_each_row_once_per_group(monkeypatch, mode, Hq, Hkv):
    monkeypatch.setenv("ICML26_KERNELS", "interpret")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    q, k, v = problem(B=2, Hq=Hq, Hkv=Hkv, N=100, D=16, dtype=torch.float32, seed=Hq)
    S = 16 * 4  # ~16 draws per 32-key tile
    got = santa_decode(q, k, v, S, mode, 32, seed=5)  # no counts written
    assert santa_decode.last_backend is Backend.TRITON
    ref, rc = santa_decode_reference(q, k, v, S, mode, 32, seed=5, return_counts=True)
    # rows read: the union of the group's draws, counted in the kernel
    assert torch.equal(got.rows_read, ref.rows_read)
    assert (ref.rows_read < (rc > 0).sum(-1).view(2, Hkv, -1).sum(-1)).any() or Hq == Hkv
    atol, rtol = santa_decode.tolerance(torch.float32)
    assert_close(got.out, ref.out, atol=atol, rtol=rtol)


@needs_triton
@pytest.mark.parametrize(
    ("mode", "seeds"), [("tile_fixed", 150), ("systematic", 8), ("tile_prop", 8)]
)
def test_device_seed_draws_in_the_kernel_and_stays_unbiased(monkeypatch, mode, seeds):
    # A tensor seed: the kernel draws its offsets (Philox) - no host draw, graph-capturable.
    monkeypatch.setenv("ICML26_KERNELS", "interpret")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    q, k, v = problem(B=1, Hq=4, Hkv=2, N=90, D=16, dtype=torch.float32)
    S, block = 16, 32
    outs, per_tile = [], []
    for s in range(seeds):
        seed = torch.tensor(s, dtype=torch.int64)
        res, counts = santa_decode(q, k, v, S, mode, block, seed=seed, return_counts=True)
        outs.append(res.out.double())
        per_tile.append(torch.nn.functional.pad(counts, (0, 6)).view(1, 4, 3, block).sum(-1))
    assert santa_decode.last_backend is Backend.TRITON
    same, _ = santa_decode(q, k, v, S, mode, block, seed=torch.tensor(7), return_counts=True)
    again, _ = santa_decode(q, k, v, S, mode, block, seed=torch.tensor(7), return_counts=True)
    assert torch.equal(same.out, again.out)  # deterministic for a seed
    assert not torch.equal(outs[0], outs[1])  # and the seed matters
    tiles = torch.stack(per_tile)
    if mode == "tile_fixed":
        assert (tiles == 5).all()  # 16 draws over 3 tiles: 5 in every tile
    else:
        assert (tiles.sum(-1) == S).all()  # S draws in every row
    if mode == "tile_fixed":  # the statistics on one mode (interpreted calls are slow)
        assert_unbiased(torch.stack(outs), dense(q, k, v), name=f"{mode}, device seed")


@needs_triton
def test_triton_path_rejects_non_power_of_two_tiles(monkeypatch):
    monkeypatch.setenv("ICML26_KERNELS", "interpret")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    q, k, v = problem(N=20)
    with pytest.raises(ValueError, match="power of two"):
        santa_decode(q, k, v, 4, "tile_fixed", 24)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cuda_kernel_matches_the_reference(monkeypatch, dtype):
    monkeypatch.delenv("ICML26_KERNELS", raising=False)
    q, k, v = (
        t.to("cuda", dtype) for t in problem(B=2, Hq=8, Hkv=2, N=1000, D=64, dtype=torch.float32)
    )
    _, gc = santa_decode(q, k, v, 64, "tile_fixed", 64, seed=1, return_counts=True)
    _, rc = santa_decode_reference(
        q.cpu(), k.cpu(), v.cpu(), 64, "tile_fixed", 64, seed=1, return_counts=True
    )
    assert santa_decode.last_backend is Backend.TRITON
    assert (gc.cpu() != rc).float().mean() < 0.01  # bf16 scores may move a count at a boundary


# -- key ranges: padded batches, a static cache's unused tail, sliding windows --------------------

RANGES = (torch.tensor([0, 37, 5]), torch.tensor([150, 150, 29]))  # full, left pad, short window


def test_a_key_range_is_sampled_exactly_as_the_same_keys_alone():
    q, k, _ = problem(B=3, N=150)
    s = torch.einsum("bkgd,bknd->bkgn", q.view(3, 2, 2, 16), k).reshape(3, 4, 150) / 4.0
    a0 = torch.rand(3, 4, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    for mode in ("systematic", "tile_fixed", "tile_prop"):
        counts, weight = counts_at_offsets(s, a0, 24, mode, 32, *RANGES)
        for b, (lo, hi) in enumerate(zip(*RANGES, strict=True)):
            T_b = -(-(hi - lo) // 32)
            alone_c, alone_w = counts_at_offsets(
                s[b : b + 1, :, lo:hi], a0[b : b + 1, :, :T_b], 24, mode, 32
            )
            assert torch.equal(counts[b, :, lo:hi], alone_c[0]), mode
            assert torch.equal(weight[b, :, lo:hi], alone_w[0]), mode
            assert counts[b, :, :lo].sum() == counts[b, :, hi:].sum() == 0
    # tile_fixed's S_t counts the tiles of the range, not of the cache: 24 // 1 for 24 keys
    counts, _ = counts_at_offsets(s, a0, 24, "tile_fixed", 32, *RANGES)
    assert counts[2].sum(-1).tolist() == [24.0] * 4


@pytest.mark.parametrize("mode", ["iid", "systematic", "tile_fixed"])
def test_key_ranges_stay_unbiased_for_the_masked_softmax(mode):
    q, k, v = problem(B=3, N=150)
    outs = torch.stack(
        [
            santa_decode_reference(q, k, v, 16, mode, 32, seed=s, key_start=RANGES[0],
                                   key_end=RANGES[1]).out
            for s in range(800)
        ]
    )  # fmt: skip
    target = torch.cat(
        [dense(q[b : b + 1], k[b : b + 1, :, lo:hi], v[b : b + 1, :, lo:hi])
         for b, (lo, hi) in enumerate(zip(*RANGES, strict=True))]
    )  # fmt: skip
    assert_unbiased(outs, target, name=f"{mode} with key ranges")


@pytest.mark.parametrize(
    ("start", "end", "match"),
    [
        (torch.tensor([0, 5, 0]), torch.tensor([150, 5, 29]), "key_start < key_end"),
        (torch.tensor([0, 0, 0]), torch.tensor([150, 151, 29]), "<= N=150"),
        (torch.tensor([0, 0]), None, r"shape \(B=3,\)"),
        (torch.tensor([0.0, 0.0, 0.0]), None, "integer tensor"),
    ],
)
def test_bad_key_ranges(start, end, match):
    q, k, v = problem(B=3, N=150)
    with pytest.raises((ValueError, TypeError), match=match):
        santa_decode_reference(q, k, v, 8, "systematic", 32, key_start=start, key_end=end)


@needs_triton
@pytest.mark.parametrize("mode", ["systematic", "tile_fixed", "tile_prop"])
def test_triton_interpreter_matches_the_reference_on_key_ranges(monkeypatch, mode):
    monkeypatch.setenv("ICML26_KERNELS", "interpret")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    q, k, v = problem(B=3, N=150, dtype=torch.float32)
    kw = dict(key_start=RANGES[0], key_end=RANGES[1], return_counts=True)
    got, gc = santa_decode(q, k, v, 40, mode, 32, seed=2, **kw)
    assert santa_decode.last_backend is Backend.TRITON
    ref, rc = santa_decode_reference(q, k, v, 40, mode, 32, seed=2, **kw)
    assert torch.equal(gc, rc) and gc[1, :, :37].sum() == 0 and gc[2, :, 29:].sum() == 0
    assert torch.equal(got.rows_read, ref.rows_read)
    assert_close(got.out, ref.out, atol=1e-5, rtol=1e-5)


# -- the exact expectation: the estimator integrated over its offsets -----------------------------


@pytest.mark.parametrize("mode", ["iid", "systematic", "tile_fixed"])
@pytest.mark.parametrize("ranges", [False, True])
def test_the_exact_expectation_of_the_unbiased_modes_is_the_dense_output(mode, ranges):
    q, k, v = problem(B=3, N=150, peak=3.0)
    kw = dict(key_start=RANGES[0], key_end=RANGES[1]) if ranges else {}
    got = expected_output(q, k, v, 20, mode, 32, **kw)
    if ranges:
        want = torch.cat(
            [dense(q[b : b + 1], k[b : b + 1, :, lo:hi], v[b : b + 1, :, lo:hi])
             for b, (lo, hi) in enumerate(zip(*RANGES, strict=True))]
        )  # fmt: skip
    else:
        want = dense(q, k, v)
    assert_close(got, want, atol=1e-12, rtol=1e-10)


def test_tile_props_exact_bias_is_its_rounding_and_the_sampler_has_that_mean():
    q, k, v = problem(N=90, peak=3.0)
    S, block = 16, 32
    got = expected_output(q, k, v, S, "tile_prop", block)
    # By hand: tile t gets S_t draws proportional to its weight, each tile's draws average its
    # own softmax, so E[o^] = sum_t (S_t / S) (tile t's softmax-weighted mean of v).
    s = torch.einsum("bhd,bhnd->bhn", q, k.repeat_interleave(2, 1)) / 4.0
    v2 = v.repeat_interleave(2, 1)
    tiles = [slice(0, 32), slice(32, 64), slice(64, 90)]
    W = torch.stack([torch.logsumexp(s[..., t], -1) for t in tiles], -1).softmax(-1)
    S_t = largest_remainder(W, S).double()
    means = torch.stack(
        [torch.einsum("bhn,bhnd->bhd", s[..., t].softmax(-1), v2[:, :, t]) for t in tiles], -2
    )
    assert_close(got, (S_t[..., None] / S * means).sum(-2), atol=1e-12, rtol=1e-10)
    assert (got - dense(q, k, v)).abs().max() > 1e-3  # the rounding bias is there
    draws = torch.stack(
        [santa_decode_reference(q, k, v, S, "tile_prop", block, seed=i).out for i in range(1500)]
    )
    assert_unbiased(draws, got, name="tile_prop against its exact expectation")


@pytest.mark.gpu
def test_cuda_kernel_keeps_a_heavy_rows_count_exact_in_bf16(monkeypatch):
    # A sink row drawn ~2000 times: its count must reach the aggregation exactly (bf16 holds
    # integers only up to 256), and the grid's start must not lose its fraction in fp32.
    monkeypatch.delenv("ICML26_KERNELS", raising=False)
    q, k, v = problem(B=1, Hq=8, Hkv=2, N=4096, D=64, dtype=torch.float32)
    k[0, :, 7] = 4 * q[0, ::4] / q[0, ::4].norm(dim=-1, keepdim=True) * 8  # score ~32: a sink
    q, k, v = (t.to("cuda", torch.bfloat16) for t in (q, k, v))
    got, gc = santa_decode(q, k, v, 2048, "systematic", 256, seed=1, return_counts=True)
    ref, rc = santa_decode_reference(
        q.cpu(), k.cpu(), v.cpu(), 2048, "systematic", 256, seed=1, return_counts=True
    )
    assert santa_decode.last_backend is Backend.TRITON
    assert rc.max() > 1000 and (gc.cpu() != rc).float().mean() < 0.01
    assert_close(got.out.float().cpu(), ref.out.float(), atol=2e-2, rtol=2e-2)
