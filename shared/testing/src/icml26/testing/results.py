"""The results.json contract every icml26 demo writes: schema, validator, verdict summary, writer.

This module is the one definition of the contract. It uses the standard library only and is part
of the toolkit's light runtime part, which every method package depends on (the pytest plugin and
the torch-based checks stay behind the ``pytest`` extra).

A results file holds one row per claim of the paper (``claims``: claim, verdict, evidence and the
names of the ``controls`` the row rests on), the controls themselves (``controls``: positive
controls show the competence a claim presupposes, null controls the value a rule could mistake for
an effect), the rows' ``counts`` and a package ``verdict`` that summarises them (``summarise``).
A row that rests on a failed control is "untestable here" with ``control failed: <name>`` in its
evidence: ``judge`` applies this and ``validate_results`` refuses a file that does not, so no
verdict function can bypass it. ``provenance`` records the code's commit, each data file's sha256
and, for a file assembled from several runs, each part's command. ``--quick`` runs are smoke
tests: ``quick`` is true and every verdict is ``"smoke"``. Files are strict JSON: no NaN or
Infinity anywhere (write ``null`` for a number that could not be measured).

``resolve_device`` turns a ``--device`` flag (``auto``, ``cpu``, ``cuda``, ``cuda:1``, ``mps``)
into the device a demo runs on, so every package's CLI reads the flag the same way and the
``device`` it records is the one that ran.
"""

import dataclasses
import hashlib
import json
import math
import os
import re
import shlex
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

# The order is the order of every count: "3 reproduced · 1 partly · 4 not reproduced · ..."
CLAIM_VERDICTS = ("reproduced", "partly", "not reproduced", "inconclusive", "untestable here")
VERDICTS = (*CLAIM_VERDICTS, "smoke")
CONTROL_KINDS = ("positive", "null")
CONTROL_FIELDS = ("name", "kind", "passed", "evidence")

