"""StreamFlow's pipeline ("stream") batching with a static ring buffer.

N in-flight samples sit at stages 0..N-1. ``push(noise)`` puts fresh noise into a free slot at
stage 0, runs ONE model call over all N slots with per-sample time steps, takes every sample one
step further, and returns the sample that just left stage N-1 (``None`` while the pipeline
fills). M images cost M + N - 1 model calls instead of M N; the first image arrives after N calls.

The buffer is preallocated and slots never move. Which slot holds which stage is decided on the
host (a Python list mirrors the device's (N,) stage vector), and the device vector is updated by
device ops only, so a push never waits for the device: no ``.item()``, no ``nonzero``, no
device-to-host copy. Every call has the same shapes, so ``backend="compile"`` (``torch.compile``)
or ``"cudagraph"`` (CUDA graphs through torch.compile's "reduce-overhead" mode) replays one
static graph. Classifier-free guidance runs the conditional and unconditional branches as one
batch of 2N and combines them before the step.
"""

import copy
from collections.abc import Callable, Mapping
from typing import Literal

import torch
from torch import nn

from icml26.streamflow.scheduler import BatchedFlowScheduler

Denoiser = Callable[..., torch.Tensor]
Condition = torch.Tensor | Mapping[str, torch.Tensor]
_TENSOR = "\0tensor"  # the key a bare-tensor condition is stored under


def _check_latent(x, shape, name: str = "noise") -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if tuple(x.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(x.shape)}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
    # Reading a device tensor's values would make the push wait for the device: only host
    # inputs are scanned here (device inputs come from the user's own device code).
    if x.device.type == "cpu" and not torch.isfinite(x).all():
        raise ValueError(f"{name} contains NaN or inf")
    return x


def _as_dict(c: Condition | None, name: str) -> dict[str, torch.Tensor] | None:
    if c is None:
        return None
    if isinstance(c, torch.Tensor):
        return {_TENSOR: c}
    if isinstance(c, Mapping) and c and all(isinstance(v, torch.Tensor) for v in c.values()):
        return dict(c)
    raise TypeError(
        f"{name} must be a tensor or a non-empty dict of tensors, got {type(c).__name__}"
    )


def _unwrap(c: dict[str, torch.Tensor] | None):
    if c is None:
        return None
    return c[_TENSOR] if set(c) == {_TENSOR} else c


