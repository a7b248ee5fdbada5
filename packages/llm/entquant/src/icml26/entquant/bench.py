"""``icml26-entquant bench``: compression speed, decode speed per coder, inference overhead.

- compression: EntQuant (L-BFGS scale search + rANS encoding) in parameters per second on a
  weight matrix, at each lambda;
- decode: MB of codes per second for the rANS reference decoder (PyTorch), its NumPy loop (the
  CPU path), constriction's ANS decoder (Rust) and, with ``--device cuda``, the Triton kernel, on
  the same codes;
- inference: a tiny GPT forward with ``decode="lazy"`` (codes decoded before every matmul) and
  ``"cached"`` against the dense model, as a ratio of the dense time, in one run.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, replace

import torch
from tqdm.auto import tqdm

from icml26.entquant import coding, models
from icml26.entquant._results import resolve_device
from icml26.entquant.layers import quantize
from icml26.entquant.quantize import quantize_linear
from icml26.kernels.entropy import rans_decode_numpy, rans_decode_reference


@dataclass(frozen=True)
class BenchConfig:
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
    device: str = "auto"
    """auto (CUDA when present), cpu, cuda, cuda:N"""

    def validate(self) -> None:
        if min(self.rows, self.cols, self.repeats, self.threads, self.gpt_dim, self.gpt_layers) < 1:
            raise ValueError("rows, cols, repeats, threads, gpt_dim and gpt_layers must be >= 1")


def _median_time(fn, repeats: int, device: str = "cpu") -> float:
    cuda = device.startswith("cuda")
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        if cuda:  # kernels launch asynchronously: time them to completion
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def run_bench(cfg: BenchConfig) -> dict:
    cfg.validate()
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
        t = _median_time(
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
        t = _median_time(fn, cfg.repeats)
        out["decode MB/s"][name] = mb / t
        print(f"decode {name}: {mb / t:.1f} MB/s of codes")
    model = models.tiny_gpt(cfg.seed, cfg.gpt_dim, cfg.gpt_layers, device=cfg.device).eval()
    x = torch.randint(0, 256, (4, 128)).to(cfg.device)
    variants = {"dense": model}
    for mode in ("lazy", "cached"):
        q = copy.deepcopy(model)
        quantize(q, cfg.lambdas[0], decode=mode, max_iter=50, progress=False)
        variants[mode] = q
    with torch.no_grad():
        times = {}
        for name, m in variants.items():
            m(input_ids=x)
            times[name] = _median_time(lambda m=m: m(input_ids=x), cfg.repeats, cfg.device)
    for name in ("lazy", "cached"):
        out["inference time / dense"][name] = times[name] / times["dense"]
        print(f"tiny GPT forward, decode={name}: {times[name] / times['dense']:.2f}x dense")
    return out
