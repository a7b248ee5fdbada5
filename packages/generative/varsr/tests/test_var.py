import math

import pytest
import torch

from icml26.varsr.data import downsample
from icml26.varsr.tokenizer import MultiScaleRQ, TokenizerConfig, prefix_agreement
from icml26.varsr.var import VARConfig, VARTransformer, block_causal_mask, dpo_loss

TINY = TokenizerConfig(channels=16, latent=8, codebook=32)


@pytest.fixture
def tok():
    torch.manual_seed(0)
    t = MultiScaleRQ(TINY)
    t(torch.rand(4, 3, 32, 32))  # k-means initialisation
    return t.eval()


def test_block_causal_mask_sees_exactly_the_scales_up_to_its_own():
    scales = (1, 2, 3)
    m = block_causal_mask(scales)
    level = [0] + [1] * 4 + [2] * 9
    for i in range(14):
        for j in range(14):
            assert bool(m[i, j]) == (level[j] <= level[i])


def test_rq_bookkeeping_sum_of_decoded_residuals_is_f_hat(tok):
    x = torch.rand(3, 3, 32, 32)
    with torch.no_grad():
        q = tok.quantize(tok.encoder(x * 2 - 1))
        assert [i.shape[-1] for i in q.indices] == [1, 2, 4, 8]
        torch.testing.assert_close(tok.f_hat_from(q.indices, side=8), q.f_hat, atol=1e-5, rtol=1e-5)
        for side, fp in q.prefixes.items():  # prefix sums are the first scales at their side
            n = [i.shape[-1] for i in q.indices].index(side) + 1
            torch.testing.assert_close(tok.f_hat_from(q.indices[:n]), fp, atol=1e-5, rtol=1e-5)
    assert tok.decode(q.indices[:2]).shape == (3, 3, 8, 8)
    assert tok.decode(q.indices).shape == (3, 3, 32, 32)


def test_prefix_agreement_is_a_rate(tok):
    r = prefix_agreement(tok, torch.rand(2, 3, 32, 32), 2)
    assert 0.0 <= r <= 1.0


def test_dpo_loss_is_log2_at_the_reference_and_its_gradient_raises_the_chosen():
    z = torch.zeros(5)
    assert float(dpo_loss(z, z, z, z)) == pytest.approx(math.log(2))
    chosen = torch.zeros(5, requires_grad=True)
    dpo_loss(chosen, torch.zeros(5), torch.zeros(5), torch.zeros(5)).backward()
    assert (chosen.grad < 0).all()  # descending the loss raises log pi(chosen)
    with pytest.raises(ValueError):
        dpo_loss(z, z, z, z, beta=0)


def test_kv_cached_generation_equals_the_uncached_forward(tok):
    torch.manual_seed(1)
    var = VARTransformer(tok, VARConfig(d_model=32, n_layer=2, n_head=2)).eval()
    lr = downsample(torch.rand(2, 3, 32, 32), 4)
    out = var.generate(lr, return_scales=True)
    assert out[4].shape == (2, 3, 32, 32) and out[2].shape == (2, 3, 16, 16)
    assert out[1].shape == (2, 3, 8, 8)
    # replay: the generated tokens are the argmax of the teacher-forced forward on themselves
    given = tok.encode(lr)[:2]
    idx = list(given)
    for s in (4, 8):
        later = [torch.zeros(2, t, t, dtype=torch.long) for t in (4, 8) if t >= s]
        logits = var(idx + later, lr)
        start = sum(t * t for t in (1, 2, 4, 8) if t < s)
        idx.append(logits[:, start : start + s * s].argmax(-1).view(2, s, s))
    torch.testing.assert_close(tok.decode(idx), out[4])


def test_logprob_and_loss_cover_only_the_predicted_scales(tok):
    var = VARTransformer(tok, VARConfig(d_model=32, n_layer=1, n_head=2))
    x = torch.rand(2, 3, 32, 32)
    idx = tok.encode(x)
    lr = downsample(x, 4)
    lp = var.logprob(idx, lr)
    assert lp.shape == (2,) and (lp < 0).all()
    loss = var.loss(idx, lr)
    assert loss > 0
    assert float(-lp.sum()) / (2 * (16 + 64)) == pytest.approx(float(loss), rel=1e-4)


