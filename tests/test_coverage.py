"""The coverage matrix (``nncts coverage``, cts/coverage): hand-made corpus directories prove
what a model covers; the vendored corpus's measured holes (issue 9) show up; the HTML
renders in headless Chromium."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cts.coverage import axes, effect, report, scan
from harness.locations import CORPUS as DEFAULT_CORPUS, DEFAULT_ROOTS
from runtime.testing.corpus_writer import model_json, write_document
from runtime.testing import test_model as tm
from runtime.types import OperandLifeTime as L, OperandType as T, OperationType as O
from tests.browser import needs_chromium, rendered_dom, screenshot

ACTIVATIONS = ("NONE", "RELU", "RELU1", "RELU6")


#: CONV_2D of arange(9) as [1, 3, 3, 1] with a 2 x 2 filter of ones, SAME padding (NNAPI:
#: padding 0 before, 1 after), stride 1, no bias, by hand: each output is the sum of the 2 x 2
#: window starting there.
CONV_SUMS = np.array([[8, 12, 7], [20, 24, 13], [13, 15, 8]], np.float32)
FUSE_BOUNDS = {0: (-np.inf, np.inf), 1: (0, np.inf), 2: (-1, 1), 3: (0, 6)}


def _conv_model(name: str, version: str, activation: int) -> tm.TestModel:
    """CONV_2D, implicit padding (FL1 form): input [1, 3, 3, 1], filter [1, 2, 2, 1], SAME,
    strides 1, the given fused activation; expected output :data:`CONV_SUMS` clamped by the
    activation (hand calculation)."""
    def const(t, value):
        v = np.asarray(value, np.float32 if t == T.TENSOR_FLOAT32 else np.int32)
        return tm.TestOperand(t, list(v.shape), 0.0, 0, L.CONSTANT_COPY, 1, False, None, v)
    ops = [tm.TestOperand(T.TENSOR_FLOAT32, [1, 3, 3, 1], 0.0, 0, L.SUBGRAPH_INPUT, 1, False, None,
                       np.arange(9, dtype=np.float32).reshape(1, 3, 3, 1)),
           const(T.TENSOR_FLOAT32, np.ones((1, 2, 2, 1))), const(T.TENSOR_FLOAT32, [0.0]),
           const(T.INT32, 1), const(T.INT32, 1), const(T.INT32, 1), const(T.INT32, activation),
           tm.TestOperand(T.TENSOR_FLOAT32, [1, 3, 3, 1], 0.0, 0, L.SUBGRAPH_OUTPUT, 0, False, None,
                       np.clip(CONV_SUMS, *FUSE_BOUNDS[activation]).reshape(1, 3, 3, 1))]
    sg = tm.TestSubgraph(ops, [tm.TestOperation(O.CONV_2D, list(range(7)), [7])], [0], [7])
    return tm.TestModel(name, "conv_cov", version, "V1_0", False, False, 0.0, sg)


def _write(root: Path, version: str, models: list[tm.TestModel]) -> Path:
    write_document(root / version / "conv_cov.json.gz", "conv_cov", version,
                   [model_json(m) for m in models], "tests/test_coverage.py")
    return root


def _cells(doc: dict, op: str) -> dict:
    return {c["key"]: c for c in doc["operations"][op]["cells"]}


@pytest.fixture(scope="module")
def hand_made(tmp_path_factory):
    """A corpus root with one CONV_2D RELU6 model (V1_0) and a specs root with one CONV_2D
    RELU1 model (SPECS)."""
    base = tmp_path_factory.mktemp("cov")
    corpus = _write(base / "corpus", "V1_0", [_conv_model("relu6", "V1_0", 3)])
    specs = _write(base / "specs", "SPECS", [_conv_model("relu1", "SPECS", 2)])
    roots = [corpus, specs]
    return roots, report.matrix(scan.scan(roots), roots)


def test_relu6_model_covers_that_activation_cell_only(hand_made):
    _, doc = hand_made
    cells = _cells(doc, "CONV_2D")
    assert cells["activation=RELU6"]["status"] == "corpus"
    assert cells["activation=RELU6"]["corpus"] == 1
    assert cells["activation=RELU6"]["example"]["corpus"] == "V1_0/conv_cov/relu6"
    assert {a: cells[f"activation={a}"]["corpus"] for a in ACTIVATIONS} == \
        {"NONE": 0, "RELU": 0, "RELU1": 0, "RELU6": 1}
    assert cells["padding_scheme=SAME"]["status"] == "corpus"
    assert cells["layout omitted"]["status"] == "corpus"  # the FL1 form has no layout slot
    assert cells["non-square"]["status"] == "empty"  # 3 x 3
    # exactly one signature row: the FL1 float32 implicit-padding one
    sigs = [c for c in doc["operations"]["CONV_2D"]["cells"] if c["axis"] == "signature" and c["corpus"]]
    assert [c["label"] for c in sigs] == \
        ["FL1: (TENSOR_FLOAT32, TENSOR_FLOAT32, TENSOR_FLOAT32, INT32, INT32, INT32, INT32) -> (TENSOR_FLOAT32)"]
    # nothing else in the table is covered
    assert all(o["totals"]["corpus"] == 0 for name, o in doc["operations"].items() if name != "CONV_2D")


def test_spec_only_cell_counts_as_specs_and_uncovered_cell_is_empty(hand_made):
    _, doc = hand_made
    cells = _cells(doc, "CONV_2D")
    assert cells["activation=RELU1"]["status"] == "specs"
    assert (cells["activation=RELU1"]["corpus"], cells["activation=RELU1"]["specs"]) == (0, 1)
    assert cells["activation=NONE"]["status"] == "empty"
    assert cells["activation=RELU"]["status"] == "empty"
    assert doc["models"] == {"corpus": 1, "specs": 1}


def test_json_schema(hand_made, tmp_path):
    roots, doc = hand_made
    report.write(doc, tmp_path)
    data = json.loads((tmp_path / "coverage.json").read_text())
    assert data["schema"] == 2
    assert set(data) >= {"generated", "roots", "models", "effect", "totals", "per_axis", "operations"}
    assert data["effect"]["analysed"] is True and data["effect"]["runs"] > 0
    assert len(data["operations"]) == 106
    assert set(data["per_axis"]) == {"signature", "enum", "quant", "shape", "optional"}
    for o in data["operations"].values():
        assert set(o["totals"]) == {"cells", "corpus", "specs", "use-only", "empty", "impossible"}
        assert sum(o["totals"][s] for s in report.STATUSES) == o["totals"]["cells"] == len(o["cells"])
        for c in o["cells"]:
            assert set(c) == {"axis", "key", "label", "status", "rule", "corpus", "specs", "example", "effect"}
            assert (c["effect"] is None) == (c["status"] in ("empty", "impossible"))
            assert (c["status"] == "impossible") == bool(c["rule"])
    assert data["totals"]["cells"] == sum(t["cells"] for t in data["per_axis"].values())


def test_impossible_cell_cites_the_rule():
    """LSTM's activation is 0, 1, 3, 4 or 6 (spec): RELU1 impossible with the table's rule;
    TANH is a cell there, and no cell for CONV_2D (a FuseCode)."""
    doc = report.matrix(scan.Hits(), [], [O.LSTM, O.CONV_2D])
    lstm, conv = _cells(doc, "LSTM"), _cells(doc, "CONV_2D")
    assert lstm["activation=RELU1"]["status"] == "impossible"
    assert "is not 0, 1, 3, 4 or 6" in lstm["activation=RELU1"]["rule"]
    assert lstm["activation=TANH"]["status"] == "empty"
    assert "activation=TANH" not in conv


def _op_model(name: str, version: str, op: O, ins: list, outs: list) -> tm.TestModel:
    """One ``op`` over main-subgraph inputs ``ins`` and outputs ``outs``, each ``(type, dims,
    data)`` (float32 data; data None leaves an input with no example value)."""
    def operand(t, dims, life, data):
        v = None if data is None else np.asarray(data, np.float32).reshape(dims)
        return tm.TestOperand(t, list(dims), 0.0, 0, life, int(life != L.SUBGRAPH_OUTPUT), False,
                              None, v)
    operands = [operand(t, d, L.SUBGRAPH_INPUT, v) for t, d, v in ins]
    operands += [operand(t, d, L.SUBGRAPH_OUTPUT, v) for t, d, v in outs]
    n = len(ins)
    sg = tm.TestSubgraph(operands, [tm.TestOperation(op, list(range(n)), list(range(n, len(operands))))],
                         list(range(n)), list(range(n, len(operands))))
    return tm.TestModel(name, "perm_cov", version, version, False, False, 0.0, sg)


@pytest.fixture(scope="module")
def zero_sized(tmp_path_factory):
    """A corpus root with RELU and FLOOR on a zero-sized [0, 2] input (AOSP registers RELU with
    allowZeroSizedInput, FLOOR without)."""
    root = tmp_path_factory.mktemp("zs")
    empty = (T.TENSOR_FLOAT32, (0, 2), np.zeros((0, 2)))
    write_document(root / "V1_2" / "perm_cov.json.gz", "perm_cov", "V1_2",
                   [model_json(_op_model(f"{op.name.lower()}_zero", "V1_2", op, [empty], [empty]))
                    for op in (O.RELU, O.FLOOR)], "tests/test_coverage.py")
    return report.matrix(scan.scan([root]), [root], [O.RELU, O.FLOOR, O.ROI_POOLING, O.RESHAPE])


def test_zero_sized_cell_is_impossible_where_aosp_forbids_it(zero_sized):
    relu, floor = _cells(zero_sized, "RELU"), _cells(zero_sized, "FLOOR")
    assert relu["zero-sized"]["status"] == "corpus" and relu["zero-sized"]["rule"] is None
    assert floor["zero-sized"]["status"] == "impossible"
    assert floor["zero-sized"]["rule"] == (
        "AOSP registers FLOOR without allowZeroSizedInput (common/operations/ElementwiseExecution.cpp); "
        "CpuExecutor's checkNoZeroSizedInput rejects a zero-sized input")
    assert "AOSP registers ROI_POOLING without allowZeroSizedInput" in \
        _cells(zero_sized, "ROI_POOLING")["zero-sized"]["rule"]
    assert _cells(zero_sized, "RESHAPE")["zero-sized"]["rule"] == (
        "AOSP's CPU executor runs RESHAPE itself (common/CpuExecutor.cpp) through "
        "allParametersPresent, which rejects a zero-sized input")


def test_zero_sized_cell_stays_a_cell_where_aosp_allows_it():
    ops = [O.CONV_2D, O.ROI_ALIGN, O.CONCATENATION, O.TRANSPOSE, O.LSTM, O.IF]
    doc = report.matrix(scan.Hits(), [], ops)
    for op in ops:
        assert _cells(doc, op.name)["zero-sized"]["status"] == "empty", op


def test_omitted_cell_is_impossible_only_where_no_row_lacks_the_slot():
    """BATCH_MATMUL (no allowOmittedOperand, adj_x in its only row): impossible; CONV_2D's layout
    (rows without it) and SQUEEZE (allowOmittedOperand) stay cells."""
    doc = report.matrix(scan.Hits(), [], [O.BATCH_MATMUL, O.CONV_2D, O.SQUEEZE, O.SVDF])
    bmm = _cells(doc, "BATCH_MATMUL")
    for k in ("adj_x", "adj_y"):
        assert bmm[f"{k} omitted"]["status"] == "impossible"
        assert bmm[f"{k} omitted"]["rule"] == (
            "AOSP registers BATCH_MATMUL without allowOmittedOperand (common/operations/"
            "BatchMatmulExecution.cpp); CpuExecutor's checkNoOmittedOperand rejects an omitted "
            f"(NO_VALUE) operand; every signature has {k}")
        assert bmm[f"{k} given"]["status"] == "empty"
    assert _cells(doc, "CONV_2D")["layout omitted"]["status"] == "empty"
    assert _cells(doc, "SQUEEZE")["squeeze_dims omitted"]["status"] == "empty"
    assert _cells(doc, "SVDF")["bias omitted"]["status"] == "empty"


def test_negative_axis_is_impossible_where_aosp_checks_axis_nonnegative():
    doc = report.matrix(scan.Hits(), [], [O.CONCATENATION, O.PACK, O.REVERSE, O.GATHER, O.MEAN])
    for op, src in ((O.CONCATENATION, "ConcatenationExecution.cpp"), (O.PACK, "PackExecution.cpp"),
                    (O.REVERSE, "ReverseExecution.cpp")):
        cell = _cells(doc, op.name)["axis=negative"]
        assert cell["status"] == "impossible"
        assert cell["rule"] == f"AOSP {op.name} requires axis >= 0 (common/operations/{src}: prepare checks axis >= 0)"
        assert _cells(doc, op.name)["axis=positive"]["status"] == "empty"
    assert _cells(doc, "GATHER")["axis=negative"]["status"] == "empty"
    assert _cells(doc, "MEAN")["axis=negative"]["status"] == "empty"


def _heatmap_model(name: str, box_quant: tuple[float, int], size: tuple[int, int]) -> tm.TestModel:
    """HEATMAP_MAX_KEYPOINT, TENSOR_QUANT8_ASYMM heatmaps [1, h, w, 1] (NHWC) with
    TENSOR_QUANT16_ASYMM boxes and keypoints at ``box_quant`` (scale, zero point)."""
    (h, w), (bs, bz) = size, box_quant

    def operand(t, dims, scale, zp, life, data):
        return tm.TestOperand(t, list(dims), scale, zp, life, int(life != L.SUBGRAPH_OUTPUT), False,
                              None, data)
    ops = [operand(T.TENSOR_QUANT8_ASYMM, (1, h, w, 1), 0.5, 128, L.SUBGRAPH_INPUT,
                   np.full((1, h, w, 1), 130, np.uint8)),
           operand(T.TENSOR_QUANT16_ASYMM, (1, 4), bs, bz, L.SUBGRAPH_INPUT,
                   np.array([[0, 0, 16, 16]], np.uint16)),
           operand(T.BOOL, (), 0.0, 0, L.CONSTANT_COPY, np.array(False)),
           operand(T.TENSOR_QUANT8_ASYMM, (1, 1), 0.5, 128, L.SUBGRAPH_OUTPUT, np.zeros((1, 1), np.uint8)),
           operand(T.TENSOR_QUANT16_ASYMM, (1, 1, 2), bs, bz, L.SUBGRAPH_OUTPUT,
                   np.zeros((1, 1, 2), np.uint16))]
    sg = tm.TestSubgraph(ops, [tm.TestOperation(O.HEATMAP_MAX_KEYPOINT, [0, 1, 2], [3, 4])], [0, 1], [3, 4])
    return tm.TestModel(name, "heatmap_cov", "V1_2", "V1_2", False, False, 0.0, sg)


def test_quant_cells_the_spec_fixes_are_impossible(tmp_path):
    """NNAPI types.spec fixes TENSOR_QUANT16_ASYMM boxes at scale 0.125, zero point 0: a
    HEATMAP_MAX_KEYPOINT model with such boxes covers zero point 0 and scale < 1; zero point mid
    / extreme and scale > 1 are impossible, citing types.spec and the fixed slots."""
    write_document(tmp_path / "V1_2" / "heatmap_cov.json.gz", "heatmap_cov", "V1_2",
                   [model_json(_heatmap_model("boxes_fixed", (0.125, 0), (2, 2)))],
                   "tests/test_coverage.py")
    cells = _cells(report.matrix(scan.scan([tmp_path]), [tmp_path], [O.HEATMAP_MAX_KEYPOINT]),
                   "HEATMAP_MAX_KEYPOINT")
    q = "TENSOR_QUANT16_ASYMM"
    assert cells[f"{q} zp=0"]["status"] == "corpus" and cells[f"{q} scale<1"]["status"] == "corpus"
    for key in (f"{q} zp=mid", f"{q} zp=extreme", f"{q} scale>1"):
        assert cells[key]["status"] == "impossible", key
        assert cells[key]["rule"] == (
            "NNAPI types.spec fixes the quantization of every TENSOR_QUANT16_ASYMM operand of "
            "HEATMAP_MAX_KEYPOINT (boxes: scale 0.125, zero point 0; keypoints: scale 0.125, zero point 0)")
    # the heatmaps' TENSOR_QUANT8_ASYMM is not fixed: its cells stay cells
    assert cells["TENSOR_QUANT8_ASYMM zp=extreme"]["status"] == "empty"


def test_fixed_quant_rule_needs_every_slot_fixed_and_none_in_the_cell():
    """The other detection / ROI operations and QUANTIZED_16BIT_LSTM's cell state (scale 2^-11)
    follow the same rule; QUANTIZED_LSTM's TENSOR_QUANT16_SYMM operands (no fixed scale) and a
    slot without ``fixed_quant`` next to fixed ones keep their cells."""
    from cts.coverage import axes
    from runtime import ops
    from runtime.ops.base import OperationDef, sig, tensor
    boxes = [O.AXIS_ALIGNED_BBOX_TRANSFORM, O.BOX_WITH_NMS_LIMIT, O.GENERATE_PROPOSALS,
             O.ROI_ALIGN, O.ROI_POOLING]
    doc = report.matrix(scan.Hits(), [], [*boxes, O.QUANTIZED_16BIT_LSTM, O.QUANTIZED_LSTM])
    for op in boxes:
        cells = _cells(doc, op.name)
        for k in ("zp=mid", "zp=extreme", "scale>1"):
            assert "NNAPI types.spec fixes" in cells[f"TENSOR_QUANT16_ASYMM {k}"]["rule"], (op, k)
        assert cells["TENSOR_QUANT16_ASYMM zp=0"]["status"] == "empty"
        assert cells["TENSOR_QUANT16_ASYMM scale<1"]["status"] == "empty"
    gp = _cells(doc, "GENERATE_PROPOSALS")
    assert "(anchors: scale 0.125, zero point 0)" in gp["TENSOR_QUANT16_SYMM scale>1"]["rule"]
    lstm16 = _cells(doc, "QUANTIZED_16BIT_LSTM")["TENSOR_QUANT16_SYMM scale>1"]
    assert lstm16["status"] == "impossible" and "prev_cell_state: scale 0.00048828125" in lstm16["rule"]
    assert _cells(doc, "QUANTIZED_LSTM")["TENSOR_QUANT16_SYMM scale>1"]["status"] == "empty"
    q = T.TENSOR_QUANT16_ASYMM
    base = ops.REGISTRY[O.ROI_ALIGN]
    mixed = OperationDef(O.ROI_ALIGN, (sig(3, [tensor("a", q, fixed_quant=(0.125, 0)), tensor("b", q)],
                                            [tensor("c", q, fixed_quant=(0.125, 0))]),),
                         base.prepare, base.execute)
    assert axes._quant_rule(mixed, q, "TENSOR_QUANT16_ASYMM zp=mid") == ""
    big = OperationDef(O.ROI_ALIGN, (sig(3, [tensor("a", q, fixed_quant=(2.0, 0))], []),),
                       base.prepare, base.execute)
    assert axes._quant_rule(big, q, "TENSOR_QUANT16_ASYMM scale>1") == ""
    assert axes._quant_rule(big, q, "TENSOR_QUANT16_ASYMM scale<1") != ""


def test_non_square_cell_is_impossible_where_the_spec_makes_input_0_square(tmp_path):
    """HEATMAP_MAX_KEYPOINT heatmaps are [num_boxes, heatmap_size, heatmap_size, num_keypoints]:
    its non-square cell is impossible (a square model covers nothing there); ROI_ALIGN's stays
    a cell."""
    write_document(tmp_path / "V1_2" / "heatmap_cov.json.gz", "heatmap_cov", "V1_2",
                   [model_json(_heatmap_model("square", (0.125, 0), (3, 3)))], "tests/test_coverage.py")
    doc = report.matrix(scan.scan([tmp_path]), [tmp_path], [O.HEATMAP_MAX_KEYPOINT, O.ROI_ALIGN])
    cell = _cells(doc, "HEATMAP_MAX_KEYPOINT")["non-square"]
    assert cell["status"] == "impossible" and cell["corpus"] == 0
    assert cell["rule"] == ("NNAPI types.spec: HEATMAP_MAX_KEYPOINT input 0 (heatmaps) has equal height "
                            "and width (common/operations/HeatmapMaxKeypointExecution.cpp: prepare "
                            "checks it)")
    assert _cells(doc, "HEATMAP_MAX_KEYPOINT")["batch>1"]["status"] == "empty"
    assert _cells(doc, "ROI_ALIGN")["non-square"]["status"] == "empty"


def test_main_input_without_example_value_counts_as_omitted(tmp_path):
    """A main-subgraph input with no example data is passed with no value (AOSP's CIFG LSTM
    tests omit weights so): it covers "omitted", not "given"."""
    model = _op_model("squeeze_omitted", "V1_1", O.SQUEEZE,
                      [(T.TENSOR_FLOAT32, (1, 2), np.zeros((1, 2))), (T.TENSOR_INT32, (0,), None)],
                      [(T.TENSOR_FLOAT32, (2,), np.zeros(2))])
    write_document(tmp_path / "V1_1" / "perm_cov.json.gz", "perm_cov", "V1_1", [model_json(model)],
                   "tests/test_coverage.py")
    cells = _cells(report.matrix(scan.scan([tmp_path]), [tmp_path], [O.SQUEEZE]), "SQUEEZE")
    assert cells["squeeze_dims omitted"]["status"] == "corpus"
    assert cells["squeeze_dims given"]["status"] == "empty"


def test_every_operation_names_its_aosp_source():
    from runtime import ops
    assert len(ops.REGISTRY) == 106
    for op, d in ops.REGISTRY.items():
        assert d.aosp_source == "CpuExecutor.cpp" or re.fullmatch(r"\w+Execution\.cpp", d.aosp_source), op


def test_no_quant_cells_without_a_quantized_signature():
    doc = report.matrix(scan.Hits(), [], [O.FLOOR, O.ADD])
    assert not [c for c in doc["operations"]["FLOOR"]["cells"] if c["axis"] == "quant"]
    assert "TENSOR_QUANT8_ASYMM zp=mid" in _cells(doc, "ADD")


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nncts.cli", "coverage", *args],
                          capture_output=True, text=True, timeout=300)


def test_cli_missing_or_malformed_corpus_exits_2(tmp_path):
    r = _cli("--corpus", str(tmp_path / "nope"), "--out", str(tmp_path))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"nncts coverage: error: --corpus: no such directory: {tmp_path / 'nope'}"]
    bad = tmp_path / "bad" / "V1_0"
    bad.mkdir(parents=True)
    (bad / "x.json.gz").write_bytes(b"not gzip")
    r = _cli("--corpus", str(tmp_path / "bad"), "--out", str(tmp_path))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "malformed corpus document" in r.stderr
    r = _cli("--op", "NOT_AN_OP", "--out", str(tmp_path))
    assert r.returncode == 2 and "unknown operation 'NOT_AN_OP'" in r.stderr


def test_cli_writes_table_json_and_html(hand_made, tmp_path):
    roots, _ = hand_made
    r = _cli("--corpus", str(roots[0]), "--corpus", str(roots[1]), "--out", str(tmp_path), "--op", "CONV_2D")
    assert r.returncode == 0, r.stderr
    assert re.search(r"^CONV_2D\s+\d+\s+\d+\s+1\s+", r.stdout, re.M)  # one cell by specs only
    # the deciding swap: RELU6 -> NONE lets the sums above 6 through (hand calculation)
    assert re.search(r"^\s+corpus\s+enum\s+activation = RELU6  \(activation RELU6 -> NONE in V1_0/conv_cov/relu6\)$",
                     r.stdout, re.M)
    assert re.search(r"^\s+empty\s+enum\s+activation = NONE$", r.stdout, re.M)
    assert list(json.loads((tmp_path / "coverage.json").read_text())["operations"]) == ["CONV_2D"]
    assert (tmp_path / "coverage.html").exists()


@pytest.fixture(scope="module")
def vendored_hits():
    return scan.scan(DEFAULT_ROOTS)


@pytest.fixture(scope="module")
def vendored(vendored_hits):
    return report.matrix(vendored_hits, DEFAULT_ROOTS)


@pytest.fixture(scope="module")
def corpus_only():
    return report.matrix(scan.scan([DEFAULT_CORPUS]), [DEFAULT_CORPUS], [O.CONV_2D, O.DEPTHWISE_CONV_2D],
                         effect=False)  # use counts suffice for empty cells


def test_vendored_corpus_leaves_conv_relu1_relu6_empty(corpus_only):
    """Issue 9 measured it: no CONV_2D (or DEPTHWISE_CONV_2D) corpus model uses a fused RELU1
    or RELU6."""
    for op in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        cells = _cells(corpus_only, op)
        assert cells["activation=RELU1"]["status"] == "empty"
        assert cells["activation=RELU6"]["status"] == "empty"
        assert cells["activation=NONE"]["status"] == "corpus"


def test_vendored_impossible_cells(vendored):
    """AOSP's permissions: 72 operations reject zero-sized inputs, BATCH_MATMUL's flags can't be
    omitted, CONCATENATION / PACK / REVERSE take no negative axis; no corpus model or spec
    covers a cell marked impossible (the table's AOSP facts agree with the corpus)."""
    cells = [(name, c) for name, o in vendored["operations"].items() for c in o["cells"]]
    impossible = [(name, c["key"]) for name, c in cells if c["status"] == "impossible"]
    assert sum(k == "zero-sized" for _, k in impossible) == 72
    assert {(n, k) for n, k in impossible if k.endswith(" omitted")} == \
        {("BATCH_MATMUL", "adj_x omitted"), ("BATCH_MATMUL", "adj_y omitted")}
    assert {n for n, k in impossible if k == "axis=negative"} == {"CONCATENATION", "PACK", "REVERSE"}
    assert {(n, k) for n, k in impossible if k == "non-square"} == {("HEATMAP_MAX_KEYPOINT", "non-square")}
    # types.spec's fixed quantization: 6 operations' TENSOR_QUANT16_ASYMM boxes (zero point mid /
    # extreme, scale > 1), GENERATE_PROPOSALS's and QUANTIZED_16BIT_LSTM's TENSOR_QUANT16_SYMM
    assert sum(k.startswith("TENSOR_QUANT16") for _, k in impossible) == 6 * 3 + 2
    assert not [(n, c["key"]) for n, c in cells if c["rule"] and (c["corpus"] or c["specs"])]
    conv = _cells(vendored, "CONV_2D")
    assert conv["zero-sized"]["status"] == "corpus"  # AOSP's zero-sized CONV_2D models
    # AOSP's CIFG LSTM models pass the input gate's weights with no value
    assert _cells(vendored, "LSTM")["input_to_input_weights omitted"]["corpus"] > 0


def test_our_specs_leave_no_cell_empty_and_test_every_operation(vendored):
    """Issue 9's acceptance: with the vendored corpus and our built specs, every cell of all
    106 operations is covered or impossible (with its rule), and every operation has cells our
    specs cover."""
    empty = [(n, c["key"]) for n, o in vendored["operations"].items() for c in o["cells"]
             if c["status"] == "empty"]
    assert empty == []
    assert all(c["rule"] for o in vendored["operations"].values() for c in o["cells"]
               if c["status"] == "impossible")
    assert [n for n, o in vendored["operations"].items() if not any(c["specs"] for c in o["cells"])] == []


def test_instance_normalization_is_covered_only_by_specs(vendored):
    o = vendored["operations"]["INSTANCE_NORMALIZATION"]
    assert o["totals"]["corpus"] == 0 and o["totals"]["specs"] > 0
    assert all(c["corpus"] == 0 for c in o["cells"])
    assert len(vendored["operations"]) == 106


def _batch_matmul_doc(tmp_path, with_specs: bool) -> dict:
    """The BATCH_MATMUL matrix over the vendored corpus's BATCH_MATMUL models (and our dense
    specs when ``with_specs``), copied into ``tmp_path`` as roots."""
    corpus = tmp_path / "corpus" / "AIDL_V2"
    corpus.mkdir(parents=True)
    shutil.copy(DEFAULT_CORPUS / "AIDL_V2" / "batch_matmul.json.gz", corpus)
    roots = [tmp_path / "corpus"]
    if with_specs:
        specs = tmp_path / "specs" / "SPECS"
        specs.mkdir(parents=True)
        shutil.copy(DEFAULT_ROOTS[-1] / "SPECS" / "dense.json.gz", specs)
        roots.append(tmp_path / "specs")
    return report.matrix(scan.scan(roots), roots, [O.BATCH_MATMUL])


def test_adjoint_cells_are_use_only_in_the_corpus_and_decided_by_square_specs(tmp_path):
    """Issue 24: every corpus BATCH_MATMUL model with an adjoint has non-square matrices, so
    swapping adj_x / adj_y gives an invalid model and no expected output depends on the flag
    (a driver ignoring it on square matrices passes them all); our square, non-symmetric specs
    (cts/specs/dense.py) decide it."""
    corpus_only = _cells(_batch_matmul_doc(tmp_path / "a", False), "BATCH_MATMUL")
    for key in ("adj_x=true", "adj_y=true", "adj_x given", "adj_y given"):
        assert corpus_only[key]["status"] == "use-only", key
        assert corpus_only[key]["corpus"] > 0 and corpus_only[key]["effect"]["effect"] == "use-only"
    doc = _batch_matmul_doc(tmp_path / "b", True)
    cells = _cells(doc, "BATCH_MATMUL")
    assert doc["operations"]["BATCH_MATMUL"]["totals"]["use-only"] == 0
    assert cells["adj_x=true"]["status"] == "specs"
    assert cells["adj_x=true"]["effect"]["test"].startswith("SPECS/dense/batch_matmul_float32_square_adj_1")
    assert cells["adj_x=true"]["effect"]["swap"] == "adj_x true -> false"
    # the signature and shape axes have no swap: use coverage, said so
    assert cells["sig0"]["effect"]["effect"] == "no swap" and cells["sig0"]["status"] == "corpus"


def test_quantization_a_data_movement_operation_ignores_keeps_use_coverage():
    """RESHAPE copies stored values (NNAPI: output quantization equal to the input's), so no
    quantization can decide its outputs: its quant cells count by use, with the reason;
    CONV_2D's zero point decides (swapping it changes the real inputs)."""
    roots = [DEFAULT_CORPUS / "V1_0" / "reshape_quant8.json.gz", DEFAULT_CORPUS / "V1_0" / "conv_quant8.json.gz"]
    doc = report.matrix(scan.scan(roots), roots, [O.RESHAPE, O.CONV_2D])
    reshape = _cells(doc, "RESHAPE")
    quant = [c for c in reshape.values() if c["axis"] == "quant" and c["corpus"]]
    assert quant and all(c["status"] == "corpus" and c["effect"]["effect"] == "no swap"
                         and "moving or selecting stored values" in c["effect"]["swap"] for c in quant)
    conv = _cells(doc, "CONV_2D")
    zp = [c for c in conv.values() if c["axis"] == "quant" and c["corpus"] and "zp=" in c["key"]]
    assert zp and all(c["effect"]["effect"] == "decisive" for c in zp)


def test_our_specs_leave_no_cell_use_only(vendored):
    """Issue 24's acceptance: with the vendored corpus and our built specs, every cell with a
    swap is decided by some test (0 use-only cells; 55 before the specs of issue 24: enum 13,
    quant 33, optional 9); the faults the issue names sit in decided cells."""
    use_only = [(n, c["key"]) for n, o in vendored["operations"].items() for c in o["cells"]
                if c["status"] == "use-only"]
    assert use_only == []
    assert vendored["totals"]["use-only"] == 0 and vendored["effect"]["analysed"]
    nms = _cells(vendored, "BOX_WITH_NMS_LIMIT")["nms_kernel=linear"]
    assert nms["status"] == "corpus" and nms["effect"]["swap"] == "nms_kernel linear -> hard"
    for key in ("adj_x=true", "adj_y=true"):
        assert _cells(vendored, "BATCH_MATMUL")[key]["status"] == "specs"
    # cells with no swap say why
    assert all(c["effect"]["swap"] for o in vendored["operations"].values() for c in o["cells"]
               if c["effect"] and c["effect"]["effect"] == "no swap")


def test_declared_quantization_invariances_hold_on_the_reference(vendored_hits):
    """effect.QUANT_INVARIANT exempts quant cells from the effect analysis by the NNAPI
    definitions of the operations; an entry that were wrong would hide a cell some test should
    decide. Forcing the swaps on the first three uses of every exempted cell must
    change no output (checked against the reference; it found ROI_POOLING's zero point, which
    an empty bin stores)."""
    analysis, checked = effect.Analysis(), 0
    for op, (params, _) in effect.QUANT_INVARIANT.items():
        for cell in axes.cells_for(op):
            if cell.axis != "quant" or ("zp" if " zp=" in cell.key else "scale") not in params:
                continue
            for use in vendored_hits.uses.get((op, cell.key), [])[:3]:
                checked += 1
                assert analysis.decisive_swap(cell, use, force=True) == "", (op.name, cell.key, use.model.test_id)
    assert checked > 600


@needs_chromium
def test_html_renders_a_section_per_operation_with_empty_cells_marked(hand_made, tmp_path):
    _, doc = hand_made
    html = report.write(doc, tmp_path)[1]
    dom = rendered_dom(tmp_path, html)
    sections = re.findall(r'<section class="operation" id="(\w+)"><h2>(\w+)</h2>', dom)
    assert len(sections) == 106 and all(a == b for a, b in sections)
    conv = dom[dom.index('<section class="operation" id="CONV_2D">'):]
    conv = conv[:conv.index("</section>")]
    rows = {re.findall(r"<td[^>]*>(.*?)</td>", m, re.S)[1]: m
            for m in re.findall(r'<tr class="\w+">.*?</tr>', conv, re.S)}
    assert 'class="status-empty empty">EMPTY<' in rows["activation = NONE"]
    assert 'class="status-corpus corpus">corpus<' in rows["activation = RELU6"]
    assert 'class="status-specs specs">specs<' in rows["activation = RELU1"]
    screenshot(tmp_path, html)
