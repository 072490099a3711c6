"""Run the CTS (or the nncts CLI) in a subprocess and read its outcome records."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harness.records import read_records

ROOT = Path(__file__).resolve().parents[1]


def run_cts(tmp_path: Path, *args: str) -> tuple[int, dict, str]:
    """``pytest cts/test_generated.py ARGS`` (base mode only unless ARGS has --mode) with
    records in ``tmp_path``; returns (exit code, {test id: record}, output)."""
    report = tmp_path / "report"
    if "--mode" not in args:
        args = (*args, "--mode", "sync")  # one item per model unless a test asks for modes
    proc = subprocess.run([sys.executable, "-m", "pytest", "cts/test_generated.py", "-q",
                           "-p", "no:cacheprovider", "--nncts-report", str(report), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    records = {r["id"]: r for r in read_records(report / "outcomes.jsonl")} \
        if (report / "outcomes.jsonl").exists() else {}
    return proc.returncode, records, proc.stdout + proc.stderr
