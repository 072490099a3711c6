"""The CTS/VTS report (summary.json, index.html, the text summary) from hand-made outcome
records: counts per operation, per source (AOSP corpus apart from our own specs) and per
mode are the records' own, counted by hand here; index.html is checked as Chromium renders it."""
from __future__ import annotations

import json
import re

from reports.html import write_reports
from harness.records import RecordWriter, format_summary
from tests.browser import needs_chromium, rendered_dom, screenshot


def _records(path):
    writer = RecordWriter(path)
    for rid, outcome, ops, mode in [
        ("V1_0/add/add", "passed", ["ADD"], "sync"),
        ("V1_0/add/add", "passed", ["ADD"], "burst"),
        ("V1_0/conv_float/conv_float", "failed", ["CONV_2D"], "sync"),
        ("SPECS/conv/conv_relu6", "failed", ["CONV_2D"], "sync"),
        ("SPECS/conv/conv_relu1", "passed", ["CONV_2D"], "sync"),
        ("SPECS/mirror_pad/mirror_pad_reflect", "skipped", ["MIRROR_PAD"], "sync"),
    ]:
        writer.write({"id": rid, "outcome": outcome, "operations": ops, "mode": mode,
                      "duration_s": 0.5, "message": f"{outcome}: {rid}",
                      "skip_kind": "driver_feature" if outcome == "skipped" else ""})
    writer.close()


def test_summary_counts_our_specs_apart_from_the_corpus(tmp_path):
    _records(tmp_path / "outcomes.jsonl")
    write_reports(tmp_path / "outcomes.jsonl", tmp_path, "nncts CTS")
    summary = json.loads((tmp_path / "summary.json").read_text())
    # by hand: corpus 2 passed + 1 failed; specs 1 passed, 1 failed, 1 skipped
    assert summary["per_source"] == {"corpus": {"passed": 2, "failed": 1},
                                     "own specs": {"passed": 1, "failed": 1, "skipped": 1}}
    assert summary["per_operation"]["CONV_2D"] == {"passed": 1, "failed": 2}
    lines = format_summary([json.loads(x) for x in (tmp_path / "outcomes.jsonl").read_text().splitlines()])
    assert any(re.fullmatch(r"own specs +1 +1 +1", x) for x in lines)
    assert any(re.fullmatch(r"corpus +2 +1 +0", x) for x in lines)


def test_a_corpus_only_run_has_no_source_table(tmp_path):
    writer = RecordWriter(tmp_path / "outcomes.jsonl")
    writer.write({"id": "V1_0/add/add", "outcome": "passed", "operations": ["ADD"], "mode": "sync"})
    writer.close()
    write_reports(tmp_path / "outcomes.jsonl", tmp_path, "nncts CTS")
    assert json.loads((tmp_path / "summary.json").read_text())["per_source"] == {"corpus": {"passed": 1}}
    assert "Per source" not in (tmp_path / "index.html").read_text()


@needs_chromium
def test_index_html_as_rendered_shows_totals_sources_operations_and_failures(tmp_path):
    _records(tmp_path / "outcomes.jsonl")
    page = write_reports(tmp_path / "outcomes.jsonl", tmp_path, "nncts CTS")[1]
    dom = rendered_dom(tmp_path, page)
    assert "<h1>nncts CTS</h1>" in dom
    assert '<span class="passed">3 passed</span>' in dom and '<span class="failed">2 failed</span>' in dom

    def row(first_cell: str) -> list[str]:
        m = re.search(rf"<tr><td>{re.escape(first_cell)}</td>(.*?)</tr>", dom, re.S)
        assert m, first_cell
        return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", m.group(1), re.S)]

    assert row("own specs") == ["1", "1", "1"]
    assert row("corpus") == ["2", "1", "0"]
    assert row("CONV_2D") == ["1", "2", "0"]
    assert row("BATCH_MATMUL")[-1] == "no test"  # every NNAPI operation has a row
    assert "Failures (2)" in dom and "failed: SPECS/conv/conv_relu6" in dom
    assert "Per execution mode" in dom
    screenshot(tmp_path, page)


@needs_chromium
def test_random_graph_failures_show_both_reproducers_as_rendered(tmp_path):
    writer = RecordWriter(tmp_path / "outcomes.jsonl")
    writer.write({"id": "RANDOM_GRAPH/small-TENSOR_FLOAT32-rank4/7", "outcome": "failed",
                  "operations": ["ADD", "CONV_2D"], "mode": "graph", "suite": "random_graph",
                  "message": "on sample: output 0 (TENSOR_FLOAT32): bias 0.02 beyond 0.0004",
                  "reproducers": {"graph": "graphs/RANDOM_GRAPH/small-TENSOR_FLOAT32-rank4-7.json.gz",
                                  "graph_size": "5 operations, 900 input and constant elements",
                                  "minimized": "graphs/RANDOM_GRAPH/small-TENSOR_FLOAT32-rank4-7-minimized.json.gz",
                                  "minimized_size": "1 operation, 24 input and constant elements"}})
    writer.close()
    page = write_reports(tmp_path / "outcomes.jsonl", tmp_path, "nncts random graphs")[1]
    dom = rendered_dom(tmp_path, page)
    rows = [[re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
            for r in re.findall(r"<tr>(<td>(?:failing graph|minimized)</td>.*?)</tr>", dom, re.S)]
    assert rows == [["failing graph", "5 operations, 900 input and constant elements",
                     "graphs/RANDOM_GRAPH/small-TENSOR_FLOAT32-rank4-7.json.gz"],
                    ["minimized", "1 operation, 24 input and constant elements",
                     "graphs/RANDOM_GRAPH/small-TENSOR_FLOAT32-rank4-7-minimized.json.gz"]]
