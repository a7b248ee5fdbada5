"""``icml26-entquant bench``: compression speed, decode speed per coder, inference overhead.

- compression: EntQuant (L-BFGS scale search + rANS encoding) in parameters per second on a
  weight matrix, at each lambda;
- decode: MB of codes per second for the rANS reference decoder (PyTorch), its NumPy loop (the
  CPU path), constriction's ANS decoder (Rust) and, with ``--device cuda``, the Triton kernel, on
  the same codes;
- inference: a tiny GPT forward with EntQuant ``decode="lazy"`` (codes decoded before every
  matmul), ``"cached"`` and a shared decode cache of half the dense size, against the dense
  model in fp32 and bf16, NF4 (bitsandbytes) and 4-bit HQQ, as ratios of the dense fp32 time in
  one run, with the bytes each keeps resident for the block linears.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from tqdm.auto import tqdm

from icml26.entquant import coding, models
from icml26.entquant.layers import quantize
from icml26.entquant.quantize import quantize_linear
from icml26.kernels.entropy import rans_decode_numpy, rans_decode_reference
from icml26.testing.command import DeviceOption
from icml26.testing.results import resolve_device
from icml26.testing.timing import median_time


@dataclass(frozen=True)
class BenchConfig(DeviceOption):
    """Compression params/s, decode bytes/s per coder, lazy-decode inference overhead."""

    rows: int = 1024
    """Rows of the benchmark matrix."""
    cols: int = 4096
    """Columns of the benchmark matrix."""
    lambdas: tuple[float, ...] = (3.9, 14.5, 58.0)
    """Lambdas to time."""
    repeats: int = 3
    """Timed repetitions (the median is reported)."""
    threads: int = 1
    """torch threads (1 for stable ratios on a shared CPU)."""
    gpt_dim: int = 128
    """Width of the tiny GPT of the inference comparison."""
    gpt_layers: int = 4
    """Blocks of the tiny GPT."""
    seed: int = 0
    load_memory: str | None = None
    """tiny-gpt or smollm2: instead, the peak memory of from_pretrained + one forward for the
    model saved in fp32 against saved with EntQuant (at the first lambda), in fresh processes."""

    def validate(self) -> None:
        if self.load_memory not in (None, "tiny-gpt", "smollm2"):
            raise ValueError(f"--load-memory must be tiny-gpt or smollm2, got {self.load_memory!r}")
        if min(self.rows, self.cols, self.repeats, self.threads, self.gpt_dim, self.gpt_layers) < 1:
            raise ValueError("rows, cols, repeats, threads, gpt_dim and gpt_layers must be >= 1")


def run_bench(cfg: BenchConfig) -> dict:
    cfg.validate()
    if cfg.load_memory is not None:
        import tempfile

        torch.set_num_threads(cfg.threads)
        if cfg.load_memory == "smollm2":
            model = models.load_smollm2()[0]
        else:
            model = models.tiny_gpt(cfg.seed, cfg.gpt_dim, cfg.gpt_layers).eval()
        with tempfile.TemporaryDirectory() as tmp:
            out = load_memory(model, cfg.lambdas[0], tmp)
        for key, value in out.items():
            print(f"{cfg.load_memory}: {key}: {value:.4g}")
        return out
    cfg = replace(cfg, device=resolve_device(cfg.device))
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    # Student-t rows: heavier tails than a Gaussian, like trained weights (drawn on the CPU: the
    # same matrix on every device).
    w = (torch.distributions.StudentT(5.0).sample((cfg.rows, cfg.cols)) * 0.02).to(cfg.device)
    n = w.numel()
    out: dict = {"compression params/s": {}, "decode MB/s": {}, "inference time / dense": {}}
    print(f"matrix {cfg.rows} x {cfg.cols}, {cfg.threads} thread(s), device {cfg.device}")
    quantize_linear(w[:8], 1.0, max_iter=2)  # warm-up: the first optimiser call imports a lot
    for lam in tqdm(cfg.lambdas, desc="compress", leave=False):
        t = median_time(
            lambda lam=lam: coding.encode(quantize_linear(w, lam).codes), cfg.repeats, cfg.device
        )
        out["compression params/s"][lam] = n / t
        print(f"compress lambda={lam:g}: {n / t / 1e6:.2f} M params/s")
    codes = quantize_linear(w, cfg.lambdas[0]).codes
    enc = coding.encode(codes)
    cons = coding.constriction_encode(codes, enc.freqs)
    mb = n / 1e6
    args = (enc.words, enc.starts, enc.freqs, enc.num_symbols)
    decoders = {
        "rANS reference (PyTorch, CPU)": lambda: rans_decode_reference(*args),
        "rANS NumPy loop (CPU)": lambda: rans_decode_numpy(*args),
        "constriction (Rust, CPU)": lambda: coding.constriction_decode(cons, enc.freqs, enc.shape),
    }
    if cfg.device.startswith("cuda"):
        enc_gpu = coding.EncodedCodes(
            enc.words.to(cfg.device), enc.starts.to(cfg.device), enc.freqs.to(cfg.device), enc.shape
        )

        def kernel():
            coding.decode(enc_gpu)
            torch.cuda.synchronize()

        decoders["rANS Triton kernel (CUDA)"] = kernel
    for name, fn in decoders.items():
        fn()
        t = median_time(fn, cfg.repeats)
        out["decode MB/s"][name] = mb / t
        print(f"decode {name}: {mb / t:.1f} MB/s of codes")
    model = models.tiny_gpt(cfg.seed, cfg.gpt_dim, cfg.gpt_layers, device=cfg.device).eval()
    x = torch.randint(0, 256, (4, 128)).to(cfg.device)
    variants = inference_variants(model, cfg.lambdas[0])
    with torch.no_grad():
        times = {}
        for name, m in variants.items():
            m(input_ids=x)
            times[name] = median_time(lambda m=m: m(input_ids=x), cfg.repeats, cfg.device)
    # resident bytes, measured for the dense and EntQuant variants (NF4's and HQQ's scales live
    # outside their modules' tensors, so only their codes would be counted: not reported)
    memory = {n: _linear_bytes(m) for n, m in variants.items() if not n.startswith(("NF4", "HQQ"))}
    out["block-linear bytes after a forward"] = memory
    for name, t in times.items():
        if name == "dense fp32":
            continue
        out["inference time / dense"][name] = t / times["dense fp32"]
        size = f", block linears {memory[name] / 1e3:.0f} kB resident" if name in memory else ""
        print(f"tiny GPT forward, {name}: {t / times['dense fp32']:.2f}x dense fp32{size}")
    for name, why in _UNAVAILABLE.items():
        out["inference time / dense"][name] = None
        print(f"tiny GPT forward, {name}: not run ({why})")
    return out


_UNAVAILABLE: dict[str, str] = {}


def _linear_bytes(model) -> int:
    """Bytes the block linears keep resident: parameters, buffers, and EntQuant's decoded
    copies (``decode="cached"`` or a shared cache), after a forward pass."""
    from icml26.entquant.layers import BLOCK_LINEAR, EntQuantLinear

    total, caches = 0, set()
    for name, m in model.named_modules():
        if BLOCK_LINEAR.search(name) and not any(True for _ in m.children()):
            total += sum(t.numel() * t.element_size() for t in [*m.parameters(), *m.buffers()])
        if isinstance(m, EntQuantLinear):
            if m._dense is not None:
                total += m._dense.numel() * m._dense.element_size()
            if m.cache is not None and id(m.cache) not in caches:
                caches.add(id(m.cache))
                total += m.cache.nbytes
    return total


def _swap_linears(model, make):
    """A copy of ``model`` whose block linears are ``make(linear)``."""
    from icml26.entquant.layers import target_linears

    q = copy.deepcopy(model)
    for name in target_linears(q):
        parent, _, child = name.rpartition(".")
        setattr(q.get_submodule(parent), child, make(q.get_submodule(name)))
    return q


def inference_variants(model, lam: float) -> dict:
    """The tiny GPT as dense fp32 and bf16, EntQuant (lazy, cached, a shared decode cache of
    half the dense linears' size) and, where their packages run here, NF4 (bitsandbytes) and
    4-bit HQQ (its PyTorch backend): {name: model}."""
    from icml26.entquant.linear import set_decode_cache

    _UNAVAILABLE.clear()
    variants = {"dense fp32": model, "dense bf16": copy.deepcopy(model).to(torch.bfloat16)}
    for mode in ("lazy", "cached"):
        q = copy.deepcopy(model)
        quantize(q, lam, decode=mode, max_iter=50, progress=False)
        variants[f"EntQuant {mode}"] = q
    q = copy.deepcopy(variants["EntQuant lazy"])
    set_decode_cache(q, _linear_bytes(model) // 2)
    variants["EntQuant, decode cache of half the dense size"] = q
    device = next(model.parameters()).device
    try:
        import bitsandbytes as bnb
        from torch import nn

        def nf4(lin):
            layer = bnb.nn.Linear4bit(lin.in_features, lin.out_features, lin.bias is not None,
                                      compute_dtype=torch.float32, quant_type="nf4")  # fmt: skip
            layer.weight = bnb.nn.Params4bit(lin.weight.data.cpu().clone(), requires_grad=False,
                                             quant_type="nf4")  # fmt: skip
            if lin.bias is not None:
                layer.bias = nn.Parameter(lin.bias.data.clone(), requires_grad=False)
            return layer.to(device)

        variants["NF4 (bitsandbytes)"] = _swap_linears(model, nf4)
    except Exception as e:  # an optional baseline: say why it is missing, keep the others
        _UNAVAILABLE["NF4 (bitsandbytes)"] = f"{type(e).__name__}: {e}"
    try:
        from hqq.core.quantize import BaseQuantizeConfig, HQQBackend, HQQLinear

        HQQLinear.set_backend(HQQBackend.PYTORCH)
        hqq_cfg = BaseQuantizeConfig(nbits=4, group_size=64)

        def hqq4(lin):
            return HQQLinear(
                copy.deepcopy(lin), hqq_cfg, compute_dtype=torch.float32, device=str(device)
            )

        variants["HQQ-4 (PyTorch backend)"] = _swap_linears(model, hqq4)
    except Exception as e:
        _UNAVAILABLE["HQQ-4 (PyTorch backend)"] = f"{type(e).__name__}: {e}"
    return variants


_PEAK_PROBE = """
import json, os, sys
import torch
torch.set_num_threads(int(os.environ["ICML26_THREADS"]))
import icml26.entquant  # registers the quantization method
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])  # kB

