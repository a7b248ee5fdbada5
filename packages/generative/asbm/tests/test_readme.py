"""The README's Python snippets run, so they cannot rot."""

import os
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_snippets_run(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks
    namespace: dict = {}
    cwd = os.getcwd()
    os.chdir(tmp_path)  # the snippet writes a checkpoint under runs/
    try:
        for block in blocks:
            exec(compile(block, str(README), "exec"), namespace)
    finally:
        os.chdir(cwd)
    assert namespace["x_one"].shape == (500, 2)
    assert (tmp_path / "runs" / "asbm" / "readme" / "model.safetensors").exists()
