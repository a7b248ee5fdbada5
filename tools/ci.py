# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""The suite's test command: ``uv run tools/ci.py`` (options: --changed REF, --runslow, --wheels,
--lowest).

1. ``ruff check`` and ``ruff format --check`` over the repository;
2. every workspace member's tests in an environment holding only that member and its declared
   dependencies (``uv run --locked --exact --package <member> pytest <member dir>``); a member
   with no tests fails. Where a CUDA device is visible (``nvidia-smi``; ``ICML26_CI_GPU=0/1``
   overrides), the ``gpu``-marked tests run in a pytest process of their own: Triton chooses
   compiler or interpreter once per process, and the interpreter tests must not choose for them;
3. the workspace tests in ``tests/`` (packaging, independence, version pins, docs);
4. ``--wheels``: every member's wheel is built and installed, with the extras its README tells
   a user to install, in a fresh environment outside the repository, and each package's
   ``demo --quick`` runs from there (results.json checked against the contract);
5. ``--lowest``: a copy of the workspace is locked with ``uv lock --resolution lowest-direct``
   and the tests of ``--lowest-members`` (default: kernels, lucid, td) run against the lowest
   versions their direct requirements admit.
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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _installs
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


def run_captured(cmd: list[str], env: dict[str, str], cwd: Path = ROOT) -> int:
    """Run ``cmd`` with its output captured, then print command and output in one piece."""
    res = subprocess.run(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    with PRINT_LOCK:
        print(f"\n$ {' '.join(cmd)}\n{res.stdout}", end="", flush=True)
    return res.returncode


def pytest_row(
    name: str, cmd: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT
) -> Row:
    row = Row(name)
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        start = time.perf_counter()
        code = run_captured(
            [*cmd, f"--junitxml={junit}", "-p", "no:cacheprovider"], env or ENV, cwd
        )
        row.seconds = time.perf_counter() - start
        if junit.exists():
            suites = ET.parse(junit).getroot()
            for s in suites.iter("testsuite"):
                total, skipped = int(s.get("tests", 0)), int(s.get("skipped", 0))
                failed = int(s.get("failures", 0)) + int(s.get("errors", 0))
                row.passed += total - skipped - failed
                row.failed += failed
                row.skipped += skipped
    if name.endswith("[gpu]") and code in (0, 5) and row.failed == 0:
        row.note = "" if row.passed + row.skipped else "no gpu tests"
    elif code == 5 or row.passed + row.failed == 0:
        row.note = "FAIL: no tests ran"
    elif code != 0 and row.failed == 0:
        row.note = f"FAIL: pytest exit code {code}"
    return row


def has_cuda() -> bool:
    """A CUDA device is visible to this machine (``ICML26_CI_GPU=0/1`` overrides the probe)."""
    forced = os.environ.get("ICML26_CI_GPU")
    if forced in ("0", "1"):
        return forced == "1"
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    res = subprocess.run([smi, "-L"], capture_output=True, text=True)
    return res.returncode == 0 and "GPU" in res.stdout


def wheel_row(m: Member, install, wheels, siblings, env: dict[str, str]) -> Row:
    row = Row(f"wheel {m.name} {install.label}")
    start = time.perf_counter()
    log, problems = _installs.check_wheel(m, install, wheels, siblings, env)
    row.seconds = time.perf_counter() - start
    with PRINT_LOCK:
        print(f"\n# {row.name}\n" + "\n".join(log), flush=True)
    row.passed, row.failed = (0, 1) if problems else (1, 0)
    row.note = "FAIL: " + "; ".join(problems) if problems else ""
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
        "--wheels",
        action="store_true",
        help="also install every wheel outside the workspace and run its demo --quick",
    )
    ap.add_argument(
        "--lowest",
        action="store_true",
        help="also run some members' tests at the lowest versions their requirements admit",
    )
    ap.add_argument(
        "--lowest-members",
        nargs="+",
        default=["icml26-kernels", "icml26-lucid", "icml26-td"],
        metavar="NAME",
        help="members tested by --lowest (default: icml26-kernels icml26-lucid icml26-td)",
    )
    ap.add_argument(
        "--only-checks",
        action="store_true",
        help="skip ruff and the tests (steps 1-3): only the --wheels / --lowest checks",
    )
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
    envs = Path(envs_dir.name)
    all_members = members()
    by_name = {m.name: m for m in all_members}
    unknown = set(args.lowest_members) - set(by_name)
    if args.lowest and unknown:
        ap.error(f"--lowest-members: no members named {sorted(unknown)}")
    if not args.only_checks:
        lint = Row("ruff check + format")
        t0 = time.perf_counter()
        ruff = [UV, "run", "--locked", "--exact", "--only-group", "dev", "ruff"]
        lint_env = {**ENV, "UV_PROJECT_ENVIRONMENT": str(envs / "venv0")}
        codes = [run([*ruff, "check", "."], env=lint_env)]
        codes.append(run([*ruff, "format", "--check", "."], env=lint_env))
        lint.seconds = time.perf_counter() - t0
        lint.passed, lint.failed = sum(c == 0 for c in codes), sum(c != 0 for c in codes)
        rows.append(lint)

    selected = changed_members(args.changed, all_members) if args.changed else all_members
    gpu = has_cuda()
    # each job: (row name, a function of the job slot's environment returning its Row)
    jobs: list[tuple[str, Callable[[dict[str, str]], Row]]] = []

    def pytest_job(name: str, cmd: list[str], cwd: Path = ROOT):
        return name, lambda env: pytest_row(name, cmd, env, cwd)

    def member_jobs(m: Member, cwd: Path = ROOT, suffix: str = "") -> None:
        base = [UV, "run", "--locked", "--exact", "--package", m.name, "pytest", m.rel, *extra]
        if gpu:
            jobs.append(pytest_job(m.name + suffix, [*base, "-m", "not gpu"], cwd))
            jobs.append(pytest_job(f"{m.name}{suffix} [gpu]", [*base, "-m", "gpu"], cwd))
        else:  # without CUDA every gpu test is skipped: one process, no interpreter conflict
            jobs.append(pytest_job(m.name + suffix, base, cwd))

    if not args.only_checks:
        if not args.changed or selected == all_members:
            dev = [UV, "run", "--locked", "--exact", "--only-group", "dev"]
            jobs.append(pytest_job("tests/ (workspace)", [*dev, "pytest", "tests", *extra]))
        for m in selected:
            member_jobs(m)
    if args.wheels:
        dist = envs / "dist"
        print(f"\n$ {UV} build --all-packages --wheel --out-dir {dist}", flush=True)
        wheels = _installs.build_wheels(all_members, dist)
        for m in all_members:
            siblings = _installs.runtime_siblings(m, by_name)
            for inst in (
                _installs.demo_installs(m) if m.is_method_package else [_installs.DemoInstall()]
            ):
                name = f"wheel {m.name} {inst.label}"
                jobs.append(
                    (name, lambda env, m=m, i=inst, s=siblings: wheel_row(m, i, wheels, s, env))
                )
    if args.lowest:
        low = envs / "lowest"
        log: list[str] = []
        code = _installs.lowest_copy(low, log)
        print("\n".join(log), flush=True)
        lock_row = Row("uv lock --resolution lowest-direct", *((1, 0) if code == 0 else (0, 1)))
        rows.append(lock_row)
        if code == 0:
            for name in args.lowest_members:
                member_jobs(by_name[name], cwd=low, suffix=" (lowest)")
    with envs_dir:
        slots: queue.Queue[dict[str, str]] = queue.Queue()
        # jobs share the cores: without a thread cap each torch process starts one OpenMP thread
        # per core, and spinning threads of concurrent jobs slow many-small-op tests 10x or more
        threads = {}
        if args.jobs > 1 and "OMP_NUM_THREADS" not in ENV:
            threads = {"OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // args.jobs))}
        for i in range(args.jobs):
            slots.put({**ENV, **threads, "UV_PROJECT_ENVIRONMENT": str(envs / f"venv{i}")})

        def job(fn: Callable[[dict[str, str]], Row]) -> Row:
            env = slots.get()
            try:
                return fn(env)
            finally:
                slots.put(env)

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = [pool.submit(job, fn) for _, fn in jobs]
            rows += [f.result() for f in futures]

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
