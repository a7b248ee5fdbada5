"""Shared test setup."""

# the toolkit's pytest plugin: seeding, `device` parametrization, slow/gpu/distributed markers
pytest_plugins = ["icml26.testing.plugin"]
