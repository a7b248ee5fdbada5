# Copied from icml26.testing.results (shared/testing/src/icml26/testing/results.py): edit
# it there, then run `uv run tools/sync_results.py`; a workspace test fails on drift.
"""The results.json contract every icml26 demo writes: schema, validator, verdict summary, writer.

This module is the one definition of the contract. It uses the standard library only, so each
method package carries a verbatim copy as ``icml26/<name>/_results.py`` (first line
``# Copied from icml26.testing.results``) and writes its results without a runtime dependency
on the test toolkit; a workspace test fails when a copy drifts from this file.

A results file holds one row per claim of the paper (``claims``: claim, verdict, evidence) and a
package ``verdict`` that is the summary of those rows (``summarise``). ``--quick`` runs are smoke
tests: ``quick`` is true and every verdict is ``"smoke"``. Files are strict JSON: no NaN or
Infinity anywhere (write ``null`` for a number that could not be measured).

``resolve_device`` turns a ``--device`` flag (``auto``, ``cpu``, ``cuda``, ``cuda:1``, ``mps``)
into the device a demo runs on, so every package's CLI reads the flag the same way and the
``device`` it records is the one that ran.
"""

import dataclasses
import json
import math
import os
import re
import shlex
import tempfile
from pathlib import Path
from typing import Any

CLAIM_VERDICTS = ("reproduced", "partly", "not reproduced", "untestable here")
VERDICTS = (*CLAIM_VERDICTS, "smoke")

# field -> (accepted types, description)
RESULTS_SCHEMA: dict[str, tuple[tuple[type, ...], str]] = {
    "package": ((str,), "distribution name, e.g. icml26-lucid"),
    "version": ((str,), "the package version that produced the file"),
    "experiment": ((str,), "what was run, in a few words"),
    "claim": ((str,), "the paper's headline claim, in one line"),
    "headline": ((str,), "one line a reader of the root table understands"),
    "claims": ((list,), "one row per claim: {'claim', 'verdict', 'evidence'}"),
    "metrics": ((dict,), "{'method': {...}, 'baseline': {...}, ...}: name -> {metric: number}"),
    "verdict": ((str,), f"one of {VERDICTS}: the summary of the claims' rows"),
    "quick": ((bool,), "true for a --quick (smoke) run"),
    "seconds": ((int, float), "wall-clock seconds of the run"),
    "config": ((dict,), "the configuration that was run"),
    "seed": ((int,), "the seed"),
    "device": ((str,), "the device that actually ran: cpu, cuda, cuda:1, mps, ..."),
    "torch": ((str,), "torch.__version__"),
}
CLAIM_FIELDS = ("claim", "verdict", "evidence")
# A torch device string naming one real device type ("cpu", "cuda:1"), not a list of options.
DEVICE_PATTERN = re.compile(r"(cpu|cuda|mps|xpu|hpu|npu|xla|meta)(:\d+)?")


def package_version(distribution: str, module_file: str | None = None) -> str:
    """The version of ``distribution``: from its installed metadata, else (a source tree run
    through PYTHONPATH, as tools/gpu_check.sh does) from the pyproject.toml above
    ``module_file``, else ``"0+unknown"``. The pyproject is the one place a version is kept."""
    import importlib.metadata
    import tomllib

    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        pass
    for folder in Path(module_file).resolve().parents if module_file else ():
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            project = tomllib.loads(pyproject.read_text()).get("project", {})
            if project.get("name") == distribution and "version" in project:
                return str(project["version"])
    return "0+unknown"


def resolve_device(spec: str = "auto") -> str:
    """The torch device string a ``--device`` flag names; ``auto`` is CUDA when present, else CPU.

    Raises ValueError naming the flag when the device is malformed or not available here, so a
    run never falls back silently to another device than the one asked for.
    """
    import torch  # only this helper needs torch; the rest of the contract is stdlib

    text = str(spec).strip().lower()
    if text == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if not DEVICE_PATTERN.fullmatch(text) or text.startswith("meta"):
        raise ValueError(f"--device must be auto, cpu, cuda, cuda:N or mps; got {spec!r}")
    kind, _, index = text.partition(":")
    if kind == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ValueError(
                f"--device {spec}: no CUDA device is available (torch {torch.__version__}, "
                f"CUDA build {torch.version.cuda or 'none'}); use --device cpu or auto"
            )
        if index and int(index) >= count:
            raise ValueError(f"--device {spec}: only {count} CUDA device(s) are visible")
    elif kind == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"--device {spec}: MPS is not available here; use --device cpu or auto")
    elif kind not in ("cpu", "cuda", "mps"):
        raise ValueError(f"--device {spec}: the demos run on cpu, cuda or mps")
    return text


