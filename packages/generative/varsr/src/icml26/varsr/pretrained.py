"""Save and load a trained VAR super-resolver (tokenizer + transformer) as safetensors.

A folder holds ``config.json`` (both configurations), ``tokenizer.safetensors`` and
``var.safetensors``. It is written under a temporary name and renamed, so an interrupted save
never leaves a half-written model where a complete one was; loading never unpickles.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict
from pathlib import Path

import torch

from icml26.varsr.tokenizer import MultiScaleRQ, TokenizerConfig
from icml26.varsr.var import VARConfig, VARTransformer

FORMAT = "icml26-varsr/1"


def save_pretrained(var: VARTransformer, folder: str | os.PathLike) -> Path:
    """Write ``var`` and its tokenizer to ``folder`` (replaced if it exists). Returns the path."""
    from safetensors.torch import save_file

    if not isinstance(var, VARTransformer):
        raise TypeError(f"expected a VARTransformer, got {type(var).__name__}")
    folder = Path(folder)
    tmp = folder.with_name(folder.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    cfg_var = {**asdict(var.cfg), "given_scales": var.given_scales}
    tok_cfg = asdict(var.tok.cfg)
    (tmp / "config.json").write_text(json.dumps(
        {"format": FORMAT, "tokenizer": tok_cfg, "var": cfg_var}, indent=2))  # fmt: skip

    def tensors(m):
        return {k: v.detach().cpu().contiguous() for k, v in m.state_dict().items()}

    save_file(tensors(var.tok), tmp / "tokenizer.safetensors")
    save_file(tensors(var), tmp / "var.safetensors")
    if folder.exists():
        old = folder.with_name(folder.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(folder, old)
        os.replace(tmp, folder)
        shutil.rmtree(old)
    else:
        os.replace(tmp, folder)
    return folder


def load_pretrained(folder: str | os.PathLike, device: str | torch.device = "cpu"
                    ) -> VARTransformer:  # fmt: skip
    """The model saved by :func:`save_pretrained`, in eval mode on ``device``."""
    from safetensors.torch import load_file

    folder = Path(folder)
    cfg_path = folder / "config.json"
    if not cfg_path.is_file():
        raise FileNotFoundError(f"{folder} holds no config.json: not a saved icml26-varsr model")
    cfg = json.loads(cfg_path.read_text())
    if cfg.get("format") != FORMAT:
        raise ValueError(f"{cfg_path} is format {cfg.get('format')!r}, expected {FORMAT!r}")
    tcfg = TokenizerConfig(**{**cfg["tokenizer"], "scales": tuple(cfg["tokenizer"]["scales"])})
    tok = MultiScaleRQ(tcfg)
    tok.load_state_dict(load_file(folder / "tokenizer.safetensors"))
    var = VARTransformer(tok, VARConfig(**cfg["var"]))
    var.load_state_dict(load_file(folder / "var.safetensors"))
    tok.to(device).eval().requires_grad_(False)
    return var.to(device).eval()
