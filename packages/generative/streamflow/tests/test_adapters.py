"""diffusers families in the stream, held to diffusers' own pipelines on tiny random models."""

import copy

import pytest
import torch
from diffusers import (
    AutoencoderKL,
    DDIMScheduler,
    DiTTransformer2DModel,
    FlowMatchEulerDiscreteScheduler,
    FluxPipeline,
    SD3Transformer2DModel,
    StableDiffusion3Img2ImgPipeline,
    StableDiffusion3Pipeline,
    UNet2DConditionModel,
)

from icml26.streamflow import (
    DiffusersDenoiser,
    StreamPipeline,
    VaeDecoder,
    encode_image,
    from_pipe,
    sequential_sample,
    unet,
)
from icml26.testing import assert_close

TOL = dict(atol=1e-5, rtol=1e-5)


def _vae():
    torch.manual_seed(0)
    return AutoencoderKL(
        down_block_types=("DownEncoderBlock2D",) * 2,
        up_block_types=("UpDecoderBlock2D",) * 2,
        block_out_channels=(8, 8),
        latent_channels=4,
        norm_num_groups=8,
        layers_per_block=1,
        sample_size=16,
        scaling_factor=1.5,
        shift_factor=0.1,  # SD3 / Flux VAEs shift; a non-zero one shows it is applied
    ).eval()


@pytest.fixture(scope="module")
def sd3_pipe():
    torch.manual_seed(0)
    sd3 = SD3Transformer2DModel(
        sample_size=8,
        patch_size=2,
        in_channels=4,
        num_layers=1,
        attention_head_dim=8,
        num_attention_heads=2,
        joint_attention_dim=16,
        caption_projection_dim=16,
        pooled_projection_dim=8,
        out_channels=4,
        pos_embed_max_size=16,
    ).eval()
    none = dict.fromkeys(
        [
            "text_encoder",
            "tokenizer",
            "text_encoder_2",
            "tokenizer_2",
            "text_encoder_3",
            "tokenizer_3",
        ]
    )
    return StableDiffusion3Pipeline(
        transformer=sd3, scheduler=FlowMatchEulerDiscreteScheduler(shift=3.0), vae=_vae(), **none
    )


@pytest.fixture
def flux_pipe(tiny_flux):
    sched = FlowMatchEulerDiscreteScheduler(use_dynamic_shifting=True)
    none = dict.fromkeys(["text_encoder", "tokenizer", "text_encoder_2", "tokenizer_2"])
    return FluxPipeline(scheduler=sched, vae=_vae(), transformer=tiny_flux(), **none)


def _embeds(seed=0, n=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 5, 16, generator=g), torch.randn(n, 8, generator=g)


def test_sd3_streams_through_from_pipe_like_its_pipeline(sd3_pipe):
    pe, pp = _embeds()
    ne, npp = _embeds(1)
    noise = torch.randn(5, 4, 8, 8, generator=torch.Generator().manual_seed(2))
    kw = dict(num_inference_steps=3, height=16, width=16, output_type="latent")
    for scale in (1.0, 3.0):  # without and with classifier-free guidance
        ref = sd3_pipe(
            prompt_embeds=pe.expand(5, -1, -1),
            pooled_prompt_embeds=pp.expand(5, -1),
            negative_prompt_embeds=ne.expand(5, -1, -1),
            negative_pooled_prompt_embeds=npp.expand(5, -1),
            latents=noise,
            guidance_scale=scale,
            **kw,
        ).images
        stream = from_pipe(
            sd3_pipe,
            3,
            height=16,
            width=16,
            prompt_embeds=pe,
            pooled_prompt_embeds=pp,
            negative_prompt_embeds=ne,
            negative_pooled_prompt_embeds=npp,
            guidance_scale=scale,
            decode=False,
        )
        assert stream.shape == (4, 8, 8) and stream.N == 3
        assert_close(stream.generate(noise), ref, **TOL)


def test_sd3_stream_decodes_with_the_vae_factors(sd3_pipe):
    pe, pp = _embeds()
    noise = torch.randn(2, 4, 8, 8, generator=torch.Generator().manual_seed(3))
    ref = sd3_pipe(
        prompt_embeds=pe.expand(2, -1, -1),
        pooled_prompt_embeds=pp.expand(2, -1),
        latents=noise,
        num_inference_steps=2,
        guidance_scale=1.0,
        height=16,
        width=16,
        output_type="pt",
    ).images  # in [0, 1]
    stream = from_pipe(sd3_pipe, 2, height=16, width=16, prompt_embeds=pe, pooled_prompt_embeds=pp)
    images = stream.generate(noise)
    assert images.shape == (2, 3, 16, 16)
    assert_close((images / 2 + 0.5).clamp(0, 1), ref, **TOL)


