"""``nncts triage RUN_A RUN_B`` (nncts/triage.py, nncts/localize.py, nncts/triage_suites.py,
reports/triage.py): which side of two runs is wrong, re-judged on the reference; borderline
disagreements; culprits and the clusters by culprit (two planted faults, two clusters); VTS
and precision-sweep disagreements; the CLI's bad arguments; the JSON shape and the page.

Golden values are by hand: OffByTwoQuantaAdd adds 2 quanta (saturating at 255) to ADD's
quantized outputs, so its error is 2 quanta against NNAPI's tolerance of 1 quantum (a
ratio of 2, borderline by the 2x rule) wherever the expected value is at most 253."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from nncts import triage as cmd
from nncts.cli import main
from reports import triage as rt
from tests.cts_run import ROOT

QUANT = "V1_0/add_quant8/add_quant8"
BROADCAST = "V1_0/add_broadcast_quant8/add_broadcast_quant8"
FLOAT = "V1_0/add/add"
BROKEN = "tests.broken_drivers:OffByTwoQuantaAdd"


def _record(test_id: str, outcome: str, message: str = "", **extra) -> dict:
    return {"id": test_id, "suite": "cts", "mode": "sync", "outcome": outcome, "message": message,
            "nodeid": f"cts/test_generated.py::test_generated[{test_id}]", "operation_under_test": "ADD",
            "operand_type": "TENSOR_FLOAT32" if test_id == FLOAT else "TENSOR_QUANT8_ASYMM",
            "operations": ["ADD"], **extra}


def _run_dir(path, driver, records, corpus=("vendored AOSP corpus",)):
    path.mkdir(parents=True)
    (path / "outcomes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    (path / "summary.json").write_text(json.dumps({"meta": {"driver": driver, "corpus": list(corpus)}}),
                                       encoding="utf-8")
    return path


def _off(test_id: str) -> str:
    return f"{test_id}: output 0 (TENSOR_QUANT8_ASYMM): 3 of 4 elements off (atol=1, rtol=0.0): [0] expected 1 got 3"


@pytest.fixture
def two_runs(tmp_path):
    a = _run_dir(tmp_path / "A", "sample", [_record(QUANT, "passed"), _record(BROADCAST, "passed"),
                                            _record(FLOAT, "passed")])
    b = _run_dir(tmp_path / "B", BROKEN, [_record(QUANT, "failed", _off(QUANT)),
                                          _record(BROADCAST, "failed", _off(BROADCAST)), _record(FLOAT, "passed")])
    return a, b


def _expected(test_id):
    tm = cmd.ModelSource(None).find(test_id)
    return [tm.main.operands[i].data for i in tm.main.output_indexes], tm


def _triage_json(capsys, *argv):
    assert main(["triage", *map(str, argv), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_broken_add_is_blamed_in_one_cluster(two_runs, capsys):
    a, b = two_runs
    doc = _triage_json(capsys, a, b)
    assert set(doc) == {"runs", "compared", "not_comparable", "disagreements", "counts", "borderline", "clusters",
                        "tests"}
    assert doc["runs"] == {"A": {"path": str(a), "driver": "sample"}, "B": {"path": str(b), "driver": BROKEN}}
    assert (doc["compared"], doc["disagreements"], doc["not_comparable"]) == (3, 2, 0)
    assert doc["counts"] == {"B": 2, "A": 0, "both": 0, "neither": 0, "undecided": 0}
    [cluster] = doc["clusters"]
    assert set(cluster) == {"wrong", "driver", "operation", "operand_type", "operand_types", "pattern", "count",
                            "tests", "localized", "replay", "borderline"}
    assert (cluster["wrong"], cluster["driver"], cluster["operation"], cluster["operand_type"], cluster["count"]) \
        == ("B", BROKEN, "ADD", "TENSOR_QUANT8_ASYMM", 2)
    assert sorted(cluster["tests"]) == sorted([QUANT, BROADCAST])
    assert cluster["localized"] == 2 and cluster["pattern"] == "output <n> off the reference by <n> times the tolerance"
    assert "--driver " + BROKEN in cluster["replay"]
    for t in doc["tests"]:
        assert set(t) >= {"suite", "id", "mode", "a", "b", "reference", "wrong", "borderline", "how", "note"}
        assert (t["a"]["rerun"], t["b"]["rerun"], t["reference"]["verdict"], t["how"]) == ("pass", "fail", "pass",
                                                                                          "re-run")
        assert t["a"]["error"] == 0.0 and t["reference"]["error"] == 0.0
        expected, _ = _expected(t["id"])
        # 2 quanta over, 1 quantum allowed: ratio 2 unless the expected value saturates
        hand = max(float(np.max(np.minimum(e.astype(int) + 2, 255) - e.astype(int))) for e in expected)
        assert t["b"]["error"] == hand == 2.0
        assert t["borderline"] is True
        # each model is the one ADD: run alone on the reference's inputs it is the culprit
        assert t["b"]["culprit"] == {"operation": "ADD", "operand_type": "TENSOR_QUANT8_ASYMM", "where": "op 0 (ADD)",
                                     "message": "output 0 off the reference by 2 times the tolerance"}
        assert "culprit" not in t["a"]
    assert doc["borderline"] == 2 and cluster["borderline"] == 2


def test_reversed_runs_blame_a_and_console_lines(two_runs, capsys):
    a, b = two_runs
    assert main(["triage", str(b), str(a)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"A: {b}  (driver {BROKEN})"
    assert "2 with different verdicts" in out[2] and "A wrong 2" in out[2] and "B wrong 0" in out[2]
    assert out[3] == "1 cluster(s):"
    assert out[4] == f"  A wrong ({BROKEN})      2  ADD x TENSOR_QUANT8_ASYMM  [borderline 2]  " \
                     "output <n> off the reference by <n> times the tolerance"


TWO_FAULTS = "tests.broken_triage_drivers:AddAndMulFaults"
SIGNED = "V1_3/add_quant8_signed/add_quant8_signed"
MUL = "V1_0/mul_quant8/mul_quant8"
WHILE = "V1_3/while_sum_of_powers_quant8/while_sum_of_powers_quant8_n_1"


def test_two_faults_in_two_operations_are_two_clusters(tmp_path, capsys):
    """ADD +2 quanta and MUL +3 quanta (tests/broken_triage_drivers.py): the ADD models
    (unsigned; signed, whose result the fault leaves in int8's range; the WHILE whose body's
    first ADD is off) are one cluster whatever their surface (operand type, the WHILE the
    records blame), the MUL model the other."""
    ids = {QUANT: "ADD", SIGNED: "ADD", WHILE: "WHILE", MUL: "MUL"}
    a = _run_dir(tmp_path / "A", "sample", [_record(i, "passed", operation_under_test=op) for i, op in ids.items()])
    b = _run_dir(tmp_path / "B", TWO_FAULTS, [_record(i, "failed", _off(i), operation_under_test=op)
                                              for i, op in ids.items()])
    doc = _triage_json(capsys, a, b)
    assert doc["counts"]["B"] == 4
    by_op = {c["operation"]: c for c in doc["clusters"]}
    assert sorted(by_op) == ["ADD", "MUL"] and len(doc["clusters"]) == 2
    assert sorted(by_op["ADD"]["tests"]) == sorted([QUANT, SIGNED, WHILE]) and by_op["ADD"]["localized"] == 3
    assert by_op["ADD"]["operand_types"] == ["TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"]
    assert by_op["MUL"]["tests"] == [MUL] and by_op["MUL"]["pattern"] == by_op["ADD"]["pattern"]
    by_id = {t["id"]: t for t in doc["tests"]}
    # the WHILE's body (subgraph 1) starts with ADD(i, 1): found inside the loop
    assert by_id[WHILE]["b"]["culprit"]["where"] == "op 0 (WHILE) > body (subgraph 1) op 0 (ADD)"
    # 3 quanta over, 1 allowed (no expected value of mul_quant8 saturates: hand-checked)
    assert by_id[MUL]["b"]["culprit"]["message"] == "output 0 off the reference by 3 times the tolerance"


def test_vts_and_sweep_disagreements_are_decided(tmp_path, capsys):
    """A VTS item is judged by the HAL's expected status (the failing side deviates); a
    precision sweep is re-run against the float64 truth: RELU +2 quanta fails the quant8
    sweep again (tolerance 1 quantum), the float sweep passes on both (not reproduced)."""
    sweep_q, sweep_f = "PRECISION/RELU/TENSOR_QUANT8_ASYMM/exhaustive-centred", "PRECISION/RELU/TENSOR_FLOAT32/stratified"
    vts = "V1_0/add/add"

    def rec(test_id, suite, outcome):
        return {"id": test_id, "suite": suite, "mode": "quick" if suite == "precision" else "model_validation",
                "outcome": outcome, "message": "" if outcome == "passed" else "invalid_rank: mutant 0 accepted",
                "operation_under_test": "RELU" if suite == "precision" else "ADD", "operations": ["RELU"]}
    records = [(sweep_q, "precision"), (sweep_f, "precision"), (vts, "vts")]
    a = _run_dir(tmp_path / "A", "sample", [rec(i, s, "passed") for i, s in records])
    b = _run_dir(tmp_path / "B", "tests.broken_triage_drivers:ReluOffByTwoQuanta",
                 [rec(i, s, "failed") for i, s in records])
    doc = _triage_json(capsys, a, b)
    by_id = {t["id"]: t for t in doc["tests"]}
    assert (by_id[vts]["wrong"], by_id[vts]["how"]) == ("B", "HAL contract") and "HAL" in by_id[vts]["note"]
    assert (by_id[sweep_q]["wrong"], by_id[sweep_q]["how"], by_id[sweep_q]["b"]["rerun"]) == ("B", "re-run", "fail")
    assert by_id[sweep_q]["b"]["culprit"]["operation"] == "RELU"
    assert (by_id[sweep_f]["wrong"], by_id[sweep_f]["a"]["rerun"], by_id[sweep_f]["b"]["rerun"]) == \
        ("neither", "pass", "pass")
    assert doc["counts"]["undecided"] == 0


def test_same_driver_is_judged_by_recorded_verdicts(tmp_path, capsys):
    a = _run_dir(tmp_path / "A", "sample", [_record(QUANT, "failed", _off(QUANT))])
    b = _run_dir(tmp_path / "B", "sample", [_record(QUANT, "passed")])
    doc = _triage_json(capsys, a, b)
    [t] = doc["tests"]
    assert (t["how"], t["a"]["rerun"], t["wrong"]) == ("recorded", None, "A")
    assert "same driver" in t["note"]


def test_unloadable_driver_and_unknown_model(tmp_path, capsys):
    a = _run_dir(tmp_path / "A", "sample", [_record(QUANT, "passed"), _record("V1_0/add/no_such_model", "passed")])
    b = _run_dir(tmp_path / "B", "no_such_module:Driver", [_record(QUANT, "failed", _off(QUANT)),
                                                             _record("V1_0/add/no_such_model", "failed", "x")])
    doc = _triage_json(capsys, a, b)
    by_id = {t["id"]: t for t in doc["tests"]}
    quant = by_id[QUANT]
    assert (quant["a"]["rerun"], quant["b"]["rerun"], quant["wrong"]) == ("pass", None, "B")
    assert "does not load" in quant["note"]
    unknown = by_id["V1_0/add/no_such_model"]
    assert unknown["wrong"] == "undecided" and "no corpus model" in unknown["note"]
    assert doc["counts"]["undecided"] == 1 and doc["counts"]["B"] == 1


def test_skipped_on_one_side_is_not_a_disagreement(tmp_path, capsys):
    a = _run_dir(tmp_path / "A", "sample", [_record(QUANT, "passed"), _record(FLOAT, "passed")])
    b = _run_dir(tmp_path / "B", BROKEN, [_record(QUANT, "skipped", skip_kind="unsupported_by_driver"),
                                          _record(FLOAT, "passed")])
    doc = _triage_json(capsys, a, b)
    assert (doc["compared"], doc["disagreements"], doc["not_comparable"], doc["clusters"]) == (2, 0, 1, [])


def test_error_ratio_by_hand():
    expected, tm = _expected(FLOAT)
    e = expected[0].astype(np.float64)
    actual = (e + 3e-5).astype(np.float32)
    # NNAPI float32: atol 1e-5, rtol 5 * 2**-23 (AOSP TestHarness)
    hand = float(np.max(np.abs(actual.astype(np.float64) - e) / (1e-5 + 5 * 2.0 ** -23 * np.abs(e))))
    assert cmd.error_ratio(tm, [actual]) == pytest.approx(hand, rel=1e-12)
    assert cmd.error_ratio(tm, [None]) is None
    assert cmd.error_ratio(tm, [actual[:1]]) == float("inf")


def test_attribution_and_borderline_rules():
    def entry(ref, a, b, a_rerun=None, errors=()):
        e = {"a": {"verdict": a, "rerun": a_rerun}, "b": {"verdict": b, "rerun": None}, "reference": {"verdict": ref}}
        for (part, key), value in errors:
            e[part][key] = value
        return e
    assert rt.attribute(entry("pass", "pass", "fail")) == "B"
    assert rt.attribute(entry("fail", "pass", "fail")) == "A"
    assert rt.attribute(entry("pass", "fail", "fail", a_rerun="pass")) == "B"
    assert rt.attribute(entry("pass", "fail", "pass", a_rerun="pass")) == "neither"
    assert rt.attribute(entry(None, "pass", "fail")) == "undecided"
    # expected values off the float64 truth: the truth judges the measured outputs
    golden_off = [(("reference", "golden_vs_truth"), 3.0), (("a", "truth_error"), 0.4), (("b", "truth_error"), 3.0)]
    assert rt.attribute(entry("fail", "pass", "fail", errors=golden_off)) == "B"
    assert rt.attribute(entry(None, "fail", "pass", errors=golden_off[:1] + [(("a", "truth_error"), 1.5),
                                                                          (("b", "truth_error"), 0.0)])) == "A"
    assert rt.is_borderline(entry("pass", "pass", "fail", errors=[(("b", "error"), 2.0)]))
    assert rt.is_borderline(entry("pass", "pass", "fail", errors=[(("reference", "error"), 0.6)]))
    assert not rt.is_borderline(entry("pass", "pass", "fail", errors=[(("b", "error"), 2.5)]))
    assert not rt.is_borderline(entry("pass", "pass", "fail", errors=[(("a", "error"), 0.5)]))


@pytest.mark.parametrize("make, words", [
    (lambda p: [str(p / "missing"), str(p / "B")], "no such directory"),
    (lambda p: [str(p / "empty"), str(p / "B")], "not a report directory"),
    (lambda p: [str(p / "mlts"), str(p / "B")], "no outcome records"),
    (lambda p: [str(p / "hostile"), str(p / "B")], "not an outcome record"),
    (lambda p: [str(p / "B"), str(p / "B"), "--limit", "-1"], "--limit"),
    (lambda p: [str(p / "B")], "required"),
])
def test_bad_arguments_are_one_line_exit_2(tmp_path, capsys, make, words):
    _run_dir(tmp_path / "B", "sample", [_record(QUANT, "passed")])
    (tmp_path / "empty").mkdir()
    (tmp_path / "mlts").mkdir()
    (tmp_path / "mlts" / "mlts.json").write_text("{}", encoding="utf-8")
    (tmp_path / "hostile").mkdir()
    (tmp_path / "hostile" / "outcomes.jsonl").write_text('{"id": 1, "outcome": "<script>"}\n{}\n', encoding="utf-8")
    with pytest.raises(SystemExit) as e:
        main(["triage", *make(tmp_path)])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("nncts triage: error:") and words in err


def test_page_and_section_escape_hostile_messages(tmp_path, capsys):
    hostile = "<script>alert('x')</script>"
    a = _run_dir(tmp_path / "A", "sample", [_record(QUANT, "passed")])
    b = _run_dir(tmp_path / "B", "sample", [_record(QUANT, "failed", hostile)])
    out = tmp_path / "T"
    assert main(["triage", str(a), str(b), "--report-dir", str(out)]) == 0
    page = (out / "triage.html").read_text(encoding="utf-8")
    assert 'id="triage-clusters"' in page and hostile not in page and "&lt;script&gt;" in page
    loaded = rt.load(out)
    assert loaded["counts"]["B"] == 1 and loaded["clusters"][0]["pattern"] == hostile
    (out / "triage.json").write_text(json.dumps({"counts": {"B": "many"}}), encoding="utf-8")
    with pytest.raises(ValueError, match="not a triage document"):
        rt.load(out)
    assert rt.load(tmp_path) is None


def test_run_report_shows_the_section_of_a_run_directory(two_runs, tmp_path, capsys):
    a, b = two_runs
    assert main(["triage", str(a), str(b), "--report-dir", str(b)]) == 0
    assert main(["report", str(b), "--out", str(tmp_path / "R")]) == 0
    page = (tmp_path / "R" / "index.html").read_text(encoding="utf-8")
    assert 'id="triage"' in page and 'id="triage-clusters"' in page
    report = json.loads((tmp_path / "R" / "report.json").read_text(encoding="utf-8"))
    assert report["triage"][0]["counts"]["B"] == 2
    assert main(["report", str(a), "--out", str(tmp_path / "R2")]) == 0
    assert 'id="triage"' not in (tmp_path / "R2" / "index.html").read_text(encoding="utf-8")


def test_random_graphs_are_regenerated_and_rerun(tmp_path, capsys):
    quant, flt = "RANDOM_GRAPH/single-ADD-1/1", "RANDOM_GRAPH/single-ADD-0/1"

    def graph(test_id, outcome):
        return {"id": test_id, "suite": "random_graph", "mode": "", "outcome": outcome, "message": "",
                "operation_under_test": "ADD", "operand_type": "TENSOR_QUANT8_ASYMM" if test_id == quant
                else "TENSOR_FLOAT32", "operations": ["ADD"]}
    a = _run_dir(tmp_path / "A", "sample", [graph(quant, "passed"), graph(flt, "passed")])
    b = _run_dir(tmp_path / "B", BROKEN, [graph(quant, "failed"), graph(flt, "failed")])
    by_id = {t["id"]: t for t in _triage_json(capsys, a, b)["tests"]}
    # the quantized graph fails on the broken ADD again; the float one passes on both (ADD float is right)
    assert (by_id[quant]["reference"]["verdict"], by_id[quant]["b"]["rerun"], by_id[quant]["wrong"]) == \
        ("pass", "fail", "B")
    assert (by_id[flt]["a"]["rerun"], by_id[flt]["b"]["rerun"], by_id[flt]["wrong"]) == ("pass", "pass", "neither")
    assert by_id[flt]["a"]["truth_error"] is not None and by_id[flt]["a"]["truth_error"] <= 1


def test_acceptance_sample_against_off_by_two_on_a_cts_slice(tmp_path, capsys):
    """Two real CTS runs of the V1_0 quantized ADD models (the sample driver, the broken
    one): every disagreement is the broken driver's, in one cluster."""
    for name, driver in (("A", "sample"), ("B", BROKEN)):
        proc = subprocess.run([sys.executable, "-m", "nncts.cli", "cts", "--driver", driver, "--corpus",
                               "cts/corpus/V1_0", "-k", "add_quant8 or add_broadcast_quant8", "--mode", "sync",
                               "-n", "0", "--report-dir", str(tmp_path / name)],
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert proc.returncode == (0 if name == "A" else 1), proc.stdout + proc.stderr
    doc = _triage_json(capsys, tmp_path / "A", tmp_path / "B")
    assert doc["disagreements"] == doc["counts"]["B"] == doc["compared"] > 0
    [cluster] = doc["clusters"]
    assert (cluster["wrong"], cluster["operation"], cluster["operand_type"], cluster["count"]) == \
        ("B", "ADD", "TENSOR_QUANT8_ASYMM", doc["disagreements"])


def test_run_options_come_from_the_recorded_command_line():
    def meta(line):
        return {"environment": {"command line": line}}
    assert cmd.run_options(meta("nncts cts --no-require-timing --precision strict --wait-limit 12 -n 2")) == \
        {"require_timing": False, "precision": "strict", "wait_limit_s": 12.0}
    assert cmd.run_options(meta("nncts cts --precision=strict --wait-limit=7.5")) == \
        {"require_timing": True, "precision": "strict", "wait_limit_s": 7.5}
    defaults = {"require_timing": True, "precision": "aosp", "wait_limit_s": 30.0}
    # hostile or unreadable: unknown precision, a wait limit that is no number or out of range,
    # an unclosed quote, no command line at all
    assert cmd.run_options(meta("nncts cts --precision lax --wait-limit nan --wait-limit 1e9")) == defaults
    assert cmd.run_options(meta("nncts cts 'unclosed --no-require-timing")) == defaults
    assert cmd.run_options({}) == defaults and cmd.run_options({"environment": "x"}) == defaults
