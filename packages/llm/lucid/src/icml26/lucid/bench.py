"""``icml26-lucid bench``: LUCID vs softmax attention (SDPA), forward+backward and decode, by T.

On CPU it times the path ``lucid_attention`` takes there (the reference solve + SDPA); on CUDA
the Triton solve + our flash-style Triton attention against SDPA alone (FlashAttention-2 for
bf16 on recent GPUs, GQA natively), with peak memory, plus our attention kernel alone against
SDPA (how much of the gap is the kernel, how much the solve). Ratios come from one run; the
targets (on a GPU): forward+backward within 1.5x of FlashAttention-2 at T=8K, decode within
1.1x of standard decode.
"""

import time
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F

from icml26.kernels.attention import softmax_attention
from icml26.kernels.lucid import lucid_attention, lucid_decode, lucid_solve
from icml26.testing.checks import integer
from icml26.testing.command import DeviceOption
from icml26.testing.results import resolve_device
from icml26.testing.timing import torch_threads

DECODE_CALLS = 20
"""Decode steps per timed measurement: one step is a few microseconds on a GPU."""


@dataclass(frozen=True)
class BenchConfig(DeviceOption):
    """Time (and, on CUDA, peak memory) of LUCID vs SDPA across sequence lengths."""

    seq_lens: tuple[int, ...] | None = None
    """Sequence lengths T (default: 128 to 1024 on CPU, 1024 to 16384 on CUDA)."""
    batch: int = 1
    """Batch size."""
    heads: int = 8
    """Query heads."""
    kv_heads: int = 2
    """KV heads (GQA)."""
    head_dim: int = 64
    """Head dimension."""
    repeats: int = 3
    """Timed repetitions (the best is kept)."""


def _time(fn, repeats: int, device: str) -> tuple[float, float]:
    fn()  # warm-up (Triton compilation, allocator)
    best, peak = float("inf"), float("nan")
    for _ in range(repeats):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        t = time.perf_counter()
        fn()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() / 2**20
        best = min(best, time.perf_counter() - t)
    return best, peak