def test_flux_streams_through_from_pipe_like_its_pipeline(flux_pipe):
    pe, pp = _embeds()
    noise = torch.randn(5, 4, 8, 8, generator=torch.Generator().manual_seed(4))
    packed = FluxPipeline._pack_latents(noise, 5, 4, 8, 8)
    ref = flux_pipe(
        prompt_embeds=pe.expand(5, -1, -1),
        pooled_prompt_embeds=pp.expand(5, -1),
        latents=packed,
        num_inference_steps=3,
        guidance_scale=2.5,  # Flux-dev's embedded guidance
        height=16,
        width=16,
        output_type="latent",
    ).images
    ref = FluxPipeline._unpack_latents(ref, 16, 16, flux_pipe.vae_scale_factor)
    stream = from_pipe(
        flux_pipe, 3, height=16, width=16, prompt_embeds=pe, pooled_prompt_embeds=pp,
        guidance_scale=2.5, decode=False,
    )  # fmt: skip
    assert stream.shape == (4, 8, 8)
    assert_close(stream.generate(noise), ref, **TOL)


def test_image_to_image_follows_diffusers_img2img(sd3_pipe):
    pe, pp = _embeds()
    g = torch.Generator().manual_seed(5)
    image, noise = torch.randn(3, 4, 8, 8, generator=g), torch.randn(3, 4, 8, 8, generator=g)
    stream = from_pipe(
        sd3_pipe, 5, height=16, width=16, prompt_embeds=pe, pooled_prompt_embeds=pp,
        strength=0.5, decode=False,
    )  # fmt: skip
    out = stream.generate(noise, images=image)
    # diffusers' SD3 image-to-image pipeline chooses the steps; its scheduler noises and steps
    img2img = StableDiffusion3Img2ImgPipeline(**sd3_pipe.components)
    img2img.scheduler = FlowMatchEulerDiscreteScheduler(shift=3.0)
    img2img.scheduler.set_timesteps(5)
    ts, n = img2img.get_timesteps(5, 0.5, "cpu")
    assert stream.N == n == 3  # 5 - int(5 - 2.5)
    sched = img2img.scheduler
    x = sched.scale_noise(image, ts[:1], noise)
    f = DiffusersDenoiser(sd3_pipe.transformer)
    cond = {"encoder_hidden_states": pe.expand(3, -1, -1), "pooled_projections": pp.expand(3, -1)}
    with torch.no_grad():
        for t in ts:
            x = sched.step(f(x, t.expand(3), cond), t, x, return_dict=False)[0]
    assert_close(out, x, **TOL)


def test_encode_then_decode_uses_scaling_and_shift():
    vae = _vae()
    z = torch.randn(2, 4, 8, 8)
    with torch.no_grad():
        assert_close(VaeDecoder(vae)(z), vae.decode(z / 1.5 + 0.1).sample, **TOL)
        images = torch.rand(2, 3, 16, 16) * 2 - 1
        lat = vae.encode(images).latent_dist.mode()
        assert_close(encode_image(vae, images), (lat - 0.1) * 1.5, **TOL)


def test_unet_condition_and_dit_families_call_their_models():
    torch.manual_seed(0)
    sd = UNet2DConditionModel(
        sample_size=8,
        in_channels=4,
        out_channels=4,
        block_out_channels=(8, 16),
        layers_per_block=1,
        cross_attention_dim=12,
        norm_num_groups=8,
        attention_head_dim=4,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
    ).eval()
    x, t, e = torch.randn(3, 4, 8, 8), torch.tensor([900.0, 500.0, 100.0]), torch.randn(3, 7, 12)
    with torch.no_grad():
        f = DiffusersDenoiser(sd)
        assert f.family == "unet_cond"
        assert_close(f(x, t, e), sd(x, t, encoder_hidden_states=e).sample, **TOL)
        assert_close(f(x, t, {"encoder_hidden_states": e}), f(x, t, e), **TOL)
        dit = DiTTransformer2DModel(
            num_attention_heads=2, attention_head_dim=8, in_channels=4, out_channels=8,
            num_layers=1, sample_size=8, patch_size=2, num_embeds_ada_norm=10, norm_num_groups=8,
        ).eval()  # fmt: skip
        labels = torch.tensor([1, 2, 3])
        g = DiffusersDenoiser(dit)
        full = dit(x, timestep=t, class_labels=labels).sample
        assert_close(g(x, t, labels), full[:, :4], **TOL)  # learned sigma dropped


def test_unsupported_models_schedulers_and_conditions_get_clear_errors(sd3_pipe):
    with pytest.raises(TypeError, match="not a supported diffusers denoiser"):
        DiffusersDenoiser(torch.nn.Linear(2, 2))
    f = DiffusersDenoiser(sd3_pipe.transformer)
    x, t = torch.randn(1, 4, 8, 8), torch.tensor([500.0])
    with pytest.raises(ValueError, match="pooled_projections"):
        f(x, t, torch.randn(1, 5, 16))
    with pytest.raises(ValueError, match="condition keys"):
        f(x, t, {"encoder_hidden_states": torch.randn(1, 5, 16), "oops": x})
    with pytest.raises(ValueError, match="embedded guidance"):
        DiffusersDenoiser(unet("tiny", 8), guidance=3.0)

    class Pipe:
        transformer, vae, scheduler = sd3_pipe.transformer, None, DDIMScheduler()

    with pytest.raises(TypeError, match="flow-matching scheduler"):
        from_pipe(Pipe(), 2, height=16, width=16)
    with pytest.raises(ValueError, match="strength"):
        from_pipe(sd3_pipe, 2, height=16, width=16, strength=0.0)
    with pytest.raises(ValueError, match="negative_prompt_embeds"):
        pe, pp = _embeds()
        from_pipe(
            sd3_pipe, 2, height=16, width=16, prompt_embeds=pe, pooled_prompt_embeds=pp,
            guidance_scale=4.0,
        )  # fmt: skip
    conditional = StreamPipeline(f, (4, 8, 8), 2)
    conditional.push(torch.zeros(4, 8, 8), {"encoder_hidden_states": torch.zeros(5, 16),
                                            "pooled_projections": torch.zeros(8)})  # fmt: skip
    with pytest.raises(ValueError, match="conditional"):
        conditional.push(torch.zeros(4, 8, 8))  # no condition for a conditional stream