# a one-block model of the same class and format first (loaded and run): the first load and
# forward import code lazily (tens of MB), which must not be counted
warm = AutoModelForCausalLM.from_pretrained(sys.argv[3])
with torch.no_grad():
    warm(torch.zeros(1, 32, dtype=torch.long))
del warm
with open("/proc/self/clear_refs", "w") as f:  # reset the peak (VmHWM) to the current RSS
    f.write("5")
before = status("VmRSS")
model = AutoModelForCausalLM.from_pretrained(sys.argv[1])
ids = torch.arange(32).remainder(model.config.vocab_size)[None]
with torch.no_grad():  # a forward pass: safetensors weights are mapped, not read, until used
    logits = model(ids).logits
peak = status("VmHWM")
save_file({"logits": logits.contiguous()}, sys.argv[2])
print(json.dumps({"kib_before": before, "kib_peak": peak}))
"""


def _peak_load_kib(path: Path, logits_out: Path, warm: Path) -> int:
    """Peak resident memory that ``from_pretrained(path)`` and one forward pass add to a fresh
    process (KiB: the peak RSS, reset after the imports, minus the RSS then; Linux). The
    forward pass is part of it because loading maps the safetensors file and its pages become
    resident only when used. Its logits go to ``logits_out``. ``warm``: a small checkpoint
    loaded and run first, so the code a first load imports is not counted."""
    import json
    import os
    import subprocess
    import sys

    args = [sys.executable, "-c", _PEAK_PROBE, str(path), str(logits_out), str(warm)]
    # the parent's thread count: the same reductions, so logits compare exactly
    env = {**os.environ, "ICML26_THREADS": str(torch.get_num_threads())}
    done = subprocess.run(args, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"loading {path} failed:\n{done.stderr[-2000:]}")
    row = json.loads(done.stdout.strip().splitlines()[-1])
    return row["kib_peak"] - row["kib_before"]


def load_memory(model, lam: float, workdir: str | Path, max_iter: int = 500) -> dict:
    """Peak memory of ``AutoModelForCausalLM.from_pretrained`` plus one forward pass (32
    tokens) for ``model`` saved in fp32 against the same model compressed with EntQuant at
    ``lam`` (lazy decoding; each in a fresh process), and whether the compressed model's logits
    after loading equal those before saving. ``model``: a transformers causal LM in fp32 (left
    unchanged)."""
    from safetensors.torch import load_file

    workdir = Path(workdir)
    model.save_pretrained(workdir / "fp32")
    q = copy.deepcopy(model)
    report = quantize(q, lam, max_iter=max_iter, progress=False)
    ids = torch.arange(32).remainder(model.config.vocab_size)[None]
    with torch.no_grad():
        before = q(ids).logits
    q.save_pretrained(workdir / "entquant")
    config = copy.deepcopy(model.config)
    config.num_hidden_layers = 1
    warm = type(model)(config).eval()
    for name in ("fp32", "entquant"):
        if name == "entquant":
            quantize(warm, lam, max_iter=1, progress=False)
        warm.save_pretrained(workdir / f"warm-{name}")
    kib = {name: _peak_load_kib(workdir / name, workdir / f"{name}.logits.safetensors",
                                workdir / f"warm-{name}")
           for name in ("fp32", "entquant")}  # fmt: skip
    after = load_file(workdir / "entquant.logits.safetensors")["logits"]
    linear_params = report.num_params
    return {
        "peak MiB, fp32 checkpoint": kib["fp32"] / 1024,
        "peak MiB, EntQuant checkpoint": kib["entquant"] / 1024,
        "peak ratio EntQuant / fp32": kib["entquant"] / kib["fp32"],
        "fp32 size of the compressed layers, MiB": 4 * linear_params / 2**20,
        "bits/param": report.bits_per_param,
        "logits max |difference| after saving and loading": float((after - before).abs().max()),
    }
