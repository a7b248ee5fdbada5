"""EntQuant as a transformers quantization method: ``from_pretrained`` / ``save_pretrained``.

Importing ``icml26.entquant`` registers ``quant_method = "entquant"`` with transformers. Then

    model = AutoModelForCausalLM.from_pretrained(...)
    quantize(model, lam=14.5)            # attaches the quantization config
    model.save_pretrained("smollm2-entquant")
    model = AutoModelForCausalLM.from_pretrained("smollm2-entquant")

The saved folder is a plain transformers checkpoint: ``config.json`` carries
``quantization_config = {"quant_method": "entquant", ...}`` and ``model.safetensors`` holds, for
every compressed linear ``<name>``, the tensors ``<name>.words`` (the rANS words, 16 bits),
``<name>.lane_starts`` (int32), ``<name>.freqs`` (int16), ``<name>.scales`` (float32 or float16)
and ``<name>.bias``; everything else as transformers saves it.

Loading builds the model on the meta device (transformers does so for every checkpoint); before
any weight is read, ``EntQuantizer`` replaces each compressed ``nn.Linear`` by an
``EntQuantLinear`` whose buffers have the exact shapes in the file's header (read without
reading data), and the loader then assigns the file's tensors to them: no float copy of a
compressed layer is made while loading. After loading, every coded layer is validated once on
the host. Running it (lazy decoding, no_grad) adds one decoded layer and the decoder's
temporaries.
"""

from __future__ import annotations

from typing import Any

from safetensors import safe_open
from torch import nn
from transformers.quantizers import HfQuantizer, register_quantization_config, register_quantizer
from transformers.utils.quantization_config import QuantizationConfigMixin

from icml26.entquant.linear import EntQuantLinear

METHOD = "entquant"
CODED = ("words", "lane_starts", "freqs", "scales")


@register_quantization_config(METHOD)
class EntQuantConfig(QuantizationConfigMixin):
    """``quantization_config`` of an EntQuant checkpoint.

    Args:
        qtype: the code grid, ``"fp8_e4m3"`` or ``"int8"``.
        lam: the rate-distortion lambda the checkpoint was made with (a record, not used when
            loading).
        decode: ``"lazy"`` (decode each layer before every matmul) or ``"cached"`` (once).
    """

    def __init__(self, qtype: str = "fp8_e4m3", lam: float | None = None, decode: str = "lazy",
                 **kwargs: Any):  # fmt: skip
        if decode not in ("lazy", "cached"):
            raise ValueError(f"decode must be 'lazy' or 'cached', got {decode!r}")
        if qtype not in ("fp8_e4m3", "int8"):
            raise ValueError(f"qtype must be 'fp8_e4m3' or 'int8', got {qtype!r}")
        self.quant_method = METHOD
        self.qtype = qtype
        if lam is not None and not (isinstance(lam, int | float) and lam >= 0):
            raise ValueError(f"lam must be a number >= 0 (or None), got {lam!r}")
        self.lam = lam
        self.decode = decode


