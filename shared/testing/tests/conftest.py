# the toolkit's pytest plugin (seeding, `device` parametrization, slow/gpu/distributed markers),
# and pytester for the tests that run the plugin in a fresh pytest session
pytest_plugins = ["icml26.testing.plugin", "pytester"]