def test_prompts_are_encoded_once_with_the_pipelines_encoder(sd3_pipe, monkeypatch):
    pe, pp = _embeds()
    calls = []

    def encode_prompt(**kw):
        calls.append(kw)
        return pe, None, pp, None

    monkeypatch.setattr(sd3_pipe, "encode_prompt", encode_prompt, raising=False)
    stream = from_pipe(sd3_pipe, 2, height=16, width=16, prompt="a cat", decode=False)
    ref = from_pipe(
        sd3_pipe, 2, height=16, width=16, prompt_embeds=pe, pooled_prompt_embeds=pp, decode=False
    )
    noise = torch.randn(3, 4, 8, 8)
    assert len(calls) == 1 and calls[0]["prompt"] == "a cat"
    assert_close(stream.generate(noise), ref.generate(noise), atol=0, rtol=0)


def test_a_half_precision_vae_that_asks_for_upcast_decodes_in_float32():
    vae = _vae()
    half = copy.deepcopy(vae).half()
    dec = VaeDecoder(half)
    assert dec.upcast and next(half.parameters()).dtype == torch.float16  # the caller's is kept
    z = torch.randn(2, 4, 8, 8)
    with torch.no_grad():
        out = dec(z.half())
        ref = VaeDecoder(vae)(z.half().float())
    assert out.dtype == torch.float16
    assert_close(out.float(), ref, atol=2e-3, rtol=0)  # float32 decode, rounded once at the end
    half.register_to_config(force_upcast=False)
    assert not VaeDecoder(half).upcast


def test_sdxl_embeddings_get_the_pipelines_pooled_text_and_time_ids():
    from types import SimpleNamespace

    from diffusers import StableDiffusionXLPipeline

    torch.manual_seed(0)
    xl = UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, block_out_channels=(8, 16),
        layers_per_block=1, cross_attention_dim=12, norm_num_groups=8, attention_head_dim=4,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        addition_embed_type="text_time", addition_time_embed_dim=4,
        projection_class_embeddings_input_dim=6 * 4 + 10,
    ).eval()  # fmt: skip
    pipe = SimpleNamespace(
        unet=xl, vae=None, vae_scale_factor=8, scheduler=FlowMatchEulerDiscreteScheduler()
    )
    e, p = torch.randn(1, 7, 12), torch.randn(1, 10)
    ne, np_ = torch.randn(1, 7, 12), torch.randn(1, 10)
    stream = from_pipe(
        pipe, 2, height=64, width=48, prompt_embeds=e, pooled_prompt_embeds=p,
        negative_prompt_embeds=ne, negative_pooled_prompt_embeds=np_, guidance_scale=3.0,
        decode=False,
    )  # fmt: skip
    assert stream.shape == (4, 8, 6)
    # what StableDiffusionXLPipeline passes for a 64x48 image, uncropped
    ref_ids = StableDiffusionXLPipeline._get_add_time_ids(
        SimpleNamespace(unet=xl), (64, 48), (0, 0), (64, 48), torch.float32,
        text_encoder_projection_dim=10,
    )  # fmt: skip
    cond = stream._default
    assert_close(cond["time_ids"], ref_ids[0], **TOL)
    assert_close(cond["text_embeds"], p[0], **TOL)
    assert_close(stream._uncond["text_embeds"], np_[0], **TOL)
    noise = torch.randn(2, 4, 8, 6)
    out = stream.generate(noise)
    f = DiffusersDenoiser(xl)
    both = {k: torch.stack([cond[k], stream._uncond[k]]) for k in cond}
    ref = sequential_sample(
        f, noise, 2, {k: v[:1].expand(2, *v.shape[1:]) for k, v in both.items()},
        guidance_scale=3.0, uncond={k: v[1:].expand(2, *v.shape[1:]) for k, v in both.items()},
    )  # fmt: skip
    assert_close(out, ref, **TOL)
    with pytest.raises(ValueError, match="time ids"):
        from_pipe(
            SimpleNamespace(unet=xl, vae=None, vae_scale_factor=8,
                            scheduler=FlowMatchEulerDiscreteScheduler()),
            2, height=64, width=48, prompt_embeds=e, pooled_prompt_embeds=torch.randn(1, 9),
        )  # fmt: skip
