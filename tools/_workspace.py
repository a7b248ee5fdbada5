"""The workspace's members, read from the root pyproject.toml (shared by ci.py and reproduce.py)."""

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Member:
    name: str  # distribution name, e.g. icml26-td
    path: Path  # member folder
    version: str
    dependencies: tuple[str, ...]  # requirement strings, dev group included
    scripts: tuple[str, ...]
    runtime: tuple[str, ...] = ()  # requirement strings of [project] dependencies only
    module: str = ""  # the import name, e.g. icml26.td

    @property
    def rel(self) -> str:
        return self.path.relative_to(ROOT).as_posix()

    @property
    def is_method_package(self) -> bool:
        return self.rel.startswith("packages/")

    def requires(self) -> set[str]:
        """Distribution names this member depends on (runtime or dev group)."""
        return {requirement_name(d) for d in self.dependencies}

    def runtime_requires(self) -> set[str]:
        """Distribution names this member needs at run time (its [project] dependencies)."""
        return {requirement_name(d) for d in self.runtime}


def requirement_name(requirement: str) -> str:
    """The distribution name a PEP 508 requirement string names (no packaging needed)."""
    return re.split(r"[\s<>=!~;\[(@]", requirement.strip(), maxsplit=1)[0].lower()


def members() -> list[Member]:
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())
    out = []
    for pattern in root["tool"]["uv"]["workspace"]["members"]:
        for path in sorted(ROOT.glob(pattern)):
            if not (path / "pyproject.toml").is_file():
                continue
            meta = tomllib.loads((path / "pyproject.toml").read_text())
            project = meta["project"]
            deps = list(project.get("dependencies", []))
            for group in meta.get("dependency-groups", {}).values():
                deps += [g for g in group if isinstance(g, str)]
            out.append(
                Member(
                    project["name"],
                    path,
                    project["version"],
                    tuple(deps),
                    tuple(project.get("scripts", {})),
                    tuple(project.get("dependencies", [])),
                    meta["tool"]["uv"]["build-backend"]["module-name"],
                )
            )
    return out
