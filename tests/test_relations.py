"""The metamorphic relations (relations/): each holds on the sample driver and breaks on a
driver that violates it; a batch fault and a layout fault the CTS passes (proved by running
the CTS slice of the operation) are caught by the relations and minimized; the twins are
what they say (hand-checked values); the suite runs through ``nncts relations``."""
import dataclasses
import subprocess
import sys

import numpy as np
import pytest

from harness.locations import CORPUS
from harness.minimize import minimize
from relations import twins
from relations.catalog import RELATIONS, declares_nondeterminism, evaluate, relative_error
from nncts.cli import main
from relations.running import Runner
from runtime import ops
from runtime.drivers.sample import SampleDevice
from runtime.executor import execute
from runtime.nnapi import Device
from runtime.testing.test_model import load_spec
from runtime.types import OperationType
from tests import broken_drivers
from tests.broken_drivers import _PatchedDevice
from tests.cts_run import ROOT, run_cts

_SPECS: dict = {}


def model(test_id: str):
    """The corpus model ``<version>/<spec>/<name>``."""
    version, spec, name = test_id.split("/")
    if spec not in _SPECS:
        _SPECS[spec] = {m.name: m for m in load_spec(CORPUS / version / f"{spec}.json.gz")}
    return _SPECS[spec][name]


def verdict(relation: str, test_id: str, hal=None):
    return evaluate(RELATIONS[relation], model(test_id), Runner(Device(hal or SampleDevice())))


ADD = "V1_0/add/add"                       # ADD of two [2] float32 inputs
ADD_Q8_CHAIN = "V1_0/add_quant8/add_quant8_all_inputs_as_internal"   # three quant8 ADDs
GROUPED = "V1_2/grouped_conv2d/grouped_conv2d_nhwc_none"   # float32 [1, 3, 3, 2], batch 1
GROUPED_CHAIN = "V1_2/grouped_conv2d/grouped_conv2d_nhwc_none_all_inputs_as_internal"
RESIZE_C3 = "V1_3/resize_bilinear_v1_3/resize_bilinear_v1_3_half_pixel_centers_2x14x13x3_to_2x6x7x3"
CONV = "V1_0/conv_float_2/conv_float_2"


@pytest.mark.parametrize("relation,test_id", [
    ("batch", GROUPED), ("batch", "V1_0/add_quant8/add_quant8"), ("layout", RESIZE_C3), ("layout", GROUPED),
    ("layout", GROUPED_CHAIN), ("partition", ADD_Q8_CHAIN), ("permutation", ADD), ("commutation", ADD),
    ("determinism", CONV), ("relaxed", CONV)])
def test_each_relation_holds_on_the_sample_driver(relation, test_id):
    assert verdict(relation, test_id).status == "passed"


def test_the_reference_decides_where_a_relation_applies():
    # a convolution mixes neighbouring elements: permuting its input is no relation of it
    v = verdict("permutation", CONV)
    assert v.status == "not_applicable" and "does not satisfy" in v.message
    assert verdict("partition", ADD).status == "not_applicable"        # one operation
    assert verdict("layout", ADD).status == "not_applicable"           # no layout flag
    assert verdict("relaxed", "V1_0/add_quant8/add_quant8").status == "not_applicable"
    assert verdict("commutation", CONV).status == "not_applicable"    # CONV_2D's input and filter


def test_twins_by_hand():
    tm = model(ADD)                         # inputs [1, 2] and [3, 4] (corpus)
    whole, parts = twins.batch_parts(tm, twins.batch_inputs(tm, False))
    x0 = tm.main.input_indexes[0]
    assert whole.main.operands[x0].data.tolist() == tm.main.operands[x0].data.tolist()
    assert [p.main.operands[x0].data.tolist() for p in parts] == [tm.main.operands[x0].data[:1].tolist(),
                                                                   tm.main.operands[x0].data[1:].tolist()]
    g = model(GROUPED)                      # batch 1: stacked with its reversed image
    stacked, (row0, row1) = twins.batch_parts(g, [g.main.input_indexes[0]])
    x = g.main.operands[g.main.input_indexes[0]].data
    assert stacked.main.operands[g.main.input_indexes[0]].data.shape == (2, *x.shape[1:])
    assert row1.main.operands[g.main.input_indexes[0]].data.reshape(-1).tolist() == x.reshape(-1)[::-1].tolist()
    twin, back = twins.layout_twin(g)       # NHWC [1, 3, 3, 2] -> NCHW [1, 2, 3, 3]
    assert twin.main.operands[g.main.input_indexes[0]].dimensions == [1, 2, 3, 3]
    assert back == {0: (0, 2, 3, 1)}
    assert relative_error(np.array([1.5, 3.0]), np.array([1.0, 2.0])) == 0.5   # max |err| 1 / max(1, 2)


def test_planted_faults_pass_the_cts_slices(tmp_path):
    # every corpus and spec model of the operation, in the default (sync) mode
    for driver, mark, least in (("GroupedConvBatchLeak", "GROUPED_CONV_2D", 300),
                                ("ResizeNchwChannelSwap", "RESIZE_BILINEAR", 200)):
        code, records, out = run_cts(tmp_path / driver, "--driver", f"tests.broken_drivers:{driver}", "-m", mark,
                                     "-n", "0")
        assert code == 0, out[-2000:]
        passed = [r for r in records.values() if r["outcome"] == "passed"]
        assert len(passed) >= least and {r["outcome"] for r in records.values()} <= {"passed", "skipped"}


