"""Atomic file writes: a crash never leaves a half-written checkpoint, results or data file."""

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from icml26.testing.files import atomic_write


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Write ``obj`` as indented JSON to ``path`` via a temporary file and a rename."""
    text = json.dumps(obj, indent=2, allow_nan=False)
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text + "\n"))


def atomic_save_npz(path: str | os.PathLike, arrays: dict[str, np.ndarray]) -> Path:
    """``np.savez_compressed`` to ``path`` atomically (the temp name keeps the .npz suffix)."""
    return atomic_write(path, lambda tmp: np.savez_compressed(tmp, **arrays), suffix=".npz")


def atomic_save_safetensors(path: str | os.PathLike, tensors: dict, metadata=None) -> Path:
    """``safetensors.torch.save_file`` to ``path`` atomically."""
    from safetensors.torch import save_file

    tensors = {k: v.detach().contiguous().cpu() for k, v in tensors.items()}
    return atomic_write(path, lambda tmp: save_file(tensors, tmp, metadata=metadata))
