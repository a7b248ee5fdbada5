"""Helpers shared by the Triton kernels (imported by kernel modules only, after the interpreter
flag is decided)."""

import os

import triton
import triton.language as tl

# Read once: Triton itself decides between compiling and interpreting when a kernel is defined.
INTERPRET = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")

# Launch shapes tried by the autotuner for kernels whose tiles are fixed by the algorithm.
# (few: every one is a compile per key). ICML26_KERNELS_AUTOTUNE=0 keeps only the first of each
# list: a quick correctness pass, or a machine where compile time matters more than the last 10%.
WARP_CONFIGS = [
    triton.Config({}, num_warps=w, num_stages=s) for w, s in ((4, 2), (8, 3), (4, 3), (2, 2))
]
AUTOTUNE = os.environ.get("ICML26_KERNELS_AUTOTUNE", "1") not in ("0", "")
# Every autotuned kernel, by name: (jit function, key, restore_value, configs, prune); the tests
# build each autotuner on the CPU to check its argument names.
TUNED: dict[str, tuple] = {}


def autotuner(fn, key, restore=(), configs=None, prune=None):
    """``triton.autotune`` of ``fn`` over ``configs`` (default :data:`WARP_CONFIGS`), pruned by
    ``prune(configs, named_args)``; with autotuning off, the first config the pruning keeps."""
    if not AUTOTUNE:
        inner = prune

        def prune(configs, named_args, **kwargs):  # the first config that fits
            return (inner(configs, named_args, **kwargs) if inner else configs)[:1]

    return triton.autotune(
        configs=configs or WARP_CONFIGS,
        key=list(key),
        restore_value=list(restore) or None,
        prune_configs_by={"early_config_prune": prune} if prune else None,
    )(fn)


def tuned(key, restore=(), configs=None, prune=None):
    """Autotune a kernel on the compiled path, keyed on ``key`` (arguments fixed for a model:
    head dims, group sizes, tile sizes; never a length that grows every decode step).
    ``restore`` names the tensors a kernel updates in place (reset between trials). Under the
    interpreter the kernel is left as it is: every trial would run in Python."""

    def wrap(fn):
        TUNED[fn.fn.__name__] = (fn, tuple(key), tuple(restore), configs, prune)
        return fn if INTERPRET else autotuner(fn, key, restore, configs, prune)

    return wrap


@triton.jit
def program_id64(axis: tl.constexpr):
    """``tl.program_id(axis)`` as int64, for the batch / head indices that start an offset:
    ``bh * T * D`` reaches 2^31 at B = 4, H = 32, T = 128K, D = 128, and int32 arithmetic would
    wrap there. Every offset built from it is int64."""
    return tl.program_id(axis).to(tl.int64)
