"""diffusers models, VAEs and pipelines in the stream.

``DiffusersDenoiser`` gives every supported denoiser family the stream's signature
``f(x (B, C, H, W), t (B,), cond) -> model output``: each family is called the way its diffusers
pipeline calls it (argument names, time scaling, pooled projections, Flux's packed latents and
embedded guidance). ``VaeDecoder`` / ``encode_image`` apply a VAE's scaling and shift factors.
``from_pipe`` builds a :class:`StreamPipeline` from a loaded diffusers pipeline.
"""

from collections.abc import Mapping

import numpy as np
import torch
from torch import nn

from icml26.streamflow.pipeline import StreamPipeline, VaeDecoder, model_device, model_dtype
from icml26.streamflow.scheduler import BatchedFlowScheduler, PeRFlowWindows, flux_mu

__all__ = ["DiffusersDenoiser", "VaeDecoder", "encode_image", "from_pipe"]

# diffusers class name -> family; subclasses are matched through their MRO.
FAMILIES = {
    "UNet2DModel": "unet",
    "UNet2DConditionModel": "unet_cond",
    "DiTTransformer2DModel": "dit",
    "SD3Transformer2DModel": "sd3",
    "FluxTransformer2DModel": "flux",
}
# The condition keys each family takes; a bare tensor condition is the first.
COND_KEYS = {
    "unet": ("class_labels",),
    "unet_cond": ("encoder_hidden_states", "text_embeds", "time_ids"),
    "dit": ("class_labels",),
    "sd3": ("encoder_hidden_states", "pooled_projections"),
    "flux": ("encoder_hidden_states", "pooled_projections"),
}
REQUIRED = {
    "unet": (),
    "unet_cond": ("encoder_hidden_states",),
    "dit": ("class_labels",),
    "sd3": ("encoder_hidden_states", "pooled_projections"),
    "flux": ("encoder_hidden_states", "pooled_projections"),
}


def family_of(model: nn.Module) -> str:
    """The family of a diffusers denoiser (``unet``, ``unet_cond``, ``dit``, ``sd3``, ``flux``)."""
    for cls in type(model).__mro__:
        if cls.__name__ in FAMILIES:
            return FAMILIES[cls.__name__]
    raise TypeError(
        f"{type(model).__name__} is not a supported diffusers denoiser (supported: "
        f"{', '.join(FAMILIES)}); any other model can stream through a function "
        "f(x, t, cond=None) -> output of your own"
    )


