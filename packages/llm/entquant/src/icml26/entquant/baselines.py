"""Baselines at equal bits per parameter, in the same harness: RTN, NF4 (bitsandbytes), HQQ.

Each returns the dequantised matrix and its honest storage cost in bits per parameter, scales and
zero points included (counted as float16, 16 bits each, per group; NF4's absmax is float32 in
bitsandbytes and counted as such). The codes are counted at their fixed width (no entropy coding):
that is how these formats are stored and run.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from typing import NamedTuple

import torch

from icml26.entquant.quantize import check_weight


class BaselineResult(NamedTuple):
    """``w_hat`` (O, I) float32 dequantised weight; ``bits_per_param`` as stored."""

    w_hat: torch.Tensor
    bits_per_param: float


def _groups(w: torch.Tensor, group_size: int) -> torch.Tensor:
    if w.numel() % group_size:
        raise ValueError(f"{w.numel()} weights do not split into groups of {group_size}")
    return w.reshape(-1, group_size)


def rtn(w: torch.Tensor, bits: int, group_size: int = 64) -> BaselineResult:
    """Round-to-nearest, asymmetric min-max per group: codes 0..2^bits - 1, fp16 scale + zero."""
    w = check_weight(w)
    if not 1 <= bits <= 8:
        raise ValueError(f"bits must be in [1, 8], got {bits}")
    g = _groups(w, group_size)
    lo, hi = g.amin(1, keepdim=True), g.amax(1, keepdim=True)
    levels = 2**bits - 1
    scale = ((hi - lo) / levels).clamp_min(1e-12).half().float()
    zero = torch.round(-lo / scale).clamp(0, levels).half().float()
    q = torch.clamp(torch.round(g / scale) + zero, 0, levels)
    return BaselineResult(((q - zero) * scale).reshape(w.shape), bits + 32 / group_size)


def nf4(w: torch.Tensor, block_size: int = 64) -> BaselineResult:
    """NormalFloat4 (QLoRA) through bitsandbytes, fp32 absmax per block (no double quantisation)."""
    import bitsandbytes.functional as bnbf

    w = check_weight(w)
    packed, state = bnbf.quantize_4bit(w, blocksize=block_size, quant_type="nf4")
    w_hat = bnbf.dequantize_4bit(packed, state).float().reshape(w.shape)
    return BaselineResult(w_hat, 4 + 32 / block_size)


def hqq(w: torch.Tensor, bits: int, group_size: int = 64) -> BaselineResult:
    """Half-Quadratic Quantization (Badri & Shaji 2023) through the ``hqq`` package, with its
    zero-point optimisation; fp16 scale + zero per group."""
    from hqq.core.quantize import Quantizer

    w = check_weight(w)
    codes, meta = Quantizer.quantize(
        w, nbits=bits, group_size=group_size, optimize=True, axis=1, device=str(w.device)
    )
    w_hat = Quantizer.dequantize(codes, meta).float().reshape(w.shape)
    return BaselineResult(w_hat, bits + 32 / group_size)


BASELINES = {
    "RTN-4": lambda w: rtn(w, 4),
    "RTN-3": lambda w: rtn(w, 3),
    "RTN-2": lambda w: rtn(w, 2),
    "NF4": nf4,
    "HQQ-4": lambda w: hqq(w, 4),
    "HQQ-3": lambda w: hqq(w, 3),
    "HQQ-2": lambda w: hqq(w, 2),
}
"""Name -> function, as the demo runs them (group / block size 64)."""

BASELINE_MODULES = {"NF4": "bitsandbytes", "HQQ-4": "hqq", "HQQ-3": "hqq", "HQQ-2": "hqq"}
"""The module each optional baseline needs (the ``baselines`` extra); RTN needs nothing."""


def missing_baselines(names: Iterable[str]) -> dict[str, str]:
    """{baseline: the module it needs} for those of ``names`` whose extra is not installed."""
    return {
        n: BASELINE_MODULES[n]
        for n in names
        if n in BASELINE_MODULES and importlib.util.find_spec(BASELINE_MODULES[n]) is None
    }
