"""Baselines at equal bits per parameter, in the same harness: RTN, NF4 (bitsandbytes), HQQ, and
GPTQ (data-dependent: it needs each layer's input Hessian from calibration text).

Each returns the dequantised matrix and its honest storage cost in bits per parameter, scales and
zero points included (counted as float16, 16 bits each, per group; NF4's absmax is float32 in
bitsandbytes and counted as such). The codes are counted at their fixed width (no entropy coding):
that is how these formats are stored and run.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Iterable
from typing import NamedTuple

import torch
from torch import nn

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
    levels = 2**bits - 1
    scale, zero = _grid(g, levels)
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


def gptq_hessian(inputs: torch.Tensor) -> torch.Tensor:
    """GPTQ's proxy Hessian of a linear layer, ``H = 2 X^T X / N`` (float64), from its calibration
    inputs ``inputs`` (..., I): every leading dimension is a sample."""
    x = inputs.detach().reshape(-1, inputs.shape[-1]).to(torch.float64)
    if x.shape[0] == 0 or not torch.isfinite(x).all():
        raise ValueError("inputs must hold at least one finite sample")
    return 2.0 * x.T @ x / x.shape[0]


def _grid(g: torch.Tensor, levels: int) -> tuple[torch.Tensor, torch.Tensor]:
    """RTN's asymmetric min-max grid of the rows of ``g``: fp16-rounded scale and zero point."""
    lo, hi = g.amin(1, keepdim=True), g.amax(1, keepdim=True)
    scale = ((hi - lo) / levels).clamp_min(1e-12).half().float()
    zero = torch.round(-lo / scale).clamp(0, levels).half().float()
    return scale, zero


def gptq(
    w: torch.Tensor,
    hessian: torch.Tensor,
    bits: int,
    group_size: int = 64,
    block_size: int = 128,
    damp: float = 0.01,
) -> BaselineResult:
    """GPTQ (Frantar et al., ICLR 2023, Algorithm 1): quantise the columns of ``w`` (O, I) one by
    one, each onto RTN's grid for its group, and spread each column's rounding error over the
    columns not yet quantised through the upper Cholesky factor of ``H^-1`` (lazy batch updates in
    blocks of ``block_size``). ``hessian``: (I, I) from ``gptq_hessian`` on calibration inputs;
    ``damp`` adds that fraction of its mean diagonal (the paper's 1%). Group scales and zero points
    are fp16 and fitted to the error-updated weights when a group starts, so the storage cost is
    RTN's: ``bits + 32 / group_size`` per parameter. Inputs that never fire (zero diagonal) get
    zero weight, as in the reference implementation.
    """
    w = check_weight(w).clone()
    n_in = w.shape[1]
    if not 1 <= bits <= 8:
        raise ValueError(f"bits must be in [1, 8], got {bits}")
    if n_in % group_size or block_size % group_size:
        raise ValueError(
            f"group_size {group_size} must divide the {n_in} inputs and block_size {block_size}"
        )
    if not isinstance(hessian, torch.Tensor) or tuple(hessian.shape) != (n_in, n_in):
        got = tuple(hessian.shape) if isinstance(hessian, torch.Tensor) else type(hessian).__name__
        raise ValueError(f"hessian must be ({n_in}, {n_in}) for this weight, got {got}")
    H = hessian.detach().to(torch.float64, copy=True).cpu()
    if not torch.isfinite(H).all():
        raise ValueError("hessian contains NaN or inf")
    dead = torch.diagonal(H) == 0
    H[dead, dead] = 1.0
    w[:, dead.to(w.device)] = 0.0
    H += damp * torch.diagonal(H).mean() * torch.eye(n_in, dtype=torch.float64)
    # U: upper Cholesky factor of H^-1, whose rows carry each column's error to the later ones
    U = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(H)), upper=True)
    U = U.to(w.device, torch.float32)
    levels = 2**bits - 1
    Q = torch.zeros_like(w)
    for b0 in range(0, n_in, block_size):
        b1 = min(b0 + block_size, n_in)
        W1 = w[:, b0:b1].clone()  # (O, B): this block, kept up to date within it
        E1 = torch.zeros_like(W1)
        for j in range(b1 - b0):
            if j % group_size == 0:
                scale, zero = _grid(W1[:, j : j + group_size], levels)
            col = W1[:, j : j + 1]
            q = torch.clamp(torch.round(col / scale) + zero, 0, levels)
            Q[:, b0 + j : b0 + j + 1] = (q - zero) * scale
            err = (col - Q[:, b0 + j : b0 + j + 1]) / U[b0 + j, b0 + j]
            W1[:, j:] -= err * U[b0 + j, b0 + j : b1]
            E1[:, j : j + 1] = err
        w[:, b1:] -= E1 @ U[b0:b1, b1:]  # the block's errors reach the later blocks at once
    return BaselineResult(Q, bits + 32 / group_size)


