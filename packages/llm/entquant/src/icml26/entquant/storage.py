"""Compressed checkpoints: one safetensors file plus a JSON manifest, nothing pickled.

``save_compressed(model, dir)`` writes

- ``model.safetensors``: for every ``EntQuantLinear`` ``<name>.words`` (the rANS words as
  16-bit integers), ``<name>.lane_starts`` (int32 offsets), ``<name>.freqs`` (int16, its
  frequency table), ``<name>.scales`` (float32, or float16 when quantised with
  ``scale_dtype=torch.float16``) and ``<name>.bias`` if any -- the same dtypes the layer keeps
  in memory; every other tensor of
  the state dict as it is (a tensor that shares storage with an earlier one, such as a tied LM
  head, is stored once);
- ``entquant.json``: format version, per layer its shape, grid, lambda and a CRC-32 of its coded
  tensors, the tied-tensor aliases, and for a Hugging Face model its architecture (config.json is
  saved beside it).

``load_compressed(dir, model=None)`` rebuilds the model (from ``model``, a freshly built skeleton
of the same architecture, or for Hugging Face models from config.json), checks every CRC before
anything is decoded, and raises ``ValueError`` on a missing, truncated or corrupted file.
``bits_per_param(dir)`` counts the quantised layers' bytes in the file itself.
"""

from __future__ import annotations

import itertools
import json
import os
import struct
import zlib
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from icml26.entquant import coding
from icml26.entquant.linear import EntQuantLinear
from icml26.testing.files import atomic_write

FORMAT = "icml26-entquant/1"
WEIGHTS = "model.safetensors"
MANIFEST = "entquant.json"
CODED = ("words", "lane_starts", "freqs", "scales")


def _coded_tensors(layer: EntQuantLinear) -> dict[str, torch.Tensor]:
    if int(layer.lane_starts[-1]) >= 2**31:
        raise ValueError("a matrix with >= 2^31 coded words does not fit the int32 lane offsets")
    return {
        "words": coding.words_to_int16(layer.words).cpu().contiguous(),
        "lane_starts": layer.lane_starts.cpu().to(torch.int32),
        "freqs": layer.freqs.cpu().to(torch.int16),
        "scales": layer.scales.cpu().contiguous(),  # float32, or float16 when made so
    }


def _crc(tensors: dict[str, torch.Tensor]) -> int:
    crc = 0
    for key in CODED:
        crc = zlib.crc32(tensors[key].contiguous().numpy().tobytes(), crc)
    return crc