def test_bad_inputs(tok):
    with pytest.raises(ValueError, match="scales"):
        TokenizerConfig(scales=(1, 3, 5)).check()
    with pytest.raises(TypeError, match="floating point"):
        tok.encode(torch.zeros(1, 3, 32, 32, dtype=torch.uint8))
    with pytest.raises(ValueError, match=r"\(B, 3, H, W\)"):
        tok.encode(torch.rand(1, 1, 32, 32))
    with pytest.raises(ValueError, match="divisible by 4"):
        tok.encode(torch.rand(1, 3, 30, 30))
    var = VARTransformer(tok, VARConfig(d_model=32, n_layer=1, n_head=2))
    with pytest.raises(ValueError, match="lr must be 8 x 8"):
        var.generate(torch.rand(1, 3, 16, 16))


def test_fit_resumes_exactly_and_trains_every_model(tmp_path):
    from icml26.varsr.baselines import ESPCN
    from icml26.varsr.train import (
        FitConfig,
        espcn_objective,
        fit,
        tokenizer_objective,
        var_objective,
    )

    torch.manual_seed(0)
    data = torch.rand(16, 3, 32, 32)
    tok = MultiScaleRQ(TINY)
    loss_fn, hook = tokenizer_objective(tok, restart_every=2)
    logs = fit(tok, data, loss_fn, FitConfig(steps=3, batch=4), hook=hook)
    assert len(logs) == 3 and {"reconstruction", "vq", "prefix", "loss"} <= set(logs[0])
    tok.eval()
    var = VARTransformer(tok, VARConfig(d_model=32, n_layer=1, n_head=2))
    fit(var, data, var_objective(var), FitConfig(steps=2, batch=4))
    logs = fit(var, data, var_objective(var, dpo_weight=0.5), FitConfig(steps=2, batch=4))
    assert logs[0]["dpo"] == pytest.approx(math.log(2), abs=1e-4)  # policy == reference at start
    # resume: 2 + 2 steps equal 4 straight steps
    torch.manual_seed(1)
    a, b = ESPCN(channels=8), None
    b = copy_of(a)
    fit(a, data, espcn_objective(a), FitConfig(steps=4, batch=4, lr=1e-2), tmp_path / "a")
    fit(b, data, espcn_objective(b), FitConfig(steps=2, batch=4, lr=1e-2), tmp_path / "b")
    fit(
        b,
        data,
        espcn_objective(b),
        FitConfig(steps=4, batch=4, lr=1e-2),
        tmp_path / "b",
        resume=True,
    )
    for k, v in a.state_dict().items():
        torch.testing.assert_close(b.state_dict()[k], v, rtol=0, atol=0)


def copy_of(m):
    import copy

    return copy.deepcopy(m)


def test_upscale_tiles_and_stitches_like_the_whole_image():
    from icml26.varsr.data import bicubic_up
    from icml26.varsr.upscale import upscale

    class Nearest(torch.nn.Module):  # a tile-local model: stitching must be exact
        def forward(self, lr):
            return torch.nn.functional.interpolate(lr, scale_factor=4, mode="nearest")

    lr = torch.rand(2, 3, 20, 27)
    out = upscale(Nearest(), lr, tile=8, batch=5)
    torch.testing.assert_close(
        out, torch.nn.functional.interpolate(lr, scale_factor=4, mode="nearest")
    )
    with pytest.raises(ValueError, match="needs a VAR model"):
        upscale(Nearest(), lr, return_scales=True)
    assert bicubic_up(lr, 4).shape == out.shape


def _fit_on_rank(steps: int):
    import torch.distributed as dist

    from icml26.varsr.baselines import ESPCN
    from icml26.varsr.train import FitConfig, espcn_objective, fit

    torch.manual_seed(0)
    model = ESPCN(channels=8)
    data = torch.rand(8, 3, 32, 32)
    logs = fit(model, data, espcn_objective(model), FitConfig(steps=steps, batch=2))
    return dist.get_rank(), model.state_dict(), logs


@pytest.mark.distributed
def test_two_ranks_average_gradients_and_stay_equal():
    from icml26.testing import run_distributed

    (r0, w0, l0), (r1, w1, l1) = run_distributed(_fit_on_rank, 2, world_size=2)
    assert {r0, r1} == {0, 1} and l0[0]["loss"] != l1[0]["loss"]  # each rank its own batches
    for k, v in w0.items():
        torch.testing.assert_close(w1[k], v, rtol=0, atol=0, msg=k)
