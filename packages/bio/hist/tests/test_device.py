"""The models, sparse attention and trainer run where their inputs live (cpu, and cuda when
present), giving the CPU's numbers."""

import copy

import numpy as np
import torch

from icml26.hist import (
    BaselineConfig,
    DenseGridHiST,
    FullAttention,
    HiST,
    HiSTConfig,
    KNNAttention,
    RelativePositionBias,
    SpotMLP,
    SpotModel,
    TrainConfig,
    add_sentinels,
    coarsen,
    evaluate,
    local_attention_edges,
    make_cohort,
    plan_windows,
    predict,
    token_attention,
    train,
    window_attention,
)
from icml26.hist.cost import measure, random_slide
from icml26.testing import assert_close


def _slide(rows=12, cols=15, keep=0.6, features=7, seed=0):
    g = torch.Generator().manual_seed(seed)
    rr, cc = torch.meshgrid(torch.arange(rows), torch.arange(cols), indexing="ij")
    sites = torch.stack([rr.flatten(), cc.flatten()], 1)
    coords = sites[torch.rand(len(sites), generator=g) < keep]
    return torch.randn(len(coords), features, generator=g), coords


def test_every_model_gives_the_cpu_output_on_the_device(device):
    x, c = _slide()
    torch.manual_seed(0)
    hist_cfg = HiSTConfig(7, 5, dim=16, heads=2)
    base_cfg = BaselineConfig(7, 5, dim=16, heads=2)
    models = [
        HiST(hist_cfg),
        HiST(HiSTConfig(7, 5, dim=16, heads=2, use_tokens=False, local_attention="edges")),
        DenseGridHiST(hist_cfg),
        KNNAttention(base_cfg),
        FullAttention(base_cfg),
        SpotMLP(base_cfg),
    ]
    for model in models:
        model.eval()
        with torch.no_grad():
            ref = model(x, c)
            out = copy.deepcopy(model).to(device)(x.to(device), c.to(device))
        assert out.device.type == device
        assert_close(out.cpu(), ref, atol=1e-4, rtol=1e-4, name=type(model).__name__)


def test_sparse_attention_and_resampling_on_the_device(device):
    c = _slide(rows=14, cols=11)[1]
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(len(c), 2, 4, generator=g) for _ in range(3))
    real = torch.ones(len(c), dtype=torch.bool)
    torch.manual_seed(0)
    rpb = RelativePositionBias(2, 6)
    ref = window_attention(q, k, v, plan_windows(c, real, 6), rpb)
    dq, dk, dv, dc, dreal = (t.to(device) for t in (q, k, v, c, real))
    drpb = copy.deepcopy(rpb).to(device)
    fast = window_attention(dq, dk, dv, plan_windows(dc, dreal, 6), drpb)
    edges = local_attention_edges(dq, dk, dv, dc, dreal, 6, drpb)
    assert fast.device.type == device and edges.device.type == device
    assert_close(fast.cpu(), ref, atol=1e-5, rtol=1e-5)
    assert_close(edges.cpu(), ref, atol=1e-5, rtol=1e-5)
    qt, kt, vt = (torch.randn(3, 2, 4, generator=g) for _ in range(3))
    ref_s, ref_t = token_attention(q, k, v, qt, kt, vt, real)
    got_s, got_t = token_attention(dq, dk, dv, qt.to(device), kt.to(device), vt.to(device), dreal)
    assert_close(got_s.cpu(), ref_s, atol=1e-5, rtol=1e-5)
    assert_close(got_t.cpu(), ref_t, atol=1e-5, rtol=1e-5)
    ref_c, ref_sentinel = add_sentinels(c, 3)
    sc, sentinel = add_sentinels(dc, 3)
    pc, preal, ch = coarsen(sc, ~sentinel)
    for t in (sc, sentinel, pc, preal, ch.parent, ch.slot):
        assert t.device.type == device
    ref_pc, ref_preal, _ = coarsen(ref_c, ~ref_sentinel)
    assert torch.equal(pc.cpu(), ref_pc) and torch.equal(preal.cpu(), ref_preal)


def test_train_predict_and_reload_on_the_device(device, tmp_path):
    slides = make_cohort(2, 40, seed=0)
    torch.manual_seed(0)
    model = HiST(HiSTConfig(32, 50, dim=16, heads=2)).to(device)
    res = train(model, slides, TrainConfig(steps=2, lr=1e-3), out_dir=tmp_path, progress=False)
    assert len(res.losses) == 2 and np.isfinite(res.losses).all()
    assert all(p.device.type == device for p in model.parameters())
    pred = predict(model, slides[0])
    assert isinstance(pred, np.ndarray) and pred.shape == slides[0].counts.shape
    assert "pearson" in evaluate(model, slides)["mean"]
    again = SpotModel.from_pretrained(tmp_path / "step-0000002", device=device)
    assert next(again.parameters()).device.type == device
    np.testing.assert_allclose(predict(again, slides[0]), pred, rtol=1e-5, atol=1e-5)


def test_cost_probe_on_the_device(device):
    feats, coords = random_slide(40, 12, device=device)
    assert feats.device.type == device and coords.device.type == device
    torch.manual_seed(0)
    model = HiST(HiSTConfig(32, 5, dim=16, heads=2)).to(device)
    m = measure(model, feats, coords)
    assert m.seconds > 0
