"""Run a README's Python snippets, so usage examples cannot rot."""

import os
import re
from pathlib import Path


def run_readme_snippets(readme: str | os.PathLike, cwd: str | os.PathLike | None = None) -> dict:
    """Execute every fenced ```python block of ``readme`` in order, in one namespace.

    ``cwd`` (e.g. pytest's ``tmp_path``) is where they run, so files they write stay out of the
    repository. Returns the namespace, for assertions on what the snippets built.
    """
    readme = Path(readme)
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
    if not blocks:
        raise AssertionError(f"{readme} has no ```python snippets")
    namespace: dict = {"__name__": "__readme__"}
    previous = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        for block in blocks:
            exec(compile(block, str(readme), "exec"), namespace)
    finally:
        os.chdir(previous)
    return namespace
