"""Run a package's command line in a subprocess, the way a user would."""

import os
import subprocess
import sys
from collections.abc import Sequence


def run_cli(
    module: str,
    args: Sequence[str] = (),
    *,
    check: bool = True,
    timeout: float = 600.0,
    env: dict[str, str] | None = None,
    cwd: str | os.PathLike | None = None,
) -> subprocess.CompletedProcess:
    """Run ``python -m <module> <args>`` with this interpreter and return the finished process.

    With ``check`` a non-zero exit raises AssertionError carrying the command, exit code, stdout
    and stderr, so a failing CLI test shows why it failed.
    """
    cmd = [sys.executable, "-m", module, *map(str, args)]
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=cwd
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"command failed with exit code {proc.returncode}: {' '.join(cmd)}\n"
            f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"
        )
    return proc
