"""What every demo does once it has measured and judged: assemble, write and print its results.

A demo keeps its experiment (``study.py``) and its rules (``verdict.py``); the parts every demo
shares, from the default run folder to the closing ``[verdict] claim`` lines, live here once.
Stdlib only.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from icml26.testing.results import (
    assemble_results,
    demo_command,
    package_version,
    provenance,
    write_results,
)


def run_folder(out: str | os.PathLike | None, name: str) -> Path:
    """``out`` when given, else ``runs/<name>/<YYYYmmdd-HHMMSS>`` (the contract's default)."""
    if out is not None:
        return Path(out)
    return Path("runs") / name / time.strftime("%Y%m%d-%H%M%S")


def jsonable(obj: Any) -> Any:
    """``obj`` as plain JSON values (paths, tuples and other objects become strings / lists)."""
    return json.loads(json.dumps(obj, default=str))


def demo_config(
    program: str,
    cfg: Any,
    *,
    recorded: Any = None,
    skip: tuple[str, ...] = ("out",),
) -> dict[str, Any]:
    """``config`` of a results file: the fields of ``recorded`` (default ``cfg``; a demo that
    expands ``--quick`` into its settings records the expanded config) as JSON, and the
    ``command`` that reruns ``cfg`` as the user asked for it."""
    if not dataclasses.is_dataclass(cfg):
        raise TypeError(f"demo_config: cfg must be a dataclass instance, got {type(cfg).__name__}")
    fields = dataclasses.asdict(cfg if recorded is None else recorded)
    return {**jsonable(fields), "command": demo_command(program, cfg, skip=skip)}


def torch_version() -> str:
    """``torch.__version__`` when torch is loaded (every method package's demo loads it)."""
    torch = sys.modules.get("torch")
    return getattr(torch, "__version__", "not loaded")


def finish_demo(
    out: str | os.PathLike,
    *,
    package: str,
    module_file: str,
    cfg: Any,
    experiment: str,
    claim: str,
    headline: str,
    judged: dict[str, Any],
    metrics: dict[str, Any],
    seconds: float,
    device: str,
    config: dict[str, Any] | None = None,
    seed: int | None = None,
    data: dict[str, str | os.PathLike] | None = None,
    fingerprints: dict[str, str] | None = None,
    parts: list[dict[str, Any]] | None = None,
    measurements: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Assemble a demo's results (``assemble_results``), write ``out/results.json`` atomically
    and return the results.

    ``package`` is the distribution (``icml26-td``), ``module_file`` the demo's ``__file__``
    (its version and the commit that ran), ``cfg`` the demo config (``quick``, ``seed``; its
    fields and command become ``config`` unless ``config`` is given, from ``demo_config``;
    its ``seed`` is the run's unless ``seed`` is given).
    ``data`` names the data files read (fingerprinted here), ``fingerprints`` adds data already
    fingerprinted (``{name: "sha256:..."}``), ``measurements`` holds what the verdict reads.
    """
    record = provenance(module_file, data=data, parts=parts)
    record["data"].update(fingerprints or {})
    results = assemble_results(
        package=package,
        version=package_version(package, module_file),
        experiment=experiment,
        claim=claim,
        headline=headline,
        judged=judged,
        metrics=metrics,
        quick=bool(cfg.quick),
        seconds=seconds,
        config=config if config is not None else demo_config(package, cfg),
        seed=cfg.seed if seed is None else seed,
        device=device,
        torch_version=torch_version(),
        provenance=record,
        measurements=measurements,
    )
    write_results(Path(out) / "results.json", results)
    return results


def print_verdicts(results: dict[str, Any], out: str | os.PathLike | None = None) -> None:
    """The closing lines every demo prints: each claim's verdict and evidence, each control with
    whether it passed, then the package verdict with its counts and the run's time and folder."""
    for c in results["claims"]:
        print(f"[{c['verdict']}] {c['claim']}\n    {c['evidence']}")
    for c in results.get("controls", []):
        status = "passed" if c["passed"] else "FAILED"
        print(f"  {c['kind']} control {status}: {c['name']} ({c['evidence']})")
    counts = ", ".join(f"{n} {v}" for v, n in results.get("counts", {}).items() if n)
    where = f"  -> {Path(out) / 'results.json'}" if out is not None else ""
    print(f"verdict: {results['verdict']}  [{counts}]  ({results['seconds']:.1f} s){where}")