class DiffusersDenoiser(nn.Module):
    """A diffusers denoiser as ``f(x (B, C, H, W), t (B,), cond=None) -> output (B, C, H, W)``.

    ``t`` is the schedule's time (``1000 sigma`` for flow matching). ``cond`` is a tensor (the
    family's main condition: ``encoder_hidden_states``, or ``class_labels`` for DiT and
    ``UNet2DModel``) or a dict with the family's keys:

    - ``UNet2DModel``: optional ``class_labels``;
    - ``UNet2DConditionModel`` (SD 1.5 / 2.1 / SDXL): ``encoder_hidden_states``, and SDXL's
      ``text_embeds`` and ``time_ids`` (its ``added_cond_kwargs``);
    - ``DiTTransformer2DModel``: ``class_labels``; a learned-sigma output keeps its first half;
    - ``SD3Transformer2DModel``: ``encoder_hidden_states`` and ``pooled_projections``;
    - ``FluxTransformer2DModel``: ``encoder_hidden_states`` and ``pooled_projections``; the
      latents are packed into 2x2 patches and back, time goes in as ``t / 1000``, and
      ``guidance`` (Flux-dev's embedded guidance, default 3.5) when the model embeds it.
    """

    def __init__(self, model: nn.Module, guidance: float | None = None):
        super().__init__()
        self.family = family_of(model)
        self.model = model
        cfg = getattr(model, "config", {})
        self.embeds_guidance = self.family == "flux" and bool(cfg.get("guidance_embeds", False))
        if guidance is not None and not self.embeds_guidance:
            raise ValueError("guidance is Flux's embedded guidance; this model does not embed it")
        self.guidance = (
            (3.5 if guidance is None else float(guidance)) if self.embeds_guidance else None
        )
        self._ids: dict = {}

    def _cond(self, cond) -> dict:
        keys = COND_KEYS[self.family]
        if cond is None:
            c = {}
        elif isinstance(cond, torch.Tensor):
            c = {keys[0]: cond}
        elif isinstance(cond, Mapping):
            c = dict(cond)
            unknown = set(c) - set(keys)
            if unknown:
                raise ValueError(
                    f"{type(self.model).__name__} takes condition keys {keys}, got "
                    f"{sorted(unknown)}"
                )
        else:
            raise TypeError(f"cond must be a tensor or a dict, got {type(cond).__name__}")
        missing = [k for k in REQUIRED[self.family] if k not in c]
        if missing:
            raise ValueError(f"{type(self.model).__name__} needs the condition keys {missing}")
        return c

    def forward(self, x: torch.Tensor, t: torch.Tensor, cond=None) -> torch.Tensor:
        c, m = self._cond(cond), self.model
        if self.family == "unet":
            return m(x, t, class_labels=c.get("class_labels"), return_dict=False)[0]
        if self.family == "unet_cond":
            added = {k: c[k] for k in ("text_embeds", "time_ids") if k in c} or None
            return m(
                x,
                t,
                encoder_hidden_states=c["encoder_hidden_states"],
                added_cond_kwargs=added,
                return_dict=False,
            )[0]
        if self.family == "dit":
            out = m(x, timestep=t, class_labels=c["class_labels"], return_dict=False)[0]
            return out[:, : x.shape[1]]  # learned sigma: the second half is the variance
        if self.family == "sd3":
            return m(
                hidden_states=x,
                timestep=t,
                encoder_hidden_states=c["encoder_hidden_states"],
                pooled_projections=c["pooled_projections"],
                return_dict=False,
            )[0]
        return self._flux(x, t, c)

    def _flux(self, x, t, c):
        B, C, H, W = x.shape
        if H % 2 or W % 2:
            raise ValueError(f"Flux latents need an even height and width, got {H}x{W}")
        packed = x.view(B, C, H // 2, 2, W // 2, 2).permute(0, 2, 4, 1, 3, 5)
        packed = packed.reshape(B, (H // 2) * (W // 2), C * 4)
        text = c["encoder_hidden_states"]
        img_ids, txt_ids = self._flux_ids(H // 2, W // 2, text.shape[1], x.device, x.dtype)
        guidance = None
        if self.embeds_guidance:
            guidance = torch.full((B,), self.guidance, device=x.device, dtype=torch.float32)
        out = self.model(
            hidden_states=packed,
            timestep=t.to(x.dtype) / 1000,  # as FluxPipeline: in the latents' dtype
            guidance=guidance,
            pooled_projections=c["pooled_projections"],
            encoder_hidden_states=text,
            txt_ids=txt_ids,
            img_ids=img_ids,
            return_dict=False,
        )[0]
        out = out.view(B, H // 2, W // 2, C, 2, 2).permute(0, 3, 1, 4, 2, 5)
        return out.reshape(B, C, H, W)

    def _flux_ids(self, h, w, text_len, device, dtype):
        # Flux's rotary position ids: (row, column) per image token, zeros per text token;
        # built once per shape (the stream's shape never changes).
        key = (h, w, text_len, device, dtype)
        if key not in self._ids:  # made on the device: no tensor is built from host data
            ids = torch.zeros(h, w, 3, device=device, dtype=dtype)
            ids[..., 1] += torch.arange(h, device=device, dtype=dtype)[:, None]
            ids[..., 2] += torch.arange(w, device=device, dtype=dtype)[None, :]
            self._ids[key] = (
                ids.reshape(h * w, 3),
                torch.zeros(text_len, 3, device=device, dtype=dtype),
            )
        return self._ids[key]


def encode_image(
    vae: nn.Module, images: torch.Tensor, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Images (B, 3, H, W) in [-1, 1] -> the latents a stream samples in (image-to-image):
    ``(latent - shift_factor) * scaling_factor``, the latent being the posterior's mode, or a
    draw from it with ``generator`` (as diffusers' image-to-image pipelines draw)."""
    if not hasattr(vae, "encode"):
        raise TypeError(f"vae must be a diffusers VAE with an encode method, got {type(vae)}")
    if not isinstance(images, torch.Tensor) or images.dim() != 4:
        raise ValueError(f"images must be (B, 3, H, W), got {getattr(images, 'shape', images)}")
    if not images.is_floating_point() or not bool(torch.isfinite(images).all()):
        raise ValueError("images must be finite floats in [-1, 1]")
    if images.amin() < -1.001 or images.amax() > 1.001:
        raise ValueError(
            f"images must lie in [-1, 1] (got [{images.amin():.3g}, {images.amax():.3g}]; "
            "map uint8 pixels with x / 127.5 - 1)"
        )
    out = vae.encode(images.to(model_device(vae), model_dtype(vae)))
    if hasattr(out, "latent_dist"):
        dist = out.latent_dist
        latents = dist.mode() if generator is None else dist.sample(generator)
    else:  # AutoencoderTiny: deterministic latents
        latents = out.latents
    scaling = float(vae.config.get("scaling_factor", None) or 1.0)
    shift = float(vae.config.get("shift_factor", None) or 0.0)
    return (latents - shift) * scaling


def _first(x, name):
    if x is None:
        return None
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a tensor, got {type(x).__name__}")
    return x[0] if x.dim() >= 1 and x.shape[0] == 1 else x


def from_pipe(
    pipe,
    num_steps: int,
    height: int | None = None,
    width: int | None = None,
    prompt: str | None = None,
    negative_prompt: str | None = None,
    prompt_embeds: torch.Tensor | None = None,
    pooled_prompt_embeds: torch.Tensor | None = None,
    negative_prompt_embeds: torch.Tensor | None = None,
    negative_pooled_prompt_embeds: torch.Tensor | None = None,
    guidance_scale: float | None = None,
    strength: float = 1.0,
    sigmas=None,
    decode: bool = True,
    backend: str = "eager",
) -> StreamPipeline:
    """A stream over a loaded diffusers pipeline: its denoiser (``transformer`` or ``unet``), its
    scheduler's schedule and its VAE.

    Args:
        pipe: a diffusers pipeline with a flow-matching scheduler (``FlowMatchEulerDiscrete``:
            SD3, Flux, flow UNets) or a PeRFlow scheduler (PeRFlow-accelerated SD).
        num_steps: sampling steps of the schedule (with ``strength`` < 1 the stream runs the
            last of them as diffusers' image-to-image pipelines do: ``num_steps -
            int(num_steps - num_steps * strength)`` for SD3 and Flux, ``int(num_steps *
            strength)`` for PeRFlow's Stable Diffusion models).
        height, width: image size in pixels (default: the model's sample size).
        prompt / negative_prompt: encoded once with ``pipe.encode_prompt``; or give the
            embeddings (``prompt_embeds``, ``pooled_prompt_embeds`` and their negatives, batch 1).
        guidance_scale: SD / SD3: classifier-free guidance weight (> 1 runs both branches);
            Flux: the embedded guidance of guidance-distilled models.
        strength: image-to-image: push ``image=`` latents (see :func:`encode_image`); 1.0 is
            text-to-image.
        sigmas: custom sigmas (flow-matching schedulers; Flux's default is
            ``linspace(1, 1 / num_steps, num_steps)`` as in its pipeline).
        decode: decode every emitted latent with the pipeline's VAE.
    """
    model = getattr(pipe, "transformer", None) or getattr(pipe, "unet", None)
    if model is None:
        raise TypeError(f"{type(pipe).__name__} has neither a transformer nor a unet")
    family = family_of(model)
    if not 0.0 < strength <= 1.0:
        raise ValueError(f"strength must be in (0, 1], got {strength}")
    vae = getattr(pipe, "vae", None)
    (channels, h, w), pixels = _latent_shape(pipe, model, family, vae, height, width)
    total = num_steps
    scheduler = _scheduler(pipe.scheduler, family, total, sigmas, (h // 2) * (w // 2))
    if isinstance(scheduler, PeRFlowWindows):
        # Stable Diffusion's img2img (PeRFlow's models are SD): keep int(n strength) steps.
        skip = total - min(int(total * strength), total)
    else:  # SD3's and Flux's img2img: skip int(n - n strength) steps
        skip = int(max(total - min(total * strength, total), 0))
    if skip >= total:
        raise ValueError(f"strength {strength} leaves no step of {total}")
    if skip:
        scheduler.drop_first(skip)
    remaining = total - skip

    cfg = family != "flux" and guidance_scale is not None and guidance_scale > 1.0
    embeds = (prompt_embeds, pooled_prompt_embeds, negative_prompt_embeds,
              negative_pooled_prompt_embeds)  # fmt: skip
    condition, uncond = _conditions(
        pipe, model, family, prompt, negative_prompt, cfg, embeds, pixels
    )
    denoiser = DiffusersDenoiser(
        model, guidance=guidance_scale if family == "flux" and guidance_scale is not None else None
    )
    return StreamPipeline(
        denoiser,
        (channels, h, w),
        remaining,
        guidance_scale=guidance_scale if cfg else None,
        backend=backend,
        uncond=uncond,
        condition=condition,
        decode=VaeDecoder(vae) if decode and vae is not None else None,
        scheduler=scheduler,
    )


def _latent_shape(pipe, model, family: str, vae, height, width):
    """((channels, h, w) of the latents, (height, width) in pixels) for an image of height x
    width pixels (default: the model's sample size); Flux's latents are packed 2 x 2."""
    vsf = getattr(pipe, "vae_scale_factor", None) or (
        2 ** (len(vae.config.block_out_channels) - 1) if vae is not None else 1
    )
    sample = model.config.get("sample_size", None)
    if isinstance(sample, list | tuple):
        sample = sample[0]
    height = height or (sample * vsf if sample else None)
    width = width or height
    if not height or not width:
        raise ValueError("pass height and width (the model does not say its sample size)")
    channels = model.config.in_channels
    if family == "flux":
        channels //= 4  # Flux's in_channels counts the packed 2x2 patch
        latent = channels, 2 * (int(height) // (vsf * 2)), 2 * (int(width) // (vsf * 2))
        return latent, (int(height), int(width))
    return (channels, int(height) // vsf, int(width) // vsf), (int(height), int(width))


def _conditions(pipe, model, family: str, prompt, negative_prompt, cfg: bool, embeds, pixels):
    """The denoiser's condition and (with classifier-free guidance) unconditional inputs, from
    a prompt encoded once or from given embeddings (SDXL: with its pooled text embedding and
    micro-conditioning time ids)."""
    prompt_embeds, pooled, negative, negative_pooled = embeds
    if prompt is not None:
        if prompt_embeds is not None:
            raise ValueError("pass prompt or prompt_embeds, not both")
        prompt_embeds, pooled, negative, negative_pooled = _encode(
            pipe, family, prompt, negative_prompt, cfg, model_device(model)
        )
    condition = uncond = None
    time_ids = _sdxl_time_ids(model, pooled, pixels) if family == "unet_cond" else None
    if prompt_embeds is not None:
        condition = _condition(family, prompt_embeds, pooled, "", time_ids)
    if cfg:
        if negative is None:
            raise ValueError("classifier-free guidance needs negative_prompt_embeds (or a prompt)")
        uncond = _condition(family, negative, negative_pooled, "negative_", time_ids)
    return condition, uncond


def _sdxl_time_ids(model, pooled, pixels) -> torch.Tensor | None:
    """SDXL's micro-conditioning for an uncropped image generated at its own size:
    (original size, crop top-left, target size) = (H, W, 0, 0, H, W), as
    ``StableDiffusionXLPipeline`` builds it by default; None for a UNet without it."""
    cfg = model.config
    if cfg.get("addition_embed_type", None) != "text_time" or pooled is None:
        return None
    H, W = pixels
    ids = torch.tensor([H, W, 0, 0, H, W], dtype=torch.float32)
    expected = cfg.projection_class_embeddings_input_dim - pooled.shape[-1]
    if expected != len(ids) * cfg.addition_time_embed_dim:
        raise ValueError(
            "this SDXL-style UNet takes other time ids than (original size, crop, target size) "
            "(the refiner's aesthetic score?): give StreamPipeline the condition dict with "
            "encoder_hidden_states, text_embeds and time_ids yourself"
        )
    return ids.to(pooled.device)


def _scheduler(sched, family, num_steps, sigmas, image_seq_len):
    from diffusers import FlowMatchEulerDiscreteScheduler

    if "PeRFlow" in type(sched).__name__:
        if sigmas is not None:
            raise ValueError("sigmas apply to flow-matching schedulers, not PeRFlow windows")
        return PeRFlowWindows.from_scheduler(sched, num_steps)
    if not isinstance(sched, FlowMatchEulerDiscreteScheduler):
        raise TypeError(
            f"the stream needs a flow-matching scheduler (FlowMatchEulerDiscreteScheduler or "
            f"PeRFlow's); this pipeline has {type(sched).__name__}. Load the pipeline with "
            "scheduler=FlowMatchEulerDiscreteScheduler.from_config(...) if its model is a "
            "flow model"
        )
    mu = None
    if family == "flux" and sigmas is None:  # FluxPipeline's default schedule
        sigmas = np.linspace(1.0, 1 / num_steps, num_steps).tolist()
    if sched.config.get("use_dynamic_shifting", False):
        mu = flux_mu(image_seq_len, sched.config)
    return BatchedFlowScheduler.from_diffusers(sched, num_steps, sigmas=sigmas, mu=mu)


def _condition(family, embeds, pooled, prefix, time_ids=None) -> dict:
    embeds = _first(embeds, f"{prefix}prompt_embeds")
    if family in ("sd3", "flux"):
        if pooled is None:
            raise ValueError(f"{family} needs {prefix}pooled_prompt_embeds")
        return {"encoder_hidden_states": embeds, "pooled_projections": _first(pooled, "pooled")}
    if family == "unet_cond":
        if time_ids is not None:  # SDXL: the pooled embedding and the time ids join the text
            return {
                "encoder_hidden_states": embeds,
                "text_embeds": _first(pooled, f"{prefix}pooled_prompt_embeds"),
                "time_ids": time_ids,
            }
        return {"encoder_hidden_states": embeds}
    return {"class_labels": embeds}


def _encode(pipe, family, prompt, negative_prompt, cfg, device):
    """(embeds, pooled, negative embeds, negative pooled) from the pipeline's own encoder."""
    if not hasattr(pipe, "encode_prompt"):
        raise TypeError(f"{type(pipe).__name__} has no encode_prompt: pass prompt_embeds")
    if family == "flux":
        embeds, pooled, _ = pipe.encode_prompt(prompt=prompt, prompt_2=None, device=device)
        return embeds, pooled, None, None
    if family == "sd3":
        e, ne, p, np_ = pipe.encode_prompt(
            prompt=prompt,
            prompt_2=None,
            prompt_3=None,
            device=device,
            do_classifier_free_guidance=cfg,
            negative_prompt=negative_prompt,
        )
        return e, p, ne, np_
    if family == "unet_cond":
        if getattr(pipe.unet.config, "addition_embed_type", None) == "text_time":  # SDXL
            e, ne, p, np_ = pipe.encode_prompt(
                prompt=prompt,
                prompt_2=None,
                device=device,
                num_images_per_prompt=1,
                do_classifier_free_guidance=cfg,
                negative_prompt=negative_prompt,
            )
            return e, p, ne, np_
        e, ne = pipe.encode_prompt(
            prompt=prompt,
            device=device,
            num_images_per_prompt=1,
            do_classifier_free_guidance=cfg,
            negative_prompt=negative_prompt,
        )[:2]
        return e, None, ne, None
    raise TypeError(f"{family} models take no text prompt")
