"""A certification that explains itself: the verdict on the bundle's page (every suite, fuzz
included, with the reason and the failing clusters of one that failed, relative links to each
suite's own page), a quick run labelled as such (page, ``verdict.json``, ``nncts verify``),
``nncts diff`` naming a verdict change, and the fuzzer and ``nncts certify`` in an interpreter
without the ``remote`` extra (no ``google.protobuf``, no ``grpc``).

The quick certifications of the sample driver and of ``tests.broken_drivers:OffByTwoQuantaAdd``
(quantized ADD two quanta high; the MLTS left out) are :mod:`tests.test_certify`'s fixtures, made
once per session.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from harness.records import read_records
from nncts.cli import main
from reports import diff as run_diff
from tests.browser import needs_chromium, rendered_dom
from tests.test_certify import ROOT, broken, certified  # noqa: F401 - the session's bundles

#: The modules of the remote extra (grpcio, protobuf) and of the engine extra: not in the core install.
EXTRA_MODULES = ("google", "grpc", "onnx", "onnxruntime")


class _Section(HTMLParser):
    """The text and the link targets inside the element with id ``verdict`` of a page."""

    def __init__(self, element_id: str):
        super().__init__()
        self.element_id, self.depth, self.text, self.hrefs = element_id, 0, [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if self.depth or attrs.get("id") == self.element_id:
            self.depth += 1
            if tag == "a" and attrs.get("href"):
                self.hrefs.append(attrs["href"])

    def handle_endtag(self, tag):
        if self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.text.append(data)


def _section(html: str, element_id: str = "verdict") -> tuple[str, list[str]]:
    parser = _Section(element_id)
    parser.feed(html)
    return " ".join(" ".join(parser.text).split()), parser.hrefs


def _failing_cts(bundle: Path) -> list[dict]:
    return [r for r in read_records(bundle / "results" / "cts" / "outcomes.jsonl") if r["outcome"] == "failed"]


def test_a_quick_run_is_labelled_and_never_certified(broken, capsys):
    bundle, proc = broken
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "certify: verdict: NOT CERTIFIED (QUICK RUN)" in proc.stdout
    doc = json.loads((bundle / "verdict.json").read_text())
    assert (doc["verdict"], doc["certified"], doc["passed"], doc["scope"]) == \
        ("not certified (quick run)", False, False, "quick")
    assert doc["reasons"][0].startswith("quick run: --quick ran a CI-sized selection")
    assert "partial run: mlts left out with --skip" in doc["reasons"]
    assert any(r.startswith("cts: failed: ") for r in doc["reasons"])
    code = main(["verify", str(bundle)])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and lines[0].endswith("verdict not certified (quick run)")
    assert lines[1].startswith("  quick run: ") and any(line.startswith("  cts: failed: ") for line in lines)


def test_the_sample_drivers_quick_run_passes_but_is_not_certified(certified):
    bundle, proc, _ = certified
    doc = json.loads((bundle / "verdict.json").read_text())
    assert (doc["verdict"], doc["certified"], doc["passed"], doc["scope"]) == \
        ("not certified (quick run)", False, True, "quick")
    assert proc.returncode == 0 and "every suite passed its quick selection (exit 0)" in proc.stdout


@needs_chromium
def test_the_page_of_a_not_certified_bundle_says_why(broken, tmp_path):
    bundle, _ = broken
    page = bundle / "report" / "index.html"
    text, hrefs = _section(rendered_dom(tmp_path, page))
    assert text.startswith("Verdict: not certified (quick run)")
    assert "Why it is not certified:" in text and "cts: failed: " in text
    for title in ("nncts CTS", "nncts VTS", "nncts random graphs", "nncts fuzzing", "nncts MLTS"):
        assert title in text
    assert "nncts MLTS not run" in text and "left out with --skip" in text    # its verdict, then why
    # the CTS failures in clusters: the quantized ADD's
    failing = _failing_cts(bundle)
    assert failing and f"{len(failing)} failing test(s) in " in text
    assert "ADD TENSOR_QUANT8_ASYMM sync Failed: " in text
    # fuzz: its verdict and libFuzzer's numbers
    doc = json.loads((bundle / "verdict.json").read_text())
    fuzz = next(s for s in doc["suites"] if s["suite"] == "fuzz")
    assert fuzz["counts"]["executions"] > 0
    assert f"{fuzz['counts']['findings']} finding(s), {fuzz['counts']['executions']:,} executions" in text
    # every link resolves to a file of the bundle; each suite that ran links its page
    targets = {(page.parent / unquote(h)).resolve() for h in hrefs}
    assert all(t.is_file() and t.is_relative_to(bundle.resolve()) for t in targets), targets
    for suite, name in (("cts", "index.html"), ("vts", "index.html"), ("random-graph", "index.html"),
                        ("fuzz", "index.html")):
        assert (bundle / "results" / suite / name).resolve() in targets
    fuzz_text, _ = _section(rendered_dom(tmp_path, bundle / "results" / "fuzz" / "index.html"), "fuzz-verdict")
    assert fuzz_text.startswith(f"Verdict: {fuzz['status']}")


def _certified_copy(bundle: Path, tmp_path: Path) -> Path:
    """A copy of a quick bundle whose verdict.json says what a full run that passed writes."""
    copy = Path(shutil.copytree(bundle, tmp_path / "full"))
    doc = json.loads((copy / "verdict.json").read_text())
    doc.update(scope="full", scope_reasons=[], reasons=[], certified=True, passed=True, verdict="certified",
               quick=False)
    (copy / "verdict.json").write_text(json.dumps(doc))
    return copy


def test_diff_names_the_verdict_change(certified, broken, tmp_path):
    full = _certified_copy(certified[0], tmp_path)
    d = run_diff.diff_runs([full], [broken[0]])
    change = d["verdict"][0]
    assert change["what"] == "verdict" and change["from"] == "certified"
    assert change["to"].startswith("not certified (quick run): cts failed")
    assert any(w.startswith("quick run: ") for w in change["why"]) and any(w.startswith("cts: failed") for w in
                                                                         change["why"])
    cts = next(e for e in d["verdict"] if e["what"] == "cts")
    assert (cts["from"], cts["to"]) == ("passed", "failed")
    assert cts["why"][0].startswith(f"{len(_failing_cts(broken[0]))} failing; largest cluster: ADD x ")
    lines = run_diff.format_diff(d)
    assert lines[:2] == ["verdict (%d):" % len(d["verdict"]), f"  certified -> {change['to']}"]
    # two quick runs: the same verdict text, but what the suites did differs
    d = run_diff.diff_runs([certified[0]], [broken[0]])
    assert d["verdict"][0]["from"] == "not certified (quick run): every required suite passed"
    assert run_diff.diff_runs([broken[0]], [broken[0]])["verdict"] == []
    proc = subprocess.run([sys.executable, "-m", "nncts.cli", "diff", str(full), str(broken[0])], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and f"  certified -> {change['to']}" in proc.stdout.splitlines()


# --- the core install: no remote (grpcio, protobuf) nor engine extra ---------------------------

@pytest.fixture
def core_env(tmp_path) -> dict:
    """The environment of a Python where the extras' modules do not import: a directory on
    PYTHONPATH (so that child processes inherit it) whose ``google``, ``grpc``, ``onnx`` and
    ``onnxruntime`` packages raise ImportError as they import."""
    shim = tmp_path / "core-install"
    for name in EXTRA_MODULES:
        (shim / name).mkdir(parents=True)
        (shim / name / "__init__.py").write_text(f"raise ImportError(\"No module named '{name}' (core install)\")\n")
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(shim), str(ROOT)]))


def _python(env: dict, code: str, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """``python -c CODE ARGS`` with ``google`` blocked in the process itself too."""
    return subprocess.run([sys.executable, "-c", "import sys; sys.modules['google'] = None\n" + code, *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_fuzzer_runs_without_protobuf(core_env, tmp_path):
    blocked = _python(core_env, "import google.protobuf")
    assert blocked.returncode == 1 and "ModuleNotFoundError" in blocked.stderr
    findings = tmp_path / "findings"
    proc = _python(core_env, "from fuzz.__main__ import main; sys.exit(main(sys.argv[1:]))",
                   "--driver", "sample", "--findings", str(findings), "--no-seeds", "-runs=40")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "google" not in proc.stderr and "stat::number_of_executed_units: " in proc.stderr
    # out of process it needs the extra: one line, exit 2, naming it
    proc = _python(core_env, "from fuzz.__main__ import main; sys.exit(main(sys.argv[1:]))",
                   "--driver", "sample", "--driver-process", "--findings", str(findings))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "the remote extra: pip install 'nncts[remote]'" in proc.stderr


def test_certify_in_the_core_install(core_env, tmp_path):
    out = tmp_path / "bundle"
    refused = _python(core_env, "from nncts.cli import main; sys.exit(main(sys.argv[1:]))",
                      "certify", "--driver", "sample", "--driver-process", "--out", str(out))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "--driver-process: out-of-process drivers need the remote extra: pip install 'nncts[remote]'" \
        in refused.stderr and not out.exists()
    proc = _python(core_env, "from nncts.cli import main; sys.exit(main(sys.argv[1:]))",
                   "certify", "--quick", "--driver", "sample", "--out", str(out),
                   *[w for s in ("cts", "vts", "random-graph", "mlts") for w in ("--skip", s)])
    doc = json.loads((out / "verdict.json").read_text())
    fuzz = next(s for s in doc["suites"] if s["suite"] == "fuzz")
    assert fuzz["status"] == "passed" and fuzz["counts"]["executions"] > 0, proc.stdout
    assert "google" not in (out / "results" / "fuzz" / "console.log").read_text()
    assert proc.returncode == 1 and doc["passed"] is False    # four suites left out


@pytest.mark.parametrize("options, scope, why", [
    ([], "full", []),
    (["--modes", "all"], "full", []),
    (["--skip", "mlts"], "partial", ["partial run: mlts left out with --skip"]),
    (["--fuzz-seconds", "10"], "partial", ["partial run: --fuzz-seconds 10, under the full run's 60 s"]),
    (["--quick", "--skip", "fuzz"], "quick", ["quick run: ", "partial run: fuzz left out with --skip"]),
])
def test_only_a_full_run_has_the_full_scope(options, scope, why):
    from nncts.certify import run_scope
    from nncts.cli import build_parser
    args = build_parser().parse_args(["certify", "--driver", "sample", *options])
    args.fuzz_seconds = args.fuzz_seconds or (3 if args.quick else 60)   # as certify sets it
    got_scope, got_why = run_scope(args)
    assert got_scope == scope and len(got_why) == len(why)
    assert all(g.startswith(w) for g, w in zip(got_why, why))


def test_verify_labels_an_old_quick_bundle_that_says_certified():
    from nncts.certify import _verdict_lines

    class Check:   # what nncts.bundle.verify hands over: verdict.json's covered text
        verdict_text = json.dumps({"verdict": "certified", "certified": True, "quick": True, "reasons": []})
    assert _verdict_lines(Check()) == ["verdict not certified (quick run; its verdict.json, from before only full "
                                       "runs were certified, says certified)"]
