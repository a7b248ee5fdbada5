#!/usr/bin/env python
"""The first thing to run on a CUDA machine for icml26-kernels: every op's compiled Triton kernel
against its reference at real sizes in fp32 / fp16 / bf16, then timings against the best
baseline with CUDA events, written as one markdown table.

Needs torch and triton only (no uv, no network, no install): run it from a source tree,

    python kernels/gpu_check.py [--out FILE] [--repeats N] [--quick]

Without CUDA it says so and exits 0 (the kernels are tested on the CPU through Triton's
interpreter by the test suite). ``--self-test`` runs the correctness section at tiny sizes
through the interpreter on the CPU, so the script itself is tested where no GPU is.

Correctness: each op's kernel (``ICML26_KERNELS=triton``) against its reference computed in
float64 from the same inputs, with the op's tolerance for the input dtype; SANTA against the
reference's counts with the same seed; rANS exactly. Exit status 1 if any check fails.

Timings (CUDA events, warm-up then the median of ``--repeats``), each with its baseline and the
goal the suite set for it:

- LUCID forward + backward (solve + attention on V') vs FlashAttention-2 through SDPA (flash
  backend, native GQA), bf16, T = 8K: goal <= 1.5x;
- LUCID decode step vs a standard decode step (SDPA, one query, GQA) at a 32K cache: goal
  <= 1.1x;
- SANTA decode (tile_fixed, 256-key tiles, ~16 draws per tile) vs dense decode (SDPA) at 32K
  and 128K, bf16: goal >= 1.3x faster at 32K;
- softmax_attention (the flash-style kernel) vs SDPA flash, forward + backward at 8K: no goal,
  the reference point for LUCID's ratio;
- rANS decode of a 576 x 576 weight matrix vs one bf16 matmul with it (16 tokens): no goal; the
  price of decoding on the fly per forward.
"""

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _paths() -> None:
    # From a source tree: the kernels' src and the testing toolkit need no install.
    for p in (HERE / "src", ROOT / "shared" / "testing" / "src"):
        if p.is_dir() and str(p) not in sys.path:
            sys.path.insert(0, str(p))


TINY = dict(T=40, N=70, D=16, Hq=4, Hkv=2, lanes=8, symbols=3000, santa_n=150, block=32)
REAL = dict(
    T=2048, N=8192, D=128, Hq=8, Hkv=2, lanes=576, symbols=576 * 576, santa_n=32768, block=256
)


class Checks:
    """Collects correctness rows: (op, dtype, max error, tolerance, ok). A row fails when the
    op ran its reference instead of the Triton kernel (a check of the reference against itself
    would pass vacuously)."""

    def __init__(self):
        self.rows: list[tuple[str, str, str, str, bool]] = []

    def ran_triton(self, name: str) -> bool:
        from icml26.kernels.dispatch import _REGISTRY, Backend

        key = name.split()[0]
        # lucid_attention is the solve then attention on V': both ops must have run Triton
        keys = ("lucid_solve", "softmax_attention") if key == "lucid_attention" else (key,)
        return all(_REGISTRY[k].last_backend is Backend.TRITON for k in keys)

    def close(self, op, dtype, got, ref, tol) -> None:
        import torch

        if not self.ran_triton(op):
            self.rows.append(
                (op, str(dtype).replace("torch.", ""), "-", "ran the reference", False)
            )
            return
        atol, rtol = tol
        got, ref = got.double(), ref.double()
        err = (got - ref).abs()
        bound = atol + rtol * ref.abs()
        ok = bool(torch.isfinite(got).all()) and bool((err <= bound).all())
        rel = (err / bound).max().item() if err.numel() else 0.0
        self.rows.append(
            (
                op,
                str(dtype).replace("torch.", ""),
                f"{err.max().item():.2e}",
                f"atol {atol:g} rtol {rtol:g} (worst {rel:.2f} of it)",
                ok,
            )
        )

    def exact(self, op, dtype, same: bool, what: str) -> None:
        if not self.ran_triton(op):
            same, what = False, "ran the reference"
        self.rows.append((op, dtype, what, "exact", same))


