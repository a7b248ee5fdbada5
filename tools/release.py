# /// script
# requires-python = ">=3.11"
# dependencies = ["packaging>=24"]
# ///
"""Release one member: ``uv run tools/release.py icml26-NAME X.Y.Z [--dry-run]``.

1. checks: the version is SemVer and above the current one; every sibling that depends on the
   member admits it (``icml26-kernels>=0.1,<0.2`` does not admit 0.2.0: widen it first); the
   CHANGELOG has entries under ``[Unreleased]``;
2. writes: the version in the member's ``pyproject.toml`` (the one place it is kept; the code
   reads it from the installed metadata), ``[Unreleased]`` becomes ``[X.Y.Z] - date`` in its
   CHANGELOG, and ``uv lock`` records it;
3. results (method packages): reruns the full demo, whose committed results must carry the
   released version (``tools/reproduce.py --full --only NAME``, then ``--table``);
4. builds the sdist and wheel (``uv build --package NAME``) into ``dist/NAME-X.Y.Z/`` and runs
   ``twine check`` on them;
5. copies them into the local index ``dist/index/`` (a flat folder of every release);
6. prints the tag to push (``icml26-NAME-vX.Y.Z``); the publish workflow builds and uploads
   from that tag with PyPI's trusted publishing. Nothing is published from here.

``--dry-run`` runs the checks and prints every later step without changing anything.
``--verify NAME X.Y.Z`` only checks that the member's version is X.Y.Z (the publish workflow
runs it on the tag it was given).
"""

import argparse
import datetime
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import InvalidVersion, Version

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _workspace import ROOT, Member, members

UV = os.environ.get("UV") or shutil.which("uv") or "uv"
SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")
UNRELEASED = "## [Unreleased]"
INDEX = ROOT / "dist" / "index"
"""The local package index every release's wheel and sdist are copied to (a flat folder:
``uv pip install --find-links dist/index icml26-NAME``, or ``[[tool.uv.index]]`` with
``format = "flat"``)."""


def check(m: Member, new: str, all_members: list[Member]) -> list[str]:
    """Problems that stop the release of ``m`` at version ``new`` (empty: go ahead)."""
    problems = []
    if not SEMVER.fullmatch(new):
        return [f"{new!r} is not a SemVer release version (X.Y.Z)"]
    try:
        if Version(new) <= Version(m.version):
            problems.append(f"{new} is not above the current version {m.version}")
    except InvalidVersion as e:
        problems.append(str(e))
    for other in all_members:
        for dep in other.dependencies:
            req = Requirement(dep)
            if req.name == m.name and Version(new) not in req.specifier:
                problems.append(
                    f"{other.name} requires {dep!r}, which does not admit {new}: widen it first"
                )
    changelog = m.path / "CHANGELOG.md"
    if not changelog.is_file():
        problems.append(f"{changelog.relative_to(ROOT)} is missing")
    else:
        text = changelog.read_text()
        if UNRELEASED not in text:
            problems.append(f"{changelog.relative_to(ROOT)} has no '{UNRELEASED}' section")
        else:
            body = text.split(UNRELEASED, 1)[1].split("\n## ", 1)[0]
            if not re.search(r"^- ", body, re.M):
                problems.append(f"{changelog.relative_to(ROOT)}: nothing under {UNRELEASED}")
    return problems


def bump_pyproject(text: str, old: str, new: str) -> str:
    pattern = re.compile(rf'^version = "{re.escape(old)}"$', re.M)
    if len(pattern.findall(text)) != 1:
        raise ValueError(f'expected exactly one line `version = "{old}"` in pyproject.toml')
    return pattern.sub(f'version = "{new}"', text)


def release_changelog(text: str, new: str, today: datetime.date) -> str:
    """``[Unreleased]`` becomes ``[new] - today``, under a fresh empty ``[Unreleased]``."""
    return text.replace(UNRELEASED, f"{UNRELEASED}\n\n## [{new}] - {today.isoformat()}", 1)


def steps(m: Member, new: str) -> list[list[str]]:
    out = [[UV, "lock"]]
    if m.is_method_package:
        out.append([UV, "run", "tools/reproduce.py", "--full", "--only", m.name])
        out.append([UV, "run", "tools/reproduce.py", "--table"])
    dist = ROOT / "dist" / f"{m.name}-{new}"
    out.append([UV, "build", "--package", m.name, "--sdist", "--wheel", "--out-dir", str(dist)])
    out.append([UV, "tool", "run", "twine", "check", "--strict", f"{dist}/*"])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("name", help="the member to release, e.g. icml26-td")
    ap.add_argument("version", help="the new version, X.Y.Z")
    ap.add_argument("--dry-run", action="store_true", help="check and print; change nothing")
    ap.add_argument("--verify", action="store_true", help="only check the member is at VERSION")
    args = ap.parse_args(argv)
    all_members = members()
    by_name = {m.name: m for m in all_members}
    if args.name not in by_name:
        ap.error(f"no member named {args.name!r}; members: {', '.join(sorted(by_name))}")
    m = by_name[args.name]
    if args.verify:
        ok = m.version == args.version
        print(f"{m.name} is at {m.version}" + ("" if ok else f", not {args.version}"))
        return 0 if ok else 1
    problems = check(m, args.version, all_members)
    print(f"release {m.name} {m.version} -> {args.version}")
    if problems:
        print("cannot release:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    pyproject, changelog = m.path / "pyproject.toml", m.path / "CHANGELOG.md"
    new_pyproject = bump_pyproject(pyproject.read_text(), m.version, args.version)
    new_changelog = release_changelog(changelog.read_text(), args.version, datetime.date.today())
    tag = f"{m.name}-v{args.version}"
    prefix = "would " if args.dry_run else ""
    print(f"{prefix}write {pyproject.relative_to(ROOT)}: version = {args.version!r}")
    print(f"{prefix}write {changelog.relative_to(ROOT)}: [Unreleased] -> [{args.version}]")
    if not args.dry_run:
        pyproject.write_text(new_pyproject)
        changelog.write_text(new_changelog)
    for cmd in steps(m, args.version):
        line = shlex.join(["uv" if c == UV else c for c in cmd]).replace(str(ROOT) + "/", "")
        print(f"{prefix}run: {line}")
        if args.dry_run:
            continue
        # twine's file argument is a glob: expand it here (no shell), to the distributions only
        # (uv build also writes a .gitignore into the folder)
        if cmd[-1].endswith("/*"):
            cmd = [*cmd[:-1], *(str(p) for p in distributions(Path(cmd[-1][:-2])))]
        if subprocess.run(cmd, cwd=ROOT).returncode != 0:
            print(f"release stopped: `{line}` failed", file=sys.stderr)
            return 1
    built = ROOT / "dist" / f"{m.name}-{args.version}"
    print(f"{prefix}copy the wheel and sdist to the local index {INDEX.relative_to(ROOT)}/")
    if not args.dry_run:
        INDEX.mkdir(parents=True, exist_ok=True)
        for f in distributions(built):
            shutil.copy2(f, INDEX / f.name)
    print(f"then {prefix}tag it: git tag {tag} && git push origin {tag}")
    return 0


def distributions(folder: Path) -> list[Path]:
    """The wheel and sdist files in ``folder``."""
    return sorted(p for p in folder.iterdir() if p.name.endswith((".whl", ".tar.gz")))


if __name__ == "__main__":
    sys.exit(main())