# field -> (accepted types, description)
RESULTS_SCHEMA: dict[str, tuple[tuple[type, ...], str]] = {
    "package": ((str,), "distribution name, e.g. icml26-lucid"),
    "version": ((str,), "the package version that produced the file"),
    "experiment": ((str,), "what was run, in a few words"),
    "claim": ((str,), "the paper's headline claim, in one line"),
    "headline": ((str,), "one line a reader of the root table understands"),
    "claims": ((list,), "one row per claim: {'claim', 'verdict', 'evidence', 'controls'}"),
    "controls": ((list,), "{'name', 'kind': positive|null, 'passed', 'evidence'} per control"),
    "counts": ((dict,), "how many rows carry each verdict, in CLAIM_VERDICTS order"),
    "provenance": ((dict,), "{'commit', 'data': {file: 'sha256:...'}, 'parts': [{'command'}]}"),
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
SHA256 = re.compile(r"sha256:[0-9a-f]{64}")
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
    """The package's one-word verdict of its claims' rows; the ``counts`` beside it say more.

    Rows that cannot be tested here are left out (a GPU speed claim on a CPU is not a failure)
    but never make a package "reproduced" on their own: with no testable row the package is
    "untestable here". Otherwise: every testable row reproduced -> "reproduced"; some reproduced
    -> "partly"; none reproduced and every testable row not reproduced -> "not reproduced"; none
    reproduced otherwise (ties, partial or straddling rows) -> "inconclusive". So a package is
    never "partly" with nothing reproduced.
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
    if "reproduced" in testable:
        return "partly"
    if all(v == "not reproduced" for v in testable):
        return "not reproduced"
    return "inconclusive"


def package_verdict(claims: list[dict[str, Any]]) -> str:
    """The package's one word for its judged rows: ``summarise`` of their verdicts, except that
    a package is never "reproduced" while some row is untestable because a control failed (the
    setting could not test that claim, which is not the same as a GPU row on a CPU): then it is
    "partly"."""
    summary = summarise([c["verdict"] for c in claims])
    blocked = any(str(c.get("evidence", "")).startswith("control failed: ") for c in claims)
    return "partly" if summary == "reproduced" and blocked else summary


def count_verdicts(verdicts: list[str]) -> dict[str, int]:
    """How many rows carry each verdict: every claim verdict in ``CLAIM_VERDICTS`` order (zeros
    included), then ``smoke`` where a quick run's rows are smoke."""
    unknown = [v for v in verdicts if v not in VERDICTS]
    if unknown:
        raise ValueError(f"count_verdicts: {unknown} are not verdicts {VERDICTS}")
    counts = {v: verdicts.count(v) for v in CLAIM_VERDICTS}
    if "smoke" in verdicts:
        counts["smoke"] = verdicts.count("smoke")
    return counts


def format_counts(counts: dict[str, int]) -> str:
    """``"3 reproduced · 1 partly · 2 inconclusive"``: the non-zero counts in the fixed order."""
    parts = [f"{counts[v]} {v}" for v in VERDICTS if counts.get(v)]
    return " · ".join(parts) if parts else "no rows"


def control(name: str, kind: str, passed: bool, evidence: str) -> dict[str, Any]:
    """One entry of ``controls``.

    ``kind`` is "positive" (the setting shows the competence a claim presupposes: a trained model
    beats its untrained architecture, RL improves its starting policy) or "null" (a random
    encoder, direction, label or routing stays below what a rule would call an effect).
    ``evidence`` gives the numbers either way.
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"control name must be a non-empty string, got {name!r}")
    if kind not in CONTROL_KINDS:
        raise ValueError(f"control {name!r}: kind {kind!r} is not one of {CONTROL_KINDS}")
    if not isinstance(passed, bool):
        raise TypeError(f"control {name!r}: passed must be a bool, got {type(passed).__name__}")
    if not isinstance(evidence, str) or not evidence.strip():
        raise ValueError(f"control {name!r}: give the numbers as evidence")
    return {"name": name, "kind": kind, "passed": passed, "evidence": evidence}


def claim_row(
    claim: str, verdict: str, evidence: str, controls: list[str] | tuple[str, ...] = ()
) -> dict[str, Any]:
    """One row of ``claims``: the verdict (one of ``CLAIM_VERDICTS``) and the names of the
    controls it rests on (``judge`` turns it "untestable here" when one of them failed)."""
    if verdict not in CLAIM_VERDICTS:
        raise ValueError(f"claim {claim!r}: verdict {verdict!r} is not one of {CLAIM_VERDICTS}")
    names = list(controls)
    if any(not isinstance(n, str) or not n.strip() for n in names):
        raise ValueError(f"claim {claim!r}: controls must be control names, got {names!r}")
    return {"claim": claim, "verdict": verdict, "evidence": evidence, "controls": names}


def failed_control_note(entry: dict[str, Any]) -> str:
    return f"control failed: {entry['name']} ({entry['evidence']})"


def apply_controls(
    claims: list[dict[str, Any]], controls: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The rows with every row that rests on a failed control made "untestable here", its
    evidence led by ``control failed: <name> (<numbers>)``. A row naming a control that is not
    in ``controls`` is an error: a row cannot rest on a check that was not run."""
    by_name = {c["name"]: c for c in controls}
    if len(by_name) != len(controls):
        raise ValueError(f"control names must be unique: {[c['name'] for c in controls]}")
    out = []
    for row in claims:
        names = list(row.get("controls", []))
        missing = [n for n in names if n not in by_name]
        if missing:
            raise ValueError(
                f"claim {row['claim']!r} rests on controls that were not run: {missing}"
            )
        failed = [by_name[n] for n in names if not by_name[n]["passed"]]
        if failed:
            notes = "; ".join(failed_control_note(c) for c in failed)
            row = {**row, "verdict": "untestable here", "evidence": f"{notes}. {row['evidence']}"}
        out.append({**row, "controls": names})
    return out


def judge(claims: list[dict[str, Any]], controls: list[dict[str, Any]], *, quick: bool = False):
    """``{"claims", "controls", "counts", "verdict"}`` for a results file: controls applied to the
    rows, the rows counted and summarised; a quick run's rows and verdict read "smoke"."""
    claims = apply_controls(claims, controls)
    if quick:
        claims = [{**c, "verdict": "smoke"} for c in claims]
        summary = "smoke"
    else:
        summary = package_verdict(claims)
    counts = count_verdicts([c["verdict"] for c in claims])
    return {"claims": claims, "controls": list(controls), "counts": counts, "verdict": summary}


def compare(low: float | None, high: float | None, margin: float = 0.0) -> str:
    """The verdict of "the method is ahead by more than ``margin``" from a confidence interval
    of the difference (method minus baseline, oriented so that larger is better): reproduced
    when the whole interval clears the margin, not reproduced when the whole interval falls short
    of it, inconclusive when the interval straddles it (with ``margin`` 0, a tie).

    ``margin`` is the rule's smallest effect worth the name, at least the noise floor measured in
    the same run. A missing interval (``None``: one seed, or an arm that did not run) gives no
    verdict: "untestable here".
    """
    if margin < 0:
        raise ValueError(f"compare: margin must be >= 0, got {margin}")
    if low is None or high is None:
        return "untestable here"
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        raise ValueError(f"compare: [{low}, {high}] is not an interval")
    if low > margin:
        return "reproduced"
    if high < margin:
        return "not reproduced"
    return "inconclusive"


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (stdlib only).

    Exact closed forms for 1 and 2 degrees of freedom; otherwise the Cornish-Fisher start of
    Abramowitz & Stegun 26.7.5 polished by Newton steps on the t CDF (Simpson's rule over the
    density), good to about 1e-9 for every ``df``.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"t_quantile: p must be in (0, 1), got {p}")
    if isinstance(df, bool) or not isinstance(df, int) or df < 1:
        raise ValueError(f"t_quantile: df must be a positive integer, got {df!r}")
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    x = statistics.NormalDist().inv_cdf(p)
    g = (
        (x**3 + x) / 4,
        (5 * x**5 + 16 * x**3 + 3 * x) / 96,
        (3 * x**7 + 19 * x**5 + 17 * x**3 - 15 * x) / 384,
        (79 * x**9 + 776 * x**7 + 1482 * x**5 - 1920 * x**3 - 945 * x) / 92160,
    )
    t = x + sum(gi / df ** (i + 1) for i, gi in enumerate(g))
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)

    def density(u: float) -> float:
        return math.exp(log_norm - (df + 1) / 2 * math.log1p(u * u / df))

    for _ in range(3):  # Newton on F(t) = 1/2 + integral_0^t density
        n = 400
        h = t / n
        area = density(0.0) + density(t)
        area += sum((4 if i % 2 else 2) * density(i * h) for i in range(1, n))
        t -= (0.5 + area * h / 3 - p) / density(t)
    return t


