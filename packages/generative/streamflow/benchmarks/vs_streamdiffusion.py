"""StreamFlow's stream against StreamDiffusion's stream batch, on the same tiny text-to-image model.

StreamDiffusion (Kodaira et al. 2023, ``pip install streamdiffusion``) is the library people use
for real-time diffusion: its "stream batch" runs the N denoising steps of N frames in flight as
one batch per call, the same pipelining StreamFlow applies to flows. Both are timed here in one
process, interleaved round by round, on the demo's text-to-image model (a random
``UNet2DConditionModel`` on 4x8x8 latents, a (8, 32) prompt embedding, a tiny ``AutoencoderTiny``
decoding every finished image), one CPU thread, steady state (a full pipeline, one image out per
call, decode included):

- guided: StreamFlow with classifier-free guidance (a batch of 2N per call) against
  StreamDiffusion's ``cfg_type="full"`` (the same 2N batch);
- StreamDiffusion's ``cfg_type="self"`` (RCFG, its cheaper approximation: a batch of N) beside them;
- unguided: both with ``cfg_type="none"`` / no guidance (a batch of N).

streamdiffusion 0.1.1 pins ``diffusers==0.24.0``, which does not install beside this package's
own dependencies, so this runs in its own environment (the package imports under 0.24)::

    uv venv -p 3.11 /tmp/sdenv
    uv pip install --python /tmp/sdenv/bin/python streamdiffusion==0.1.1 "diffusers==0.24.0" \
        "huggingface_hub<0.26" "transformers<4.46" "numpy<2" torch
    uv pip install --python /tmp/sdenv/bin/python --no-deps -e shared/testing \
        -e packages/generative/streamflow
    /tmp/sdenv/bin/python packages/generative/streamflow/benchmarks/vs_streamdiffusion.py \
        --repeats 7 --out packages/generative/streamflow/benchmarks/vs_streamdiffusion.json

StreamDiffusion's prompt encoding is replaced by the model's fixed prompt embeddings (its
``prepare`` encodes the prompt once, outside the per-frame loop, so nothing timed changes), and
its scheduler is its own LCM scheduler, whose per-step arithmetic costs what a flow step costs
next to a UNet call. Neither side is compiled.
"""

import argparse
import json
import os
import platform
import tempfile
from pathlib import Path

import torch

from icml26.streamflow import BatchedFlowScheduler, DiffusersDenoiser, StreamPipeline
from icml26.streamflow.bench import _interleaved_min
from icml26.streamflow.model import text_to_image
from icml26.streamflow.pipeline import as_decoder


def flow_scheduler(N: int) -> BatchedFlowScheduler:
    """The stream's default schedule (diffusers' flow matching, shift 1). diffusers 0.24 predates
    ``FlowMatchEulerDiscreteScheduler``, so its tables are written out here: timesteps linear
    from 1000 to 1, sigmas = timesteps / 1000 and a terminal 0 (what that scheduler sets)."""
    try:
        return BatchedFlowScheduler(N)
    except ImportError:
        sched = BatchedFlowScheduler.__new__(BatchedFlowScheduler)
        sched.num_steps, sched.shift, sched.num_train_timesteps = N, 1.0, 1000
        sched.timesteps = torch.linspace(1000.0, 1.0, N)
        sched.sigmas = torch.cat([sched.timesteps / 1000, torch.zeros(1)])
        sched.dt = sched.sigmas[1:] - sched.sigmas[:-1]
        return sched


