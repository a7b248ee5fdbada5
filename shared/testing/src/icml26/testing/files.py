"""Writing files so that nothing is lost: a crash leaves the old file or none, never half a file.

``atomic_write`` fills a temporary file beside the target and renames it over the target (one
``os.replace``, atomic on POSIX and Windows); ``save_figure`` does the same for a matplotlib
figure and closes it. Stdlib only: matplotlib is imported when a figure is saved.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def atomic_write(path: str | os.PathLike, write: Callable[[str], Any], suffix: str = "") -> Path:
    """Call ``write(tmp)`` on a temporary file beside ``path`` (same folder, so the rename does
    not cross file systems), then rename it over ``path``. On any error the temporary file is
    removed and ``path`` is untouched. Creates the parent folder; returns ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """``atomic_write`` of a UTF-8 text file."""
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def save_figure(fig: Any, path: str | os.PathLike, *, dpi: int = 110) -> Path:
    """Save a matplotlib figure to ``path`` atomically (format from the suffix, tight bounding
    box) and close it, also when saving fails."""
    import matplotlib.pyplot as plt

    path = Path(path)
    try:
        return atomic_write(
            path, lambda tmp: fig.savefig(tmp, dpi=dpi, bbox_inches="tight"), suffix=path.suffix
        )
    finally:
        plt.close(fig)