def gptq_layers(
    model: nn.Module,
    layer_names: list[str],
    calibrate: Callable[[nn.Module], object],
    bits: int,
    group_size: int = 64,
) -> float:
    """GPTQ on the linear layers ``layer_names`` of ``model``, in place, block after block.

    ``calibrate(model)`` runs the model on the calibration data (its outputs are ignored). Layers
    are grouped by their numbered block (``...layers.3.``): one calibration pass per block
    collects every layer's input Hessian with forward hooks, with the blocks before it already
    quantised, so each block sees the inputs the quantised model gives it (the reference
    implementation's order without its true-sequential option). Returns the bits per parameter of
    the quantised layers, scales included.
    """
    blocks: dict[str, list[str]] = {}
    for name in layer_names:
        match = re.match(r"(.*?\.\d+)\.", name)
        blocks.setdefault(match.group(1) if match else name, []).append(name)
    bits_total, params = 0.0, 0
    for names in blocks.values():
        sums: dict[str, list] = {}
        hooks = []
        for name in names:
            layer = model.get_submodule(name)
            if not isinstance(layer, nn.Linear):
                raise TypeError(f"{name} is a {type(layer).__name__}, not an nn.Linear")

            def collect(_m, inputs, _out, name=name, sums=sums):
                x = inputs[0].detach().reshape(-1, inputs[0].shape[-1]).to(torch.float64)
                acc = sums.setdefault(name, [0.0, 0])
                acc[0] = acc[0] + 2.0 * x.T @ x
                acc[1] += x.shape[0]

            hooks.append(layer.register_forward_hook(collect))
        try:
            with torch.no_grad():
                calibrate(model)
        finally:
            for h in hooks:
                h.remove()
        for name in names:
            if name not in sums:
                raise ValueError(f"calibration never ran {name}: check calibrate(model)")
            layer = model.get_submodule(name)
            total, count = sums[name]
            res = gptq(layer.weight, total / count, bits, group_size)
            with torch.no_grad():
                layer.weight.copy_(res.w_hat.to(layer.weight.dtype))
            bits_total += res.bits_per_param * layer.weight.numel()
            params += layer.weight.numel()
    return bits_total / max(params, 1)


BASELINES = {
    "RTN-4": lambda w: rtn(w, 4),
    "RTN-3": lambda w: rtn(w, 3),
    "RTN-2": lambda w: rtn(w, 2),
    "NF4": nf4,
    "HQQ-4": lambda w: hqq(w, 4),
    "HQQ-3": lambda w: hqq(w, 3),
    "HQQ-2": lambda w: hqq(w, 2),
}
"""Name -> function, as the demo runs them (group / block size 64). GPTQ is not here: it also
needs each layer's calibration Hessian."""

BASELINE_MODULES = {"NF4": "bitsandbytes", "HQQ-4": "hqq", "HQQ-3": "hqq", "HQQ-2": "hqq"}
"""The module each optional baseline needs (the ``baselines`` extra); RTN needs nothing."""


def missing_baselines(names: Iterable[str]) -> dict[str, str]:
    """{baseline: the module it needs} for those of ``names`` whose extra is not installed."""
    return {
        n: BASELINE_MODULES[n]
        for n in names
        if n in BASELINE_MODULES and importlib.util.find_spec(BASELINE_MODULES[n]) is None
    }
