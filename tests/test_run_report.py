"""One report for a run of several suites (``nncts report``) and ``nncts diff``, on real runs:
the CTS's V1_0 models using ADD (``-k add``, sync mode) on the sample driver and on a driver
with a planted fault (quantized ADD off by two quanta), and a random-graph run of that driver;
plus hand-made records for the matrix states and every diff heading (expected values worked
out by hand). The page is checked as headless Chromium renders it, and a failure's replay
command is run to see that it selects exactly that test."""
from __future__ import annotations

import collections
import json
import re
import shlex
import shutil
import subprocess
import sys

import pytest
from junitparser import JUnitXml

from reports import diff, matrix
from harness.records import RecordWriter, read_records
from reports.run import suite_dirs, write_run_report
from runtime.testing.test_model import iter_corpus
from runtime.types import OperandType
from tests.browser import needs_chromium, rendered_dom, screenshot
from tests.cts_run import ROOT

BROKEN = "tests.broken_drivers:OffByTwoQuantaAdd"
CORPUS = "cts/corpus/V1_0"


def nncts(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    """``python -m nncts.cli ARGS`` (the project root on sys.path, for the broken drivers)."""
    return subprocess.run([sys.executable, "-m", "nncts.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Report dirs: CTS on sample (A), CTS on the planted fault (B), random graphs on it (RG)."""
    base = tmp_path_factory.mktemp("runs")
    out = {}
    for name, args in [("A", ["cts", "--corpus", CORPUS, "--mode", "sync", "-k", "add"]),
                       ("B", ["cts", "--driver", BROKEN, "--corpus", CORPUS, "--mode", "sync", "-k", "add"]),
                       ("RG", ["random-graph", "--driver", BROKEN, "--seeds", "1", "--config", "single-ADD-1",
                               "--config", "single-ADD-0"])]:
        proc = nncts(*args, "--report-dir", str(base / name), "-q")
        assert (base / name / "outcomes.jsonl").is_file(), proc.stdout[-2000:] + proc.stderr[-2000:]
        out[name] = base / name
    return out


def quantized_add(tm) -> bool:
    """Whether the corpus model has an ADD whose input 0 is a quantized tensor (the planted fault)."""
    return any(op.type.name == "ADD" and sg.operands[op.inputs[0]].type == OperandType.TENSOR_QUANT8_ASYMM
               for sg in [tm.main, *tm.referenced] for op in sg.operations)


def test_diff_lists_exactly_the_planted_failures(runs, tmp_path):
    a, b = read_records(runs["A"] / "outcomes.jsonl"), read_records(runs["B"] / "outcomes.jsonl")
    assert a and not [r for r in a if r["outcome"] != "passed"]  # the sample driver fails none
    failed_b = {r["id"] for r in b if r["outcome"] == "failed"}
    models = {tm.test_id: tm for tm in iter_corpus([ROOT / CORPUS])}
    assert failed_b and all(quantized_add(models[i]) for i in failed_b)
    proc = nncts("diff", str(runs["A"]), str(runs["B"]), "--json", str(tmp_path / "d.json"))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "d.json").read_text())
    assert {e["id"] for e in doc["new failures"]} == failed_b
    assert all(not doc[h] for h in ("fixed", "still failing", "flaky", "only in A", "only in B"))
    assert {"operation": "ADD", "operand_type": "TENSOR_QUANT8_ASYMM", "from": "pass", "to": "fail"} \
        in doc["coverage lost"]
    text = proc.stdout.splitlines()
    start = text.index(f"new failures ({len(failed_b)}):")
    listed = {line.split()[0] for line in text[start + 1:start + 1 + len(failed_b)]}
    assert listed == failed_b and text[start + 1 + len(failed_b)] == "fixed (0):"
    assert nncts("diff", str(runs["A"]), str(runs["B"]), "--fail-on-new").returncode == 1
    back = nncts("diff", str(runs["B"]), str(runs["A"]), "--fail-on-new")
    assert back.returncode == 0 and f"fixed ({len(failed_b)}):" in back.stdout


@pytest.mark.parametrize("args, expected", [
    (["diff", "A", "nope"], "nope: no such directory"),
    (["diff", "A", "."], "not a report directory"),
    (["report", "nope", "--out", "x"], "nope: no such directory"),
    (["report", "A", "--out", "A"], "a suite's report directory"),
])
def test_bad_paths_are_one_line_and_exit_2(runs, tmp_path, args, expected):
    args = [str(runs["A"]) if a == "A" else str(tmp_path / a) if a in ("nope", "x") else str(tmp_path) if a == "."
            else a for a in args]
    proc = nncts(*args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and expected in proc.stderr and "Traceback" not in proc.stderr


@pytest.fixture(scope="module")
def run_report(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    proc = nncts("report", str(runs["B"]), str(runs["RG"]), "--out", str(out), "--title", "two suites")
    assert proc.returncode == 0, proc.stderr
    return out


def test_report_json_and_junit_count_every_suite(runs, run_report):
    records = {s: read_records(runs[s] / "outcomes.jsonl") for s in ("B", "RG")}
    doc = json.loads((run_report / "report.json").read_text())
    rows = {row["suite"]: row for row in doc["per_suite"]}
    for name, suite in (("B", "cts"), ("RG", "random_graph")):
        c = collections.Counter(r["outcome"] for r in records[name])
        assert (rows[suite]["tests"], rows[suite]["passed"], rows[suite]["failed"]) == \
            (len(records[name]), c["passed"], c["failed"])
    assert len(doc["failures"]) == sum(r["outcome"] == "failed" for recs in records.values() for r in recs)
    assert [row["operation"] for row in doc["matrix"]["rows"]][:3] == ["ADD", "AVERAGE_POOL_2D", "CONCATENATION"]
    assert len(doc["matrix"]["rows"]) == 106
    xml = JUnitXml.fromfile(str(run_report / "junit.xml"))
    suites = {s.name: (s.tests, s.failures) for s in xml}
    assert suites == {"nncts-cts": (len(records["B"]), rows["cts"]["failed"]),
                      "nncts-random_graph": (len(records["RG"]), rows["random_graph"]["failed"])}


@needs_chromium
def test_the_page_as_rendered_shows_matrix_failures_replay_and_charts_offline(runs, run_report, tmp_path):
    page = run_report / "index.html"
    html = page.read_text()
    assert not re.search(r"<script|<link|<img|<iframe|@import|url\(", html, re.I)  # nothing to fetch, no JS
    dom = rendered_dom(tmp_path, page)
    assert "<h1>two suites</h1>" in dom and dom.count("<svg") == 3
    assert "Seconds per suite and mode" in dom and "Tests by duration" in dom
    # the ADD row: its quantized cell fails (the planted fault), its float cell passes. The cell
    # counts the quantized-ADD tests (ADD under test) and the failures of the other tests whose
    # quantized helper ADD (all_inputs_as_internal) broke them: -k add runs no base model of
    # those, and ADD x TENSOR_QUANT8_ASYMM fails under test (reports.blame)
    b = read_records(runs["B"] / "outcomes.jsonl") + read_records(runs["RG"] / "outcomes.jsonl")
    quant = [r for r in b if r["operation_under_test"] == "ADD" and r.get("operand_type") == "TENSOR_QUANT8_ASYMM"]
    n_fail = sum(r["outcome"] == "failed" for r in quant)
    helped = [r for r in b if r["operation_under_test"] != "ADD" and r["outcome"] == "failed"
              and "ADD TENSOR_QUANT8_ASYMM" in r.get("helper_operations", [])]
    assert n_fail and helped
    row = re.search(r"<tr><th>ADD</th>(.*?)</tr>", dom, re.S).group(1)
    passed = f", {len(quant) - n_fail} pass" if len(quant) > n_fail else ""
    assert (f'<td class="cell-fail" title="ADD x TENSOR_QUANT8_ASYMM: {n_fail + len(helped)} fail{passed} '
            f'({len(helped)} of the failures in tests where ADD is a helper operation)">') in row
    assert re.search(r'<td class="cell-pass" title="ADD x TENSOR_FLOAT32: \d+ pass">', row)
    assert '<td class="cell-not-run" title="CONV_2D x TENSOR_INT32: no test">' in dom
    # a CTS failure and a random-graph failure, with reproducers and replay commands
    node = str(ROOT / "cts/test_generated.py") + "::test_generated[V1_0/add_quant8/add_quant8]"
    assert f"python -m pytest '{node}' --driver {BROKEN} --corpus {CORPUS} --mode sync</code>" in dom
    assert "--config single-ADD-1 --first-seed 0 --seeds 1</code>" in dom
    assert re.search(r"<td>minimized</td><td>1 operation, \d+ input and constant elements</td>", dom)
    screenshot(tmp_path, page)


@pytest.mark.parametrize("suite", ["cts", "random_graph"])
def test_a_replay_command_runs_exactly_that_test(run_report, tmp_path, suite):
    failure = next(f for f in json.loads((run_report / "report.json").read_text())["failures"]
                   if f["suite"] == suite)
    argv = shlex.split(failure["replay"])
    assert argv[:3] == ["python", "-m", "pytest"]
    proc = subprocess.run([sys.executable, *argv[1:], "--nncts-report", str(tmp_path / "replay"), "-q"],
                          cwd=ROOT if suite == "cts" else tmp_path, capture_output=True, text=True, timeout=300)
    replayed = read_records(tmp_path / "replay" / "outcomes.jsonl")
    assert [(r["id"], r["outcome"]) for r in replayed] == [(failure["id"], "failed")], proc.stdout[-2000:]


# --- hand-made records --------------------------------------------------------------

def rec(rid, outcome, ops=("ADD",), types=("TENSOR_FLOAT32",), kind="", suite="cts"):
    """A hand-made outcome record."""
    return {"id": rid, "outcome": outcome, "operations": list(ops), "operand_types": list(types),
            "skip_kind": kind, "suite": suite, "mode": "sync", "duration_s": 0.01}


def test_matrix_cell_states_and_counts():
    m = matrix.build([rec("a", "passed"), rec("b", "known_failure"), rec("c", "flaky", types=("TENSOR_FLOAT16",)),
                      rec("d", "skipped", ("CONV_2D",), ("TENSOR_QUANT8_ASYMM",), "unsupported_by_driver"),
                      rec("e", "skipped", ("MUL",), (), "not_implemented")])
    assert m["columns"] == ["TENSOR_FLOAT32", "TENSOR_QUANT8_ASYMM", "TENSOR_FLOAT16", matrix.UNKNOWN_TYPE]
    cells = matrix.cell_states(m)
    assert (cells["ADD", "TENSOR_FLOAT32"], cells["ADD", "TENSOR_FLOAT16"]) == ("fail", "pass")
    assert cells["CONV_2D", "TENSOR_QUANT8_ASYMM"] == "unsupported"
    assert cells["MUL", matrix.UNKNOWN_TYPE] == "not run" and cells["SUB", "TENSOR_FLOAT32"] == "not run"
    add = next(r for r in m["rows"] if r["operation"] == "ADD")
    assert add["cells"][0]["title"] == "ADD x TENSOR_FLOAT32: 1 fail, 1 pass"
    assert matrix.state_totals(m) == {"fail": 1, "pass": 1, "unsupported": 1, "not run": 106 * 4 - 3}


def test_diff_headings_from_hand_made_runs():
    a = [rec("new", "passed"), rec("fixed", "failed"), rec("known", "known_failure"), rec("still", "failed"),
         rec("flaky", "passed"), rec("declined", "passed", ("MUL",)),
         rec("back", "skipped", ("SUB",), kind="not_applicable"),
         rec("gone", "passed"), rec("new", "passed", suite="vts")]
    b = [rec("new", "failed"), rec("fixed", "passed"), rec("known", "unexpected_pass"), rec("still", "failed"),
         rec("flaky", "flaky"), rec("declined", "skipped", ("MUL",), kind="unsupported_by_driver"),
         rec("back", "passed", ("SUB",)), rec("added", "passed", ("DIV",)), rec("new", "passed", suite="vts")]
    d = diff.compare(a, b)
    ids = {h: [(e["suite"], e["id"]) for e in d[h]] for h in diff.HEADINGS if "coverage" not in h}
    assert ids == {"new failures": [("cts", "new")], "fixed": [("cts", "fixed"), ("cts", "known")],
                   "still failing": [("cts", "still")], "flaky": [("cts", "flaky")],
                   "newly unsupported": [("cts", "declined")], "newly supported": [("cts", "back")],
                   "only in A": [("cts", "gone")], "only in B": [("cts", "added")]}
    # ADD x FLOAT32: fail in both (still failing); MUL pass -> unsupported; SUB unsupported -> pass; DIV new
    cell = {(c["operation"], c["from"], c["to"]) for c in d["coverage gained"] + d["coverage lost"]}
    assert cell == {("MUL", "pass", "unsupported"), ("SUB", "unsupported", "pass"), ("DIV", "not run", "pass")}
    assert [c["operation"] for c in d["coverage lost"]] == ["MUL"]
    assert "  new  [cts]  (passed -> failed)" in diff.format_diff(d)


def test_a_bundle_is_read_through_its_results_and_mlts_is_summarized(runs, tmp_path):
    bundle = tmp_path / "bundle"
    shutil.copytree(runs["B"], bundle / "results" / "cts")
    (bundle / "results" / "mlts").mkdir()
    (bundle / "results" / "mlts" / "mlts.json").write_text(json.dumps({"title": "m", "models": [
        {"name": "good", "accuracy": {"within_tolerance": True}},
        {"name": "bad", "errors": [{"stage": "import", "message": "boom"}]}]}))
    assert suite_dirs([bundle]) == [bundle / "results" / "cts", bundle / "results" / "mlts"]
    write_run_report([bundle], tmp_path / "out", "bundle")
    doc = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [(m["models"], m["passed"], m["failed"], m["failing"]) for m in doc["mlts"]] == [(2, 1, 1, ["bad"])]
    assert [row["suite"] for row in doc["per_suite"]] == ["cts"]
    # the run's driver comes from the suite's summary.json
    assert all(f"--driver {BROKEN}" in f["replay"] for f in doc["failures"])


def test_single_suite_write_reports_keeps_its_files(tmp_path):
    from reports.html import write_reports
    writer = RecordWriter(tmp_path / "outcomes.jsonl")
    writer.write(rec("V1_0/add/add", "passed") | {"nodeid": "cts/test_generated.py::test_generated[V1_0/add/add]"})
    writer.close()
    paths = write_reports(tmp_path / "outcomes.jsonl", tmp_path, "t", {"driver": "sample"})
    assert [p.name for p in paths] == ["summary.json", "index.html"]
    summary = json.loads(paths[0].read_text())
    assert summary["per_suite"][0]["passed"] == 1 and summary["per_operation"]["ADD"] == {"passed": 1}