def correctness(device: str, sizes: dict, dtypes) -> Checks:
    import torch

    c = Checks()
    g = torch.Generator().manual_seed(0)
    T, D, Hq, Hkv = sizes["T"], sizes["D"], sizes["Hq"], sizes["Hkv"]

    def rnd(*shape, dtype, scale=1.0):
        return (scale * torch.randn(*shape, generator=g)).to(device, dtype)

    # one generator, drawn from in a fixed order: every run checks the same inputs
    for dt in dtypes:
        q, k, v = (
            rnd(1, Hq, T, D, dtype=dt),
            rnd(1, Hkv, T, D, dtype=dt),
            rnd(1, Hkv, T, D, dtype=dt),
        )
        _check_softmax(c, q, k, v, dt, g, device)
        _check_lucid(c, q, k, v, dt, g, rnd, sizes)  # bf16: what a bf16 transformers model runs
        _check_lucid_correlated(c, dt, g, device, sizes)
        _check_santa(c, dt, rnd, sizes)
    _check_rans(c, g, device, sizes)
    return c


def _check_softmax(c: Checks, q, k, v, dt, g, device) -> None:
    """Softmax attention, forward and the three gradients, against the fp64 reference."""
    import torch

    from icml26.kernels.attention import softmax_attention, softmax_attention_reference

    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    out = softmax_attention(*leaves, causal=True)
    grad = torch.randn(out.shape, generator=g).to(device, dt)
    out.backward(grad)
    ref_leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
    ref = softmax_attention_reference(*ref_leaves, causal=True)
    ref.backward(grad.double())
    tol = softmax_attention.tolerance(dt)
    c.close("softmax_attention fwd", dt, out, ref, tol)
    for name, a, b in zip("qkv", leaves, ref_leaves, strict=True):
        c.close(f"softmax_attention d{name}", dt, a.grad, b.grad, tol)


def _check_lucid(c: Checks, q, k, v, dt, g, rnd, sizes: dict) -> None:
    """LUCID's solve (forward, dk, dv), attention and one decode step."""
    import torch

    from icml26.kernels.lucid import (
        lucid_attention,
        lucid_attention_reference,
        lucid_decode,
        lucid_decode_reference,
        lucid_solve,
        lucid_solve_reference,
    )

    N, D, Hq, Hkv = sizes["N"], sizes["D"], sizes["Hq"], sizes["Hkv"]
    kk = [t.detach().requires_grad_() for t in (k, v)]
    vp = lucid_solve(*kk)
    gv = torch.randn(vp.shape, generator=g).to(vp.device, vp.dtype)
    vp.backward(gv)
    rk = [t.detach().double().requires_grad_() for t in (k, v)]
    rvp = lucid_solve_reference(*rk)
    rvp.backward(gv.double())
    tol = _op_tol(lucid_solve, dt)
    c.close("lucid_solve fwd", dt, vp, rvp, tol)
    c.close("lucid_solve dk", dt, kk[0].grad, rk[0].grad, tol)
    c.close("lucid_solve dv", dt, kk[1].grad, rk[1].grad, tol)
    out = lucid_attention(q, k, v)
    ref = lucid_attention_reference(q.double(), k.double(), v.double())
    c.close("lucid_attention fwd", dt, out, ref, _lucid_attention_tol(dt, rvp))
    kc, vpc = rnd(1, Hkv, N, D, dtype=dt), rnd(1, Hkv, N, D, dtype=dt, scale=0.5)
    qd, kn, vn = rnd(1, Hq, D, dtype=dt), rnd(1, Hkv, D, dtype=dt), rnd(1, Hkv, D, dtype=dt)
    o, vpn = lucid_decode(qd, kc, vpc, kn, vn)
    ro, rvpn = lucid_decode_reference(*(t.double() for t in (qd, kc, vpc, kn, vn)))
    tol = _op_tol(lucid_decode, dt)
    c.close("lucid_decode out", dt, o, ro, tol)
    c.close("lucid_decode v'", dt, vpn, rvpn, tol)


