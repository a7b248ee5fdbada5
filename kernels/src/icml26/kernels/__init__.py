"""icml26.kernels: Triton kernels shared by the icml26 packages, each defined by a plain-PyTorch
reference.

Every op ``<op>`` comes with ``<op>_reference``. The public ``<op>`` runs the Triton kernel on
CUDA tensors when Triton is importable and the reference otherwise. The environment variable
``ICML26_KERNELS`` overrides the choice:

- ``auto`` (default): Triton on CUDA when available, else the reference;
- ``reference``: always the reference;
- ``triton``: always Triton (an error on CPU tensors or without Triton);
- ``interpret``: Triton through its CPU interpreter (this module sets ``TRITON_INTERPRET=1``
  before Triton is imported), to test kernels on machines without a GPU. Slow: small shapes.
"""

from icml26.kernels.dispatch import (
    MODES,
    Backend,
    KernelOp,
    kernel_mode,
    list_ops,
    register_op,
    select_backend,
    triton_available,
)


def _version() -> str:
    # the version lives in pyproject.toml only: installed metadata, or the source tree's file
    import importlib.metadata
    import tomllib
    from pathlib import Path

    try:
        return importlib.metadata.version("icml26-kernels")
    except importlib.metadata.PackageNotFoundError:
        pyproject = Path(__file__).resolve().parents[3] / "pyproject.toml"
        if pyproject.is_file():
            return tomllib.loads(pyproject.read_text())["project"]["version"]
        return "0+unknown"


__version__ = _version()

__all__ = [
    "MODES",
    "Backend",
    "KernelOp",
    "kernel_mode",
    "list_ops",
    "register_op",
    "select_backend",
    "triton_available",
]
