"""Mutation checks: each kernel, with one deliberate bug planted in its source, must fail the
comparison with its reference that the other tests make. A test that passes a mutant could not
catch that bug.

The mutant is the kernel module's source with one line changed, written to a temporary file and
imported under another name (Triton reads a kernel's source from its file), run through the
interpreter on small inputs.
"""

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from icml26.kernels import triton_available

pytestmark = pytest.mark.skipif(not triton_available(), reason="needs Triton")
SRC = Path(__file__).resolve().parents[1] / "src" / "icml26" / "kernels"


def mutant(module: str, old: str, new: str, tmp_path: Path, monkeypatch):
    """``icml26.kernels.<module>`` with ``old`` replaced by ``new`` (which must occur once)."""
    monkeypatch.setenv("ICML26_KERNELS", "interpret")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    source = (SRC / f"{module}.py").read_text()
    assert source.count(old) == 1, f"the mutation site is not unique in {module}: {old!r}"
    name = f"mutant_{module}_{abs(hash(new)) % 10**8}"
    path = tmp_path / f"{name}.py"
    path.write_text(source.replace(old, new))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, mod)
    spec.loader.exec_module(mod)
    return mod


def far(got, want, atol=1e-3):
    return not torch.allclose(got.double(), want.double(), atol=atol, rtol=atol)


def _qkv(B=1, H=4, Hkv=2, T=40, D=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(B, H, T, D, generator=g),
        torch.randn(B, Hkv, T, D, generator=g),
        torch.randn(B, Hkv, T, D, generator=g),
    )


def test_attention_with_an_unmasked_diagonal_fails(tmp_path, monkeypatch):
    from icml26.kernels.attention import softmax_attention_reference

    m = mutant(
        "_triton_attention",
        "qk_scale, True, True, UPCAST, BLOCK_N, PRECISION,",
        "qk_scale, False, True, UPCAST, BLOCK_N, PRECISION,",
        tmp_path,
        monkeypatch,
    )
    q, k, v = _qkv()
    assert far(m.softmax_attention_triton(q, k, v), softmax_attention_reference(q, k, v))


@pytest.mark.parametrize(
    ("old", "new", "what"),
    [
        (
            "        merged[..., s:, :s] = -(b_inv @ c @ a_inv)",
            "        merged[..., s:, :s] = b_inv @ c @ a_inv",
            "forward",
        ),
        ("    for part in range(0, 2):", "    for part in range(1, 2):", "key gradient"),
    ],
)
def test_lucid_solve_mutants_fail(tmp_path, monkeypatch, old, new, what):
    from icml26.kernels.lucid import lucid_solve_reference

    m = mutant("_triton_lucid", old, new, tmp_path, monkeypatch)
    _, k, v = _qkv(T=70, seed=1)
    k1, v1 = k.clone().requires_grad_(), v.clone().requires_grad_()
    got = m.lucid_solve_triton(k1, v1)
    k2, v2 = k.double().requires_grad_(), v.double().requires_grad_()
    ref = lucid_solve_reference(k2, v2)
    if what == "forward":
        assert far(got, ref)
    else:
        w = torch.randn(ref.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
        (got.double() * w).sum().backward()
        (ref * w).sum().backward()
        assert far(k1.grad, k2.grad)


def test_lucid_decode_merge_dropping_a_chunk_fails(tmp_path, monkeypatch):
    from icml26.kernels.lucid import lucid_decode_reference

    m = mutant(
        "_triton_lucid",
        "    for sp in range(0, SPLITS):",
        "    for sp in range(0, SPLITS - 1):",
        tmp_path,
        monkeypatch,
    )
    g = torch.Generator().manual_seed(2)
    q, kn, vn = (torch.randn(1, h, 16, generator=g) for h in (4, 2, 2))
    kc, vc = (torch.randn(1, 2, 70, 16, generator=g) for _ in range(2))
    out, _ = m.lucid_decode_triton(3 * q, kc, vc, kn, vn, num_splits=3)
    ref, _ = lucid_decode_reference(*(t.double() for t in (3 * q, kc, vc, kn, vn)))
    assert far(out, ref)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # the group reads the intersection of its heads' rows instead of the union
        ("read = mask_n & (tl.max(c, 0) > 0)", "read = mask_n & (tl.min(c, 0) > 0)"),
        # a constant systematic offset: the counts stop being random
        ("a0 = tl.load(a0_ptr + tile, mask=mask_g, other=0.0)", "a0 = mask_g * 0.5"),
    ],
)
def test_santa_mutants_fail(tmp_path, monkeypatch, old, new):
    from icml26.kernels.santa import santa_decode_reference

    m = mutant("_triton_santa", old, new, tmp_path, monkeypatch)
    g = torch.Generator().manual_seed(3)
    q = 2 * torch.randn(1, 4, 16, generator=g)
    k, v = (torch.randn(1, 2, 100, 16, generator=g) for _ in range(2))
    got, gc = m.santa_decode_triton(q, k, v, 64, "tile_fixed", 32, seed=5, return_counts=True)
    ref, rc = santa_decode_reference(q, k, v, 64, "tile_fixed", 32, seed=5, return_counts=True)
    assert not torch.equal(gc, rc) or far(got.out, ref.out, atol=1e-5)


def test_rans_with_a_broken_state_update_fails(tmp_path, monkeypatch):
    from icml26.kernels.entropy import quantize_frequencies, rans_encode

    m = mutant(
        "_triton_entropy",
        "        x_dec = f * (x >> PROB_BITS) + slot - c",
        "        x_dec = f * (x >> PROB_BITS) + slot - c + 1",
        tmp_path,
        monkeypatch,
    )
    g = torch.Generator().manual_seed(4)
    sym = torch.randint(0, 8, (500,), generator=g)
    freqs = quantize_frequencies(torch.bincount(sym, minlength=8), prob_bits=10)
    st = rans_encode(sym, freqs, lanes=4)
    assert not torch.equal(m.rans_decode_triton(st.words, st.starts, freqs, 500), sym)


def test_an_unchanged_copy_passes(tmp_path, monkeypatch):
    # The control: the same loading with no mutation reproduces the references, so the failures
    # above come from the planted bugs, not from loading a copy.
    from icml26.kernels.attention import softmax_attention_reference
    from icml26.kernels.lucid import lucid_solve_reference
    from icml26.kernels.santa import santa_decode_reference

    same = "import math\n"
    att = mutant("_triton_attention", same, same, tmp_path, monkeypatch)
    q, k, v = _qkv()
    assert not far(att.softmax_attention_triton(q, k, v), softmax_attention_reference(q, k, v))
    luc = mutant("_triton_lucid", same, same, tmp_path, monkeypatch)
    _, k, v = _qkv(T=70, seed=1)
    assert not far(luc.lucid_solve_triton(k, v), lucid_solve_reference(k.double(), v.double()))
    san = mutant("_triton_santa", same, same, tmp_path, monkeypatch)
    g = torch.Generator().manual_seed(3)
    q = 2 * torch.randn(1, 4, 16, generator=g)
    k, v = (torch.randn(1, 2, 100, 16, generator=g) for _ in range(2))
    got, gc = san.santa_decode_triton(q, k, v, 64, "tile_fixed", 32, seed=5, return_counts=True)
    ref, rc = santa_decode_reference(q, k, v, 64, "tile_fixed", 32, seed=5, return_counts=True)
    assert torch.equal(gc, rc) and not far(got.out, ref.out, atol=1e-5)
