"""``icml26-entquant compress``: compress a local Hugging Face checkpoint into a folder.

    icml26-entquant compress --model path/to/hf-folder --lam 14.5 --out compressed/
    icml26-entquant compress --model path/to/hf-folder --lam 14.5 --out compressed/ --stream
    torchrun --nproc-per-node 4 -m icml26.entquant compress --model ... --out ...

Under ``torchrun`` the ranks split the layers (``quantize`` shares the results) and rank 0
writes the folder. A ``.gguf`` file works too (transformers de-quantises it on load).

``--stream`` (``compress_streaming``) never loads the model: it reads the safetensors shards
one tensor at a time, compresses each weight matrix of a block linear as it comes, and writes
output shards as they fill, so a checkpoint larger than RAM compresses in the memory of its
largest matrix plus one output shard. Its output is a transformers checkpoint
(``from_pretrained`` loads it after ``import icml26.entquant``).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from icml26.entquant.layers import quantize
from icml26.entquant.storage import bits_per_param, save_compressed
from icml26.testing.command import DeviceOption
from icml26.testing.files import atomic_write
from icml26.testing.results import resolve_device


@dataclass(frozen=True)
class CompressConfig(DeviceOption):
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
    stream: bool = False
    """Compress shard by shard, tensor by tensor, without loading the model (a safetensors
    folder; writes a transformers checkpoint)."""
    shard_mb: int = 2000
    """--stream: output shard size in MB (--device does not apply: it runs on the CPU)."""

    def validate(self) -> None:
        if not self.model.exists():
            raise ValueError(f"--model {self.model} does not exist")
        if self.lam < 0:
            raise ValueError(f"--lam must be >= 0, got {self.lam}")
        if self.qtype not in ("fp8_e4m3", "int8"):
            raise ValueError(f"--qtype must be fp8_e4m3 or int8, got {self.qtype!r}")
        if self.shard_mb < 1:
            raise ValueError(f"--shard-mb must be >= 1, got {self.shard_mb}")


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
    if cfg.stream:
        summary = compress_streaming(cfg.model, cfg.out, cfg.lam, cfg.qtype, cfg.include,
                                     cfg.skip, cfg.super_weight_sigma, cfg.max_iter,
                                     shard_bytes=cfg.shard_mb * 10**6)  # fmt: skip
        print(f"{summary['layers']} layers, {summary['params']:,} parameters in "
              f"{summary['seconds']:.1f} s, streamed from {summary['input shards']} shard(s) "
              f"into {summary['output shards']} in {cfg.out}; {summary['bits/param']:.3f} "
              "bits/param")  # fmt: skip
        return summary
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


def _meta_model(config):
    """The architecture on the meta device (no memory): which tensors belong to nn.Linear."""
    from transformers import AutoModel, AutoModelForCausalLM

    with torch.device("meta"):
        try:
            return AutoModelForCausalLM.from_config(config)
        except ValueError:
            return AutoModel.from_config(config)


class _ShardWriter:
    """Collects tensors and writes ``model-XXXXX.safetensors`` files of about ``limit`` bytes
    (each atomically), then the index that maps every tensor to its file."""

    def __init__(self, out: Path, limit: int):
        self.out, self.limit = out, limit
        self.pending: dict[str, torch.Tensor] = {}
        self.size, self.files, self.weight_map, self.total = 0, [], {}, 0

    def add(self, key: str, tensor: torch.Tensor) -> None:
        self.pending[key] = tensor.contiguous()
        self.size += tensor.numel() * tensor.element_size()
        if self.size >= self.limit:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        from safetensors.torch import save_file

        name = f".shard-{len(self.files):05d}.safetensors"
        atomic_write(
            self.out / name, lambda p: save_file(self.pending, p, metadata={"format": "pt"})
        )
        self.files.append((name, list(self.pending)))
        self.total += self.size
        self.pending, self.size = {}, 0

    def close(self) -> int:
        self.flush()
        n = len(self.files)
        for i, (tmp, keys) in enumerate(self.files):
            final = "model.safetensors" if n == 1 else f"model-{i + 1:05d}-of-{n:05d}.safetensors"
            os.replace(self.out / tmp, self.out / final)
            self.weight_map.update(dict.fromkeys(keys, final))
        if n > 1:
            index = {"metadata": {"total_size": self.total}, "weight_map": self.weight_map}
            atomic_write(self.out / "model.safetensors.index.json",
                    lambda p: Path(p).write_text(json.dumps(index, indent=2)))  # fmt: skip
        return n


def compress_streaming(
    src: str | os.PathLike,
    out: str | os.PathLike,
    lam: float,
    qtype: str = "fp8_e4m3",
    include: str | None = None,
    skip: tuple[str, ...] = (),
    super_weight_sigma: float = 100.0,
    max_iter: int = 500,
    scale_dtype: torch.dtype = torch.float32,
    shard_bytes: int = 2 * 10**9,
    progress: bool = True,
) -> dict:
    """Compress the safetensors checkpoint folder ``src`` into the transformers checkpoint
    ``out`` without loading the model: one tensor in memory at a time (plus the output shard
    being filled). The block linears (``target_linears`` of the architecture, built on the
    meta device) are compressed as ``quantize`` would; every other tensor is copied as stored.
    The output is written into a temporary folder beside ``out`` and renamed to ``out`` when
    complete (``out`` must be new or empty). For an fp32 source the result is bit-identical to
    ``quantize`` then ``save_pretrained``; for a bf16 one the coded layers are the same (the
    matrices are quantised in fp32 either way) and the other tensors keep bf16."""
    from safetensors import safe_open
    from transformers import AutoConfig

    from icml26.entquant.hf import EntQuantConfig
    from icml26.entquant.layers import target_linears
    from icml26.entquant.quantize import QTYPES

    src, out = Path(src), Path(out)
    if not src.is_dir() or not (src / "config.json").is_file():
        raise ValueError(f"{src}: --stream needs a checkpoint folder with config.json")
    files = _checkpoint_files(src)
    if qtype not in QTYPES or not lam >= 0 or shard_bytes < 1:
        raise ValueError(f"need qtype in {sorted(QTYPES)}, lam >= 0 and shard_bytes >= 1")
    if out.resolve() == src.resolve() or (out.exists() and any(out.iterdir())):
        raise ValueError(f"{out}: the output folder must be new or empty (and not the source)")
    config = AutoConfig.from_pretrained(src)
    if getattr(config, "quantization_config", None) is not None:
        raise ValueError(f"{src} is already quantised ({config.quantization_config})")
    meta = _meta_model(config)
    targets = set(target_linears(meta, include)) - set(skip)
    prefix = f"{getattr(meta, 'base_model_prefix', '')}."

    def target(key: str) -> bool:  # checkpoint keys may carry the base model's prefix or not
        module, _, leaf = key.rpartition(".")
        names = (module, module.removeprefix(prefix), prefix + module)
        return leaf == "weight" and any(n in targets for n in names)

    keys_of = {}
    for path in files:  # headers only: what will be compressed, before anything is written
        with safe_open(str(path), "pt") as f:
            keys_of[path] = list(f.keys())
    if not any(target(k) for keys in keys_of.values() for k in keys):
        raise ValueError(f"{src}: no tensor of a block linear found to compress")
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        summary = _stream(files, keys_of, target, work, lam, qtype, super_weight_sigma,
                          max_iter, scale_dtype, shard_bytes, progress)  # fmt: skip
        config.quantization_config = EntQuantConfig(qtype=qtype, lam=lam).to_dict()
        config.save_pretrained(work)
        for extra in src.iterdir():  # tokenizer, generation config, chat template, ...
            if (
                extra.is_file()
                and extra.suffix in _METADATA
                and extra.name not in ("config.json", "model.safetensors.index.json")
            ):
                shutil.copy2(extra, work / extra.name)
        if out.exists():
            out.rmdir()  # empty (checked above)
        os.replace(work, out)  # the whole checkpoint appears at once
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return summary


_METADATA = {".json", ".txt", ".model", ".tiktoken", ".jinja", ".md"}
"""Files copied beside the compressed shards (weights in other formats are not)."""


def _checkpoint_files(src: Path) -> list[Path]:
    """The checkpoint's safetensors files: those its index names, else model.safetensors, else
    the only safetensors file (several without an index are ambiguous)."""
    index = src / "model.safetensors.index.json"
    if index.is_file():
        try:
            names = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (json.JSONDecodeError, KeyError) as e:
            raise ValueError(f"{index} is not a safetensors index ({e})") from e
        files = [src / n for n in names]
        missing = [f.name for f in files if not f.is_file()]
        if missing:
            raise ValueError(f"{src}: shards named in the index are missing: {missing[:5]}")
        return files
    if (src / "model.safetensors").is_file():
        return [src / "model.safetensors"]
    files = sorted(src.glob("*.safetensors"))
    if len(files) != 1:
        raise ValueError(
            f"{src}: expected model.safetensors or an index, found {len(files)} safetensors files"
        )
    return files


def _stream(files, keys_of, target, work: Path, lam, qtype, super_weight_sigma, max_iter,
            scale_dtype, shard_bytes, progress) -> dict:  # fmt: skip
    from safetensors import safe_open
    from tqdm.auto import tqdm

    from icml26.entquant.layers import quantize_weight

    writer = _ShardWriter(work, shard_bytes)
    t0, layers, params, bits = time.perf_counter(), 0, 0, 0.0
    for path in files:
        with safe_open(str(path), "pt") as f:
            for key in tqdm(keys_of[path], desc=path.name, disable=not progress, leave=False):
                tensor = f.get_tensor(key)
                if not target(key):
                    writer.add(key, tensor)
                    continue
                module = key.rpartition(".")[0]
                enc, scales, report = quantize_weight(
                    tensor, module, lam, qtype, super_weight_sigma, max_iter, scale_dtype
                )
                del tensor  # the dense matrix goes before the next one is read
                layer = {
                    "words": enc.words.to(torch.int32).to(torch.int16),
                    "lane_starts": enc.starts.to(torch.int32),
                    "freqs": enc.freqs.to(torch.int16),
                    "scales": scales,
                }
                for leaf_name, value in layer.items():
                    writer.add(f"{module}.{leaf_name}", value)
                layers += 1
                params += report.shape[0] * report.shape[1]
                bits += report.bits_per_param * report.shape[0] * report.shape[1]
    n_out = writer.close()
    return {
        "layers": layers,
        "params": params,
        "seconds": time.perf_counter() - t0,
        "bits/param": bits / params,
        "input shards": len(files),
        "output shards": n_out,
    }
