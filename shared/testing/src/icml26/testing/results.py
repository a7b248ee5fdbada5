"""The results.json schema every package's ``demo`` writes (DESIGN.md, "results.json")."""

import json
import math
import os
from pathlib import Path
from typing import Any

VERDICTS = ("reproduced", "partly", "not reproduced")

# field -> (accepted types, description)
RESULTS_SCHEMA: dict[str, tuple[tuple[type, ...], str]] = {
    "package": ((str,), "distribution name, e.g. icml26-lucid"),
    "version": ((str,), "the package version that produced the file"),
    "experiment": ((str,), "what was run, in a few words"),
    "claim": ((str,), "the paper's claim, in one line"),
    "metrics": ((dict,), "{'method': {...}, 'baseline': {...}, ...}: name -> {metric: number}"),
    "verdict": ((str,), f"one of {VERDICTS}"),
    "seconds": ((int, float), "wall-clock seconds of the run"),
    "config": ((dict,), "the configuration that was run"),
    "seed": ((int,), "the seed"),
    "device": ((str,), "cpu, cuda, ..."),
    "torch": ((str,), "torch.__version__"),
}


def validate_results(results: dict[str, Any] | str | os.PathLike) -> dict[str, Any]:
    """Check a results.json (path or parsed dict) against the schema; return the parsed dict.

    Raises ValueError listing every problem: missing fields, wrong types, a verdict outside
    ``VERDICTS``, a ``metrics`` without ``method`` and ``baseline`` entries, or metric values
    that are not finite numbers (null is allowed for a metric that could not be measured).
    """
    if not isinstance(results, dict):
        path = Path(results)
        try:
            results = json.loads(path.read_text())
        except FileNotFoundError:
            raise ValueError(f"results file {path} does not exist") from None
        except json.JSONDecodeError as e:
            raise ValueError(f"results file {path} is not valid JSON: {e}") from None
        if not isinstance(results, dict):
            raise ValueError(f"results file {path} must hold a JSON object")
    problems = []
    for field, (types, what) in RESULTS_SCHEMA.items():
        if field not in results:
            problems.append(f"missing field {field!r} ({what})")
        elif not isinstance(results[field], types) or isinstance(results[field], bool):
            problems.append(
                f"field {field!r} must be {'/'.join(t.__name__ for t in types)}, "
                f"got {type(results[field]).__name__}"
            )
    if isinstance(results.get("verdict"), str) and results["verdict"] not in VERDICTS:
        problems.append(f"verdict {results['verdict']!r} is not one of {VERDICTS}")
    metrics = results.get("metrics")
    if isinstance(metrics, dict):
        for required in ("method", "baseline"):
            if required not in metrics:
                problems.append(f"metrics has no {required!r} entry")
        for group, values in metrics.items():
            if not isinstance(values, dict):
                problems.append(f"metrics[{group!r}] must be an object of metric -> number")
                continue
            for key, v in values.items():
                if v is None:
                    continue
                if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                    problems.append(f"metrics[{group!r}][{key!r}] = {v!r} is not a finite number")
    if isinstance(results.get("seconds"), int | float) and results["seconds"] < 0:
        problems.append("seconds is negative")
    if problems:
        raise ValueError("results.json does not match the schema:\n  " + "\n  ".join(problems))
    return results
