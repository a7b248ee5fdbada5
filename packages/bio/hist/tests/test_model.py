import pytest
import torch

from icml26.hist import (
    BaselineConfig,
    DenseGridHiST,
    FullAttention,
    HiST,
    HiSTConfig,
    KNNAttention,
    SpotMLP,
    SpotModel,
)


def _slide(n_rows=14, n_cols=19, keep=0.6, features=7, seed=0):
    g = torch.Generator().manual_seed(seed)
    rr, cc = torch.meshgrid(torch.arange(n_rows), torch.arange(n_cols), indexing="ij")
    sites = torch.stack([rr.flatten(), cc.flatten()], 1)
    coords = sites[torch.rand(len(sites), generator=g) < keep]
    return torch.randn(len(coords), features, generator=g), coords


def _hist(**kw):
    torch.manual_seed(0)
    return HiST(HiSTConfig(7, 5, dim=16, heads=2, **kw)).eval()


def test_output_shape_and_sentinels_are_dropped():
    x, c = _slide()
    assert _hist()(x, c).shape == (len(x), 5)


def test_output_is_invariant_to_the_order_of_spots():
    x, c = _slide(seed=3)
    model = _hist()
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(model(x[perm], c[perm]), model(x, c)[perm], rtol=0, atol=1e-5)


def test_fast_window_path_equals_the_edge_list_definition_in_the_full_model():
    x, c = _slide(seed=4)
    fast = _hist().double()
    ref = HiST(HiSTConfig(7, 5, dim=16, heads=2, local_attention="edges")).double().eval()
    ref.load_state_dict(fast.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(fast(x.double(), c), ref(x.double(), c), rtol=0, atol=1e-10)


def test_dense_grid_model_on_a_full_canvas_is_hist_without_sentinels():
    # every canvas cell is a spot: the dense model's sites are the sparse model's sites
    x, c = _slide(n_rows=8, n_cols=12, keep=1.1)
    sparse = _hist(sentinels=False)
    dense = DenseGridHiST(HiSTConfig(7, 5, dim=16, heads=2, sentinels=False)).eval()
    dense.load_state_dict(sparse.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(dense(x, c), sparse(x, c), rtol=0, atol=1e-5)


def test_calibration_tokens_carry_slide_level_information():
    # shifting every spot's features changes the pools the tokens start from: with tokens the
    # prediction at a spot far from the shifted region changes, without tokens it cannot
    x, c = _slide(n_rows=6, n_cols=60, keep=1.1, seed=5)
    far = c[:, 1] >= 48  # beyond every window the left edit can reach through the U-Net
    x2 = x.clone()
    x2[c[:, 1] < 2] += 5.0
    with torch.no_grad():
        for tokens, changes in ((True, True), (False, False)):
            model = _hist(use_tokens=tokens)
            delta = (model(x2, c) - model(x, c))[far].abs().max()
            assert (delta > 1e-4) == changes, (tokens, float(delta))


def test_no_token_ablation_has_no_token_parameters():
    names = [n for n, _ in _hist(use_tokens=False).named_parameters()]
    assert not any("token" in n or "qkv_global" in n for n in names)
    assert any("qkv_global" in n for n, _ in _hist().named_parameters())


@pytest.mark.parametrize("cls", [SpotMLP, KNNAttention, FullAttention])
def test_baselines_take_the_same_inputs(cls):
    x, c = _slide()
    out = cls(BaselineConfig(7, 5, dim=16, heads=2)).eval()(x, c)
    assert out.shape == (len(x), 5) and torch.isfinite(out).all()


def test_gradients_reach_every_parameter():
    x, c = _slide(seed=6)
    model = _hist()
    model(x, c).square().mean().backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None]
    assert not missing


@pytest.mark.parametrize(
    ("mutate", "err", "msg"),
    [
        (lambda x, c: (x[:, :3], c), ValueError, "features must have shape"),
        (lambda x, c: (x, c[:-1]), ValueError, "coords must have shape"),
        (lambda x, c: (x, c.float()), TypeError, "integer lattice"),
        (lambda x, c: (x.long(), c), TypeError, "floating point"),
        (lambda x, c: (x.index_fill(0, torch.tensor([2]), float("nan")), c), ValueError, "NaN"),
        (lambda x, c: (x, torch.cat([c[:1], c[:-1]])), ValueError, "share a lattice site"),
        (lambda x, c: (x, c - 100), ValueError, "non-negative"),
        (lambda x, c: (x[:0], c[:0]), ValueError, "at least one spot"),
    ],
)
def test_bad_inputs_are_clear_errors(mutate, err, msg):
    x, c = _slide()
    with pytest.raises(err, match=msg):
        _hist()(*mutate(x, c))


def test_bad_configs_are_clear_errors():
    with pytest.raises(ValueError, match="stages"):
        HiST(HiSTConfig(7, 5, dim=16, stages="111-2"))
    with pytest.raises(ValueError, match="divisible"):
        HiST(HiSTConfig(7, 5, dim=18, heads=4))
    with pytest.raises(ValueError, match="downsample"):
        HiST(HiSTConfig(7, 5, dim=16, downsample="pool"))


def test_save_and_load_pretrained(tmp_path):
    x, c = _slide(seed=7)
    model = _hist(downsample="merge")
    model.set_statistics(torch.ones(7), 2 * torch.ones(7), torch.arange(5.0))
    model.save_pretrained(tmp_path / "m")
    loaded = SpotModel.from_pretrained(tmp_path / "m")
    assert isinstance(loaded, HiST) and loaded.config == model.config
    with torch.no_grad():
        torch.testing.assert_close(loaded.eval()(x, c), model(x, c), rtol=0, atol=0)
    with pytest.raises(ValueError, match="not a SpotMLP"):
        SpotMLP.from_pretrained(tmp_path / "m")
    (tmp_path / "m" / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="not a valid model config"):
        SpotModel.from_pretrained(tmp_path / "m")
    with pytest.raises(ValueError, match="not found"):
        SpotModel.from_pretrained(tmp_path / "nothing")
