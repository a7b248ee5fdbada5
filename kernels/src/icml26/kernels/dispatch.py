"""Choosing between an op's Triton kernel and its PyTorch reference.

Triton is imported lazily, and only after ``TRITON_INTERPRET`` is set for interpret mode: Triton
decides between compiling and interpreting when a ``@triton.jit`` function is defined, so kernel
modules must not be imported before the mode is known. Ops name their Triton implementation as
``"package.module:function"`` for that reason.
"""

import enum
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import torch

ENV_VAR = "ICML26_KERNELS"
MODES = ("auto", "reference", "triton", "interpret")


class Backend(enum.Enum):
    """Which implementation of an op runs."""

    REFERENCE = "reference"
    TRITON = "triton"


def kernel_mode() -> str:
    """The mode ``ICML26_KERNELS`` asks for (``auto`` when unset); a clear error when invalid."""
    mode = os.environ.get(ENV_VAR, "auto").strip().lower() or "auto"
    if mode not in MODES:
        raise ValueError(f"{ENV_VAR}={os.environ[ENV_VAR]!r} is not one of {', '.join(MODES)}")
    return mode


def _prepare_interpreter() -> None:
    # Must happen before any @triton.jit function is defined (Triton reads it at decoration).
    if kernel_mode() == "interpret":
        os.environ["TRITON_INTERPRET"] = "1"


@cache
def _triton_importable() -> bool:
    return importlib.util.find_spec("triton") is not None


def triton_available() -> bool:
    """Whether Triton can be imported here (without importing it)."""
    return _triton_importable()


def select_backend(*tensors: torch.Tensor, op: str = "op") -> Backend:
    """The backend a call on ``tensors`` runs on, by the rules in the package docstring."""
    mode = kernel_mode()
    if mode == "reference":
        return Backend.REFERENCE
    if mode == "auto":
        on_cuda = bool(tensors) and all(t.is_cuda for t in tensors)
        return Backend.TRITON if on_cuda and triton_available() else Backend.REFERENCE
    if not triton_available():
        raise RuntimeError(
            f"{op}: {ENV_VAR}={mode} needs Triton, which is not installed; "
            "install icml26-kernels[triton] or set ICML26_KERNELS=reference"
        )
    if mode == "triton":
        if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0") and "triton" in sys.modules:
            return Backend.TRITON
        not_cuda = sorted({str(t.device) for t in tensors if not t.is_cuda})
        if not_cuda:
            raise RuntimeError(
                f"{op}: {ENV_VAR}=triton needs CUDA tensors, got tensors on {', '.join(not_cuda)}; "
                "use ICML26_KERNELS=interpret to run the Triton kernels on CPU"
            )
    return Backend.TRITON


# Tolerances (atol, rtol) of a Triton kernel against its float64 reference, by input dtype.
# Ops override entries; fp32 kernels using tl.dot may run TF32 on GPUs, hence the looser fp32.
DEFAULT_TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-10, 1e-8),
    torch.float32: (2e-3, 2e-3),
    torch.float16: (5e-3, 1e-2),
    torch.bfloat16: (3e-2, 3e-2),
}


@dataclass
class KernelOp:
    """An op with a PyTorch reference and a lazily imported Triton implementation."""

    name: str
    reference: Callable[..., Any]
    triton_impl: str | Callable[..., Any]
    tolerances: dict[torch.dtype, tuple[float, float]] = field(
        default_factory=lambda: dict(DEFAULT_TOLERANCES)
    )
    last_backend: Backend | None = field(default=None, repr=False)
    compiled: Callable[..., Any] | None = field(default=None, repr=False)
    """What a call runs under ``torch.compile``: a ``torch.library`` custom op that dispatches
    at run time (opaque to the compiler), or None for the reference, which the compiler traces."""

    def triton(self) -> Callable[..., Any]:
        """The Triton implementation, imported on first use (after the interpreter is set)."""
        _prepare_interpreter()
        if callable(self.triton_impl):
            return self.triton_impl
        module, _, attr = self.triton_impl.partition(":")
        self.triton_impl = getattr(importlib.import_module(module), attr)
        return self.triton_impl

    def tolerance(self, dtype: torch.dtype) -> tuple[float, float]:
        return self.tolerances.get(dtype, DEFAULT_TOLERANCES[torch.float32])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if torch.compiler.is_compiling():
            # no backend choice (env reads, last_backend) inside a traced graph
            return (self.compiled or self.reference)(*args, **kwargs)
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        backend = select_backend(*tensors, op=self.name)
        self.last_backend = backend
        fn = self.triton() if backend is Backend.TRITON else self.reference
        return fn(*args, **kwargs)


_REGISTRY: dict[str, KernelOp] = {}


def register_op(
    name: str,
    reference: Callable[..., Any],
    triton_impl: str | Callable[..., Any],
    tolerances: dict[torch.dtype, tuple[float, float]] | None = None,
) -> KernelOp:
    """Create the public entry point of an op and record it in the registry."""
    # Re-registering a name replaces it (a module re-imported by a test runner, say).
    op = KernelOp(name, reference, triton_impl, {**DEFAULT_TOLERANCES, **(tolerances or {})})
    _REGISTRY[name] = op
    return op


def list_ops() -> Iterable[str]:
    """Names of the registered ops."""
    return sorted(_REGISTRY)


# At import, set the interpreter flag if asked for; an invalid mode is reported at the first call.
if os.environ.get(ENV_VAR, "").strip().lower() == "interpret":
    os.environ["TRITON_INTERPRET"] = "1"
