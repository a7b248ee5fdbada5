"""What breaks at GPU scale without showing on small CPU tests: offsets past 2^31 and host
syncs in the input checks.

Offsets that pass 2^31: every kernel takes its batch / head program ids as int64
(``program_id64``), so ``bh * T * D`` does not wrap once B H T D passes 2^31 (B = 4, H = 32,
T = 128K, D = 128 is exactly 2^31).

Through the interpreter, a kernel builds the base offsets of a large *virtual* shape (nothing of
that size is allocated: only the offsets are stored) and they are compared with Python's
integers; the same kernel with plain ``tl.program_id`` wraps, so the check can fail."""

import os
import re
from pathlib import Path

import pytest
import torch

from icml26.kernels import triton_available

needs_triton = pytest.mark.skipif(not triton_available(), reason="needs Triton")
SRC = Path(__file__).resolve().parents[1] / "src" / "icml26" / "kernels"
program_id64 = None  # the helper under test, bound by _kernels() before the kernel is defined


def _kernels():
    os.environ["TRITON_INTERPRET"] = "1"  # before the first kernel is defined
    import triton
    import triton.language as tl

    from icml26.kernels import _triton_common

    global program_id64  # a jit function resolves the helpers it calls among module globals
    program_id64 = _triton_common.program_id64

    @triton.jit
    def last_offsets(OUT, T, D, WIDE: tl.constexpr):
        # the offset of the last element of (batch x head) slab bh in a (B, H, T, D) tensor
        if WIDE:
            bh = program_id64(0)
        else:
            bh = tl.program_id(0)
        tl.store(OUT + tl.program_id(0), bh * T * D + (T - 1) * D + (D - 1))

    return last_offsets


@needs_triton
@pytest.mark.parametrize(("B", "H", "T", "D"), [(5, 32, 131072, 128), (2, 9, 1 << 20, 128)])
def test_large_virtual_shape_offsets_do_not_wrap(B, H, T, D):
    if os.environ.get("TRITON_INTERPRET") not in (None, "1") or torch.cuda.is_available():
        pytest.skip("interpreter check")
    kernel = _kernels()
    out = torch.zeros(B * H, dtype=torch.int64)
    kernel[(B * H,)](out, T, D, WIDE=True)
    expected = torch.tensor([bh * T * D + (T - 1) * D + D - 1 for bh in range(B * H)])
    assert expected.max() >= 2**31  # the shape does pass int32
    assert torch.equal(out, expected)
    narrow = torch.zeros(B * H, dtype=torch.int64)
    kernel[(B * H,)](narrow, T, D, WIDE=False)
    assert not torch.equal(narrow, expected)  # int32 program ids wrap: the check can fail


def test_every_batch_or_head_program_id_is_int64():
    # A batch / head index (b, h, bh, bhk, pid) taken with plain tl.program_id would bring the
    # wrap back; row-block and lane indices stay int32 (their offsets stay far below 2^31).
    plain = re.compile(r"^\s*(b|h|bh|bhk|pid)\s*=\s*tl\.program_id\(", re.M)
    offenders = {
        p.name: plain.findall(p.read_text())
        for p in SRC.glob("_triton_*.py")
        if plain.search(p.read_text())
    }
    assert offenders == {}
    uses = sum(p.read_text().count("program_id64(") for p in SRC.glob("_triton_*.py"))
    assert uses >= 9  # attention (3 kernels), LUCID (4), SANTA (b, h), plus the definition


def test_input_checks_read_no_device_values():
    # A NaN scan of a device tensor is a host sync (and, for SANTA, a read of all of V): the
    # boundary checks scan CPU tensors only. On the meta device any value read raises.
    from icml26.kernels.attention import check_attention_inputs
    from icml26.kernels.lucid import check_decode_inputs
    from icml26.kernels.santa import check_santa_inputs

    meta = dict(device="meta")
    q, kv = torch.empty(2, 4, 8, **meta), torch.empty(2, 2, 16, 8, **meta)
    check_santa_inputs(q, kv, kv, 8, "tile_fixed", 16)
    check_attention_inputs(torch.empty(2, 4, 16, 8, **meta), kv, kv)
    check_decode_inputs(q, kv, kv, torch.empty(2, 2, 8, **meta), torch.empty(2, 2, 8, **meta))
    with pytest.raises(ValueError, match="NaN"):  # CPU tensors are still scanned
        cpu = torch.zeros(2, 2, 16, 8)
        check_santa_inputs(torch.full((2, 4, 8), float("nan")), cpu, cpu, 8, "tile_fixed", 16)


def test_a_checked_rans_table_is_not_read_back():
    # A device table with its precision given is not summed (one host sync per decode per
    # layer otherwise); a CPU table is still checked against the precision it claims.
    from icml26.kernels.entropy import _check_decode, quantize_frequencies

    meta = dict(device="meta")
    words, starts = torch.empty(10, dtype=torch.int32, **meta), torch.empty(3, **meta).long()
    assert _check_decode(words, starts, torch.empty(256, dtype=torch.int64, **meta), 40, 12) == 12
    with pytest.raises(RuntimeError, match="meta"):  # without the precision, the table is read
        _check_decode(words, starts, torch.empty(256, dtype=torch.int64, **meta), 40)
    f = quantize_frequencies(torch.arange(1, 257), prob_bits=12)
    with pytest.raises(ValueError, match="2\\^12"):
        _check_decode(torch.zeros(4, dtype=torch.int32), torch.tensor([0, 4]), f, 3, 10)
    with pytest.raises(ValueError, match="prob_bits"):
        _check_decode(words, starts, torch.empty(256, dtype=torch.int64, **meta), 40, 17)


@needs_triton
def test_every_autotuner_is_well_formed(monkeypatch):
    # Autotuning only happens on a GPU (under the interpreter the kernels run untuned), so the
    # autotuners are built here on the CPU: their keys, in-place tensors and config pruning must
    # name real arguments of their kernels.
    from icml26.kernels.attention import softmax_attention
    from icml26.kernels.entropy import rans_decode
    from icml26.kernels.lucid import lucid_solve
    from icml26.kernels.santa import santa_decode

    monkeypatch.setenv("ICML26_KERNELS", "interpret")
    for op in (softmax_attention, rans_decode, lucid_solve, santa_decode):
        op.triton()  # imports the kernel module with the interpreter set
    from icml26.kernels import _triton_common as common

    assert len(common.TUNED) >= 9
    for name, (fn, key, restore, configs, prune) in common.TUNED.items():
        assert set(key) <= set(fn.arg_names), (name, key)
        assert set(restore) <= set(fn.arg_names), (name, restore)
        if prune is not None:  # every head dim keeps at least one config that fits
            for d in (32, 64, 128, 256):
                kept = prune(configs, {"D": d})
                assert kept and all(c.kwargs["BLOCK_M"] % c.kwargs["BLOCK_N"] == 0 for c in kept)
        try:
            tuner = common.autotuner(fn, key, restore, configs, prune)
        except RuntimeError as e:  # older Triton (3.2) asks for a GPU driver at construction
            assert "driver" in str(e)
            continue
        assert tuner.keys == list(key)
    assert common.TUNED["_lucid_panel_update_kernel"][2] == ("X",)  # updated in place
