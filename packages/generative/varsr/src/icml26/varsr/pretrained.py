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


def _weights(path: Path) -> dict:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: not a complete icml26-varsr model")
    try:
        return load_file(path)
    except SafetensorError as e:
        raise ValueError(f"{path} is not a safetensors file ({e})") from None


def load_pretrained(folder: str | os.PathLike, device: str | torch.device = "cpu"
                    ) -> VARTransformer:  # fmt: skip
    """The model saved by :func:`save_pretrained`, in eval mode on ``device``."""
    folder = Path(folder)
    cfg_path = folder / "config.json"
    if not cfg_path.is_file():
        raise FileNotFoundError(f"{folder} holds no config.json: not a saved icml26-varsr model")
    try:
        cfg = json.loads(cfg_path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{cfg_path} is not valid JSON ({e}): not a saved icml26-varsr model"
                         ) from None  # fmt: skip
    if not isinstance(cfg, dict) or cfg.get("format") != FORMAT:
        got = cfg.get("format") if isinstance(cfg, dict) else type(cfg).__name__
        raise ValueError(f"{cfg_path} is format {got!r}, expected {FORMAT!r}")
    try:
        tcfg = TokenizerConfig(**{**cfg["tokenizer"], "scales": tuple(cfg["tokenizer"]["scales"])})
        var_cfg = VARConfig(**cfg["var"])
    except (KeyError, TypeError) as e:
        raise ValueError(f"{cfg_path}: bad or missing model settings ({e!r})") from None
    tok = MultiScaleRQ(tcfg)
    tok.load_state_dict(_weights(folder / "tokenizer.safetensors"))
    var = VARTransformer(tok, var_cfg)
    var.load_state_dict(_weights(folder / "var.safetensors"))
    tok.to(device).eval().requires_grad_(False)
    return var.to(device).eval()
