# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""Copy the results.json contract into every method package: ``uv run tools/sync_results.py``.

``shared/testing/src/icml26/testing/results.py`` is the one definition; each method package
carries it verbatim as ``src/icml26/<name>/_results.py`` under a ``# Copied from`` line, so a
package writes valid results without depending on the test toolkit at run time.
``--check`` only reports copies that differ (``tests/test_workspace.py`` runs the same check).
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _workspace import ROOT, members

CANONICAL = ROOT / "shared" / "testing" / "src" / "icml26" / "testing" / "results.py"
HEADER = (
    "# Copied from icml26.testing.results (shared/testing/src/icml26/testing/results.py): edit\n"
    "# it there, then run `uv run tools/sync_results.py`; a workspace test fails on drift.\n"
)


def expected_copy() -> str:
    return HEADER + CANONICAL.read_text()


def copy_paths() -> list[Path]:
    """Where each method package keeps its copy."""
    out = []
    for m in members():
        if m.is_method_package:
            module = m.name.removeprefix("icml26-")
            out.append(m.path / "src" / "icml26" / module / "_results.py")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true", help="report drifted copies, change nothing")
    args = ap.parse_args()
    text, drifted = expected_copy(), []
    for path in copy_paths():
        if path.is_file() and path.read_text() == text:
            continue
        drifted.append(path.relative_to(ROOT))
        if not args.check:
            path.write_text(text)
    verb = "differ" if args.check else "updated"
    print(f"{len(drifted)} copies {verb}" + "".join(f"\n  {p}" for p in drifted))
    return 1 if args.check and drifted else 0


if __name__ == "__main__":
    sys.exit(main())