def save_compressed(model: nn.Module, directory: str | os.PathLike) -> Path:
    """Write ``model`` (with ``EntQuantLinear`` layers) to ``directory``; returns the folder."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    layers = {n: m for n, m in model.named_modules() if isinstance(m, EntQuantLinear)}
    if not layers:
        raise ValueError("model has no EntQuantLinear layer: run icml26.entquant.quantize first")
    tensors: dict[str, torch.Tensor] = {}
    manifest: dict = {"format": FORMAT, "layers": {}, "aliases": {}}
    for name, layer in layers.items():
        coded = _coded_tensors(layer)
        tensors.update({f"{name}.{k}": v for k, v in coded.items()})
        manifest["layers"][name] = {
            "shape": [layer.out_features, layer.in_features],
            "qtype": layer.qtype,
            "crc32": _crc(coded),
            "bias": layer.bias is not None,
        }
    seen: dict[tuple, str] = {}
    skip = tuple(f"{n}." for n in layers)
    for key, value in model.state_dict().items():
        if key.startswith(skip) and key.rpartition(".")[2] in (*CODED, "bias"):
            if key.endswith(".bias"):
                tensors[key] = value.detach().cpu().contiguous()
            continue
        storage = (value.untyped_storage().data_ptr(), value.storage_offset(), tuple(value.shape))
        if value.numel() and storage in seen:
            manifest["aliases"][key] = seen[storage]
            continue
        seen[storage] = key
        tensors[key] = value.detach().cpu().contiguous()
    config = getattr(model, "config", None)
    if config is not None and hasattr(config, "to_json_string"):
        manifest["hf_architecture"] = type(model).__name__
        atomic_write(out / "config.json", lambda p: Path(p).write_text(config.to_json_string()))
    atomic_write(out / WEIGHTS, lambda p: save_file(tensors, p, metadata={"format": FORMAT}))
    atomic_write(out / MANIFEST, lambda p: Path(p).write_text(json.dumps(manifest, indent=1)))
    return out


def _read_manifest(directory: Path) -> dict:
    path = directory / MANIFEST
    if not path.is_file() or not (directory / WEIGHTS).is_file():
        raise ValueError(
            f"{directory} is not a compressed checkpoint: need {MANIFEST} and {WEIGHTS}"
        )
    try:
        manifest = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON: {e}") from e
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{path}: unknown format {manifest.get('format')!r}, expected {FORMAT!r}")
    return manifest


def _load_tensors(path: Path) -> dict[str, torch.Tensor]:
    try:
        return load_file(path)
    except Exception as e:  # safetensors raises its own error types on a truncated header/body
        raise ValueError(f"{path} is truncated or not a safetensors file ({e})") from e


def _build_hf(directory: Path, architecture: str) -> nn.Module:
    import transformers

    cls = getattr(transformers, architecture, None)
    if not (isinstance(cls, type) and issubclass(cls, transformers.PreTrainedModel)):
        raise ValueError(f"unknown transformers architecture {architecture!r} in the manifest")
    config = transformers.AutoConfig.from_pretrained(directory)
    return cls(config)


def load_compressed(
    directory: str | os.PathLike,
    model: nn.Module | None = None,
    decode: str = "lazy",
    device: str | torch.device | None = None,
) -> nn.Module:
    """Load a checkpoint written by ``save_compressed`` into ``model`` (a skeleton of the same
    architecture, modified in place) or, for a Hugging Face model, one built from config.json.

    ``device``: where the loaded model lives; by default the skeleton's device (the CPU for a
    model built from config.json)."""
    if not isinstance(directory, str | os.PathLike):
        raise TypeError(f"directory must be a path (load_compressed(directory, model)), got "
                        f"{type(directory).__name__}")  # fmt: skip
    directory = Path(directory)
    manifest = _read_manifest(directory)
    tensors = _load_tensors(directory / WEIGHTS)
    if model is None:
        if "hf_architecture" not in manifest:
            raise ValueError("pass model= (a skeleton of the saved architecture) to load this file")
        model = _build_hf(directory, manifest["hf_architecture"])
    if device is not None:
        model.to(device)
    for name, info in manifest["layers"].items():
        try:
            coded = {k: tensors.pop(f"{name}.{k}") for k in CODED}
        except KeyError as e:
            raise ValueError(f"{directory / WEIGHTS} lacks tensor {e.args[0]}") from e
        if _crc(coded) != info["crc32"]:
            raise ValueError(f"layer {name!r}: CRC mismatch, the compressed file is corrupted")
        shape = tuple(info["shape"])
        starts, words = coded["lane_starts"], coded["words"]  # kept 32 and 16 bits wide
        if (
            words.dtype != torch.int16
            or int(starts[-1]) != words.numel()
            or coded["scales"].shape != (shape[0],)
            or coded["scales"].dtype not in (torch.float32, torch.float16)
        ):
            raise ValueError(f"layer {name!r}: coded tensors do not match the manifest's shape")
        encoded = coding.EncodedCodes(words, starts, coded["freqs"], shape)
        bias = tensors.pop(f"{name}.bias") if info["bias"] else None
        try:
            old = model.get_submodule(name)
        except AttributeError as e:
            raise ValueError(f"the model has no layer {name!r} from the checkpoint") from e
        if getattr(old, "in_features", shape[1]) != shape[1]:
            raise ValueError(
                f"layer {name!r}: model has in_features {old.in_features}, file {shape}"
            )
        new = EntQuantLinear(encoded, coded["scales"], info["qtype"], bias, decode,  # type: ignore[arg-type]
                             scale_dtype=coded["scales"].dtype)  # fmt: skip
        placed = next(itertools.chain(old.parameters(), old.buffers()), None)
        if placed is not None:  # beside the rest of the model, not on the CPU
            new = new.to(placed.device)
        parent, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent) if parent else model, child, new)
    for alias, source in manifest["aliases"].items():  # tied tensors were stored once
        if source in tensors:
            tensors[alias] = tensors[source]
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    coded_keys = {f"{n}.{k}" for n in manifest["layers"] for k in (*CODED, "bias")}
    missing = [k for k in missing if k not in coded_keys]
    if missing or unexpected:
        raise ValueError(
            f"checkpoint does not fit the model: missing {missing[:5]}, unexpected {unexpected[:5]}"
        )
    return model


def bits_per_param(directory: str | os.PathLike) -> float:
    """Bits per quantised parameter, counted from the bytes the coded tensors take in the file
    (words, lane offsets, frequency tables and scales; not the manifest, biases or the layers
    that stay in full precision)."""
    directory = Path(directory)
    manifest = _read_manifest(directory)
    with open(directory / WEIGHTS, "rb") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_len))
    total_bytes, params = 0, 0
    for name, info in manifest["layers"].items():
        for k in CODED:
            begin, end = header[f"{name}.{k}"]["data_offsets"]
            total_bytes += end - begin
        params += info["shape"][0] * info["shape"][1]
    return 8 * total_bytes / params
