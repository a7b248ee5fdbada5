# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""The suite's test command: ``uv run tools/ci.py [--changed REF] [--runslow]``.

1. ``ruff check`` and ``ruff format --check`` over the repository;
2. every workspace member's tests in an environment holding only that member and its declared
   dependencies (``uv run --locked --exact --package <member> pytest <member dir>``); a member
   with no tests fails;
3. the workspace tests in ``tests/`` (packaging, independence, version pins, docs).
Prints a summary table and exits non-zero if anything failed.

Steps 2 and 3 run ``--jobs`` at a time (default 2, or ``ICML26_CI_JOBS``): each job slot has its
own project environment (``UV_PROJECT_ENVIRONMENT``, a temporary folder outside the repository),
so concurrent ``uv run --exact`` calls never re-sync each other's packages. A job's output is
printed in one piece when it finishes.
"""

import argparse
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _workspace import ROOT, Member, members

UV = os.environ.get("UV") or shutil.which("uv") or "uv"
ALWAYS_ALL = ("pyproject.toml", "uv.lock", "kernels/", "shared/", "tools/", ".ci/", "tests/")


@dataclass
class Row:
    name: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    seconds: float = 0.0
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.failed == 0 and not self.note.startswith("FAIL")


# `uv run tools/ci.py` runs this script in its own environment; the members' runs must not
# inherit it (uv would warn that it does not match the workspace's .venv).
ENV = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}


PRINT_LOCK = threading.Lock()


def run(cmd: list[str], env: dict[str, str] | None = None) -> int:
    print(f"\n$ {' '.join(cmd)}", flush=True)
    return subprocess.run(cmd, cwd=ROOT, env=env or ENV).returncode


def run_captured(cmd: list[str], env: dict[str, str]) -> int:
    """Run ``cmd`` with its output captured, then print command and output in one piece."""
    res = subprocess.run(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    with PRINT_LOCK:
        print(f"\n$ {' '.join(cmd)}\n{res.stdout}", end="", flush=True)
    return res.returncode


def pytest_row(name: str, cmd: list[str], env: dict[str, str] | None = None) -> Row:
    row = Row(name)
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        start = time.perf_counter()
        code = run_captured([*cmd, f"--junitxml={junit}", "-p", "no:cacheprovider"], env or ENV)
        row.seconds = time.perf_counter() - start
        if junit.exists():
            suites = ET.parse(junit).getroot()
            for s in suites.iter("testsuite"):
                total, skipped = int(s.get("tests", 0)), int(s.get("skipped", 0))
                failed = int(s.get("failures", 0)) + int(s.get("errors", 0))
                row.passed += total - skipped - failed
                row.failed += failed
                row.skipped += skipped
    if code == 5 or row.passed + row.failed == 0:
        row.note = "FAIL: no tests ran"
    elif code != 0 and row.failed == 0:
        row.note = f"FAIL: pytest exit code {code}"
    return row


def changed_members(ref: str, all_members: list[Member]) -> list[Member]:
    diff = subprocess.run(
        ["git", "diff", "--name-only", ref], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    untracked = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    files = diff + untracked
    if any(f.startswith(ALWAYS_ALL) or "/" not in f for f in files):
        return all_members
    touched = {m.name for m in all_members if any(f.startswith(m.rel + "/") for f in files)}
    # ...plus every member that depends on a touched one, transitively.
    grew = True
    while grew:
        new = {m.name for m in all_members if m.requires() & touched} - touched
        touched |= new
        grew = bool(new)
    return [m for m in all_members if m.name in touched]


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--changed", metavar="REF", help="only members touched since REF (and dependents)"
    )
    ap.add_argument("--runslow", action="store_true", help="also run tests marked slow")
    ap.add_argument(
        "--jobs",
        type=int,
        default=int(os.environ.get("ICML26_CI_JOBS", "2")),
        help="test runs at a time, each in its own environment (default 2)",
    )
    args = ap.parse_args()
    if args.jobs < 1:
        ap.error("--jobs must be >= 1")
    extra = ["--runslow"] if args.runslow else []

    rows: list[Row] = []
    start = time.perf_counter()
    # Every uv run below syncs an environment of this script's own (temporary folders), never
    # the developer's .venv, which --exact would strip of whatever else they installed.
    envs_dir = tempfile.TemporaryDirectory(prefix="icml26-ci-")
    envs = envs_dir.name
    lint = Row("ruff check + format")
    t0 = time.perf_counter()
    ruff = [UV, "run", "--locked", "--exact", "--only-group", "dev", "ruff"]
    lint_env = {**ENV, "UV_PROJECT_ENVIRONMENT": str(Path(envs) / "venv0")}
    codes = [run([*ruff, "check", "."], env=lint_env)]
    codes.append(run([*ruff, "format", "--check", "."], env=lint_env))
    lint.seconds = time.perf_counter() - t0
    lint.passed, lint.failed = sum(c == 0 for c in codes), sum(c != 0 for c in codes)
    rows.append(lint)

    all_members = members()
    selected = changed_members(args.changed, all_members) if args.changed else all_members
    jobs: list[tuple[str, list[str]]] = []
    if not args.changed or selected == all_members:
        # the longest run (it builds and installs every wheel) starts first
        dev = [UV, "run", "--locked", "--exact", "--only-group", "dev"]
        jobs.append(("tests/ (workspace)", [*dev, "pytest", "tests", *extra]))
    for m in selected:
        jobs.append(
            (
                m.name,
                [UV, "run", "--locked", "--exact", "--package", m.name, "pytest", m.rel, *extra],
            )
        )
    with envs_dir:
        slots: queue.Queue[dict[str, str]] = queue.Queue()
        # jobs share the cores: without a thread cap each torch process starts one OpenMP thread
        # per core, and spinning threads of concurrent jobs slow many-small-op tests 10x or more
        threads = {}
        if args.jobs > 1 and "OMP_NUM_THREADS" not in ENV:
            threads = {"OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // args.jobs))}
        for i in range(args.jobs):
            slots.put({**ENV, **threads, "UV_PROJECT_ENVIRONMENT": str(Path(envs) / f"venv{i}")})

        def job(name: str, cmd: list[str]) -> Row:
            env = slots.get()
            try:
                return pytest_row(name, cmd, env)
            finally:
                slots.put(env)

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = [pool.submit(job, name, cmd) for name, cmd in jobs]
            results = [f.result() for f in futures]
    # the table keeps the usual order: members first, then the workspace tests
    rows += sorted(results, key=lambda r: r.name == "tests/ (workspace)")

    width = max(len(r.name) for r in rows) + 2
    print(f"\n{'member':<{width}}{'passed':>8}{'failed':>8}{'skipped':>9}{'seconds':>9}  note")
    print("-" * (width + 40))
    for r in rows:
        print(
            f"{r.name:<{width}}{r.passed:>8}{r.failed:>8}{r.skipped:>9}{r.seconds:>9.1f}  {r.note}"
        )
    failed = [r.name for r in rows if not r.ok]
    total_p, total_f = sum(r.passed for r in rows), sum(r.failed for r in rows)
    total_s = sum(r.skipped for r in rows)
    print(f"\nci: finished in {time.perf_counter() - start:.0f} s")
    print(f"ci: {total_p} passed, {total_f} failed, {total_s} skipped")
    if failed:
        print(f"ci: FAILED: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
