"""Public names of each method package that its tests/test_bad_inputs.py does not name yet.

``tests/test_bad_inputs_coverage.py`` checks every public name (``__all__``, constants aside)
against its package's bad-input tests: a name must be called there with bad input, or listed there
with the reason it has none worth testing. This table holds the names not reached yet; the test
fails when a name leaves it without being removed, or a new public name arrives without a test,
so the table only shrinks."""

UNTESTED: dict[str, set[str]] = {}
