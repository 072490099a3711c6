"""(being written) pytest plugin part of nncts.pytest_plugin."""
