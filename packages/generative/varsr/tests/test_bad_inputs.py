"""Bad input at the public API ends in a ValueError / TypeError that names the argument."""

import json

import pytest
import torch

from icml26.testing import assert_rejects
from icml26.varsr import (
    ESPCN,
    MultiScaleRQ,
    TokenizerConfig,
    VARConfig,
    VARTransformer,
    check_image,
    downsample,
    load_pretrained,
    save_pretrained,
    upscale,
)
from icml26.varsr.cli import main


@pytest.mark.parametrize(
    "image, why",
    [
        (torch.full((3, 8, 8), 200.0), "divide by 255"),  # an 8-bit image as float
        (torch.full((3, 8, 8), -0.5), "[0, 1]"),
        (torch.zeros(0, 3, 8, 8), "empty"),  # an empty batch (was KeyError: 4 in upscale)
        (torch.zeros(3, 0, 0), "empty"),  # a 0 x 0 image (was a torch RuntimeError)
        (torch.full((3, 8, 8), float("nan")), "NaN"),
    ],
)
def test_images_outside_the_contract_are_refused_at_the_call(image, why):
    message = str(assert_rejects(lambda: upscale(ESPCN(), image), "lr"))
    assert why in message
    assert_rejects(lambda: check_image(image, "hr"), "hr")


def test_integer_images_and_non_tensors_are_refused():
    assert_rejects(lambda: downsample(torch.zeros(3, 8, 8, dtype=torch.uint8), 2), "image")
    assert_rejects(lambda: check_image([[0.0]], "lr"), "lr")


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    tok = MultiScaleRQ(TokenizerConfig())
    folder = tmp_path_factory.mktemp("m") / "model"
    return save_pretrained(VARTransformer(tok, VARConfig()), folder)


def test_a_malformed_config_names_the_file(saved, tmp_path):
    bad = tmp_path / "model"
    bad.mkdir()
    for f in saved.iterdir():
        (bad / f.name).write_bytes(f.read_bytes())
    (bad / "config.json").write_text("{not json")
    assert_rejects(lambda: load_pretrained(bad), "config.json")
    cfg = json.loads((saved / "config.json").read_text())
    del cfg["var"]
    (bad / "config.json").write_text(json.dumps(cfg))
    assert_rejects(lambda: load_pretrained(bad), "config.json")
    (bad / "config.json").write_text((saved / "config.json").read_text())
    (bad / "var.safetensors").write_text("garbage")
    assert_rejects(lambda: load_pretrained(bad), "var.safetensors")