def correlated_qkv(T: int, D: int, Hq: int, Hkv: int, g, device, dtype, clusters: int = 8):
    """Keys in a few tight clusters (repeated tokens) and queries near them: L far from the
    identity and LUCID's output cancelling, the numerics random keys at D = 128 never reach
    (there L is nearly I)."""
    import torch

    centres = torch.randn(1, Hkv, clusters, D, generator=g, dtype=torch.float64)
    k = centres[:, :, torch.randint(0, clusters, (T,), generator=g)]
    k = k + 0.05 * torch.randn(1, Hkv, T, D, generator=g, dtype=torch.float64)
    q = k.repeat_interleave(Hq // Hkv, 1) + 0.1 * torch.randn(
        1, Hq, T, D, generator=g, dtype=torch.float64
    )
    v = torch.randn(1, Hkv, T, D, generator=g, dtype=torch.float64)
    return tuple(t.to(device, dtype) for t in (q, k, v))


UNIT_ROUNDOFF = {"float16": 2.0**-11, "bfloat16": 2.0**-8}


def _check_lucid_correlated(c: Checks, dt, g, device, sizes: dict) -> None:
    """LUCID attention on clustered keys against fp64 LUCID on the same rounded inputs: in half
    precision at ``lucid_attention``'s error bound (3u max|V'|), in fp32 at the solve's
    tolerance. The row names how far L is from the identity (the norm of V' - V over V's)."""
    from icml26.kernels.lucid import (
        lucid_attention,
        lucid_attention_reference,
        lucid_solve_reference,
    )

    q, k, v = correlated_qkv(sizes["T"], sizes["D"], sizes["Hq"], sizes["Hkv"], g, device, dt)
    out = lucid_attention(q, k, v)
    ref = lucid_attention_reference(q.double(), k.double(), v.double())
    vp = lucid_solve_reference(k.double(), v.double())
    active = float((vp - v.double()).norm() / v.double().norm())
    what = f"lucid_attention fwd, clustered keys (V' moved {active:.2f} of V's norm)"
    c.close(what, dt, out, ref, _lucid_attention_tol(dt, vp))


def _op_tol(op, dt) -> tuple[float, float]:
    """An op's registered tolerance; bf16 (which the LUCID ops register none for) the suite's
    default for bf16."""
    import torch

    from icml26.kernels.dispatch import DEFAULT_TOLERANCES

    return DEFAULT_TOLERANCES[torch.bfloat16] if dt == torch.bfloat16 else op.tolerance(dt)


def _lucid_attention_tol(dt, vp) -> tuple[float, float]:
    """(atol, rtol) for ``lucid_attention``: in half precision the attention on V' runs in that
    precision, so its docstring's bound 3u max|V'|; in fp32 the solve's tolerance."""
    from icml26.kernels.lucid import lucid_solve

    u = UNIT_ROUNDOFF.get(str(dt).replace("torch.", ""))
    return lucid_solve.tolerance(dt) if u is None else (3 * u * float(vp.detach().abs().max()), 0.0)


