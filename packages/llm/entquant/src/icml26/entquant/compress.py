"""``icml26-entquant compress``: compress a local Hugging Face checkpoint into a folder.

    icml26-entquant compress --model path/to/hf-folder --lam 14.5 --out compressed/
    torchrun --nproc-per-node 4 -m icml26.entquant compress --model ... --out ...

Under ``torchrun`` the ranks split the layers (``quantize`` shares the results) and rank 0
writes the folder. A ``.gguf`` file works too (transformers de-quantises it on load).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from icml26.entquant._results import resolve_device
from icml26.entquant.layers import quantize
from icml26.entquant.storage import bits_per_param, save_compressed


@dataclass(frozen=True)
class CompressConfig:
    """Compress a local transformers checkpoint (folder or .gguf file) with EntQuant."""

    model: Path
    """A local Hugging Face model folder, or a .gguf file."""
    out: Path
    """Folder to write (model.safetensors, entquant.json, config.json)."""
    lam: float = 14.5
    """lambda: 3.9 / 14.5 / 58 give about 4 / 3 / 2 bits per parameter."""
    qtype: str = "fp8_e4m3"
    """Code grid: fp8_e4m3 or int8."""
    include: str | None = None
    """Regex of the layer names to quantise (default: every nn.Linear inside a numbered block)."""
    skip: tuple[str, ...] = ()
    """Layer names to keep in full precision."""
    super_weight_sigma: float = 100.0
    """A matrix whose max |w| exceeds this many robust standard deviations gets absmax 8-bit."""
    max_iter: int = 500
    """L-BFGS iterations per matrix."""
    device: str = "auto"
    """auto (CUDA when present), cpu, cuda, cuda:N"""

    def validate(self) -> None:
        if not self.model.exists():
            raise ValueError(f"--model {self.model} does not exist")
        if self.lam < 0:
            raise ValueError(f"--lam must be >= 0, got {self.lam}")
        if self.qtype not in ("fp8_e4m3", "int8"):
            raise ValueError(f"--qtype must be fp8_e4m3 or int8, got {self.qtype!r}")


def load_hf(path: Path):
    """A causal LM if the checkpoint is one, else the bare model (encoders such as BERT)."""
    from transformers import AutoModel, AutoModelForCausalLM

    kwargs: dict = {"dtype": torch.float32}
    if path.is_file():
        if path.suffix != ".gguf":
            raise ValueError(f"--model must be a folder or a .gguf file, got {path}")
        path, kwargs["gguf_file"] = path.parent, path.name
    try:
        return AutoModelForCausalLM.from_pretrained(path, **kwargs).eval()
    except ValueError:
        return AutoModel.from_pretrained(path, **kwargs).eval()


def run_compress(cfg: CompressConfig) -> dict:
    cfg.validate()
    device = resolve_device(cfg.device)
    dist = torch.distributed
    ranks = int(os.environ.get("WORLD_SIZE", "1"))
    if device.startswith("cuda:") and ranks > 1:
        raise ValueError(f"--device {device}: under torchrun each rank takes its own GPU")
    if device == "cuda" and ranks > 1:  # torchrun: one GPU per rank
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
        torch.cuda.set_device(device)
    started_here = ranks > 1 and not dist.is_initialized()
    if started_here:
        dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
    try:
        model = load_hf(cfg.model).to(device)
        t0 = time.perf_counter()
        report = quantize(
            model,
            cfg.lam,
            cfg.qtype,
            include=cfg.include,
            skip=cfg.skip,  # type: ignore[arg-type]
            super_weight_sigma=cfg.super_weight_sigma,
            max_iter=cfg.max_iter,
        )
        seconds = time.perf_counter() - t0
        summary = {
            "layers": len(report.layers),
            "params": report.num_params,
            "seconds": seconds,
            "device": device,
        }
        if not dist.is_initialized() or dist.get_rank() == 0:
            save_compressed(model, cfg.out)
            summary["bits/param"] = bits_per_param(cfg.out)
            print(
                f"{summary['layers']} layers, {report.num_params:,} parameters in {seconds:.1f} s "
                f"on {device} "
                f"({report.num_params / seconds:,.0f} params/s); "
                f"{summary['bits/param']:.3f} bits/param in {cfg.out}; "
                f"{sum(r.fallback for r in report.layers)} absmax fallbacks"
            )
        return summary
    finally:
        if started_here:
            dist.destroy_process_group()
