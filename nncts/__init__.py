"""nncts: conformance and stress tests for NNAPI drivers (command-line entry point)."""
__version__ = "0.1.0"
