"""Checks of the packages as users install them (used by ``tools/ci.py --wheels --lowest``).

- ``check_wheel``: a member's built wheel, with the extras its README tells a user to install
  (``[tool.icml26] demo-installs`` in its pyproject), in a fresh virtual environment outside the
  repository; then ``demo --quick`` from that environment, and its results.json checked against
  the suite's contract. Siblings (icml26-kernels, ...) come from the freshly built wheels, never
  from an index.
- ``lowest_copy``: a copy of the workspace locked with ``uv lock --resolution lowest-direct``, so
  the members' tests run against the lowest versions their direct requirements admit, with each
  sibling others depend on at the source of its floor's release tag.
"""

import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from _workspace import ROOT, Member, members, requirement_name

UV = os.environ.get("UV") or shutil.which("uv") or "uv"
DEMO_TIMEOUT_S = 1200


def _load_contract():
    # stdlib-only module: loaded by path, so the checks need neither torch nor the toolkit
    path = ROOT / "shared" / "testing" / "src" / "icml26" / "testing" / "results.py"
    spec = importlib.util.spec_from_file_location("icml26_results_contract", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CONTRACT = _load_contract()


@dataclass(frozen=True)
class DemoInstall:
    """One install a README tells users to run (``pip install "pkg[extras]"``, then
    ``pip install --no-deps ...``), the ``demo --quick`` arguments to run after it, and text the
    demo's output must contain (``expect``) or must not (``reject``)."""

    extras: tuple[str, ...] = ()
    no_deps: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    expect: tuple[str, ...] = ()
    reject: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    """A library: the modules that must import from this install (default: every public one)."""
    overrides: tuple[str, ...] = ()
    """Requirements that replace every declared requirement on the same name
    (``uv pip install --override``): how a README drops a dependency's over-declared ones."""
    absent: tuple[str, ...] = ()
    """Distributions the install must not bring (what the overrides keep out)."""

    @property
    def label(self) -> str:
        return f"[{','.join(self.extras)}]" if self.extras else "(no extras)"


KEYS = {"extras", "no-deps", "args", "expect", "reject", "modules", "overrides", "absent"}


def demo_installs(m: Member) -> list[DemoInstall]:
    meta = tomllib.loads((m.path / "pyproject.toml").read_text())
    declared = meta.get("tool", {}).get("icml26", {}).get("demo-installs", [{}])
    extras = set(meta["project"].get("optional-dependencies", {}))
    fields = ("extras", "no-deps", "args", "expect", "reject", "modules", "overrides", "absent")
    out = []
    for d in declared:
        unknown = set(d) - KEYS
        if unknown:
            raise ValueError(f"{m.name}: demo-installs entries take {sorted(KEYS)}; got {unknown}")
        missing = set(d.get("extras", ())) - extras
        if missing:
            raise ValueError(f"{m.name}: demo-installs names undefined extras {sorted(missing)}")
        out.append(DemoInstall(*(tuple(d.get(k, ())) for k in fields)))
    return out


def runtime_siblings(m: Member, by_name: dict[str, Member]) -> list[Member]:
    """Workspace members ``m`` needs at run time (its [project] dependencies, transitively)."""
    seen: dict[str, Member] = {}
    todo = [m]
    while todo:
        for name in todo.pop().runtime_requires():
            if name in by_name and name not in seen:
                seen[name] = by_name[name]
                todo.append(by_name[name])
    return list(seen.values())


def build_wheels(members: list[Member], dist: Path, every: bool = True) -> dict[str, Path]:
    """Build the wheels of ``members`` into ``dist``; {distribution name: wheel path}. With
    ``every`` one ``uv build --all-packages``, else one build per member (a per-package job
    builds only its member and the siblings it needs)."""
    builds = (
        [["--all-packages"]] if every else [["--package", m.name] for m in members]
    )  # fmt: skip
    for which in builds:
        subprocess.run(
            [UV, "build", *which, "--wheel", "--out-dir", str(dist), "-q"], cwd=ROOT, check=True
        )
    wheels = {}
    for m in members:
        found = list(dist.glob(f"{m.name.replace('-', '_')}-{m.version}-*.whl"))
        if len(found) != 1:
            raise RuntimeError(f"expected one wheel of {m.name} {m.version} in {dist}: {found}")
        wheels[m.name] = found[0]
    return wheels


def clean_env() -> dict[str, str]:
    """The environment of a user's shell: no workspace virtualenv, no uv project settings."""
    drop = ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "PYTHONPATH", "CONDA_PREFIX")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["MPLBACKEND"] = "Agg"
    return env


