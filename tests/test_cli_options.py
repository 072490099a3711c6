"""One source of options: ``nncts cts|vts|random-graph --help`` lists every option the suite
takes, read from the plugins' own ``pytest_addoption``; given options reach pytest unchanged;
every core by default; missing extras are one line and exit 2; ``nncts --version``."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from harness.plugin import declared_options
from harness.suites import suite
from nncts.cli import build_parser, plugin_option_args, worker_args
from tests.cts_run import ROOT

#: The options the issue found missing from ``nncts cts --help``, and the others by hand.
EXPECTED = {
    "cts": ["--mode", "--shard", "--baseline", "--profile", "--retries", "--wait-limit", "--no-require-timing",
            "--driver", "--driver-process", "--driver-endpoint", "--driver-timeout", "--corpus", "--specs",
            "--report-dir", "--resume", "--timeout"],
    "vts": ["--vts-kind", "--vts-max-mutants", "--shard", "--baseline", "--profile", "--retries", "--wait-limit",
            "--corpus", "--report-dir", "--resume"],
    "random-graph": ["--seeds", "--first-seed", "--config", "--graph-dump", "--no-minimize", "--shard",
                     "--baseline", "--profile", "--retries", "--wait-limit", "--report-dir", "--resume"],
}


def _nncts(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nncts.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=env)


def _help(command: str) -> str:
    proc = _nncts(command, "--help")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("command", sorted(EXPECTED))
def test_help_lists_every_option_the_suite_takes(command):
    text = _help(command)
    listed = set(re.findall(r"^\s+(--[a-z0-9-]+)", text, re.M))
    assert set(EXPECTED[command]) <= listed, sorted(set(EXPECTED[command]) - listed)
    declared = {n for names, _ in declared_options(suite(command).plugins) for n in names if n.startswith("--")}
    internal = {n for n in declared if n.startswith("--nncts-")}
    unused = {"--corpus", "--specs"} if command == "random-graph" else set()
    assert declared - internal - unused <= listed, sorted(declared - internal - unused - listed)
    assert not listed & internal
    assert "-n auto" in text


def test_given_options_reach_pytest_as_given_and_the_rest_passes_through():
    argv = ["cts", "--mode", "sync", "--mode", "async,burst", "--retries", "2", "--no-require-timing",
            "--wait-limit", "5", "--shard", "1/3", "-k", "add", "-n", "0", "--co"]
    args, extra = build_parser({"cts"}).parse_known_args(argv)
    assert plugin_option_args(args) == ["--wait-limit", "5.0", "--retries", "2", "--shard", "1/3",
                                        "--mode", "sync", "--mode", "async,burst", "--no-require-timing"]
    assert extra == ["-k", "add", "-n", "0", "--co"]  # --co is pytest's, not an abbreviation of --corpus
    args, _ = build_parser({"cts"}).parse_known_args(["cts"])
    assert plugin_option_args(args) == []  # defaults stay the plugins' own


@pytest.mark.parametrize("extra,expected", [
    ([], ["-n", "auto"]), (["-k", "add"], ["-n", "auto"]), (["-n", "1"], []), (["-n0"], []),
    (["--numprocesses=3"], []), (["-p", "no:xdist"], []), (["--pdb"], []),
    (["--dist", "load", "--tx", "socket=127.0.0.1:9"], []), (["--dist", "load"], ["-n", "auto"]), (["-p", "xdist"], ["-n", "auto"]),
])
def test_every_core_unless_told(extra, expected):
    assert worker_args(extra) == expected


def test_version_names_the_release_and_the_commit():
    proc = _nncts("--version")
    assert proc.returncode == 0 and proc.stderr == ""
    pattern = r"nncts \d+\.\d+\.\d+(, commit [0-9a-f]{40}( \(modified\))?)?\n"
    assert re.fullmatch(pattern, proc.stdout), proc.stdout
    assert (", commit " in proc.stdout) == (ROOT / ".git").exists()


def _without(tmp_path, module: str) -> dict:
    """An environment in which ``import module`` fails (a sitecustomize hiding it), as
    when its extra is not installed."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(f"import sys\nsys.modules[{module!r}] = None\n")
    import os
    return {**os.environ, "PYTHONPATH": str(site)}


@pytest.mark.parametrize("module,args,expected", [
    ("onnxruntime", ["--driver", "onnxruntime"], "nncts[engine]"),
    ("grpc", ["--driver-process"], "nncts[remote]"),
])
def test_a_missing_extra_is_one_line_naming_it_before_any_test(tmp_path, module, args, expected):
    report = tmp_path / "report"
    proc = _nncts("cts", *args, "--corpus", str(ROOT / "cts" / "corpus" / "V1_0"), "-k", "add_quant8",
                  "--report-dir", str(report), "-n", "0", env=_without(tmp_path, module))
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("nncts cts: error: --driver") and expected in lines[0], lines
    assert not report.exists()


def test_specs_check_says_what_it_checked():
    proc = _nncts("specs", "check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.fullmatch(r"checked \d+ built spec files in cts/specs/built/SPECS against a fresh build: all current\n",
                        proc.stdout), proc.stdout
