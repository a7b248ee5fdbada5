import math

import pytest
import torch

from icml26.varsr.data import downsample
from icml26.varsr.tokenizer import MultiScaleRQ, TokenizerConfig, prefix_agreement
from icml26.varsr.var import VARConfig, VARTransformer, block_causal_mask, dpo_loss

# stride 4 keeps the toy models fast: 32 x 32 images, token maps up to 8 x 8, 8 x 8 LR inputs
TINY = TokenizerConfig(channels=16, latent=8, codebook=32, down=4, scales=(1, 2, 4, 8))


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


def test_default_tokenizer_has_stride_2_and_the_lr_tokens_as_its_first_scales():
    torch.manual_seed(0)
    t = MultiScaleRQ(TokenizerConfig(channels=16, latent=8, codebook=32))
    t(torch.rand(2, 3, 32, 32))
    t.eval()
    idx = t.encode(torch.rand(2, 3, 32, 32))
    assert [i.shape[-1] for i in idx] == [1, 2, 4, 8, 16]
    assert t.decode(idx[:3]).shape == (2, 3, 8, 8)  # the x4 prefix is an 8 x 8 image
    var = VARTransformer(t, VARConfig(d_model=32, n_layer=1, n_head=2)).eval()
    assert var.given_scales == 3 and var.lr_side == 8
    out = var.generate(torch.rand(2, 3, 8, 8), return_scales=True)
    assert out[4].shape == (2, 3, 32, 32) and out[2].shape == (2, 3, 16, 16)
    with pytest.raises(ValueError, match="power of 2"):
        TokenizerConfig(down=3).check()


def test_hit_prefix_property_measured_on_trained_toy_tokenizers():
    """Tokens of down(x) agree with the prefix of x's tokens far above chance after HIT
    training, and more than without the HIT terms (same steps, same data)."""
    from icml26.varsr.data import load_data
    from icml26.varsr.train import FitConfig, fit, tokenizer_objective

    data = load_data().train
    rates = {}
    for hit in (True, False):
        torch.manual_seed(0)
        t = MultiScaleRQ(TINY)
        loss_fn, hook = tokenizer_objective(t, hit=hit)
        fit(t, data, loss_fn, FitConfig(steps=150, batch=16, lr=2e-3), hook=hook)
        rates[hit] = prefix_agreement(t.eval(), data[:128], 2)
    assert 0.0 <= rates[False] <= 1.0
    assert rates[True] > 0.25, rates  # chance is about 1/32
    assert rates[True] > rates[False], rates


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
    assert float(-lp.detach().sum()) / (2 * (16 + 64)) == pytest.approx(float(loss), rel=1e-4)


def test_bad_inputs(tok):
    with pytest.raises(ValueError, match="scales"):
        TokenizerConfig(scales=(1, 3, 5)).check()
    with pytest.raises(TypeError, match="floating point"):
        tok.encode(torch.zeros(1, 3, 32, 32, dtype=torch.uint8))
    with pytest.raises(ValueError, match=r"\(B, 3, H, W\)"):
        tok.encode(torch.rand(1, 1, 32, 32))
    with pytest.raises(ValueError, match="divisible by 4"):  # the encoder's stride
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


def test_pretrained_round_trip_gives_the_same_images(tok, tmp_path):
    from icml26.varsr.pretrained import load_pretrained, save_pretrained

    torch.manual_seed(2)
    var = VARTransformer(tok, VARConfig(d_model=32, n_layer=1, n_head=2)).eval()
    lr = torch.rand(3, 3, 8, 8)
    before = var.generate(lr, return_scales=True)
    save_pretrained(var, tmp_path / "m")
    save_pretrained(var, tmp_path / "m")  # overwriting a saved model is fine
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]
    again = load_pretrained(tmp_path / "m").generate(lr, return_scales=True)
    for s in (1, 2, 4):
        torch.testing.assert_close(again[s], before[s], rtol=0, atol=0)
    with pytest.raises(FileNotFoundError, match=r"config\.json"):
        load_pretrained(tmp_path)


