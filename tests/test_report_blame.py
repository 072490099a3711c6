"""Blame where it belongs (issue 22): every corpus model names its operation under test and
its helper operations; the matrix, ``nncts diff`` and the failure clusters count a test under
(operation under test, its input 0 type), a helper's failure under the helper.

Acceptance on real runs: ``nncts cts -k V1_0 --mode sync`` on the sample driver and on a
driver whose quantized ADD is two quanta high. V1_0 has 4 quantized-ADD models (add_quant8,
add_broadcast_quant8, each with its all_inputs_as_internal variant) and 56 quantized models of
other operations whose all_inputs_as_internal variant feeds every input through a quantized
ADD; their base models pass, so the 60 failures are one cluster, ADD x TENSOR_QUANT8_ASYMM.
"""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
from matplotlib.image import imread

from harness.records import read_records, under_test_fields
from reports import blame, diff, matrix
from reports.clusters import cluster_failures, mask_numbers, message_pattern
from reports.html import write_reports
from reports.run import build, load_dir, render_html
from runtime.testing.test_model import load_spec
from runtime.types import OperandType as T, OperationType as Op
from tests.browser import needs_chromium, rendered_dom, screenshot
from tests.cts_run import ROOT

BROKEN = "tests.broken_drivers:OffByTwoQuantaAdd"
CORPUS = ROOT / "cts" / "corpus"


def model(version: str, spec: str, name: str):
    return next(tm for tm in load_spec(CORPUS / version / f"{spec}.json.gz") if tm.name == name)


# --- the operation under test -------------------------------------------------------

@pytest.mark.parametrize("version, spec, name, op, operand_type, helpers", [
    ("V1_0", "conv_float_2", "conv_float_2_all_inputs_as_internal", Op.CONV_2D, T.TENSOR_FLOAT32, {Op.ADD}),
    ("V1_0", "conv_float_2", "conv_float_2", Op.CONV_2D, T.TENSOR_FLOAT32, set()),
    ("V1_0", "add_quant8", "add_quant8_all_inputs_as_internal", Op.ADD, T.TENSOR_QUANT8_ASYMM, {Op.ADD}),
    ("V1_0", "hashtable_lookup_quant8", "hashtable_lookup_quant8_all_inputs_as_internal", Op.HASHTABLE_LOOKUP,
     T.TENSOR_INT32, {Op.ADD}),
    ("V1_3", "while_fib", "while_fib_n_5_quant8_signed_all_outputs_as_internal_2", Op.WHILE, T.MODEL, {Op.ADD}),
    ("V1_2", "roi_align", "roi_align_zero_sized_nchw_quant8", Op.ROI_ALIGN, T.TENSOR_QUANT8_ASYMM,
     {Op.BOX_WITH_NMS_LIMIT}),
    ("V1_2", "add_v1_2", "add_v1_2_zero_sized_quant8", Op.ADD, T.TENSOR_QUANT8_ASYMM,
     {Op.BOX_WITH_NMS_LIMIT, Op.ROI_ALIGN}),
    ("V1_3", "rank", "rank_internal_output", Op.RANK, T.TENSOR_FLOAT32, {Op.FILL}),
])
def test_operation_under_test_and_its_helpers(version, spec, name, op, operand_type, helpers):
    tm = model(version, spec, name)
    u = tm.under_test
    assert (u.operation, u.operand_type) == (op, operand_type)
    assert {tm.main.operations[k].type for k in u.helpers} == helpers
    # the helpers and the operation under test are every main operation
    assert {o.type for k, o in enumerate(tm.main.operations) if k not in u.helpers} == {op}


def test_a_variation_has_its_base_models_core_digest_and_record_fields():
    base, variant = model("V1_0", "conv_quant8", "conv_quant8"), model("V1_0", "conv_quant8",
                                                                       "conv_quant8_all_inputs_as_internal")
    other = model("V1_0", "conv_quant8_2", "conv_quant8_2")
    assert base.under_test.core == variant.under_test.core != other.under_test.core
    assert under_test_fields(variant) == {"operation_under_test": "CONV_2D", "operand_type": "TENSOR_QUANT8_ASYMM",
                                          "helper_operations": ["ADD TENSOR_QUANT8_ASYMM"],
                                          "core_digest": base.under_test.core}
    # the coupling mode's renaming applies to the operand type
    assert under_test_fields(base, coupling=True)["operand_type"] == "TENSOR_QUANT8_ASYMM_SIGNED"


# --- blame, matrix and clusters on hand-made records ---------------------------------

def rec(rid, outcome, op="CONV_2D", t="TENSOR_QUANT8_ASYMM", helpers=(), core="", mode="sync", message=""):
    r = {"id": rid, "outcome": outcome, "operations": sorted({op, *(h.split()[0] for h in helpers)}),
         "operand_types": [t], "operation_under_test": op, "operand_type": t, "suite": "cts", "mode": mode,
         "message": message, "skip_kind": "", "duration_s": 0.01}
    if helpers:
        r["helper_operations"] = list(helpers)
    if core:
        r["core_digest"] = core
    return r