def paired_interval(diffs) -> tuple[float, float | None, float | None]:
    """Mean of paired differences (one per seed) and its two-sided 95% Student-t interval;
    ``(mean, None, None)`` for a single difference, which ``compare`` reads as untestable."""
    d = [float(v) for v in diffs]
    if not d:
        raise ValueError("paired_interval: no differences to summarise")
    mean = statistics.fmean(d)
    if len(d) < 2:
        return mean, None, None
    half = t_quantile(0.975, len(d) - 1) * statistics.stdev(d) / math.sqrt(len(d))
    return mean, mean - half, mean + half


def as_smoke(claims: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """The rows of a --quick run: same claims and evidence, every verdict "smoke"."""
    return [{**c, "verdict": "smoke"} for c in claims], "smoke"


# --- provenance -----------------------------------------------------------------------------


def file_sha256(path: str | os.PathLike) -> str:
    """``sha256:<hex>`` of a file's bytes, for ``provenance["data"]``."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


def source_commit(module_file: str | os.PathLike | None) -> str:
    """The git commit of the checkout ``module_file`` lives in when this is called (a demo calls
    it as it writes its results), ``+dirty`` when the package's folder differs from that commit;
    ``"unknown"`` outside a git checkout (an installed wheel). Without ``+dirty`` the commit holds
    exactly the package code that ran, even if other folders moved on during the run."""
    if module_file is None:
        return "unknown"
    folder = Path(module_file).resolve().parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=folder, capture_output=True, text=True, timeout=20
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if not commit:
        return "unknown"
    package = next(
        (p for p in [folder, *folder.parents] if (p / "pyproject.toml").is_file()), folder
    )
    dirty = git("status", "--porcelain", "--", str(package))
    return commit + ("+dirty" if dirty else "")


def provenance(
    module_file: str | os.PathLike | None = None,
    data: dict[str, str | os.PathLike] | None = None,
    parts: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """``provenance`` for a results file: the code's commit (``source_commit(module_file)``),
    ``data`` as ``{name: path}`` fingerprinted by sha256 (data a demo generates needs no entry),
    and ``parts``: for a file assembled from several runs or resumed, each part's ``command``."""
    fingerprints = {str(name): file_sha256(path) for name, path in (data or {}).items()}
    return {"commit": source_commit(module_file), "data": fingerprints, "parts": list(parts or [])}


def assemble_results(
    *,
    package: str,
    version: str,
    experiment: str,
    claim: str,
    headline: str,
    judged: dict[str, Any],
    metrics: dict[str, Any],
    quick: bool,
    seconds: float,
    config: dict[str, Any],
    seed: int,
    device: str,
    torch_version: str,
    provenance: dict[str, Any],
    measurements: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A results.json as a dict, in the contract's field order, from the parts a demo has.

    ``judged`` is ``judge(claims, controls)`` (rows, controls, counts, verdict); a quick run's
    rows are turned to smoke here. ``measurements`` (the numbers the verdict reads) follow the
    contract's fields, so the rows can be recomputed from the file.
    """
    if quick and judged["verdict"] != "smoke":  # the rows as judged, their verdicts hidden
        claims, summary = as_smoke(judged["claims"])
        counts = count_verdicts([c["verdict"] for c in claims])
        judged = {**judged, "claims": claims, "verdict": summary, "counts": counts}
    results = {
        "package": package,
        "version": version,
        "experiment": experiment,
        "claim": claim,
        "headline": headline,
        "controls": judged["controls"],
        "claims": judged["claims"],
        "counts": judged["counts"],
        "verdict": judged["verdict"],
        "metrics": metrics,
        "quick": quick,
        "seconds": round(float(seconds), 2),
        "config": config,
        "seed": seed,
        "device": device,
        "torch": torch_version,
        "provenance": provenance,
    }
    clash = set(measurements or {}) & set(results)
    if clash:
        raise ValueError(f"assemble_results: measurements may not overwrite {sorted(clash)}")
    return {**results, **(measurements or {})}


def demo_command(program: str, cfg: Any, *, subcommand: str = "demo", skip=("out",)) -> str:
    """The command line that reruns the dataclass config ``cfg``, for ``config["command"]``.

    The program and subcommand, then a tyro-style flag (``--field-name value``) for every field
    that differs from its default, except those in ``skip`` (the output folder); ``--quick``
    first, where it is set, so a smoke run reads as one at a glance, and ``--device`` last.
    """
    if not dataclasses.is_dataclass(cfg):
        raise TypeError(f"demo_command: cfg must be a dataclass instance, got {type(cfg).__name__}")
    parts = [program, subcommand]
    order = {"quick": 0, "device": 2}
    for f in sorted(dataclasses.fields(cfg), key=lambda f: order.get(f.name, 1)):
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
            problems.append(f"claims[{i}] must be an object with {(*CLAIM_FIELDS, 'controls')}")
            continue
        for f in CLAIM_FIELDS:
            if not isinstance(row.get(f), str) or not row[f].strip():
                problems.append(f"claims[{i}][{f!r}] must be a non-empty string")
        names = row.get("controls")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            problems.append(
                f"claims[{i}]['controls'] must be a list of control names ([] for none)"
            )
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
        expected = package_verdict(claims)
        if verdict != expected:
            problems.append(
                f"verdict {verdict!r} does not summarise the claims' rows (expected {expected!r})"
            )
    counts = results.get("counts")
    if isinstance(counts, dict) and not problems:
        expected_counts = count_verdicts([row["verdict"] for row in claims])
        if counts != expected_counts:
            problems.append(f"counts {counts} do not count the claims' rows ({expected_counts})")
    return problems


def _controls_problems(results: dict[str, Any]) -> list[str]:
    """Controls well formed, every named control run, every row on a failed one untestable."""
    controls, claims = results.get("controls"), results.get("claims")
    if not isinstance(controls, list):
        return []
    problems, by_name = [], {}
    for i, c in enumerate(controls):
        if not isinstance(c, dict) or not set(CONTROL_FIELDS) <= set(c):
            problems.append(f"controls[{i}] must be an object with {CONTROL_FIELDS}")
            continue
        if not isinstance(c["name"], str) or not c["name"].strip():
            problems.append(f"controls[{i}]['name'] must be a non-empty string")
        elif c["name"] in by_name:
            problems.append(f"controls[{i}]: the name {c['name']!r} is used twice")
        if c["kind"] not in CONTROL_KINDS:
            problems.append(f"controls[{i}]['kind'] {c['kind']!r} is not one of {CONTROL_KINDS}")
        if not isinstance(c["passed"], bool):
            problems.append(f"controls[{i}]['passed'] must be true or false")
        if not isinstance(c["evidence"], str) or not c["evidence"].strip():
            problems.append(f"controls[{i}]['evidence'] must give the numbers")
        if isinstance(c["name"], str):
            by_name[c["name"]] = c
    if problems or not isinstance(claims, list):
        return problems
    for i, row in enumerate(claims):
        if not isinstance(row, dict) or not isinstance(row.get("controls"), list):
            continue
        for name in row["controls"]:
            if not isinstance(name, str):
                continue  # reported by the claims check
            if name not in by_name:
                problems.append(f"claims[{i}] rests on control {name!r}, which is not in controls")
            elif by_name[name]["passed"] is False and row.get("verdict") not in (
                "untestable here",
                "smoke",
            ):
                problems.append(
                    f"claims[{i}] rests on the failed control {name!r} but reads "
                    f"{row.get('verdict')!r}: it is 'untestable here' (use judge())"
                )
            elif by_name[name]["passed"] is False and (
                f"control failed: {name}" not in str(row.get("evidence", ""))
            ):
                problems.append(f"claims[{i}] evidence must say 'control failed: {name}'")
        failed = {n for n in row["controls"] if isinstance(n, str) and n in by_name
                  and by_name[n]["passed"] is False}  # fmt: skip
        evidence = str(row.get("evidence", ""))
        wrong = [n for n in by_name if f"control failed: {n} (" in evidence and n not in failed]
        if wrong:
            problems.append(
                f"claims[{i}] says control {wrong[0]!r} failed, but it passed or the row does "
                "not rest on it"
            )
    return problems


def _provenance_problems(results: dict[str, Any]) -> list[str]:
    prov = results.get("provenance")
    if not isinstance(prov, dict):
        return []
    problems = []
    if not isinstance(prov.get("commit"), str) or not prov["commit"].strip():
        problems.append("provenance['commit'] must name the code's commit ('unknown' if none)")
    data = prov.get("data")
    if not isinstance(data, dict):
        problems.append("provenance['data'] must map each data file read to 'sha256:<hex>'")
    else:
        problems += [
            f"provenance['data'][{k!r}] = {v!r} is not 'sha256:<64 hex digits>'"
            for k, v in data.items()
            if not isinstance(v, str) or not SHA256.fullmatch(v)
        ]
    parts = prov.get("parts")
    if not isinstance(parts, list) or not all(
        isinstance(p, dict) and isinstance(p.get("command"), str) and p["command"].strip()
        for p in parts
    ):
        problems.append("provenance['parts'] must be a list of {'command': ...} ([] for one run)")
    config = results.get("config")
    if results.get("quick") is False and isinstance(config, dict):
        command = config.get("command")
        if not isinstance(command, str) or not command.strip():
            problems.append("config['command'] must be the one command that regenerates the file")
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
    summary of the claims' rows, counts that do not count them, a row resting on a control that
    was not run or that failed (then the row must be "untestable here" and say so), provenance
    without a commit, sha256 fingerprints or parts, a full run without its command, a quick run
    whose verdicts are not "smoke", metrics without
    ``method`` and ``baseline`` entries or with non-numbers, and NaN / Infinity anywhere.
    """
    if not isinstance(results, dict):
        results = load_results(results)
    problems = _schema_problems(results)
    if isinstance(results.get("verdict"), str) and results["verdict"] not in VERDICTS:
        problems.append(f"verdict {results['verdict']!r} is not one of {VERDICTS}")
    problems += _claims_problems(results)
    problems += _controls_problems(results)
    problems += _provenance_problems(results)
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
