"""``icml26-santa bench``: one decode-attention step, SANTA vs dense SDPA, and the bytes each reads.

SANTA reads all of K and only the sampled rows of V, so with a read fraction f of V rows its
memory traffic is (1 + f)/2 of dense decode's: the roofline bound on the speedup is 2 / (1 + f).
On CPU the SANTA path is the float64 torch reference (no kernel), so its time is printed for
honesty, not as a claim; the Triton kernel's timing needs a CUDA GPU.
"""

import time
from dataclasses import dataclass

import torch

from icml26.kernels.santa import santa_decode
from icml26.santa._results import resolve_device


@dataclass(frozen=True)
class BenchConfig:
    """Decode-step time and bytes read vs context length and S, SANTA vs dense SDPA."""

    contexts: tuple[int, ...] = (1024, 4096, 16384)
    samples: tuple[int, ...] = (64, 256)
    heads: int = 9
    kv_heads: int = 3
    head_dim: int = 64
    mode: str = "tile_fixed"
    repeats: int = 5
    threads: int = 1
    device: str = "auto"
    """auto (CUDA when present), cpu, cuda, cuda:N"""


def _time(fn, repeats, device):
    cuda = device.startswith("cuda")
    fn()
    if cuda:  # kernels launch asynchronously: time them to completion
        torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(repeats):
        fn()
    if cuda:
        torch.cuda.synchronize()
    return (time.perf_counter() - t) / repeats


def run_bench(cfg: BenchConfig) -> list[dict]:
    device = resolve_device(cfg.device)
    torch.set_num_threads(cfg.threads)
    rows = []
    print(f"device {device}; mode {cfg.mode}; heads {cfg.heads}/{cfg.kv_heads}, d {cfg.head_dim}")
    print(
        f"{'N':>7}{'S':>6}{'read f':>8}{'bound 2/(1+f)':>15}{'dense ms':>10}{'santa ms':>10}"
        f"{'speedup':>9}"
    )
    for N in cfg.contexts:
        g = torch.Generator().manual_seed(0)
        q = torch.randn(1, cfg.heads, cfg.head_dim, generator=g).to(device)
        k = torch.randn(1, cfg.kv_heads, N, cfg.head_dim, generator=g).to(device)
        v = torch.randn(1, cfg.kv_heads, N, cfg.head_dim, generator=g).to(device)
        group = cfg.heads // cfg.kv_heads

        def dense(q=q, k=k, v=v, group=group):
            return torch.nn.functional.scaled_dot_product_attention(
                q[:, :, None], k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
            )

        t_dense = _time(dense, cfg.repeats, device)
        for S in cfg.samples:
            res = santa_decode(q, k, v, S, cfg.mode)
            f = res.rows_read.double().mean().item() / N
            t_santa = _time(
                lambda S=S, q=q, k=k, v=v: santa_decode(q, k, v, S, cfg.mode),
                cfg.repeats,
                device,
            )
            row = {
                "N": N,
                "S": S,
                "read fraction": f,
                "roofline bound": 2 / (1 + f),
                "dense ms": 1e3 * t_dense,
                "santa ms": 1e3 * t_santa,
                "speedup": t_dense / t_santa,
            }
            rows.append(row)
            print(
                f"{N:>7}{S:>6}{f:>8.3f}{row['roofline bound']:>15.2f}{row['dense ms']:>10.2f}"
                f"{row['santa ms']:>10.2f}{row['speedup']:>9.2f}"
            )
    return rows
