"""``icml26-santa bench``: one decode-attention step, SANTA vs dense SDPA, and the bytes each reads.

SANTA reads all of K and only the sampled rows of V, so with a read fraction f of V rows its
memory traffic is (1 + f)/2 of dense decode's: the roofline bound on the speedup is 2 / (1 + f).

Timing: every function runs once untimed (compilation, allocator), then ``repeats`` synchronised
runs (CUDA events on a GPU), and the minimum counts; inputs are made before the clock starts.
The dense baseline is SDPA with native grouped-query attention (no repeated K / V copy), in the
same dtype (bf16 on CUDA by default). On CUDA SANTA takes a device seed (its offsets drawn in the
kernel: no host work per step). On CPU the SANTA path is the float64 torch reference (no kernel),
so its time is printed for honesty, not as a claim; the Triton kernel's timing needs a GPU.
"""

import time
from dataclasses import dataclass
from typing import Literal

import torch

from icml26.kernels.santa import santa_decode
from icml26.santa.attention import operating_point
from icml26.testing.checks import integer
from icml26.testing.command import DeviceOption
from icml26.testing.results import resolve_device
from icml26.testing.timing import torch_threads

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class BenchConfig(DeviceOption):
    """Decode-step time and bytes read vs context length and S, SANTA vs dense SDPA."""

    contexts: tuple[int, ...] = (1024, 4096, 16384, 32768)
    samples: tuple[int, ...] = ()
    """S values, with --block-n; empty (the default): the paper's operating point per context
    (the authors' tile size and --draws-per-tile draws per tile)"""
    draws_per_tile: int = 16
    heads: int = 9
    kv_heads: int = 3
    head_dim: int = 64
    mode: str = "tile_fixed"
    block_n: int = 64
    """keys per tile with --samples"""
    repeats: int = 5
    """timed runs after a warm-up; the minimum counts"""
    threads: int = 1
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    """auto: bf16 on CUDA, float32 on the CPU"""


def _min_ms(fn, repeats: int, device: str) -> float:
    """Warm up once, then the minimum of ``repeats`` synchronised runs, in milliseconds."""
    fn()
    if not device.startswith("cuda"):
        best = float("inf")
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t)
        return 1e3 * best
    torch.cuda.synchronize(device)
    best = float("inf")
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize(device)
        best = min(best, a.elapsed_time(b))
    return best


def run_bench(cfg: BenchConfig) -> list[dict]:
    device = resolve_device(cfg.device)
    for S in cfg.samples:
        integer("samples", S, low=1)
    integer("draws_per_tile", cfg.draws_per_tile, low=1)
    if cfg.heads % cfg.kv_heads:
        raise ValueError(f"heads ({cfg.heads}) must be a multiple of kv_heads ({cfg.kv_heads})")
    cuda = device.startswith("cuda")
    dtype = DTYPES.get(cfg.dtype) or (torch.bfloat16 if cuda else torch.float32)
    with torch_threads(cfg.threads, device):  # restored after: the caller's setting is theirs
        rows = []
        print(
            f"device {device}; mode {cfg.mode}; heads {cfg.heads}/{cfg.kv_heads}, "
            f"d {cfg.head_dim}, {str(dtype).replace('torch.', '')}; min of {cfg.repeats} after a "
            "warm-up"
        )
        print(
            f"{'N':>7}{'S':>6}{'tile':>6}{'read f':>8}{'bound 2/(1+f)':>15}{'dense ms':>10}"
            f"{'santa ms':>10}{'speedup':>9}"
        )
        for N in cfg.contexts:
            g = torch.Generator().manual_seed(0)
            q = torch.randn(1, cfg.heads, cfg.head_dim, generator=g).to(device, dtype)
            k = torch.randn(1, cfg.kv_heads, N, cfg.head_dim, generator=g).to(device, dtype)
            v = torch.randn(1, cfg.kv_heads, N, cfg.head_dim, generator=g).to(device, dtype)
            q4 = q[:, :, None]  # (B, H, 1, D): made before the clock

            def dense(q4=q4, k=k, v=v):
                return torch.nn.functional.scaled_dot_product_attention(q4, k, v, enable_gqa=True)

            t_dense = _min_ms(dense, cfg.repeats, device)
            # a device seed on CUDA (offsets drawn in the kernel), an integer on the CPU reference
            seed = torch.zeros((), dtype=torch.int64, device=device) if cuda else 0
            settings = (
                [(S, cfg.block_n) for S in cfg.samples]
                if cfg.samples
                else [operating_point(N, cfg.draws_per_tile)]
            )
            for S, block_n in settings:
                res = santa_decode(q, k, v, S, cfg.mode, block_n, seed)
                f = res.rows_read.double().mean().item() / N

                def step(S=S, block_n=block_n, q=q, k=k, v=v, seed=seed):
                    return santa_decode(q, k, v, S, cfg.mode, block_n, seed)

                t_santa = _min_ms(step, cfg.repeats, device)
                row = {
                    "N": N,
                    "S": S,
                    "block_n": block_n,
                    "read fraction": f,
                    "roofline bound": 2 / (1 + f),
                    "dense ms": t_dense,
                    "santa ms": t_santa,
                    "speedup": t_dense / t_santa,
                }
                rows.append(row)
                print(
                    f"{N:>7}{S:>6}{block_n:>6}{f:>8.3f}{row['roofline bound']:>15.2f}"
                    f"{row['dense ms']:>10.3f}{row['santa ms']:>10.3f}{row['speedup']:>9.2f}"
                )
        return rows
