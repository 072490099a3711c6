"""The example third-party driver plug-in (``examples/nncts-example-driver``, installed with
``pip install --no-deps -e examples/nncts-example-driver``): found through its entry point,
its own kernels checked against hand-calculated values, its supported-operation list honest,
a malformed model rejected, and certified by the CTS through the ``nncts`` CLI in a
subprocess, the way a vendor certifies a driver."""
from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from harness.records import read_records
from runtime.loader import available_drivers, load_driver
from runtime.errors import HalError
from runtime.testing.hal_convert import to_hal_model
from runtime.testing.test_model import iter_corpus
from runtime.types import ErrorStatus, OperandType as T, OperationType as O
from tests.cts_run import ROOT

INSTALL = ".venv/bin/pip install -q --no-deps -e examples/nncts-example-driver"

#: Passed CTS items of the example driver in the default modes over the models made only of its
#: operations, as measured (corpus 1224 + own specs 108; 4065 skipped: unsupported_by_driver
#: 2280, feature_level 1785; 18 s on one core of a 2-core machine).
MIN_PASSED = 1332
#: The only acceptable kinds of skip: never a pass in disguise.
SKIP_KINDS = {"unsupported_by_driver", "feature_level", "not_implemented"}


@pytest.fixture(scope="module")
def pkg():
    try:
        import nncts_example_driver
    except ImportError:
        pytest.fail(f"the example driver is not installed: {INSTALL}", pytrace=False)
    return nncts_example_driver


def corpus_model(test_id: str):
    version, spec, _ = test_id.split("/")
    return next(m for m in iter_corpus([ROOT / "cts" / "corpus" / version]) if m.test_id == test_id)


# --- (1) the entry point ----------------------------------------------------------------------

