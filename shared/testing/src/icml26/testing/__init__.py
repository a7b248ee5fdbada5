"""icml26.testing: what every icml26 package shares, in two parts.

The light runtime part (stdlib only; method packages depend on it): the results contract
(``icml26.testing.results``, with the paired intervals verdicts read), argument checks that name
the one bad field (``checks``: ``integer``, ``number``), a demo's result assembly
and printing (``report``), the CLI dispatch and the options every demo shares (``command``),
atomic file writes (``files``) and bench timing (``timing``).

The test part (the ``pytest`` extra: pytest and torch): a pytest plugin (a package opts in
with ``pytest_plugins = ["icml26.testing.plugin"]`` in its tests' conftest) that gives the
session an autouse seeding fixture, a ``device`` parametrization (cpu, and cuda when present)
and the markers ``slow`` (skipped unless ``--runslow``), ``gpu`` (skipped without CUDA) and
``distributed``; and helpers tests import (``assert_close``, ``assert_unbiased``, ``run_cli``,
``run_distributed``, ...).

Names are loaded on first use, so importing the runtime part never imports torch or pytest.
"""

import importlib

_HOMES = {
    "assert_close": "asserts",
    "assert_rejects": "asserts",
    "integer": "checks",
    "number": "checks",
    "check_gradients": "asserts",
    "run_cli": "cli",
    "DemoOptions": "command",
    "DeviceOption": "command",
    "dispatch": "command",
    "run_distributed": "distributed",
    "atomic_write": "files",
    "atomic_write_text": "files",
    "save_figure": "files",
    "run_readme_snippets": "readme",
    "demo_config": "report",
    "finish_demo": "report",
    "jsonable": "report",
    "print_verdicts": "report",
    "run_folder": "report",
    "torch_version": "report",
    "CLAIM_VERDICTS": "results",
    "CONTROL_KINDS": "results",
    "RESULTS_SCHEMA": "results",
    "VERDICTS": "results",
    "apply_controls": "results",
    "as_smoke": "results",
    "assemble_results": "results",
    "claim_row": "results",
    "compare": "results",
    "control": "results",
    "count_verdicts": "results",
    "demo_command": "results",
    "file_sha256": "results",
    "format_counts": "results",
    "judge": "results",
    "load_results": "results",
    "package_verdict": "results",
    "paired_interval": "results",
    "package_version": "results",
    "provenance": "results",
    "resolve_device": "results",
    "source_commit": "results",
    "summarise": "results",
    "t_quantile": "results",
    "validate_results": "results",
    "write_results": "results",
    "seed_everything": "seeding",
    "assert_unbiased": "stats",
    "assert_variance_order": "stats",
    "best_time": "timing",
    "median_time": "timing",
    "synchronize": "timing",
    "torch_threads": "timing",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'icml26.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"icml26.testing.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