HELPER = ("ADD TENSOR_QUANT8_ASYMM",)


def test_a_helper_failure_moves_to_the_helper_only_with_evidence():
    records = [rec("conv", "passed", core="c1"), rec("conv_v", "failed", helpers=HELPER, core="c1"),
               rec("pool", "failed", "MAX_POOL_2D", core="p1"),
               rec("pool_v", "failed", "MAX_POOL_2D", helpers=HELPER, core="p1"),   # base failed: pool's
               rec("relu_v", "failed", "RELU", helpers=HELPER, core="r1")]          # no base, ADD not failing
    assert [b.operation for b in blame.blame(records)] == ["CONV_2D", "ADD", "MAX_POOL_2D", "MAX_POOL_2D", "RELU"]
    # once ADD fails as the operation under test, a variant without its base in the run is ADD's too
    records.append(rec("add", "failed", "ADD"))
    assert [b.operation for b in blame.blame(records)][4] == "ADD"
    cells = matrix.cell_states(matrix.build(records))
    assert {k for k, v in cells.items() if v == "fail"} == {("ADD", "TENSOR_QUANT8_ASYMM"),
                                                            ("MAX_POOL_2D", "TENSOR_QUANT8_ASYMM")}
    assert cells["CONV_2D", "TENSOR_QUANT8_ASYMM"] == "pass"


def test_a_record_without_operation_under_test_is_counted_as_before():
    old = {"id": "x", "outcome": "failed", "operations": ["ADD", "CONV_2D"], "operand_types": ["TENSOR_FLOAT32",
                                                                                               "TENSOR_INT32"]}
    cells = matrix.cell_states(matrix.build([old]))
    assert sorted(k for k, v in cells.items() if v == "fail") == [
        ("ADD", "TENSOR_FLOAT32"), ("ADD", "TENSOR_INT32"), ("CONV_2D", "TENSOR_FLOAT32"), ("CONV_2D", "TENSOR_INT32")]
    assert [(c["operation"], c["operand_type"], c["count"]) for c in cluster_failures([old])] == [
        ("ADD+CONV_2D", "TENSOR_FLOAT32+TENSOR_INT32", 1)]


def test_messages_are_masked_to_one_pattern():
    assert mask_numbers("got 12 expected -1.5e-05 at [0, 3, 1], (2, 2) 0xdeadBEEF nan in V1_0 conv2d") == \
        "got <n> expected <n> at <shape> <hex> <n> in V1_0 conv2d"  # a repeated masked item said once
    a = rec("V1_0/s/a", "failed", message="Failed: V1_0/s/a: output 0 (TENSOR_QUANT8_ASYMM): 2 of 4 off: "
                                          "[0] expected 1 got 3, [1] expected 2 got 4")
    b = rec("V1_0/s/b@fenced", "failed", message="Failed: V1_0/s/b: output 0 (TENSOR_FLOAT32): 1 of 9 off: "
                                                 "[5] expected 7 got 9")
    assert message_pattern(a) == message_pattern(b) == \
        "Failed: <test>: output <n> (<type>): <n> of <n> off: <shape> expected <n> got <n>"


def test_clusters_are_keyed_by_cell_mode_and_pattern_most_first():
    records = [rec("a", "failed", message="off by 2"), rec("b", "failed", message="off by 3"),
               rec("c", "failed", message="off by 2", mode="async"), rec("d", "failed", "ADD", message="off by 2"),
               rec("e", "failed", message="crashed"), rec("f", "passed"), rec("g", "unexpected_pass"),
               rec("h", "known_failure", message="off by 2")]
    got = [(c["operation"], c["mode"], c["pattern"], c["count"], c["tests"])
           for c in cluster_failures(records, replay=lambda r: f"replay {r['id']}")]
    assert got == [("CONV_2D", "sync", "off by <n>", 2, ["a", "b"]),
                   ("ADD", "sync", "off by <n>", 1, ["d"]), ("CONV_2D", "async", "off by <n>", 1, ["c"]),
                   ("CONV_2D", "sync", "crashed", 1, ["e"]),
                   ("CONV_2D", "sync", "unexpected pass (the baseline lists it as failing)", 1, ["g"])]
    assert cluster_failures(records, replay=lambda r: f"replay {r['id']}")[0]["replay"] == "replay a"


def test_environment_block_and_neutral_timing_charts(tmp_path):
    records = [rec("a", "passed"), rec("b", "passed", "ADD")]
    path = tmp_path / "outcomes.jsonl"
    path.write_text("".join(__import__("json").dumps(r) + "\n" for r in records))
    write_reports(path, tmp_path, "all pass", {"environment": {"nncts version": "9.9", "machine": "x86_64 box"}})
    html = (tmp_path / "index.html").read_text()
    assert re.search(r"<th>nncts version</th><td>9\.9</td>.*<th>machine</th><td>x86_64 box</td>", html, re.S)
    assert 'id="no-failures"' in html
    # durations drawn in the neutral colour only: pygal's default first colour is red (#F44336)
    svg = html[html.index("<svg"):]
    assert "#4a78a8" in svg and "F44336" not in svg.upper()
    write_reports(path, tmp_path, "all pass", {})
    assert '<p id="environment">environment not recorded</p>' in (tmp_path / "index.html").read_text()


