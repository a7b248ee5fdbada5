"""The suite's shape: one skeleton in every method package, no function longer than a screen, no
import cycle inside a member (CONTRIBUTING.md, "The skeleton")."""

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from _workspace import members  # noqa: E402

MEMBERS = members()
METHOD_PACKAGES = [m for m in MEMBERS if m.is_method_package]

# The rooms of STYLE.md's table that every method package has: its API, its command (cli,
# __main__, demo), the experiment and its rules kept apart (study, verdict), the baselines at
# full strength, the speed ratios (bench) and the pictures (plots).
ROOMS = ("__init__", "__main__", "cli", "demo", "study", "verdict", "baselines", "bench", "plots")
# The packages whose method trains a model keep the training loop in train.py.
TRAINS = {
    "icml26-asbm",
    "icml26-cdnv",
    "icml26-fahnes",
    "icml26-fidia",
    "icml26-hist",
    "icml26-lipopu",
    "icml26-lrpo",
    "icml26-lucid",
    "icml26-rerooter",
    "icml26-tactic",
    "icml26-td",
    "icml26-varjepa",
    "icml26-varsr",
}
TEST_FILES = ("test_cli.py", "test_device.py", "test_verdict.py", "test_readme.py")
# Rooms not built yet, with where their code lives today. The test fails when one of them
# appears (drop it from here then), so this table only shrinks.
GAPS: dict[str, set[str]] = {}
MAX_LINES = 80


def _source(m) -> Path:
    return m.path / "src" / "icml26" / m.name.removeprefix("icml26-")


@pytest.mark.parametrize("m", METHOD_PACKAGES, ids=lambda m: m.name)
def test_method_package_has_the_skeletons_rooms(m):
    rooms = ROOMS + (("train",) if m.name in TRAINS else ())
    missing = [f"{r}.py" for r in rooms if not (_source(m) / f"{r}.py").is_file()]
    missing += [f"tests/{t}" for t in TEST_FILES if not (m.path / "tests" / t).is_file()]
    gaps = GAPS.get(m.name, set())
    unexpected = sorted(set(missing) - gaps)
    assert not unexpected, f"{m.name} lacks {unexpected} (CONTRIBUTING.md, 'The skeleton')"
    built = sorted(gaps - set(missing))
    assert not built, f"{m.name} now has {built}: remove them from GAPS"


def test_the_trains_table_names_method_packages():
    assert {m.name for m in METHOD_PACKAGES} >= TRAINS


def _python_files():
    for folder in ("packages", "kernels", "tools"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if not {".venv", "runs", "build"} & set(path.parts):
                yield path


def long_functions(limit: int = MAX_LINES) -> list[str]:
    """``path:line name (N lines)`` for every function longer than ``limit`` lines."""
    out = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > limit:
                    out.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_no_function_is_longer_than_a_screen():
    offenders = long_functions()
    assert not offenders, (
        f"functions over {MAX_LINES} lines (split them by meaning: experiment / verdict / "
        "write; search loop / expansion / bookkeeping):\n" + "\n".join(offenders)
    )


def _modules(src: Path) -> dict[str, Path]:
    out = {}
    for path in (src / "icml26").rglob("*.py"):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def import_graph(src: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same member it imports, at the top or inside a function
    (a lazy import hides a cycle from the interpreter, not from a reader)."""
    modules = _modules(src)
    graph = {m: set() for m in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([node.module] if node.module else []))
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in node.names
                ]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_cycles_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("m", MEMBERS, ids=lambda m: m.name)
def test_no_import_cycle_inside_a_member(m):
    found = cycles(import_graph(m.path / "src"))
    assert not found, f"{m.name}: import cycles {found}"