def _bench_one(cfg: BenchConfig, T: int, dtype: torch.dtype) -> dict:
    cuda = cfg.device.startswith("cuda")
    g = torch.Generator().manual_seed(T)
    shape_q = (cfg.batch, cfg.heads, T, cfg.head_dim)
    shape_kv = (cfg.batch, cfg.kv_heads, T, cfg.head_dim)
    q = torch.randn(shape_q, generator=g).to(cfg.device, dtype)
    k = torch.randn(shape_kv, generator=g).to(cfg.device, dtype)
    v = torch.randn(shape_kv, generator=g).to(cfg.device, dtype)

    group = cfg.heads // cfg.kv_heads

    def sdpa(qq, kk, vv):  # the baseline reads the KV heads in place, as FlashAttention-2 does
        return F.scaled_dot_product_attention(qq, kk, vv, is_causal=True, enable_gqa=True)

    def sdpa_repeated(qq, kk, vv):  # the same with copied KV heads (if a backend lacks GQA)
        kk, vv = kk.repeat_interleave(group, 1), vv.repeat_interleave(group, 1)
        return F.scaled_dot_product_attention(qq, kk, vv, is_causal=True)

    def train_step(attn):
        qq, kk, vv = (t.detach().requires_grad_() for t in (q, k, v))
        attn(qq, kk, vv).float().sum().backward()

    t_l, m_l = _time(lambda: train_step(lucid_attention), cfg.repeats, cfg.device)
    # The baseline is the faster of SDPA with native GQA and SDPA on copied KV heads: a backend
    # without GQA support would otherwise fall back to a slow path and flatter LUCID.
    t_s, m_s = min(
        _time(lambda: train_step(sdpa), cfg.repeats, cfg.device),
        _time(lambda: train_step(sdpa_repeated), cfg.repeats, cfg.device),
    )

    # On CUDA, our flash-style attention kernel alone (on the CPU it is SDPA itself), as LUCID runs
    # it on V': in the inputs' dtype, so the ratio leaves out the solve.
    t_a = _time(lambda: train_step(softmax_attention), cfg.repeats, cfg.device)[0] if cuda else None
    # Decode: one new token against a cache of T - 1 earlier tokens. Only the step is timed in
    # either arm; the caches are built beforehand, and appending one row (O(d), the same in both)
    # is left out. LUCID: the fused decode op (one pass over the cache computes v'_t and the
    # attention; Triton on CUDA) on a V' cache in the inputs' dtype, as LucidDynamicCache keeps
    # it; softmax: SDPA on the full K and V caches, new token included.
    q1, k1, v1 = q[:, :, -1], k[:, :, -1], v[:, :, -1]
    kc = k[:, :, :-1].contiguous()
    with torch.no_grad():
        vpc = lucid_solve(kc, v[:, :, :-1]).to(v.dtype)
    k_full, v_full = k.contiguous(), v.contiguous()
    k_rep, v_rep = (t.repeat_interleave(group, 1) for t in (k_full, v_full))

    def decode_lucid():
        for _ in range(DECODE_CALLS):
            lucid_decode(q1, kc, vpc, k1, v1)

    def decode_sdpa(gqa: bool):
        # One query sees the whole cache: no causal mask (SDPA's is_causal aligns the mask to the
        # top left, which for a single query would keep only the first key).
        kk, vv = (k_full, v_full) if gqa else (k_rep, v_rep)
        for _ in range(DECODE_CALLS):
            F.scaled_dot_product_attention(q[:, :, -1:], kk, vv, enable_gqa=gqa)

    with torch.no_grad():
        d_l, _ = _time(decode_lucid, cfg.repeats, cfg.device)
        d_s = min(
            _time(lambda: decode_sdpa(True), cfg.repeats, cfg.device)[0],
            _time(lambda: decode_sdpa(False), cfg.repeats, cfg.device)[0],
        )
    return {
        "T": T,
        "fwd+bwd ratio": t_l / t_s,
        "attention kernel ratio": None if t_a is None else t_a / t_s,
        "decode ratio": d_l / d_s,
        "fwd+bwd s lucid": t_l,
        "fwd+bwd s sdpa": t_s,
        "peak MiB lucid": m_l,
        "peak MiB sdpa": m_s,
    }


def run_bench(cfg: BenchConfig) -> list[dict]:
    """Print and return one row per T: time ratios LUCID / SDPA (and peak memory on CUDA)."""
    cfg = replace(cfg, device=resolve_device(cfg.device))
    cuda = cfg.device.startswith("cuda")
    seq_lens = cfg.seq_lens or ((1024, 2048, 4096, 8192, 16384) if cuda else (128, 256, 512, 1024))
    if not seq_lens:
        raise ValueError("seq_lens must name at least one sequence length, got none")
    for T in seq_lens:
        integer("seq_lens", T, low=1)
    integer("repeats", cfg.repeats, low=1)
    integer("kv_heads", cfg.kv_heads, low=1)
    if cfg.heads % cfg.kv_heads:
        raise ValueError(f"heads must be a multiple of kv_heads = {cfg.kv_heads}, got {cfg.heads}")
    with torch_threads(1, cfg.device):  # restored after: the caller's setting is theirs
        dtype = torch.bfloat16 if cuda else torch.float32
        print(
            f"device {cfg.device}, {dtype}, B={cfg.batch}, H={cfg.heads}/{cfg.kv_heads}, "
            f"D={cfg.head_dim}"
        )
        print(
            f"{'T':>6s} {'fwd+bwd LUCID/SDPA':>19s} {'decode LUCID/SDPA':>18s} "
            f"{'peak MiB LUCID/SDPA':>20s} {'attention kernel/SDPA':>22s}"
        )
        rows = []
        for T in seq_lens:
            r = _bench_one(cfg, T, dtype)
            rows.append(r)
            kernel = r["attention kernel ratio"]
            print(
                f"{T:>6d} {r['fwd+bwd ratio']:>19.2f} {r['decode ratio']:>18.2f} "
                f"{r['peak MiB lucid']:>9.1f}/{r['peak MiB sdpa']:<10.1f} "
                f"{'-' if kernel is None else f'{kernel:.2f}':>22s}"
            )
        return rows
