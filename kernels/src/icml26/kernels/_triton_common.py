"""Helpers shared by the Triton kernels (imported by kernel modules only, after the interpreter
flag is decided)."""

import triton
import triton.language as tl


@triton.jit
def program_id64(axis: tl.constexpr):
    """``tl.program_id(axis)`` as int64, for the batch / head indices that start an offset:
    ``bh * T * D`` reaches 2^31 at B = 4, H = 32, T = 128K, D = 128, and int32 arithmetic would
    wrap there. Every offset built from it is int64."""
    return tl.program_id(axis).to(tl.int64)
