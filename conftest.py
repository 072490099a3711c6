"""Root conftest: load the CTS plugin (options --driver, --corpus, --nncts-report)."""
pytest_plugins = ["cts.plugin"]