def test_cli_train_and_upscale_end_to_end(tmp_path):
    import numpy as np
    from skimage.io import imread, imsave

    from icml26.varsr.cli import main

    imgs = tmp_path / "imgs"
    imgs.mkdir()
    rng = np.random.default_rng(0)
    imsave(imgs / "a.png", rng.integers(0, 255, (64, 64, 3), dtype=np.uint8))
    imsave(imgs / "b.png", rng.integers(0, 255, (16, 16), dtype=np.uint8), check_contrast=False)
    out = tmp_path / "run"
    args = ["train", "--images", str(imgs), "--out", str(out), "--tokenizer-steps", "1",
            "--var-steps", "1", "--dpo-steps", "1", "--batch", "2", "--device", "cpu"]  # fmt: skip
    assert main(args) == 2  # b.png is smaller than a 32 x 32 patch
    (imgs / "b.png").unlink()
    assert main(args) == 0
    assert main(args) == 2  # refuses to overwrite a run without --resume
    assert main([*args, "--resume"]) == 0
    src = tmp_path / "lr.png"
    imsave(src, rng.integers(0, 255, (12, 20, 3), dtype=np.uint8))
    assert main(["upscale", str(src), str(tmp_path / "sr.png"), "--model", str(out / "model"),
                 "--x2", str(tmp_path / "sr2.png"), "--device", "cpu"]) == 0  # fmt: skip
    assert imread(tmp_path / "sr.png").shape == (48, 80, 3)
    assert imread(tmp_path / "sr2.png").shape == (24, 40, 3)
    assert main(["upscale", str(tmp_path / "missing.png"), str(tmp_path / "x.png"),
                 "--model", str(out / "model")]) == 2  # fmt: skip


def test_ms_ssim_is_one_on_identical_images_and_none_when_too_small():
    from icml26.varsr.data import ms_ssim_y

    torch.manual_seed(0)
    x = torch.rand(3, 180, 180)
    assert ms_ssim_y(x, x, 4) == pytest.approx(1.0, abs=1e-4)
    assert ms_ssim_y((x + 0.2 * torch.rand_like(x)).clamp(0, 1), x, 4) < 0.99
    assert ms_ssim_y(x[:, :100, :100], x[:, :100, :100], 4) is None


def test_given_lr_tokens_stay_first_and_the_rest_quantise_what_they_leave(tok):
    x = torch.rand(3, 3, 32, 32)
    lr_tokens = tok.encode(downsample(x, 4))
    assert [t.shape[-1] for t in lr_tokens] == [1, 2]
    idx = tok.encode(x, lr_tokens)
    for a, b in zip(idx[:2], lr_tokens, strict=True):
        assert torch.equal(a, b)
    with torch.no_grad():
        q = tok.quantize(tok.encoder(x * 2 - 1), lr_tokens)
        torch.testing.assert_close(tok.f_hat_from(q.indices, side=8), q.f_hat, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="first scales"):
        tok.encode(x, [lr_tokens[1]])
    with pytest.raises(ValueError, match="at most the 2"):
        VARTransformer(tok, VARConfig(d_model=32, n_layer=1, n_head=2, given_scales=3))


def test_a_convolutional_model_is_upscaled_whole():
    from icml26.varsr.baselines import ESPCN
    from icml26.varsr.upscale import upscale

    torch.manual_seed(0)
    m = ESPCN(channels=8).eval()
    lr = torch.rand(2, 3, 12, 20)
    with torch.no_grad():
        torch.testing.assert_close(upscale(m, lr), m(lr))


def _tokenizer_on_rank(steps: int):
    from icml26.varsr.train import FitConfig, fit, tokenizer_objective

    t = MultiScaleRQ(TINY)
    torch.manual_seed(0)
    t.load_state_dict(MultiScaleRQ(TINY).state_dict())  # one initialisation on every rank
    data = torch.rand(16, 3, 32, 32)
    loss_fn, hook = tokenizer_objective(t, restart_every=2, steps=steps)
    fit(t, data, loss_fn, FitConfig(steps=steps, batch=4), hook=hook)
    return t.state_dict()


@pytest.mark.distributed
def test_two_ranks_keep_one_tokenizer_codebook():
    from icml26.testing import run_distributed

    w0, w1 = run_distributed(_tokenizer_on_rank, 5, world_size=2)
    for k, v in w0.items():
        if k != "usage":  # each rank counts its own batches; restarts sum the counts
            torch.testing.assert_close(w1[k], v, rtol=0, atol=0, msg=k)


def test_tokenizer_training_resumes_exactly_across_a_dead_code_restart(tmp_path):
    from icml26.varsr.train import FitConfig, fit, tokenizer_objective

    data = torch.rand(16, 3, 32, 32, generator=torch.Generator().manual_seed(0))

    def run(steps, folder, resume=False, start=None):
        torch.manual_seed(0)
        t = MultiScaleRQ(TINY) if start is None else start
        loss_fn, hook = tokenizer_objective(t, restart_every=2, steps=6)
        fit(t, data, loss_fn, FitConfig(steps=steps, batch=4), folder, resume=resume, hook=hook)
        return t

    straight = run(6, tmp_path / "a")
    run(3, tmp_path / "b")  # interrupted between the restarts after steps 2 and 4
    torch.manual_seed(0)
    resumed = run(6, tmp_path / "b", resume=True, start=MultiScaleRQ(TINY))
    for k, v in straight.state_dict().items():
        torch.testing.assert_close(resumed.state_dict()[k], v, rtol=0, atol=0, msg=k)