def test_upscale_cli_on_a_non_image_file_is_one_line_and_exit_2(saved, tmp_path, capsys):
    text = tmp_path / "notes.png"
    text.write_text("not an image")
    out = tmp_path / "sr.png"
    assert main(["upscale", str(text), str(out), "--model", str(saved)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "notes.png" in err[0] and not out.exists()


import numpy as np  # noqa: E402

from icml26.varsr import FitConfig, bicubic_up, psnr_ssim, to_image  # noqa: E402


def test_scales_must_be_positive_integers():
    assert_rejects(lambda: bicubic_up(torch.rand(3, 8, 8), 0), "scale")
    assert_rejects(lambda: psnr_ssim(torch.rand(3, 32, 32), torch.rand(3, 32, 32), 0), "scale")


def test_metrics_name_an_8_bit_reference_and_images_too_small_to_score():
    x = torch.rand(3, 32, 32)
    assert_rejects(lambda: psnr_ssim(x, x * 255, 4), "hr")
    assert_rejects(lambda: psnr_ssim(x[:, :16, :16], x[:, :16, :16], 4), "too small")
    assert psnr_ssim(x, x, 4)[1] > 0.999  # SR is rounded to 8 bits first


def test_float_arrays_outside_0_1_are_not_clamped_white():
    assert_rejects(lambda: to_image(np.full((8, 8, 3), 200.0)), "image")
    assert to_image(np.full((8, 8, 3), 200, dtype=np.uint8)).max() == pytest.approx(200 / 255)


def test_fit_config_names_a_bad_budget():
    assert_rejects(lambda: FitConfig(steps=-1), "steps")
    assert_rejects(lambda: FitConfig(lr=0.0), "lr")


from icml26.varsr import (  # noqa: E402
    dpo_loss,
    espcn_objective,
    fit,
    load_data,
    load_image,
    tokenizer_objective,
    var_objective,
)


def test_the_dpo_term_names_bad_log_probabilities_and_beta():
    x = torch.randn(4)
    assert_rejects(lambda: dpo_loss(x, x[:2], x, x), "policy_rejected")
    assert_rejects(lambda: dpo_loss(x[:, None], x, x, x), "policy_chosen")
    assert_rejects(lambda: dpo_loss([1.0], x, x, x), "policy_chosen")
    for beta in (float("nan"), 0.0, "0.1"):
        assert_rejects(lambda b=beta: dpo_loss(x, x, x, x, b), "beta")


def test_objectives_name_the_wrong_model():
    assert_rejects(lambda: espcn_objective(torch.nn.Linear(2, 2)), "ESPCN")
    assert_rejects(lambda: tokenizer_objective("tok"), "MultiScaleRQ")
    tok = MultiScaleRQ(TokenizerConfig())
    assert_rejects(lambda: tokenizer_objective(tok, restart_every=-1), "restart_every")
    assert_rejects(lambda: tokenizer_objective(tok, steps=2.5), "steps")
    assert_rejects(lambda: var_objective(tok), "VARTransformer")
    var = VARTransformer(tok, VARConfig())
    assert_rejects(lambda: var_objective(var, dpo_weight=-1.0), "dpo_weight")
    assert_rejects(lambda: var_objective(var, dpo_weight=1.0, beta=0.0), "beta")


def test_fit_names_its_bad_arguments_and_a_broken_objective():
    model = torch.nn.Linear(2, 2)
    data, cfg = torch.randn(4, 2), FitConfig(steps=1, batch=2)

    def loss(b):
        return {"loss": model(b).sum()}

    assert_rejects(lambda: fit("model", data, loss, cfg), "model")
    assert_rejects(lambda: fit(model, [1, 2], loss, cfg), "data")
    assert_rejects(lambda: fit(model, torch.full((4, 2), float("nan")), loss, cfg), "NaN")
    assert_rejects(lambda: fit(model, data, "loss", cfg), "loss_fn")
    assert_rejects(lambda: fit(model, data, loss, {"steps": 1}), "FitConfig")
    assert_rejects(lambda: fit(model, data, lambda b: {"ce": model(b).sum()}, cfg), "'loss'")
    nan = lambda b: {"loss": model(b).sum() * float("nan")}  # noqa: E731
    assert_rejects(lambda: fit(model, data, nan, cfg), ["non-finite", "step 0"])


def test_loaders_name_bad_sizes_and_images_that_do_not_ship():
    for size in (0, 5, "32"):
        assert_rejects(lambda s=size: load_data(s), "size")
    assert_rejects(lambda: load_data(32, -1.0), "flat_std")
    assert_rejects(lambda: load_image(3), "name")
    assert_rejects(lambda: load_image("nope"), "nope")
    assert_rejects(lambda: load_image("download_all"), "download_all")  # not an image
    assert_rejects(lambda: load_image("sklearn:nope.jpg"), "nope.jpg")


def test_configs_and_models_name_bad_sizes_and_parts():
    assert_rejects(lambda: TokenizerConfig(channels=0), "channels")
    assert_rejects(lambda: VARConfig(d_model=-1), "d_model")
    assert_rejects(lambda: MultiScaleRQ("x"), "TokenizerConfig")
    assert_rejects(lambda: VARTransformer("tok"), "MultiScaleRQ")
    assert_rejects(lambda: VARTransformer(MultiScaleRQ(), {"d_model": 64}), "VARConfig")


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from icml26.testing.strategies import (  # noqa: E402
    empty,
    non_finite,
    out_of_range,
    wrong_dtype,
    wrong_rank,
)
from icml26.varsr.data import RANGE_SLACK  # noqa: E402

DRAWS = settings(max_examples=25, deadline=None)


def _in_unit_range(x: torch.Tensor) -> torch.Tensor:
    """The finite pixels moved into (0, 1), NaN / inf kept: each draw then breaks only the rule
    its strategy is about (a randn image would be refused for its range first)."""
    return torch.where(torch.isfinite(x), x.sigmoid(), x)


def _filled(v: float) -> torch.Tensor:
    return torch.full((3, 4, 4), v, dtype=torch.float64)  # float64: no overflow at 1e300


BAD_IMAGES = st.one_of(
    non_finite((None, 3, 4, 4)).map(_in_unit_range),
    non_finite((3, 4, 4)).map(_in_unit_range),
    wrong_dtype((3, 4, 4)),
    empty((None, 3, 4, 4)),
    wrong_rank((None, 3, 4, 4)).filter(lambda x: x.ndim == 5).map(_in_unit_range),
    out_of_range(-RANGE_SLACK, 1 + RANGE_SLACK).map(_filled),
)


@DRAWS
@given(image=BAD_IMAGES)
def test_every_image_entry_point_names_a_bad_image(image):
    assert_rejects(lambda: upscale(ESPCN(), image), "lr")
    assert_rejects(lambda: ESPCN()(image), "lr")
    assert_rejects(lambda: downsample(image, 2), "image")
    assert_rejects(lambda: bicubic_up(image, 2), "image")
    assert_rejects(lambda: check_image(image, "hr"), "hr")
    assert_rejects(lambda: MultiScaleRQ(TokenizerConfig()).encode(image), "x")


@DRAWS
@given(scale=out_of_range(1, None, integer=True), count=out_of_range(1, None, integer=True))
def test_every_bad_scale_tile_and_batch_is_named(scale, count):
    image = torch.rand(3, 8, 8)
    assert_rejects(lambda: bicubic_up(image, scale), "scale")
    assert_rejects(lambda: downsample(image, scale), "scale")
    assert_rejects(lambda: upscale(ESPCN(), image, batch=count), "batch")
    assert_rejects(lambda: upscale(ESPCN(), image, tile=count), "tile")


def test_float64_images_run_in_the_models_dtype():
    out = upscale(ESPCN(), torch.rand(3, 8, 8, dtype=torch.float64))  # was a raw conv error
    assert out.shape == (1, 3, 32, 32) and out.dtype == torch.float32
