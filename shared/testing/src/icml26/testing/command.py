"""The command line every package shares: tyro subcommands from config dataclasses.

``dispatch`` turns ``{"demo": (DemoConfig, run_demo), ...}`` into ``icml26-<name> demo ...``:
tyro parses the arguments into the config, the matching function runs it, and a ValueError (a
bad argument the package named) ends as ``<prog>: error: ...`` with exit code 2, not a traceback.

``DemoOptions`` holds the flags every ``demo`` shares (``--quick``, ``--device``, ``--out``) and
``DeviceOption`` the ``--device`` of any other command that computes; a package's config
dataclasses subclass them and add their own flags.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Callable, Sequence
from dataclasses import MISSING, dataclass, fields, replace
from pathlib import Path
from typing import Any


@dataclass(frozen=True, kw_only=True)
class DeviceOption:
    """The ``--device`` flag of a command that computes (``resolve_device`` reads it)."""

    device: str = "auto"
    """auto (CUDA when present), cpu, cuda, cuda:N"""


@dataclass(frozen=True, kw_only=True)
class DemoOptions(DeviceOption):
    """The flags every ``demo`` takes. A package's ``DemoConfig`` subclasses this, adds its
    budgets and names in ``quick_settings`` what ``--quick`` shrinks."""

    quick: bool = False
    """Smoke run: tiny budgets, done in about a minute; every verdict reads "smoke"."""
    out: Path | None = None
    """Run folder (default runs/<package>/<timestamp>)."""

    def quick_settings(self) -> dict[str, Any]:
        """The settings ``--quick`` replaces, by field name (none by default)."""
        return {}

    def resolved(self):
        """The settings the run uses: under ``--quick``, ``quick_settings()`` for every setting
        still at its default. A setting the user changed keeps its value (``--quick --seeds 3``
        runs seed 3): a flag is never silently overridden."""
        if not self.quick:
            return self
        return replace(self, **{k: v for k, v in self.quick_settings().items()
                                if _at_default(self, k)})  # fmt: skip


def _at_default(cfg, name: str) -> bool:
    """Whether ``cfg.name`` still holds its declared default (a field without one never does)."""
    field = next((f for f in fields(cfg) if f.name == name), None)
    if field is None:
        raise ValueError(f"quick_settings names {name!r}, which is not a setting")
    if field.default is not MISSING:
        default = field.default
    elif field.default_factory is not MISSING:
        default = field.default_factory()
    else:
        return False
    try:
        return bool(getattr(cfg, name) == default)
    except (TypeError, ValueError, RuntimeError):  # values with no single truth value (arrays)
        return False


def dispatch(
    prog: str,
    description: str,
    commands: dict[str, tuple[type, Callable[[Any], Any]]],
    argv: Sequence[str] | None = None,
    *,
    errors: tuple[type[BaseException], ...] = (ValueError, TypeError, OSError),
) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``) into one of ``commands``' configs, run its
    function, and return the exit code: 0, or 2 after printing the message of one of ``errors``
    in one line (the mistakes a user can fix: a bad value or kind of input, a missing or
    unreadable file), never a traceback."""
    try:
        import tyro  # every method package depends on tyro; this toolkit stays stdlib-only
    except ImportError as e:  # pragma: no cover - a package without tyro has no CLI
        raise ImportError("icml26.testing.command.dispatch needs tyro (pip install tyro)") from e
    if not commands:
        raise ValueError("dispatch: commands must name at least one subcommand")
    configs = {name: config for name, (config, _) in commands.items()}
    args = list(sys.argv[1:] if argv is None else argv)
    if len(commands) == 1:
        config = next(iter(configs.values()))
        cfg = _parse(lambda: tyro.cli(config, prog=prog, description=description, args=args), prog)
    else:
        cfg = _parse(
            lambda: tyro.extras.subcommand_cli_from_dict(
                configs, prog=prog, description=description, args=args
            ),
            prog,
        )
    run = next((fn for config, fn in commands.values() if type(cfg) is config), None)
    if run is None:  # tyro built a config none of the commands takes (a subclass, say)
        raise TypeError(f"dispatch: no command takes a {type(cfg).__name__}")
    try:
        run(cfg)
    except errors as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    return 0


def _parse(parse: Callable[[], Any], prog: str) -> Any:
    """``parse()`` (tyro's parser) with its usage errors in one line: tyro prints a bad flag or a
    missing argument as a multi-line box and exits 2; the box's message becomes ``<prog>:
    error: ...`` with the same exit code. Help and anything else it prints pass through."""
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            cfg = parse()
    except SystemExit as e:
        line = _box_message(captured.getvalue()) if e.code not in (0, None) else ""
        if line:
            print(f"{prog}: error: {line} (see {prog} --help)", file=sys.stderr)
            raise SystemExit(e.code) from None
        sys.stderr.write(captured.getvalue())
        raise
    sys.stderr.write(captured.getvalue())
    return cfg


def _box_message(text: str) -> str:
    """The message of a usage error tyro drew, in one line; "" when ``text`` is not one. Where
    stdout is UTF-8 it is a box (the title in its top border, ``│ ... │`` lines, the message
    before the first rule); elsewhere the title, a rule, then the message up to the next rule."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    boxed = lines[0].startswith("╭")
    segments: list[list[str]] = [[]]
    for line in lines:
        if line.startswith(("╭", "╰")):
            continue
        inner = line.strip("│|").strip()
        if set(inner) <= {"─", "-"}:  # a rule between the box's parts
            segments.append([])
        else:
            segments[-1].append(inner)
    if not boxed:  # the title, then the message: a text with no rule is not tyro's
        if len(segments) < 2:
            return ""
        segments = segments[1:]
    return " ".join(" ".join(segments[0]).split())