def test_entry_point_makes_driver_example_work(pkg):
    assert "example" in available_drivers()
    device = load_driver("example")
    assert isinstance(device, pkg.ExampleDevice)
    assert device.get_name() == "example" and device.get_feature_level() == 3
    listed = subprocess.run([sys.executable, "-m", "nncts.cli", "drivers"], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert listed.returncode == 0 and "example" in listed.stdout.split(), listed.stdout + listed.stderr


# --- (2) the driver's own kernels: golden values by hand calculation ----------------------------

def f32(*rows):
    return np.array(rows, np.float32)


def test_kernels_golden_values_by_hand(pkg):
    """Every expected value below is worked out by hand from the NNAPI definitions (not by
    nncts's reference kernels)."""
    k = pkg.KERNELS
    a, b = f32([1, -2, 3]), f32([0.5], [-4])  # [1,3] + [2,1] broadcasts to [2,3]
    np.testing.assert_array_equal(k[O.ADD](a, b, np.int32(0)), f32([1.5, -1.5, 3.5], [-3, -6, -1]))
    np.testing.assert_array_equal(k[O.ADD](a, b, np.int32(1)), f32([1.5, 0, 3.5], [0, 0, 0]))      # RELU
    np.testing.assert_array_equal(k[O.ADD](a, b, np.int32(2)), f32([1, -1, 1], [-1, -1, -1]))      # RELU1
    np.testing.assert_array_equal(k[O.SUB](f32(5, 1), f32(2), np.int32(0)), f32(3, -1))
    np.testing.assert_array_equal(k[O.SUB](f32(5, 1), f32(2), np.int32(1)), f32(3, 0))
    np.testing.assert_array_equal(k[O.MUL](f32(2, -3), f32(4, 4), np.int32(0)), f32(8, -12))
    np.testing.assert_array_equal(k[O.MUL](f32(2, -3), f32(4, 4), np.int32(3)), f32(6, 0))          # RELU6
    # zero-sized (FL3): a 0 pairs with 1 and gives 0
    assert k[O.ADD](np.zeros((0, 3), np.float32), f32([1, 2, 3]), np.int32(0)).shape == (0, 3)
    np.testing.assert_array_equal(k[O.RELU](f32(-1, 0, 2.5)), f32(0, 0, 2.5))
    np.testing.assert_array_equal(k[O.RELU1](f32(-2, 0.5, 3)), f32(-1, 0.5, 1))
    np.testing.assert_array_equal(k[O.RELU6](f32(-1, 3, 7)), f32(0, 3, 6))
    assert np.isnan(k[O.RELU](f32(np.nan))[0])
    # logistic(0) = 1/2; logistic(ln 3) = 1/(1 + 1/3) = 3/4; logistic(-ln 3) = 1/4; saturation
    np.testing.assert_allclose(k[O.LOGISTIC](f32(0, np.log(3), -np.log(3), -1000, 1000)),
                               f32(0.5, 0.75, 0.25, 0, 1), rtol=1e-6)
    # tanh(ln 2) = (2 - 1/2) / (2 + 1/2) = 0.6
    np.testing.assert_allclose(k[O.TANH](f32(0, np.log(2))), f32(0, 0.6), rtol=1e-6)
    np.testing.assert_array_equal(k[O.FLOOR](f32(-1.5, 2.7, 3)), f32(-2, 2, 3))
    # FULLY_CONNECTED: rows [1,2], [3,4] times weights [[1,0],[1,1],[0,-1]] plus bias [0.5,0,1]:
    # row 1: [1+0.5, 1+2, -2+1] = [1.5, 3, -1]; row 2: [3+0.5, 3+4, -4+1] = [3.5, 7, -3]
    x, w, bias = f32([1, 2], [3, 4]), f32([1, 0], [1, 1], [0, -1]), f32(0.5, 0, 1)
    np.testing.assert_array_equal(k[O.FULLY_CONNECTED](x, w, bias, np.int32(0)), f32([1.5, 3, -1], [3.5, 7, -3]))
    np.testing.assert_array_equal(k[O.FULLY_CONNECTED](x.reshape(1, 2, 2), w, bias, np.int32(1)),
                                  f32([1.5, 3, 0], [3.5, 7, 0]))  # rank 3 input flattened to [2, 2]
    assert k[O.RESHAPE](np.arange(6, dtype=np.float32), np.array([3, -1], np.int32)).shape == (3, 2)
    for bad in (lambda: k[O.ADD](a, b, np.int32(7)),                       # not a FuseCode
                lambda: k[O.RESHAPE](f32(1, 2, 3), np.array([2, -1], np.int32)),   # 3 elements
                lambda: k[O.FULLY_CONNECTED](f32(1, 2, 3), w, bias, np.int32(0))):  # 3 % 2 != 0
        with pytest.raises(ValueError):
            bad()


def test_supported_operations_are_honest(pkg):
    device = load_driver("example")
    add = to_hal_model(corpus_model("V1_0/add/add"))
    assert device.get_supported_operations(add) == [True]
    relaxed = to_hal_model(corpus_model("V1_1/add_relaxed/add_relaxed"))
    assert device.get_supported_operations(relaxed) == [True]
    for other in (T.TENSOR_FLOAT16, T.TENSOR_INT32):  # FL3 float16: other type; int32 ADD: FL4 too
        m = copy.deepcopy(add)
        for i in (0, 1, 3):
            m.main.operands[i].type = other
        assert device.get_supported_operations(m) == [False], other.name
        with pytest.raises(HalError) as e:
            device.prepare_model(m)
        assert e.value.status == ErrorStatus.GENERAL_FAILURE
    mixed = to_hal_model(corpus_model("V1_0/conv_1_h3_w2_SAME/conv_1_h3_w2_SAME_all_inputs_as_internal"))
    assert [op.type for op in mixed.main.operations] == [O.ADD, O.CONV_2D]
    assert device.get_supported_operations(mixed) == [True, False]
    quant = to_hal_model(corpus_model("V1_0/add_quant8/add_quant8"))
    assert device.get_supported_operations(quant) == [False]


def test_malformed_model_is_invalid_argument(pkg):
    device = load_driver("example")
    model = to_hal_model(corpus_model("V1_0/add/add"))
    model.main.operations[0].inputs[1] = 99  # no such operand
    for call in (device.get_supported_operations, device.prepare_model):
        with pytest.raises(HalError) as e:
            call(model)
        assert e.value.status == ErrorStatus.INVALID_ARGUMENT


# --- (3) certification through the CLI ----------------------------------------------------------

def only_ops_expression(ops) -> str:
    """A ``-m`` expression selecting the test models made only of ``ops``."""
    names = sorted(O(op).name for op in ops)
    others = [o.name for o in O if o.name not in names]
    return f"({' or '.join(names)}) and not ({' or '.join(others)})"


def certify(driver: str, extra_args: list[str], tmp_path: Path) -> list[dict]:
    """``nncts cts --driver DRIVER EXTRA_ARGS`` in a subprocess (default modes), then the
    certification checks on its report: exit code 0, no failed record, every skip of an
    honest kind, summary.json agreeing. Returns the outcome records."""
    report = tmp_path / "report"
    proc = subprocess.run([sys.executable, "-m", "nncts.cli", "cts", "--driver", driver,
                           "--report-dir", str(report), *extra_args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    out = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.returncode == 0, out
    records = list(read_records(report / "outcomes.jsonl"))
    assert records, out
    failed = [f"{r['id']}: {r['message']}" for r in records if r["outcome"] not in ("passed", "skipped")]
    assert not failed, "\n".join(failed[:20])
    odd = [f"{r['id']}: {r['skip_kind']!r} {r['message']}" for r in records
           if r["outcome"] == "skipped" and r.get("declined", r["skip_kind"]) not in SKIP_KINDS]
    assert not odd, "\n".join(odd[:20])
    totals = json.loads((report / "summary.json").read_text())["totals"]
    assert totals.get("failed", 0) == 0
    assert totals["passed"] == sum(r["outcome"] == "passed" for r in records)
    return records


def test_certified_in_process(pkg, tmp_path):
    start = time.monotonic()
    records = certify("example", ["-m", only_ops_expression(pkg.KERNELS)], tmp_path)
    passed = [r for r in records if r["outcome"] == "passed"]
    assert len(passed) >= MIN_PASSED, f"{len(passed)} passed in {time.monotonic() - start:.0f} s"
    # every default mode ran and passed something (coupling: quant8 models only, all skipped)
    modes = {r["mode"] for r in passed}
    assert modes == {"sync", "async", "burst", "fenced", "reusable", "memory", "device", "dynamic", "insufficient",
                     "cache"}, modes
    assert {op for r in passed for op in r["operations"]} == {O(op).name for op in pkg.KERNELS}


def test_certified_out_of_process(pkg, tmp_path):
    """The same certification with the driver in its own process (--driver-process: served
    over the HAL protocol by runtime.remote.host), as a vendor whose driver is not Python would run
    it: the same passes, no driver crash or hang."""
    records = certify("example", ["--driver-process", "-m", only_ops_expression(pkg.KERNELS)], tmp_path)
    passed = [r for r in records if r["outcome"] == "passed"]
    assert len(passed) >= MIN_PASSED
    assert not [r for r in records if r.get("driver_incident")]
