"""icml26.testing: the checks every icml26 package's tests share.

Installed as a pytest plugin (entry point ``pytest11``), it gives every test session:
an autouse seeding fixture, a ``device`` parametrization (cpu, and cuda when present),
the markers ``slow`` (skipped unless ``--runslow``), ``gpu`` (skipped without CUDA) and
``distributed``. The helpers below are imported explicitly by tests. ``icml26.testing.results``
defines the results.json contract every demo writes (method packages carry a verbatim copy).
"""

from icml26.testing.asserts import assert_close, check_gradients
from icml26.testing.cli import run_cli
from icml26.testing.distributed import run_distributed
from icml26.testing.readme import run_readme_snippets
from icml26.testing.results import (
    CLAIM_VERDICTS,
    CONTROL_KINDS,
    RESULTS_SCHEMA,
    VERDICTS,
    apply_controls,
    as_smoke,
    assemble_results,
    claim_row,
    compare,
    control,
    count_verdicts,
    demo_command,
    file_sha256,
    format_counts,
    judge,
    load_results,
    package_verdict,
    package_version,
    provenance,
    resolve_device,
    source_commit,
    summarise,
    validate_results,
    write_results,
)
from icml26.testing.seeding import seed_everything
from icml26.testing.stats import assert_unbiased, assert_variance_order

__all__ = [
    "CLAIM_VERDICTS",
    "CONTROL_KINDS",
    "RESULTS_SCHEMA",
    "VERDICTS",
    "apply_controls",
    "as_smoke",
    "assemble_results",
    "assert_close",
    "assert_unbiased",
    "assert_variance_order",
    "check_gradients",
    "claim_row",
    "compare",
    "control",
    "count_verdicts",
    "demo_command",
    "file_sha256",
    "format_counts",
    "judge",
    "load_results",
    "package_verdict",
    "package_version",
    "provenance",
    "resolve_device",
    "run_cli",
    "run_distributed",
    "run_readme_snippets",
    "seed_everything",
    "source_commit",
    "summarise",
    "validate_results",
    "write_results",
]