def expected_device() -> str:
    return (
        "cuda" if shutil.which("nvidia-smi") and os.environ.get("ICML26_CI_GPU") != "0" else "cpu"
    )


def _run(cmd: list[str], cwd: Path, env: dict[str, str], log: list[str], timeout=None) -> int:
    res = subprocess.run(
        cmd,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )
    log.append(f"$ {' '.join(map(str, cmd))}\n{res.stdout}")
    return res.returncode


def check_wheel(
    m: Member,
    install: DemoInstall,
    wheels: dict[str, Path],
    siblings: list[Member],
    env: dict[str, str],
) -> tuple[list[str], list[str]]:
    """Install ``m``'s wheel as its README says, in a fresh venv outside the repository, and run
    its ``demo --quick`` (or import it, for a member with no console script).

    Returns (log lines, problems); no problems means the check passed.
    """
    log: list[str] = []
    problems: list[str] = []
    env = {**clean_env(), **{k: v for k, v in env.items() if k.startswith(("OMP_", "UV_CACHE"))}}
    with tempfile.TemporaryDirectory(prefix=f"icml26-wheel-{m.name}-") as tmp:
        tmp = Path(tmp)
        venv = tmp / "venv"
        python = str(venv / "bin" / "python")
        if _run([UV, "venv", "-q", "--python", sys.executable, str(venv)], tmp, env, log):
            return log, ["uv venv failed"]
        target = str(wheels[m.name])
        if install.extras:
            target = f"{m.name}[{','.join(install.extras)}] @ {wheels[m.name].as_uri()}"
        cmd = [UV, "pip", "install", "-q", "--python", str(python), target]
        cmd += [str(wheels[s.name]) for s in siblings]
        if install.overrides:
            (tmp / "overrides.txt").write_text("\n".join(install.overrides) + "\n")
            cmd += ["--override", str(tmp / "overrides.txt")]
        if _run(cmd, tmp, env, log):
            return log, [f"pip install {install.label} failed"]
        if install.absent:
            listed = subprocess.run(
                [UV, "pip", "list", "--python", python, "--format", "freeze"],
                cwd=tmp, env=env, capture_output=True, text=True,
            ).stdout  # fmt: skip
            names = {line.split("==")[0].lower() for line in listed.splitlines()}
            brought = sorted(set(a.lower() for a in install.absent) & names)
            if brought:
                return log, [f"the install brought {brought}, which the overrides keep out"]
        if install.no_deps:
            nd = [UV, "pip", "install", "-q", "--python", str(python), "--no-deps"]
            if _run([*nd, *install.no_deps], tmp, env, log):
                return log, [f"pip install --no-deps {' '.join(install.no_deps)} failed"]
        module = m.module
        probe = subprocess.run(
            [
                python,
                "-c",
                # torch where the install has it (the testing toolkit's runtime part does not)
                f"import importlib, importlib.util, {module}; "
                "torch = importlib.import_module('torch') if importlib.util.find_spec('torch') "
                "else None; "
                f"print({module}.__file__, int(bool(torch) and torch.cuda.is_available()))",
            ],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
        )
        log.append(f"$ python -c 'import {module}'\n{probe.stdout}{probe.stderr}")
        words = probe.stdout.split()
        if probe.returncode or len(words) != 2 or not words[0].startswith(str(venv)):
            return log, [f"import {module} failed or did not come from the fresh venv"]
        device = "cuda" if words[1] == "1" else "cpu"  # what the installed torch sees
        if not m.scripts:  # a library: its public modules import with this install's deps
            walk = (
                f"import importlib, pkgutil, {module} as p; "
                "[importlib.import_module(i.name) for i in pkgutil.walk_packages(p.__path__, "
                "p.__name__ + '.') if not i.name.rsplit('.', 1)[-1].startswith('_')]"
            )
            if install.modules:  # the part this install promises (e.g. no test extra)
                walk = (
                    f"import importlib; [importlib.import_module(n) for n in {install.modules!r}]"
                )
            if _run([python, "-c", walk], tmp, env, log):
                return log, [f"a public module of {module} does not import from the wheel"]
            return log, problems
        problems += _quick_demo(m, install, venv, tmp, env, device, log)
    return log, problems