def summarise(verdicts: list[str]) -> str:
    """The package verdict of its claims' verdicts; every row counts, none is hidden.

    Rows that cannot be tested here are left out of the judgement (a GPU speed claim on a CPU is
    not a failure) but never make a package "reproduced" on their own: with no testable row the
    package is "untestable here". Otherwise all testable rows reproduced -> "reproduced", all
    not reproduced -> "not reproduced", anything else -> "partly".
    """
    if not verdicts:
        raise ValueError("summarise: need at least one claim verdict")
    unknown = [v for v in verdicts if v not in CLAIM_VERDICTS]
    if unknown:
        raise ValueError(f"summarise: {unknown} are not claim verdicts {CLAIM_VERDICTS}")
    testable = [v for v in verdicts if v != "untestable here"]
    if not testable:
        return "untestable here"
    if all(v == "reproduced" for v in testable):
        return "reproduced"
    if all(v == "not reproduced" for v in testable):
        return "not reproduced"
    return "partly"


def claim_row(claim: str, verdict: str, evidence: str) -> dict[str, str]:
    """One row of ``claims``; the verdict must be one of ``CLAIM_VERDICTS``."""
    if verdict not in CLAIM_VERDICTS:
        raise ValueError(f"claim {claim!r}: verdict {verdict!r} is not one of {CLAIM_VERDICTS}")
    return {"claim": claim, "verdict": verdict, "evidence": evidence}


def as_smoke(claims: list[dict[str, str]]) -> tuple[list[dict[str, str]], str]:
    """The rows of a --quick run: same claims and evidence, every verdict "smoke"."""
    return [{**c, "verdict": "smoke"} for c in claims], "smoke"


def demo_command(program: str, cfg: Any, *, subcommand: str = "demo", skip=("out",)) -> str:
    """The command line that reruns the dataclass config ``cfg``, for ``config["command"]``.

    The program and subcommand, then a tyro-style flag (``--field-name value``) for every field
    that differs from its default, except those in ``skip`` (the output folder).
    """
    if not dataclasses.is_dataclass(cfg):
        raise TypeError(f"demo_command: cfg must be a dataclass instance, got {type(cfg).__name__}")
    parts = [program, subcommand]
    for f in dataclasses.fields(cfg):
        if f.name in skip or not f.init:
            continue
        value = getattr(cfg, f.name)
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = dataclasses.MISSING
        if value == default:
            continue
        flag = "--" + f.name.replace("_", "-")
        if isinstance(value, bool):
            parts.append(flag if value else "--no-" + f.name.replace("_", "-"))
        elif isinstance(value, list | tuple):
            parts += [flag, *(str(v) for v in value)]
        else:
            parts += [flag, str(value)]
    return shlex.join(parts)


def _nonfinite_paths(obj: Any, path: str = "") -> list[str]:
    if isinstance(obj, float) and not math.isfinite(obj):
        return [f"{path or '<root>'} = {obj!r}"]
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in _nonfinite_paths(v, f"{path}[{k!r}]")]
    if isinstance(obj, list | tuple):
        return [p for i, v in enumerate(obj) for p in _nonfinite_paths(v, f"{path}[{i}]")]
    return []


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON (strict JSON has no NaN or Infinity)")


def load_results(path: str | os.PathLike) -> dict[str, Any]:
    """Read a results.json as strict JSON (NaN / Infinity are errors); no schema check."""
    path = Path(path)
    try:
        results = json.loads(path.read_text(), parse_constant=_reject_constant)
    except FileNotFoundError:
        raise ValueError(f"results file {path} does not exist") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"results file {path} is not valid JSON: {e}") from None
    except ValueError as e:
        raise ValueError(f"results file {path}: {e}") from None
    if not isinstance(results, dict):
        raise ValueError(f"results file {path} must hold a JSON object")
    return results