def _check_santa(c: Checks, dt, rnd, sizes: dict) -> None:
    """SANTA: the kernel's arithmetic is fp32 and the reference's fp64, so a count can move by
    one where a0 + sum x falls within fp32 rounding of an integer: the counts must agree on almost
    every row (>= 99.9%, every row total within 1 of its budget), and the output must equal the
    reference's aggregation at the kernel's own counts."""
    import torch

    from icml26.kernels.santa import santa_decode, santa_decode_reference

    n, D, Hq, Hkv, block = sizes["santa_n"], sizes["D"], sizes["Hq"], sizes["Hkv"], sizes["block"]
    sq = rnd(2, Hq, D, dtype=dt, scale=2.0)
    sk, sv = rnd(2, Hkv, n, D, dtype=dt), rnd(2, Hkv, n, D, dtype=dt)
    dname = str(dt).replace("torch.", "")
    for mode in ("systematic", "tile_fixed", "tile_prop"):
        S = 16 * math.ceil(n / block)  # ~16 draws per tile, the paper's setting
        res, cnt = santa_decode(sq, sk, sv, S, mode, block, seed=3, return_counts=True)
        _, rcnt = santa_decode_reference(
            sq.double(), sk.double(), sv.double(), S, mode, block, seed=3, return_counts=True
        )
        cnt, rcnt = cnt.cpu(), rcnt.cpu()
        agree = (cnt == rcnt).double().mean().item()
        totals = (cnt.sum(-1) - rcnt.sum(-1)).abs().max().item()
        c.exact(
            f"santa_decode {mode} counts",
            dname,
            agree >= 0.999 and totals <= 1,
            f"{agree:.6f} of rows agree, row totals within {totals:.0f}",
        )
        want = _santa_at_counts(sq, sk, sv, cnt, S, mode, block)
        c.close(f"santa_decode {mode} out", dt, res.out, want, santa_decode.tolerance(dt))
        # key ranges (a left-padded row and a window): the same count agreement
        ranges = dict(key_start=torch.tensor([0, n // 3]), key_end=torch.tensor([n, n - 5]))
        _, cnt = santa_decode(sq, sk, sv, S, mode, block, seed=3, return_counts=True, **ranges)
        _, rcnt = santa_decode_reference(
            sq.double(), sk.double(), sv.double(), S, mode, block, seed=3,
            return_counts=True, **ranges,
        )  # fmt: skip
        agree = (cnt.cpu() == rcnt.cpu()).double().mean().item()
        c.exact(
            f"santa_decode {mode} counts, key ranges",
            dname,
            agree >= 0.999 and cnt[1, :, : n // 3].sum().item() == 0,
            f"{agree:.6f} of rows agree, nothing drawn before a range",
        )


def _check_rans(c: Checks, g, device, sizes: dict) -> None:
    """rANS: exact round trip of a quantised-weight-like symbol stream."""
    import torch

    from icml26.kernels.entropy import quantize_frequencies, rans_decode, rans_encode

    sym = torch.randint(0, 16, (sizes["symbols"],), generator=g)
    sym = torch.where(torch.rand(sym.shape, generator=g) < 0.7, 7, sym)  # skewed, like FP8 codes
    freqs = quantize_frequencies(torch.bincount(sym, minlength=16), prob_bits=12)
    streams = rans_encode(sym, freqs, lanes=sizes["lanes"])
    dec = rans_decode(
        streams.words.to(device), streams.starts.to(device), freqs.to(device), sym.numel()
    )
    c.exact("rans_decode", "int", torch.equal(dec.cpu(), sym), f"{sym.numel()} symbols")


def _santa_at_counts(q, k, v, counts, S, mode, block):
    """SANTA's output in float64 for given counts (B, H_q, N): the aggregation of the module
    docstring of ``icml26.kernels.santa`` with the exact tile weights."""
    import torch

    from icml26.kernels.santa import (
        _scores,
        _tile_stats,
        _tiles,
        key_ranges,
        plan_from_tile_stats,
    )

    scale = 1.0 / math.sqrt(q.shape[-1])
    s = _scores(q.double().cpu(), k.double().cpu(), scale)
    B, Hq, N = s.shape
    st, valid, _ = _tiles(s, *key_ranges(None, None, B, N, s.device), block, full=True)
    _, _, budget, W, Z = plan_from_tile_stats(_tile_stats(st, valid), S, mode)
    T = W.shape[-1]
    vv = v.double().cpu().repeat_interleave(Hq // k.shape[1], dim=1)
    pad = T * block - N
    c = torch.nn.functional.pad(counts.double(), (0, pad)).view(B, Hq, T, block)
    vt = torch.nn.functional.pad(vv, (0, 0, 0, pad)).view(B, Hq, T, block, -1)
    out_t = torch.einsum("bhtn,bhtnd->bhtd", c, vt)
    if mode == "tile_fixed":
        return (W[..., None] * out_t / (Z[..., None] * budget[..., None])).sum(-2)
    return out_t.sum(-2) / S


def _events_ms(fn, repeats: int) -> float:
    import torch

    for _ in range(3):
        fn()
    if not torch.cuda.is_available():  # the --self-test run of this code on a CPU
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            times.append(1e3 * (time.perf_counter() - t))
        return statistics.median(times)
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def _flash():
    """SDPA's flash backend on CUDA (FlashAttention-2, native GQA); any backend on a CPU."""
    import contextlib

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if not torch.cuda.is_available():
        return contextlib.nullcontext()
    return sdpa_kernel(SDPBackend.FLASH_ATTENTION)


def timings(repeats: int, quick: bool, tiny: bool = False) -> list[tuple[str, str, str, str, str]]:
    """(what, kernel ms, baseline ms, ratio, goal) rows; ``tiny``: small shapes on the current
    device (the CPU self-test of this code)."""
    import torch

    from icml26.kernels.entropy import quantize_frequencies, rans_decode, rans_encode

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    bf = torch.bfloat16 if dev == "cuda" else torch.float32  # (the interpreter: fp32 tiles)
    rows = []
    Hq, Hkv, D = (4, 2, 16) if tiny else (32, 8, 128)
    for T in (32,) if tiny else (2048,) if quick else (1024, 4096, 8192, 16384):
        rows += _attention_rows(T, Hq, Hkv, D, repeats, dev, bf)
    for N in (256,) if tiny else (32768,) if quick else (32768, 131072):
        rows += _decode_rows(N, Hq, Hkv, D, repeats, dev, bf)
    side = 64 if tiny else 576
    g = torch.Generator().manual_seed(0)
    sym = torch.where(
        torch.rand(side * side, generator=g) < 0.7,
        7,
        torch.randint(0, 16, (side * side,), generator=g),
    )
    freqs = quantize_frequencies(torch.bincount(sym, minlength=16), prob_bits=12)
    st = rans_encode(sym, freqs, lanes=side)
    w, s = st.words.to(dev), st.starts.to(dev)  # the frequency table stays on the CPU: no sync
    t = _events_ms(lambda: rans_decode(w, s, freqs, sym.numel()), repeats)
    W = torch.randn(side, side, device=dev, dtype=bf)
    x = torch.randn(16, side, device=dev, dtype=bf)
    base = _events_ms(lambda: x @ W, repeats)
    rows.append(
        (
            f"rANS decode {side}x{side} ({side} lanes)",
            f"{t:.3f}",
            f"{base:.3f} (bf16 matmul, 16 tokens)",
            f"{t / base:.1f}x",
            "-",
        )
    )
    return rows


def _attention_rows(T: int, Hq: int, Hkv: int, D: int, repeats: int, dev, dt) -> list:
    """Forward + backward of our softmax attention and of LUCID (the fp32 solve, then attention
    on V' in ``dt``) against FlashAttention-2 through SDPA, at sequence length T. The work does not
    depend on the keys' values (the correctness rows cover clustered keys)."""
    import torch
    import torch.nn.functional as F

    from icml26.kernels.attention import softmax_attention
    from icml26.kernels.lucid import lucid_attention

    def fa2_step(q, k, v):
        with _flash():
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        out.backward(torch.ones_like(out))

    q = torch.randn(1, Hq, T, D, device=dev, dtype=dt, requires_grad=True)
    k = torch.randn(1, Hkv, T, D, device=dev, dtype=dt, requires_grad=True)
    v = torch.randn(1, Hkv, T, D, device=dev, dtype=dt, requires_grad=True)
    base = _events_ms(lambda: fa2_step(q, k, v), repeats)

    def ours(fn):
        def step():
            out = fn(q, k, v)
            out.backward(torch.ones_like(out))

        return step

    rows = []
    for name, fn, goal in (
        ("softmax_attention fwd+bwd", lambda a, b, c: softmax_attention(a, b, c), "-"),
        ("LUCID attention fwd+bwd", lambda a, b, c: lucid_attention(a, b, c), "<= 1.5x at 8K"),
    ):
        t = _events_ms(ours(fn), repeats)
        rows.append(
            (
                f"{name}, T={T}, {Hq}/{Hkv} heads, D={D}, {str(dt).replace('torch.', '')}",
                f"{t:.3f}",
                f"{base:.3f} (FA2 via SDPA)",
                f"{t / base:.2f}x",
                goal,
            )
        )
    return rows


def _decode_rows(N: int, Hq: int, Hkv: int, D: int, repeats: int, dev, dt) -> list:
    """SANTA decode vs dense decode at a cache of N tokens; at the first N also LUCID's decode
    step against the same dense decode (the step a model would take without LUCID)."""
    import torch
    import torch.nn.functional as F

    from icml26.kernels.lucid import lucid_decode
    from icml26.kernels.santa import santa_decode

    kc = torch.randn(1, Hkv, N, D, device=dev, dtype=dt)
    vc = torch.randn(1, Hkv, N, D, device=dev, dtype=dt)
    qd = torch.randn(1, Hq, 1, D, device=dev, dtype=dt)

    def dense():
        with _flash():
            return F.scaled_dot_product_attention(qd, kc, vc, enable_gqa=True)

    base = _events_ms(dense, repeats)
    S = 16 * max(1, N // 256)  # ~16 draws per 256-key tile, the paper's operating point
    block = min(256, max(16, N // 4))
    seed = torch.zeros((), dtype=torch.int64, device=dev)  # drawn on the device: no host work
    t = _events_ms(lambda: santa_decode(qd[:, :, 0], kc, vc, S, "tile_fixed", block, seed), repeats)
    rows = [
        (
            f"SANTA decode tile_fixed S={S}, N={N}, {str(dt).replace('torch.', '')}",
            f"{t:.3f}",
            f"{base:.3f} (SDPA decode, flash)",
            f"{base / t:.2f}x faster",
            ">= 1.3x at 32K" if N == 32768 else "-",
        )
    ]
    if N in (256, 32768):
        kf, vf = kc.float(), vc.float()  # LUCID keeps V' in fp32
        qf, kn, vn = qd[:, :, 0].float(), kf[:, :, 0], vf[:, :, 0]
        t = _events_ms(lambda: lucid_decode(qf, kf, vf, kn, vn), repeats)
        rows.append(
            (
                f"LUCID decode step, N={N}, fp32 cache",
                f"{t:.3f}",
                f"{base:.3f} (SDPA decode, flash, {str(dt).replace('torch.', '')})",
                f"{t / base:.2f}x",
                "<= 1.1x",
            )
        )
    return rows


def table(checks: Checks, times, device: str) -> str:
    lines = [
        f"# icml26-kernels GPU check ({device})",
        "",
        "## Correctness",
        "",
        "| op | dtype | max error | tolerance | ok |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {a} | {b} | {c} | {d} | {'yes' if ok else '**NO**'} |" for a, b, c, d, ok in checks.rows
    ]
    if times:
        clock = "CUDA events" if "interpreter" not in device else "interpreter: not a speed"
        lines += [
            "",
            f"## Timings ({clock}, median)",
            "",
            "| what | kernel ms | baseline ms | ratio | goal |",
            "|---|---|---|---|---|",
        ]
        lines += [f"| {' | '.join(r)} |" for r in times]
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("runs/kernels_gpu_check.md"))
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument(
        "--quick",
        action="store_true",
        help="fp32 and bf16 only, smaller timings, no autotuning (one config per kernel)",
    )
    ap.add_argument(
        "--self-test",
        action="store_true",
        help="the correctness section at tiny sizes through Triton's interpreter on the CPU",
    )
    args = ap.parse_args(argv)
    if args.self_test:
        os.environ["ICML26_KERNELS"] = "interpret"
        os.environ["TRITON_INTERPRET"] = "1"
    if args.quick:  # one launch config per kernel: no autotuning compiles
        os.environ.setdefault("ICML26_KERNELS_AUTOTUNE", "0")
    _paths()
    import torch

    if args.self_test:
        t0 = time.perf_counter()
        checks = correctness("cpu", TINY, (torch.float32, torch.float16))
        times = timings(2, True, tiny=True)  # the timing code runs; the numbers mean nothing
        text = table(checks, times, "cpu, Triton interpreter, tiny sizes")
    else:
        if not torch.cuda.is_available():
            print(
                "gpu_check: no CUDA device here: nothing to check or time (the kernels are "
                "tested on the CPU through Triton's interpreter by the test suite; "
                "--self-test runs this script's checks that way)"
            )
            return 0
        os.environ["ICML26_KERNELS"] = "triton"
        t0 = time.perf_counter()
        dtypes = (torch.float32, torch.bfloat16) if args.quick else (
            torch.float32, torch.float16, torch.bfloat16
        )  # fmt: skip
        checks = correctness("cuda", REAL, dtypes)
        times = timings(args.repeats, args.quick)
        text = table(checks, times, torch.cuda.get_device_name())
    print(text)
    _write(args.out, text)
    print(
        f"gpu_check: {len(checks.rows)} checks, {sum(not r[4] for r in checks.rows)} failed, "
        f"{time.perf_counter() - t0:.0f} s -> {args.out}"
    )
    return 0 if all(r[4] for r in checks.rows) else 1


if __name__ == "__main__":
    sys.exit(main())