# --- acceptance: the planted quantized-ADD fault on V1_0 ------------------------------

@pytest.fixture(scope="module")
def v1_0_runs(tmp_path_factory):
    """Report dirs of ``nncts cts --mode sync -k V1_0 -n 2``: sample driver and the fault."""
    base = tmp_path_factory.mktemp("blame")
    out = {}
    for name, driver in (("sample", "sample"), ("broken", BROKEN)):
        proc = subprocess.run([sys.executable, "-m", "nncts.cli", "cts", "--driver", driver, "--mode", "sync",
                               "-k", "V1_0", "-n", "2", "-q", "--report-dir", str(base / name)],
                              cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert (base / name / "index.html").is_file(), proc.stdout[-2000:] + proc.stderr[-2000:]
        out[name] = base / name
    return out


def test_the_fault_is_one_cluster_of_sixty_and_one_red_cell(v1_0_runs):
    records = read_records(v1_0_runs["broken"] / "outcomes.jsonl")
    assert sum(r["outcome"] == "failed" for r in records) == 60
    clusters = cluster_failures(records)
    assert [(c["operation"], c["operand_type"], c["mode"], c["count"]) for c in clusters] == \
        [("ADD", "TENSOR_QUANT8_ASYMM", "sync", 60)]
    assert clusters[0]["helper_failures"] == 56   # 4 quantized-ADD models, 56 with a quantized helper ADD
    cells = matrix.cell_states(matrix.build(records))
    assert [k for k, v in cells.items() if v == "fail"] == [("ADD", "TENSOR_QUANT8_ASYMM")]
    # the replay command is one of a test of ADD under test
    assert "add_quant8" in clusters[0]["replay"] or "add_broadcast_quant8" in clusters[0]["replay"]


def test_diff_against_the_sample_driver_names_only_that_cell(v1_0_runs):
    d = diff.diff_runs([v1_0_runs["sample"]], [v1_0_runs["broken"]])
    assert [(c["operation"], c["operand_type"], c["from"], c["to"]) for c in d["coverage lost"]] == \
        [("ADD", "TENSOR_QUANT8_ASYMM", "pass", "fail")]
    assert d["coverage gained"] == []
    records = read_records(v1_0_runs["broken"] / "outcomes.jsonl")
    blamed = {r["id"]: b for r, b in zip(records, blame.blame(records))}
    new = [e["id"] for e in d["new failures"]]
    assert len(new) == 60 and {(blamed[i].operation, blamed[i].operand_type) for i in new} == \
        {("ADD", "TENSOR_QUANT8_ASYMM")}


@needs_chromium
def test_the_page_shows_the_cluster_above_the_fold(v1_0_runs, tmp_path):
    page = v1_0_runs["broken"] / "index.html"
    dom = rendered_dom(tmp_path, page)
    summaries = re.findall(r'<details class="cluster"><summary>(.*?)</summary>', dom, re.S)
    assert len(summaries) == 1
    assert re.search(r"60 failed</span>\s*<b>ADD × TENSOR_QUANT8_ASYMM</b>, mode sync", summaries[0])
    assert dom.index('id="clusters"') < dom.index('id="matrix"') < dom.index('id="failures"')
    fails = re.findall(r'<td class="cell-fail" title="([^"]*)"', dom)
    assert len(fails) == 1 and fails[0].startswith("ADD x TENSOR_QUANT8_ASYMM: 60 fail")
    # the untouched rows are folded, the touched ones shown
    assert re.search(r'<details id="matrix-untouched"><summary>\d+ operation\(s\) with no test', dom)
    # as drawn in a 1280x900 window: the cluster box's red edge (#c33) is on screen
    pixels = (imread(screenshot(tmp_path, page, "1280,900"))[..., :3] * 255).round().astype(int)
    assert pixels.shape[:2] == (900, 1280)
    edge = np.all(pixels == (0xcc, 0x33, 0x33), axis=-1)
    assert edge.sum() >= 6 * 30, edge.sum()
    # the sample driver's page: no cluster, no red cell
    sample = rendered_dom(tmp_path, v1_0_runs["sample"] / "index.html")
    assert 'class="cluster"' not in sample and "cell-fail" not in sample.split('id="matrix"', 1)[1]


def test_report_document_carries_clusters_and_untouched_rows(v1_0_runs):
    doc = build([load_dir(v1_0_runs["broken"])], "t")
    assert [c["count"] for c in doc["clusters"]] == [60]
    assert "INSTANCE_NORMALIZATION" in doc["matrix_untouched"] and "ADD" not in doc["matrix_untouched"]
    assert "60 failed" in render_html(doc, load_dir(v1_0_runs["broken"]).records)
