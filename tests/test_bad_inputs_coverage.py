"""Every public name of a method package has bad-input tests (CONTRIBUTING.md, "Safe with data").

A name counts as covered when its package's ``tests/test_bad_inputs.py`` uses it in code (a test
calls it with bad input) or lists it as a key of a module-level ``RETURNED`` dict (with the reason
it takes no input: a record the package returns). Words inside strings do not count. Constants
(upper-case names) are data, not entry points. ``bad_input_gaps.UNTESTED`` lists the names not
reached yet and may only shrink.
"""

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests"))
from _workspace import members  # noqa: E402
from bad_input_gaps import UNTESTED  # noqa: E402

METHOD_PACKAGES = [m for m in members() if m.is_method_package]


def public_names(m) -> list[str]:
    init = m.path / "src" / "icml26" / m.name.removeprefix("icml26-") / "__init__.py"
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return [e.value for e in node.value.elts if not e.value.isupper()]
    pytest.fail(f"{init}: no __all__ (the package's public API)")


def covered(tests: Path) -> set[str]:
    """Identifiers the test file uses in code, and the keys of its ``RETURNED`` dict."""
    tree = ast.parse(tests.read_text())
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    used |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    used |= {a.asname or a.name.split(".")[-1] for n in ast.walk(tree)
             if isinstance(n, ast.ImportFrom) for a in n.names}  # fmt: skip
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "RETURNED" for t in node.targets)
            and isinstance(node.value, ast.Dict)
        ):
            used |= {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    return used


@pytest.mark.parametrize("m", METHOD_PACKAGES, ids=lambda m: m.name)
def test_every_public_name_has_bad_input_tests(m):
    tests = m.path / "tests" / "test_bad_inputs.py"
    assert tests.is_file(), f"{m.name}: no tests/test_bad_inputs.py"
    names = public_names(m)
    uncovered = set(names) - covered(tests)
    known = UNTESTED.get(m.name, set())
    new = sorted(uncovered - known)
    assert not new, f"{m.name}: public names without bad-input tests: {new} ({tests})"
    done = sorted(known - uncovered)
    assert not done, f"{m.name}: {done} now have bad-input tests: drop them from bad_input_gaps.py"
