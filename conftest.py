"""Root conftest: load the suites' pytest plugins (options --driver, --corpus, --mode, ...)."""
pytest_plugins = ["nncts.pytest_plugin", "cts.plugin", "vts.plugin", "random_graph.plugin"]