def streamdiffusion(unet, vae, cond, uncond, N: int, cfg_type: str, guidance: float):
    """A StreamDiffusion stream over the tiny model: stream batch on, N of 50 LCM steps."""
    from diffusers import LCMScheduler, StableDiffusionPipeline
    from streamdiffusion import StreamDiffusion

    pipe = StableDiffusionPipeline(
        vae=vae, text_encoder=None, tokenizer=None, unet=unet, scheduler=LCMScheduler(),
        safety_checker=None, feature_extractor=None, requires_safety_checker=False,
    )  # fmt: skip
    # the model's fixed embeddings stand in for CLIP (encoded once, in prepare, untimed)
    pipe.encode_prompt = lambda **_: (cond[None], uncond[None])
    size = unet.config.sample_size * pipe.vae_scale_factor
    t_index = [round(i * 49 / max(N - 1, 1)) for i in range(N)] if N > 1 else [0]
    stream = StreamDiffusion(
        pipe, t_index, torch_dtype=torch.float32, width=size, height=size, cfg_type=cfg_type
    )
    stream.prepare("", num_inference_steps=50, guidance_scale=guidance)
    return stream


def arms(N: int, M: int, guidance: float, seed: int) -> tuple[dict, dict]:
    """name -> (timed fn, untimed setup) for the interleaved timer, and the batch per call."""
    unet, vae, cond, uncond = text_to_image(seed=seed)
    decode = as_decoder(vae)
    noise = torch.randn(M, 4, 8, 8, generator=torch.Generator().manual_seed(seed))
    out, batch = {}, {}

    def streamflow(name, **guide):
        pipe = StreamPipeline(
            DiffusersDenoiser(unet), (4, 8, 8), N, condition=cond, decode=decode,
            scheduler=flow_scheduler(N), **guide,
        )  # fmt: skip

        def fill():
            pipe.reset()
            for i in range(N - 1):
                pipe.push(noise[i % M])

        out[name] = (lambda _: [pipe.push(noise[i]) for i in range(M)], fill)

    def sd(name, cfg_type):
        stream = streamdiffusion(unet, vae, cond, uncond, N, cfg_type, guidance)

        def fill():
            for _ in range(N - 1):
                stream.txt2img()

        out[name] = (lambda _: [stream.txt2img() for _ in range(M)], fill)

    streamflow("StreamFlow, CFG", guidance_scale=guidance, uncond=uncond)
    sd("StreamDiffusion, cfg full", "full")
    sd("StreamDiffusion, cfg self (RCFG)", "self")
    streamflow("StreamFlow, no guidance")
    sd("StreamDiffusion, cfg none", "none")
    batch = {k: (2 * N if k.endswith(("CFG", "full")) else N) for k in out}
    return out, batch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--num-steps", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--images", type=int, default=32, help="M images per timed run")
    ap.add_argument("--repeats", type=int, default=5, help="timed rounds (min counts)")
    ap.add_argument("--guidance-scale", type=float, default=5.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="write the table as JSON here")
    a = ap.parse_args()
    if min(a.num_steps) < 1 or a.images < 1 or a.repeats < 1 or not a.guidance_scale > 1:
        ap.error("--num-steps, --images, --repeats must be >= 1 and --guidance-scale > 1")
    torch.set_num_threads(a.threads)
    tables = {}
    with torch.no_grad():
        for N in a.num_steps:
            timed_arms, batch = arms(N, a.images, a.guidance_scale, a.seed)
            timed = _interleaved_min(timed_arms, torch.device("cpu"), a.repeats)
            rows = {
                k: {"images/s": a.images / t, "spread": s, "batch per call": batch[k]}
                for k, (_, t, s) in timed.items()
            }
            for k, r in rows.items():
                print(f"N={N:<2} {k:34s} {r['images/s']:8.1f} images/s  spread {r['spread']:.2f}")
            tables[f"N={N}"] = rows
    _write(a, tables)


def _write(a, tables: dict) -> None:
    import diffusers
    import streamdiffusion

    record = {
        "what": "steady-state images/s, decode included, one CPU thread, interleaved rounds",
        "model": "text-to-image UNet 4x8x8 + tiny VAE (icml26.streamflow.model.text_to_image)",
        "versions": {
            "streamdiffusion": getattr(streamdiffusion, "__version__", "0.1.1"),
            "diffusers": diffusers.__version__,
            "torch": torch.__version__,
            "python": platform.python_version(),
        },
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()},
        "tables": tables,
    }
    if a.out is None:
        return
    a.out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=a.out.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(record, f, indent=1)
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
