"""``EntQuantLinear`` and ``quantize(model, lam)``: EntQuant applied to a whole torch model.

Scope (the paper's default): the linear layers of the transformer blocks (q, k, v, o, gate, up,
down; BERT's query/key/value/dense), found as every ``nn.Linear`` whose qualified name contains a
block index (``...layers.3.mlp.down_proj``); embeddings and the LM head stay as they are. A layer
with super weights (Yu et al. 2024: a few huge weights whose activation spikes the model needs)
falls back to plain absmax 8-bit codes (lambda = 0). The paper finds them from activations; being
data-free, we flag a matrix whose largest |w| exceeds ``super_weight_sigma`` robust standard
deviations (our reconstruction; ``skip`` names layers to leave in full precision).

Inference: an ``EntQuantLinear`` (``icml26.entquant.linear``, re-exported here) keeps only the
rANS-coded codes, the frequency table and the per-row scales, and decodes them for the matmul.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn
from tqdm.auto import tqdm

from icml26.entquant import coding
from icml26.entquant.linear import EntQuantLinear, check_scales
from icml26.entquant.quantize import QType, quantize_linear

BLOCK_LINEAR = re.compile(r"(^|\.)\d+\.")
"""A module inside a repeated block: its qualified name has a numeric index component."""


@dataclass(frozen=True)
class LayerReport:
    """What happened to one layer: its coded size, entropy, error and the time it took."""

    name: str
    shape: tuple[int, int]
    lam: float
    fallback: bool
    bits_per_param: float
    entropy_bits: float
    rel_l1_error: float
    seconds: float


@dataclass(frozen=True)
class QuantizeReport:
    layers: list[LayerReport]

    @property
    def num_params(self) -> int:
        return sum(r.shape[0] * r.shape[1] for r in self.layers)

    @property
    def bits_per_param(self) -> float:
        """Coded bits (words, lane offsets, tables, scales) per quantised parameter, in memory."""
        bits = sum(r.bits_per_param * r.shape[0] * r.shape[1] for r in self.layers)
        return bits / max(self.num_params, 1)

    @property
    def params_per_second(self) -> float:
        return self.num_params / max(sum(r.seconds for r in self.layers), 1e-9)


def target_linears(model: nn.Module, include: str | None = None) -> list[str]:
    """Qualified names of the layers ``quantize`` would replace (see the module docstring);
    ``include`` (a regex searched in the name) replaces the default rule."""
    try:
        pattern = re.compile(include) if include is not None else BLOCK_LINEAR
    except re.error as e:
        raise ValueError(f"include={include!r} is not a valid regular expression ({e})") from e
    return [
        name
        for name, mod in model.named_modules()
        if isinstance(mod, nn.Linear) and pattern.search(name)
    ]


def has_super_weights(w: torch.Tensor, sigma: float) -> bool:
    """Data-free super-weight test: max |w| > ``sigma`` robust standard deviations of w.

    The spread is median|w| / 0.6745 (a Gaussian's), so a few huge weights cannot inflate it
    the way they inflate the plain standard deviation."""
    a = w.detach().float().abs()
    robust_std = (a.median() / 0.6745).clamp_min(1e-30)
    return bool(a.max() > sigma * robust_std)


def quantize(
    model: nn.Module,
    lam: float,
    qtype: QType = "fp8_e4m3",
    include: str | None = None,
    skip: tuple[str, ...] = (),
    super_weight_sigma: float = 100.0,
    decode: Literal["lazy", "cached"] = "lazy",
    max_iter: int = 500,
    progress: bool = True,
    scale_dtype: torch.dtype = torch.float32,
) -> QuantizeReport:
    """Replace the target linear layers of ``model`` in place by ``EntQuantLinear`` (EntQuant at
    ``lam``); returns a per-layer report. No data is needed. Under ``torchrun`` (an initialised
    process group) the ranks split the layers and share the results: call it on every rank.
    ``scale_dtype=torch.float16`` stores the per-row scales in 16 bits (counted so in the
    report's bits)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    names = [n for n in target_linears(model, include) if n not in set(skip)]
    if not names:
        raise ValueError(
            "no linear layer matched: the default takes nn.Linear modules inside numbered blocks; "
            "pass include='regex' to choose layers"
        )
    # Under torchrun every rank quantises its own shard of the layers (round robin), then each
    # layer's coded tensors are broadcast from the rank that made them: all ranks end with the
    # same model, compressed world_size times faster. Single process: rank 0 of 1.
    dist = torch.distributed
    distributed = dist.is_available() and dist.is_initialized()
    rank, world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
    mine: dict[str, tuple] = {}
    for name in tqdm(
        names[rank::world], desc=f"EntQuant lambda={lam}", disable=not progress, leave=False
    ):
        mine[name] = _quantize_layer(
            model.get_submodule(name), name, lam, qtype, super_weight_sigma, max_iter, scale_dtype
        )
    reports = []
    for i, name in enumerate(names):
        payload = [mine.get(name)]
        if world > 1:
            # our own objects between our own ranks (torch pickles them), never from a file
            dist.broadcast_object_list(payload, src=i % world)
        enc, scales, report = payload[0]
        linear = model.get_submodule(name)
        new = EntQuantLinear(enc, scales, qtype, linear.bias, decode, scale_dtype)
        new = new.to(linear.weight.device)
        parent, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent) if parent else model, child, new)
        reports.append(report)
    from icml26.entquant.hf import attach_config, is_transformers_model

    if is_transformers_model(model):  # save_pretrained then writes an EntQuant checkpoint
        attach_config(model, qtype, lam, decode)
    return QuantizeReport(reports)


def _quantize_layer(linear: nn.Linear, name, lam, qtype, super_weight_sigma, max_iter,
                    scale_dtype=torch.float32) -> tuple:  # fmt: skip
    """(encoded codes, scales, report) of one layer."""
    return quantize_weight(linear.weight, name, lam, qtype, super_weight_sigma, max_iter,
                           scale_dtype)  # fmt: skip


def quantize_weight(
    weight: torch.Tensor,
    name: str,
    lam: float,
    qtype: QType = "fp8_e4m3",
    super_weight_sigma: float = 100.0,
    max_iter: int = 500,
    scale_dtype: torch.dtype = torch.float32,
) -> tuple[coding.EncodedCodes, torch.Tensor, LayerReport]:
    """EntQuant on one (out, in) weight matrix as ``quantize`` does it for a layer (the
    super-weight fallback included): (rANS-coded codes, scales, report)."""
    t0 = time.perf_counter()
    fallback = has_super_weights(weight, super_weight_sigma)
    layer_lam = 0.0 if fallback else lam
    qw = quantize_linear(weight, layer_lam, qtype, max_iter=max_iter)
    enc = coding.encode(qw.codes)
    seconds = time.perf_counter() - t0
    w = weight.detach().float()
    check_scales(qw.scales, scale_dtype)  # before anything is written with them
    # the error of what the layer will compute with: scales rounded to scale_dtype
    scales = qw.scales.to(scale_dtype).float()
    w_hat = qw.values() * scales[:, None]
    err = float((w_hat.to(w.device) - w).abs().sum() / w.abs().sum().clamp_min(1e-30))
    report = LayerReport(
        name,
        tuple(w.shape),
        layer_lam,
        fallback,
        (enc.stored_bits + torch.finfo(scale_dtype).bits * qw.scales.numel()) / w.numel(),
        coding.entropy_bits(qw.codes),
        err,
        seconds,
    )
    return enc, qw.scales.to(scale_dtype), report
