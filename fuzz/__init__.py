"""Coverage-guided fuzzing (atheris) of driver validation. Filled in by issue 4."""
