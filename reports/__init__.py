"""Outcome records (JSON lines) and the reports rendered from them (summary, JUnit via
pytest, HTML)."""