@register_quantizer(METHOD)
class EntQuantizer(HfQuantizer):
    """Loads pre-compressed EntQuant checkpoints (there is no on-the-fly quantisation:
    ``icml26.entquant.quantize`` makes them, data-free)."""

    requires_calibration = True  # pre-quantized checkpoints only

    def validate_environment(self, *args: Any, **kwargs: Any) -> None:
        if not self.pre_quantized:
            raise ValueError(
                "EntQuant checkpoints are made by icml26.entquant.quantize(model, lam), then "
                "save_pretrained; from_pretrained(..., quantization_config=EntQuantConfig()) on "
                "a full-precision checkpoint is not supported"
            )

    def _process_model_before_weight_loading(self, model: nn.Module, checkpoint_files=None,
                                             **kwargs: Any) -> None:  # fmt: skip
        shapes = coded_shapes(checkpoint_files or [])
        if not shapes:
            raise ValueError(
                "an EntQuant checkpoint needs its safetensors files (no coded tensor found): "
                "load it with from_pretrained(folder)"
            )
        # the checkpoint may name layers with or without the base model's prefix ("model."),
        # as transformers allows when loading a causal LM's file into its base model or back
        prefix = f"{getattr(model, 'base_model_prefix', '')}."
        modules = dict(model.named_modules())

        def here(name: str) -> str | None:
            for candidate in (name, name.removeprefix(prefix), prefix + name):
                if isinstance(modules.get(candidate), nn.Linear):
                    return candidate
            return None

        shapes = {here(k) or k: v for k, v in shapes.items()}
        self.targets = set()
        qtype = self.quantization_config.qtype
        decode = self.quantization_config.decode
        for name, module in list(model.named_modules()):
            if name in shapes and isinstance(module, nn.Linear):
                new = EntQuantLinear.placeholder(module.in_features, module.out_features,
                                                 shapes[name], qtype, module.bias is not None,
                                                 decode)  # fmt: skip
                parent, _, child = name.rpartition(".")
                setattr(model.get_submodule(parent) if parent else model, child, new)
                self.targets.add(name)
        missing = set(shapes) - self.targets
        if missing:
            raise ValueError(f"the checkpoint compresses layers the model lacks: {sorted(missing)}")

    def _process_model_after_weight_loading(self, model: nn.Module, **kwargs: Any) -> None:
        for module in model.modules():  # a corrupted file fails here, not inside a decoder
            if isinstance(module, EntQuantLinear):
                module.check()

    def param_needs_quantization(self, model: nn.Module, param_name: str, **kwargs: Any) -> bool:
        # For a pre-quantized checkpoint this only exempts the coded tensors from the loader's
        # shape check (the placeholders already have the file's shapes).
        module, _, suffix = param_name.rpartition(".")
        targets = getattr(self, "targets", ())
        prefix = f"{getattr(model, 'base_model_prefix', '')}."
        return suffix in CODED and any(
            m in targets for m in (module, module.removeprefix(prefix), prefix + module)
        )

    def is_serializable(self, *args: Any, **kwargs: Any) -> bool:
        return True

    @property
    def is_trainable(self) -> bool:
        return False


def coded_shapes(files) -> dict[str, dict[str, tuple[int, ...]]]:
    """``{layer: {tensor: shape}}`` of the coded tensors in safetensors files (headers only)."""
    shapes: dict[str, dict[str, tuple[int, ...]]] = {}
    for path in files:
        if not str(path).endswith(".safetensors"):
            raise ValueError(f"EntQuant checkpoints are safetensors files, got {path}")
        with safe_open(str(path), "pt") as f:
            for key in f.keys():  # noqa: SIM118 (a safetensors handle is not iterable)
                module, _, suffix = key.rpartition(".")
                if suffix in CODED:
                    shapes.setdefault(module, {})[suffix] = tuple(f.get_slice(key).get_shape())
                    if suffix == "scales":
                        shapes[module]["scales_dtype"] = f.get_slice(key).get_dtype()
    incomplete = [m for m, s in shapes.items() if not set(CODED) <= set(s)]
    if incomplete:
        raise ValueError(f"coded layers lack some of {CODED}: {incomplete[:5]}")
    return shapes


def attach_config(model: nn.Module, qtype: str, lam: float, decode: str) -> None:
    """Make a transformers model quantised by ``quantize`` save as an EntQuant checkpoint:
    ``model.save_pretrained`` then writes the coded tensors and the quantization config."""
    config = EntQuantConfig(qtype=qtype, lam=lam, decode=decode)
    model.config.quantization_config = config
    model.hf_quantizer = EntQuantizer(config, pre_quantized=True)
    model.hf_quantizer.targets = {
        n for n, m in model.named_modules() if isinstance(m, EntQuantLinear)
    }
    model.is_quantized = True


def is_transformers_model(model: nn.Module) -> bool:
    from transformers import PreTrainedModel

    return isinstance(model, PreTrainedModel)


__all__ = ["EntQuantConfig", "EntQuantizer", "attach_config", "coded_shapes"]