def test_relations_catch_the_planted_faults_and_minimize_them():
    leak = Device(broken_drivers.GroupedConvBatchLeak())
    v = evaluate(RELATIONS["batch"], model(GROUPED), Runner(leak))
    assert v.status == "failed" and "whole batch against its parts" in v.message
    swap = Device(broken_drivers.ResizeNchwChannelSwap())
    v = evaluate(RELATIONS["layout"], model(RESIZE_C3), Runner(swap))
    assert v.status == "failed" and "other layout's twin" in v.message
    chain = model(GROUPED_CHAIN)
    assert evaluate(RELATIONS["batch"], chain, Runner(leak)).status == "failed"
    small = minimize(chain, lambda c: evaluate(RELATIONS["batch"], c, Runner(leak)).status == "failed")
    assert [op.type for op in small.main.operations] == [OperationType.GROUPED_CONV_2D]


class _PositionalAdd(_PatchedDevice):
    """ADD's last output element (memory order) one too high: depends on position."""

    operation = OperationType.ADD

    def patch(self, ctx, kernel):
        out = np.array(kernel(ctx)[0])
        out.reshape(-1)[-1] += 1
        return [out]


class _LopsidedAdd(_PatchedDevice):
    """Float ADD computes a + b + (a - b) / 1000: not commutative."""

    operation = OperationType.ADD

    def patch(self, ctx, kernel):
        out = np.asarray(kernel(ctx)[0])
        a, b = (np.asarray(v.value) for v in ctx.inputs[:2])
        return [(out + (a - b) / 1000).astype(out.dtype) if out.dtype.kind == "f" else out]


class _JitteryAdd(_PatchedDevice):
    """Float ADD one ULP high on every other execution (within the CTS tolerance)."""

    operation = OperationType.ADD
    count = 0

    def patch(self, ctx, kernel):
        out = np.asarray(kernel(ctx)[0])
        type(self).count += 1
        return [np.nextafter(out, np.inf).astype(out.dtype) if self.count % 2 and out.dtype.kind == "f" else out]


class _DeclaredJitteryAdd(_JitteryAdd):
    nondeterministic = True


class _CoarseRelaxed(SampleDevice):
    """With relaxComputationFloat32toFloat16, float32 results keep 5 significand bits."""

    def run(self, model, request):
        if not model.relax_computation_float32_to_float16:
            return super().run(model, request)
        table = {t: dataclasses.replace(d, execute=self._coarse(d.execute)) for t, d in ops.REGISTRY.items()}
        return execute(model, request, table)

    @staticmethod
    def _coarse(kernel):
        def run(ctx):
            out = [np.asarray(r) for r in kernel(ctx)]
            return [(r.view(np.uint32) & np.uint32(0xFFFC0000)).view(np.float32) if r.dtype == np.float32 else r
                    for r in out]
        return run


@pytest.mark.parametrize("relation,test_id,hal", [
    ("batch", GROUPED, broken_drivers.GroupedConvBatchLeak),
    ("layout", RESIZE_C3, broken_drivers.ResizeNchwChannelSwap),
    ("partition", ADD_Q8_CHAIN, broken_drivers.OffByTwoQuantaAdd),   # alone: 3 ADDs off; split: 2
    ("permutation", ADD, _PositionalAdd),
    ("commutation", ADD, _LopsidedAdd),
    ("determinism", ADD, _JitteryAdd),
    ("relaxed", CONV, _CoarseRelaxed)])
def test_each_relation_breaks_on_a_planted_violation(relation, test_id, hal):
    v = verdict(relation, test_id, hal())
    assert v.status == "failed", v


def test_declared_nondeterminism_is_judged_with_the_cts_tolerance():
    assert declares_nondeterminism(Device(_DeclaredJitteryAdd())) and not declares_nondeterminism(Device(SampleDevice()))
    assert verdict("determinism", ADD, _DeclaredJitteryAdd()).status == "passed"


def test_nncts_relations_fails_writes_and_minimizes(tmp_path):
    report = tmp_path / "report"
    proc = subprocess.run([sys.executable, "-m", "nncts.cli", "relations", "--driver",
                           "tests.broken_drivers:GroupedConvBatchLeak", "--relation", "batch", "--corpus",
                           str(CORPUS / "V1_2" / "grouped_conv2d.json.gz"), "-n", "0", "--report-dir", str(report),
                           "-k", "grouped_conv2d_nhwc_none_all_inputs_as_internal"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    written = sorted(p.name for p in (report / "relations" / "RELATIONS").iterdir())
    assert written == ["batch-grouped_conv2d-grouped_conv2d_nhwc_none_all_inputs_as_internal-minimized.json.gz",
                       "batch-grouped_conv2d-grouped_conv2d_nhwc_none_all_inputs_as_internal.json.gz"], written
    assert "1 failed" in proc.stdout and "GROUPED_CONV_2D" in proc.stdout


@pytest.mark.parametrize("argv,fragment", [
    (["relations", "--relations-seeds", "0"], "--relations-seeds: must be at least 1"),
    (["relations", "--relation", "symmetry"], "invalid choice: 'symmetry'"),
    (["relations", "--relations-budget", "huge"], "invalid choice: 'huge'")])
def test_a_bad_command_line_is_one_line_and_exit_2(argv, fragment, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and fragment in err, err