def _schema_problems(results: dict[str, Any]) -> list[str]:
    problems = []
    for field, (types, what) in RESULTS_SCHEMA.items():
        value = results.get(field)
        if field not in results:
            problems.append(f"missing field {field!r} ({what})")
        elif (bool not in types and isinstance(value, bool)) or not isinstance(value, types):
            names = "/".join(t.__name__ for t in types)
            problems.append(f"field {field!r} must be {names}, got {type(value).__name__}")
        elif isinstance(value, str) and not value.strip() and field != "version":
            problems.append(f"field {field!r} is empty ({what})")
    return problems


def _claims_problems(results: dict[str, Any]) -> list[str]:
    claims, quick = results.get("claims"), results.get("quick")
    if not isinstance(claims, list):
        return []
    if not claims:
        return ["claims is empty: give one row per claim of the paper"]
    problems = []
    for i, row in enumerate(claims):
        if not isinstance(row, dict):
            problems.append(f"claims[{i}] must be an object with {CLAIM_FIELDS}")
            continue
        for f in CLAIM_FIELDS:
            if not isinstance(row.get(f), str) or not row[f].strip():
                problems.append(f"claims[{i}][{f!r}] must be a non-empty string")
        v = row.get("verdict")
        allowed = ("smoke",) if quick is True else CLAIM_VERDICTS
        if isinstance(v, str) and v not in allowed:
            problems.append(
                f"claims[{i}] verdict {v!r} is not one of {allowed}"
                + (" (a --quick run is a smoke test)" if quick is True else "")
            )
    verdict = results.get("verdict")
    if quick is True and verdict != "smoke":
        problems.append(f"a quick run's verdict must be 'smoke', got {verdict!r}")
    elif quick is False and not problems:
        expected = summarise([row["verdict"] for row in claims])
        if verdict != expected:
            problems.append(
                f"verdict {verdict!r} does not summarise the claims' rows (expected {expected!r})"
            )
    return problems


def _metrics_problems(results: dict[str, Any]) -> list[str]:
    metrics = results.get("metrics")
    if not isinstance(metrics, dict):
        return []
    problems = [f"metrics has no {k!r} entry" for k in ("method", "baseline") if k not in metrics]
    for group, values in metrics.items():
        if not isinstance(values, dict):
            problems.append(f"metrics[{group!r}] must be an object of metric -> number")
            continue
        for key, v in values.items():
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
                problems.append(f"metrics[{group!r}][{key!r}] = {v!r} is not a number or null")
    return problems


def validate_results(results: dict[str, Any] | str | os.PathLike) -> dict[str, Any]:
    """Check a results.json (path or parsed dict) against the contract; return the parsed dict.

    Raises ValueError listing every problem: missing or mistyped fields, verdicts outside
    ``VERDICTS``, a claims table that is empty or malformed, a package verdict that is not the
    summary of the claims' rows, a quick run whose verdicts are not "smoke", metrics without
    ``method`` and ``baseline`` entries or with non-numbers, and NaN / Infinity anywhere.
    """
    if not isinstance(results, dict):
        results = load_results(results)
    problems = _schema_problems(results)
    if isinstance(results.get("verdict"), str) and results["verdict"] not in VERDICTS:
        problems.append(f"verdict {results['verdict']!r} is not one of {VERDICTS}")
    problems += _claims_problems(results)
    problems += _metrics_problems(results)
    problems += [f"{p} is not finite (strict JSON)" for p in _nonfinite_paths(results)]
    if isinstance(results.get("seconds"), int | float) and results["seconds"] < 0:
        problems.append("seconds is negative")
    device = results.get("device")
    if isinstance(device, str) and not DEVICE_PATTERN.fullmatch(device):
        problems.append(f"device {device!r} is not the torch device that ran (e.g. 'cpu', 'cuda')")
    if problems:
        raise ValueError("results.json does not match the schema:\n  " + "\n  ".join(problems))
    return results


def write_results(path: str | os.PathLike, results: dict[str, Any]) -> Path:
    """Validate ``results`` and write it to ``path`` atomically (temp file, then rename).

    Nothing is written when the results do not match the contract: the ValueError says why.
    Returns the path written.
    """
    validate_results(results)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(results, indent=2, allow_nan=False) + "\n"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
