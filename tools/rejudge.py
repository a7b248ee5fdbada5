# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""Re-judge committed results files under the current rules, without rerunning the experiments.

``uv run tools/rejudge.py [--only icml26-td ...]``: for every committed results file, each
package's own ``verdict()`` recomputes the claims' rows and controls from the measurements the
file stores, in that package's exact environment, and the file is rewritten through the results
contract (rows, controls, counts, summary). The numbers are not touched. A file that carried no
provenance gets one saying so (the commit that committed its numbers, its data not fingerprinted
then), and ``provenance["parts"]`` records this re-judgement next to the command that made the
numbers, so the file says how it came to be. ``--check`` rewrites nothing and fails when a file's
stored rows differ from what its verdict() gives now.
"""

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _workspace import ROOT, members
from reproduce import UV, _uv_env, committed_results

COMMAND = "uv run tools/rejudge.py"

# Runs inside the package's environment: argv = module, mode, then the files.
_ONE = r"""
import importlib, json, sys
module, mode, *paths = sys.argv[1:]
rules = importlib.import_module(module + ".verdict")
contract = importlib.import_module("icml26.testing.results")
out = []
for path in paths:
    results = contract.load_results(path)
    judged = rules.verdict(results)
    fields = {k: judged[k] for k in ("claims", "controls", "counts", "verdict")}
    same = all(results.get(k) == v for k, v in fields.items())
    out.append({"path": path, "same": same, "fields": fields})
print("@@REJUDGE@@" + json.dumps(out))
"""


def _commit_of(path: Path) -> str:
    done = subprocess.run(
        ["git", "log", "-1", "--format=%H", "--", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() or "unknown"


def rejudge(paths: list[Path], module: str, package: str, check: bool) -> list[str]:
    """Recompute the rows of ``paths`` with ``module``'s verdict(); return what differs."""
    # reproduce.py's own environment folder: --exact never touches the developer's .venv
    cmd = [UV, "run", "--locked", "--exact", "--all-extras", "--package", package, "python"]
    cmd += ["-c", _ONE, module, "check" if check else "write", *map(str, paths)]
    done = subprocess.run(cmd, cwd=ROOT, env=_uv_env(), capture_output=True, text=True)
    marker = [line for line in done.stdout.splitlines() if line.startswith("@@REJUDGE@@")]
    if done.returncode != 0 or not marker:
        raise RuntimeError(f"{package}: {shlex.join(cmd[:8])} failed:\n{done.stderr[-3000:]}")
    differ = []
    for entry in json.loads(marker[0].removeprefix("@@REJUDGE@@")):
        path = Path(entry["path"])
        if entry["same"]:
            continue
        differ.append(str(path.relative_to(ROOT)))
        if check:
            continue
        results = json.loads(path.read_text())
        old_command = results.get("config", {}).get("command", "")
        prov = results.get("provenance") or {
            "commit": f"unrecorded (numbers committed in {_commit_of(path)[:12]})",
            "data": {},
            "parts": [
                {"command": old_command, "note": "the measurements (data not fingerprinted)"}
            ],
        }
        note = "rows, controls and counts recomputed from the stored measurements"
        parts = [p for p in prov.get("parts", []) if p.get("command") != COMMAND]
        prov = {**prov, "parts": [*parts, {"command": COMMAND, "note": note}]}
        results.update(entry["fields"], provenance=prov)
        ordered = _in_contract_order(results)
        _write(package, module, path, ordered)
    return differ


def _in_contract_order(results: dict) -> dict:
    first = (
        "package", "version", "experiment", "claim", "headline", "controls", "claims", "counts",
        "verdict", "metrics", "quick", "seconds", "config", "seed", "device", "torch",
        "provenance",
    )  # fmt: skip
    return {**{k: results[k] for k in first if k in results}, **results}


def _write(package: str, module: str, path: Path, results: dict) -> None:
    """Through the results contract in the package's environment, so an invalid file is refused,
    not written."""
    code = (
        "import json, sys; import icml26.testing.results as c; "
        "c.write_results(sys.argv[2], json.loads(sys.stdin.read()))"
    )
    cmd = [UV, "run", "--locked", "--exact", "--all-extras", "--package", package, "python"]
    done = subprocess.run(
        [*cmd, "-c", code, module, str(path)],
        cwd=ROOT,
        env=_uv_env(),
        input=json.dumps(results),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{path}: not written:\n{done.stderr[-3000:]}")


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--only", nargs="+", metavar="NAME", help="only these packages")
    ap.add_argument("--check", action="store_true", help="report files whose rows moved")
    args = ap.parse_args()
    pkgs = [m for m in members() if m.is_method_package]
    if args.only:
        pkgs = [m for m in pkgs if m.name in args.only]
    moved = []
    for m in pkgs:
        files = committed_results(m)
        if files:
            moved += rejudge(files, m.module, m.name, args.check)
    verb = "differ from their verdict()" if args.check else "re-judged"
    print(f"{len(moved)} files {verb}" + "".join(f"\n  {p}" for p in moved))
    return 1 if args.check and moved else 0


if __name__ == "__main__":
    sys.exit(main())