class StreamPipeline:
    """Stream batching of a flow denoiser over ``num_steps`` steps.

    Args:
        model: ``f(x (B, *latent_shape), t (B,), cond=None) -> model output`` (diffusers models:
            wrap them in :class:`DiffusersDenoiser`, or build the whole stream with
            :func:`from_pipe`). ``cond`` is a (B, ...) tensor or a dict of them.
        latent_shape: (C, H, W) of one sample.
        num_steps: N, the sampling steps = the number of in-flight samples.
        guidance_scale: classifier-free guidance weight (needs ``uncond``, shaped like one
            condition); None: no guidance.
        backend: ``"eager"``, ``"compile"`` (torch.compile of the fused step) or ``"cudagraph"``.
        device: where the ring buffer lives; None: the model's device (its first parameter's, for
            an ``nn.Module``), else the CPU.
        dtype: the buffer's dtype (default: the model's floating dtype, else float32).
        condition: a condition used for every sample (one prompt for the whole stream); a
            per-push ``condition`` overrides it for that sample.
        uncond: the unconditional condition for guidance, shaped like one condition.
        decode: applied to every emitted latent: a callable, or a diffusers VAE (wrapped in
            :class:`~icml26.streamflow.adapters.VaeDecoder`, which applies its scaling factors).
        scheduler: a :class:`BatchedFlowScheduler` (default: diffusers' flow-matching Euler
            schedule with ``num_steps`` steps) or :class:`PeRFlowWindows`.
    """

    def __init__(
        self,
        model: Denoiser,
        latent_shape,
        num_steps: int,
        guidance_scale: float | None = None,
        backend: Literal["eager", "compile", "cudagraph"] = "eager",
        device: str | torch.device | None = None,
        dtype: torch.dtype | None = None,
        uncond: Condition | None = None,
        decode: Callable | None = None,
        scheduler=None,
        condition: Condition | None = None,
    ):
        if backend not in ("eager", "compile", "cudagraph"):
            raise ValueError(f"backend must be eager, compile or cudagraph, got {backend!r}")
        if device is None:
            device = model_device(model)
        if backend == "cudagraph" and torch.device(device).type != "cuda":
            raise ValueError("backend='cudagraph' needs a CUDA device")
        if guidance_scale is not None and uncond is None:
            raise ValueError("guidance_scale needs the unconditional embedding `uncond`")
        self.scheduler = (scheduler or BatchedFlowScheduler(num_steps)).to(device)
        if self.scheduler.num_steps != num_steps:
            raise ValueError(
                f"the scheduler has {self.scheduler.num_steps} steps, num_steps={num_steps}"
            )
        channels = _latent_channels(model)
        if channels is not None and tuple(latent_shape)[:1] != (channels,):
            raise ValueError(f"latent_shape {tuple(latent_shape)} must start with the model's "
                             f"{channels} latent channels")  # fmt: skip
        self.model, self.N = model, num_steps
        self.shape, self.device = tuple(latent_shape), torch.device(device)
        self.dtype = dtype or model_dtype(model)
        self.guidance_scale, self.decode = guidance_scale, as_decoder(decode)
        self.latents = torch.zeros(self.N, *self.shape, device=self.device, dtype=self.dtype)
        # The device's stage per slot (-1: empty), and its host mirror: the host decides which
        # slot is free or finished without reading the device.
        self.stage = torch.full((self.N,), -1, dtype=torch.long, device=self.device)
        self._stage = [-1] * self.N
        self._default = self._one(_as_dict(condition, "condition"), "condition")
        self._uncond = self._one(_as_dict(uncond, "uncond"), "uncond")
        self.cond: dict[str, torch.Tensor] | None = None  # (N, ...) per-slot conditions
        if self._default is not None:
            self.cond = {k: v.expand(self.N, *v.shape).clone() for k, v in self._default.items()}
        self._uncond_batch = None
        if self._uncond is not None:
            self._uncond_batch = {
                k: v.expand(self.N, *v.shape).clone() for k, v in self._uncond.items()
            }
        self.calls = 0
        self._step = self._fused_step
        if backend == "compile":
            self._step = torch.compile(self._fused_step, dynamic=False)
        elif backend == "cudagraph":
            # torch.compile's "reduce-overhead" mode records the static step as a CUDA graph and
            # replays it; the ring buffer's fixed shapes are what make that possible.
            self._step = torch.compile(self._fused_step, mode="reduce-overhead", dynamic=False)
        self.backend = backend

    def _one(self, c, name):
        """One condition (no batch dim) on the buffer's device; floats in the buffer's dtype."""
        if c is None:
            return None
        return {
            k: v.to(self.device, self.dtype if v.is_floating_point() else v.dtype)
            for k, v in c.items()
        }

    # One model call over all slots + the step: the unit that compile / cudagraph capture.
    def _fused_step(self, latents, stage, cond, uncond):
        active = stage >= 0
        k = stage.clamp(0, self.N - 1)
        t = self.scheduler.timestep(k)
        if self.guidance_scale is None:
            c = _unwrap(cond)
            out = self.model(latents, t, c) if c is not None else self.model(latents, t)
        else:
            both = {key: torch.cat([cond[key], uncond[key]]) for key in cond}
            out = self.model(torch.cat([latents, latents]), torch.cat([t, t]), _unwrap(both))
            o_c, o_u = out.chunk(2)
            out = o_u + self.guidance_scale * (o_c - o_u)
        nxt = self.scheduler.step(out.to(latents.dtype), k, latents)
        # Empty slots (filling or draining) are computed and discarded: every call keeps one shape.
        return torch.where(active.view(-1, *([1] * len(self.shape))), nxt, latents)

    def push(
        self,
        noise: torch.Tensor | None,
        condition: Condition | None = None,
        image: torch.Tensor | None = None,
    ):
        """Add one sample and advance every sample one step; return the sample that finished
        (decoded if a decoder was given), else None.

        Args:
            noise: (C, H, W) noise for the new sample, or None to only advance (drain).
            condition: this sample's condition (a tensor or dict, no batch dimension); default:
                the pipeline's ``condition``.
            image: image-to-image: the (C, H, W) latent to start from; the new sample starts at
                the schedule's first sigma, ``sigma_0 noise + (1 - sigma_0) image``.

        A push never reads device memory: it returns before the device finishes when the noise,
        image and condition already live on the buffer's device.
        """
        if noise is not None:
            noise = _check_latent(noise, self.shape)
            slot = self._stage.index(-1)  # a free slot always exists: the last push freed one
            x = noise.to(self.device, self.dtype)
            if image is not None:
                x = self.scheduler.scale_noise(
                    _check_latent(image, self.shape, "image").to(self.device, self.dtype), x
                )
            self.latents[slot].copy_(x)
            self._set_condition(slot, condition)
            self.stage[slot : slot + 1].fill_(0)  # a fill kernel: no read, no host tensor
            self._stage[slot] = 0
        elif condition is not None or image is not None:
            raise ValueError("condition and image need noise (push(None) only advances)")
        if max(self._stage) < 0:
            return None
        with torch.no_grad():
            self.latents.copy_(self._step(self.latents, self.stage, self.cond, self._uncond_batch))
        self.calls += 1
        out, last = None, self.N - 1
        done = self._stage.index(last) if last in self._stage else None
        if done is not None:
            out = self.latents[done].clone()
        # Advance every sample, on the device by device ops and on the host mirror alike.
        self.stage.add_((self.stage >= 0).long())
        self._stage = [s + 1 if s >= 0 else s for s in self._stage]
        if done is not None:  # freed: the next push reuses it, so N slots always suffice
            self.stage[done : done + 1].fill_(-1)
            self._stage[done] = -1
        if out is not None and self.decode is not None:
            with torch.no_grad():
                out = self.decode(out[None])[0]
        return out

    def _set_condition(self, slot: int, condition: Condition | None) -> None:
        c = self._one(_as_dict(condition, "condition"), "condition")
        if c is None:
            c = self._default
        if c is None:
            if self.guidance_scale is not None or self.cond is not None:
                raise ValueError(
                    "this stream is conditional: push a condition, or give the pipeline a "
                    "`condition` for every sample"
                )
            return
        if self._uncond is not None and set(c) != set(self._uncond):
            raise ValueError(
                f"condition has keys {sorted(c)} but uncond has {sorted(self._uncond)}"
            )
        if self.cond is None:
            if max(self._stage) >= 0:
                raise ValueError("an unconditional sample is already in flight")
            self.cond = {k: v.new_zeros(self.N, *v.shape) for k, v in c.items()}
        if set(c) != set(self.cond):
            raise ValueError(f"condition keys {sorted(c)} differ from earlier {sorted(self.cond)}")
        for k, v in c.items():
            if v.shape != self.cond[k].shape[1:]:
                raise ValueError(
                    f"condition[{k!r}] must have shape {tuple(self.cond[k].shape[1:])}, got "
                    f"{tuple(v.shape)}"
                )
            self.cond[k][slot].copy_(v)

    def reset(self) -> None:
        """Drop every in-flight sample (the buffer, compiled graphs and conditions stay)."""
        self.stage.fill_(-1)
        self._stage = [-1] * self.N

    def flush(self) -> list[torch.Tensor]:
        """Advance without new input until every in-flight sample is out (in order)."""
        outs = []
        while max(self._stage) >= 0:
            o = self.push(None)
            if o is not None:
                outs.append(o)
        return outs

    def generate(
        self,
        noises: torch.Tensor,
        conditions: Condition | None = None,
        images: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Stream ``noises`` (M, C, H, W) through the pipeline; returns (M, ...) in input order.
        ``conditions``: (M, ...) tensor or dict of them; ``images``: (M, C, H, W) latents for
        image-to-image."""
        if not isinstance(noises, torch.Tensor):  # a list would be reported as shape ()
            shape = ", ".join(map(str, self.shape))
            raise TypeError(f"noises must be a torch.Tensor (M, {shape}), got "
                            f"{type(noises).__name__}")  # fmt: skip
        if tuple(noises.shape[1:]) != self.shape:
            raise ValueError(
                f"noises must be (M, {', '.join(map(str, self.shape))}), got "
                f"{tuple(getattr(noises, 'shape', ()))}"
            )
        if len(noises) == 0:
            raise ValueError("noises holds no samples: pass (M, ...) with M >= 1")
        _check_latent(noises, (len(noises), *self.shape), "noises")  # dtype, NaN / inf
        if max(self._stage) >= 0:
            raise ValueError("samples are in flight: flush() or reset() before generate()")
        conds = _as_dict(conditions, "conditions")
        for name, v in ((conds or {}) | {"images": images}).items():
            if v is not None and len(v) != len(noises):
                raise ValueError(f"{name!r} must have {len(noises)} rows, got {len(v)}")
        outs = []
        for i, z in enumerate(noises):
            c = None if conds is None else _unwrap({k: v[i] for k, v in conds.items()})
            o = self.push(z, c, None if images is None else images[i])
            if o is not None:
                outs.append(o)
        outs += self.flush()
        return torch.stack(outs)

    def warmup(self, calls: int = 2) -> None:
        """Run the static step a few times (compiles, records graphs) without touching the
        state; needs the conditions a push would have (the default ``condition``)."""
        latents = self.latents.clone()
        stage = torch.arange(self.N, device=self.device)
        with torch.no_grad():
            for _ in range(calls):
                self._step(latents, stage, self.cond, self._uncond_batch)


class VaeDecoder(nn.Module):
    """``z (B, C, h, w) latents -> images (B, 3, H, W)`` in [-1, 1] through a diffusers VAE
    (``AutoencoderKL``, ``AutoencoderTiny``, ...): ``vae.decode(z / scaling_factor +
    shift_factor)`` as diffusers pipelines do, in the VAE's dtype. A float16 VAE whose config
    says ``force_upcast`` (SD 1.5's and SDXL's AutoencoderKL, whose decoders overflow in half
    precision) decodes through a float32 copy, as diffusers' pipelines upcast it; the images come
    back in the latents' dtype."""

    def __init__(self, vae: nn.Module):
        super().__init__()
        if not hasattr(vae, "decode"):
            raise TypeError(f"vae must have a decode method, got {type(vae).__name__}")
        config = getattr(vae, "config", {})
        self.upcast = bool(config.get("force_upcast", False)) and model_dtype(vae) == torch.float16
        # A copy: the caller's VAE stays as it was (diffusers upcasts the pipeline's own).
        self.vae = copy.deepcopy(vae).float() if self.upcast else vae
        self.scaling = float(config.get("scaling_factor", None) or 1.0)
        self.shift = float(config.get("shift_factor", None) or 0.0)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        x = z.to(model_dtype(self.vae))
        out = self.vae.decode(x / self.scaling + self.shift, return_dict=False)[0]
        return out.to(z.dtype) if self.upcast else out


def as_decoder(decode):
    if decode is None or not hasattr(decode, "decode") or not hasattr(decode, "config"):
        return decode
    return VaeDecoder(decode)


def _latent_channels(model) -> int | None:
    """The latent channels a diffusers denoiser (bare or wrapped) takes, None when it does not
    say (a plain callable); Flux's ``in_channels`` counts its packed 2 x 2 patches."""
    inner = getattr(model, "model", model)
    channels = getattr(getattr(inner, "config", None), "in_channels", None)
    if not isinstance(channels, int):
        return None
    return channels // 4 if getattr(model, "family", None) == "flux" else channels


def model_device(model) -> torch.device:
    """The device of a denoiser: its first parameter's for an ``nn.Module``, else the CPU."""
    p = next(model.parameters(), None) if isinstance(model, nn.Module) else None
    return p.device if p is not None else torch.device("cpu")


def model_dtype(model) -> torch.dtype:
    """The floating dtype of a denoiser's first floating parameter, else float32."""
    if isinstance(model, nn.Module):
        for p in model.parameters():
            if p.is_floating_point():
                return p.dtype
    return torch.float32