def _quick_demo(m: Member, install: DemoInstall, venv: Path, tmp: Path, env, device, log):
    """Run the installed ``demo --quick`` and check its output and results.json; the problems."""
    problems: list[str] = []
    out = tmp / "out"
    demo = [str(venv / "bin" / m.scripts[0]), "demo", "--quick", *install.args]
    try:
        res = subprocess.run(
            [*demo, "--out", str(out)],
            cwd=tmp,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=DEMO_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return [f"demo --quick ran past {DEMO_TIMEOUT_S} s"]
    log.append(f"$ {' '.join(demo)}\n{res.stdout}")
    if res.returncode:
        problems.append(f"demo --quick exited {res.returncode}")
    if "Traceback (most recent call last)" in res.stdout:
        problems.append("demo --quick printed a traceback")
    problems += [f"the demo's output lacks {t!r}" for t in install.expect if t not in res.stdout]
    problems += [f"the demo's output has {t!r}" for t in install.reject if t in res.stdout]
    path = out / "results.json"
    if not path.is_file():
        return [*problems, "demo --quick wrote no results.json"]
    try:
        results = CONTRACT.validate_results(path)
    except ValueError as e:
        return [*problems, f"results.json: {e}"]
    want = {"package": m.name, "version": m.version, "quick": True, "verdict": "smoke"}
    for key, value in want.items():
        if results.get(key) != value:
            problems.append(f"results.json {key} = {results.get(key)!r}, expected {value!r}")
    if not str(results.get("device", "")).startswith(device):
        problems.append(f"results.json device {results.get('device')!r}, expected {device}")
    log.append(f"results.json: {json.dumps({k: results[k] for k in ('device', 'seconds')})}")
    return problems


def sibling_floors() -> dict[str, str]:
    """{member others depend on: the highest floor any dependent names (X.Y.Z)}."""
    names = {m.name: m for m in members()}
    floors: dict[str, tuple[int, ...]] = {}
    for m in names.values():
        for dep in m.dependencies:
            name = requirement_name(dep)
            found = re.search(r">=\s*(\d+(?:\.\d+)*)", dep)
            if name in names and found:
                v = tuple(int(x) for x in found.group(1).split("."))
                v = (*v, 0, 0, 0)[:3]
                floors[name] = max(floors.get(name, v), v)
    return {name: ".".join(map(str, v)) for name, v in sorted(floors.items())}


def floor_sources(dest: Path, log: list[str]) -> None:
    """In the copy at ``dest``, replace each member others depend on by the source of its floor's
    release tag (``icml26-NAME-vX.Y.Z``, what ``tools/release.py`` tags), so the dependents' tests
    run against what they claim to need, not against the sibling's newest code. A floor without
    a tag keeps the current source, and the log says so."""
    by_name = {m.name: m for m in members()}
    for name, floor in sibling_floors().items():
        tag = f"{name}-v{floor}"
        rel = by_name[name].rel
        archive = subprocess.run(
            ["git", "archive", "--format=tar", f"refs/tags/{tag}", rel],
            cwd=ROOT,
            capture_output=True,
        )
        if archive.returncode != 0:
            log.append(f"floor {name} {floor}: no tag {tag}, so its current source is tested")
            continue
        shutil.rmtree(dest / rel)
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(dest, filter="data")
        log.append(f"floor {name} {floor}: the source of tag {tag}")


def lowest_copy(dest: Path, log: list[str]) -> int:
    """Copy the workspace's files (tracked and new, not ignored) to ``dest``, put each sibling
    others depend on at its floor's tagged source (``floor_sources``), and lock the copy with the
    lowest versions the members' direct requirements admit. Returns uv's exit code."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for rel in filter(None, files):
        src = ROOT / rel.decode()
        if src.is_file():
            target = dest / rel.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
    # The resolution mode goes into the copy's configuration, not only the lock command: a
    # later `uv run --locked` compares the lock with the configured mode and refuses a mismatch.
    floor_sources(dest, log)
    root = dest / "pyproject.toml"
    text = root.read_text()
    if "\n[tool.uv]\n" not in text:
        raise RuntimeError("the workspace root pyproject.toml has no [tool.uv] table")
    mode = '\n[tool.uv]\nresolution = "lowest-direct"\n'
    root.write_text(text.replace("\n[tool.uv]\n", mode, 1))
    return _run([UV, "lock"], dest, clean_env(), log)
