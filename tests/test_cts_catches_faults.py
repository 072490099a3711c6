"""The CTS can fail: drivers with planted faults (tests/broken_drivers.py) fail the tests
that exercise the fault, and only those; the sample driver passes the same selection."""
import pytest

from tests.cts_run import run_cts

SELECTION = ["-k", "V1_0 or V1_1"]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    code, records, out = run_cts(tmp_path_factory.mktemp("sample"), "--driver", "sample", *SELECTION)
    assert code == 0, out[-3000:]
    return records


def test_sample_driver_passes_every_fl1_fl2_model(baseline):
    # 333 V1_0 + 474 V1_1 models (counts from the corpus INDEX.json)
    assert len(baseline) == 807
    assert {r["outcome"] for r in baseline.values()} == {"passed"}


def test_off_by_two_quanta_in_add_is_caught(tmp_path, baseline):
    code, records, out = run_cts(tmp_path, "--driver", "tests.broken_drivers:OffByTwoQuantaAdd", *SELECTION)
    assert code == 1
    failed = {i for i, r in records.items() if r["outcome"] == "failed"}
    assert {"V1_0/add_quant8/add_quant8",
            "V1_0/add_broadcast_quant8/add_broadcast_quant8"} <= failed
    assert records["V1_0/add/add"]["outcome"] == "passed"  # float ADD is untouched
    assert all("ADD" in records[i]["operations"] for i in failed)
    assert "elements off" in records["V1_0/add_quant8/add_quant8"]["message"]


def test_dropped_fused_activation_is_caught(tmp_path, baseline):
    code, records, out = run_cts(tmp_path, "--driver", "tests.broken_drivers:DropsFusedActivation", *SELECTION)
    assert code == 1
    failed = {i for i, r in records.items() if r["outcome"] == "failed"}
    # these corpus models use RELU / RELU1 / RELU6 fused activations that clip real values
    assert {"V1_0/conv_float_2/conv_float_2", "V1_0/fully_connected_float_2/fully_connected_float_2",
            "V1_0/max_pool_float_3/max_pool_float_3", "V1_0/avg_pool_float_4/avg_pool_float_4",
            "V1_0/max_pool_quant8_3/max_pool_quant8_3"} <= failed
    assert records["V1_0/conv_float_channels/conv_float_channels"]["outcome"] == "passed"  # FuseCode NONE


def test_expect_failure_models_must_fail(tmp_path):
    # concat_invalid_rank: the front end rejects it while building (runtime_rejected, not run);
    # strided_slice_invalid: the sample driver rejects it at prepare_model (INVALID_ARGUMENT,
    # BAD_DATA from Compilation.finish): the only pass (tests/test_expect_failure.py has the rest)
    code, records, out = run_cts(tmp_path, "-k", "concat_invalid_rank or strided_slice_invalid")
    assert code == 0, out[-2000:]
    by_spec = {(r["id"].split("/")[1], r["outcome"], r["skip_kind"]) for r in records.values()}
    assert by_spec == {("concat_invalid_rank", "skipped", "runtime_rejected"),
                       ("strided_slice_invalid", "passed", "")}, by_spec


@pytest.mark.parametrize("driver,modes,failing_mode,fragment", [
    ("TimingNotMeasured", "sync,burst", "sync", "timing was requested but not reported"),
    ("LostAsyncCallback", "sync,async", "async", "never notified the execution callback"),
    ("WrongOutputShape", "sync,dynamic", "dynamic", "dimensions [2, 2, 2, 1], expected [1, 2, 2, 1]"),
    ("CacheAcceptsCorruption", "sync,cache", "cache", "after a foreign cache"),
])
def test_execution_seam_faults_are_caught(tmp_path, driver, modes, failing_mode, fragment):
    code, records, out = run_cts(tmp_path, "--driver", f"tests.broken_drivers:{driver}", "--mode", modes,
                                 "--wait-limit", "0.5", "-k", "V1_0 and relu_float_1")
    assert code == 1, out[-2000:]
    by_mode = {}
    for r in records.values():
        by_mode.setdefault(r["mode"], []).append(r)
    assert failing_mode in by_mode
    failed = [r for r in by_mode[failing_mode] if r["outcome"] == "failed"]
    assert len(failed) == len(by_mode[failing_mode]) == 2  # relu_float_1 and its internal-inputs twin
    assert all(fragment in r["message"] for r in failed), failed[0]["message"]
    if driver == "LostAsyncCallback":  # every other path still works
        assert all(r["outcome"] == "passed" for r in by_mode["sync"])


def _dilation_of(tm) -> int:
    """Largest dilation factor of the model's convolutions (1 when it has none): the last two
    inputs of a 13-input CONV_2D or 14-input DEPTHWISE_CONV_2D, or of an implicit-padding
    form whose input 7 (8) is the BOOL layout flag."""
    from runtime.types import OperandType as T
    best = 1
    for op in tm.main.operations:
        n = {"CONV_2D": (13, 7), "DEPTHWISE_CONV_2D": (14, 8)}.get(op.type.name)
        if n is None:
            continue
        explicit_n, layout_at = n
        ins = [tm.main.operands[i] for i in op.inputs]
        if len(ins) == explicit_n or (len(ins) == layout_at + 3 and ins[layout_at].type == T.BOOL):
            best = max(best, *(int(o.data) for o in ins[-2:] if o.data is not None))
    return best


def test_ignored_dilation_is_caught_and_only_where_dilation_is_used(tmp_path):
    """FL3 fault: CONV_2D / DEPTHWISE_CONV_2D dilation factors read as 1. Every corpus model
    with a dilation > 1 must fail; those with dilation 1 must still pass."""
    from runtime.testing.test_model import load_spec
    from tests.cts_run import ROOT
    spec = ROOT / "cts" / "corpus" / "V1_2" / "conv2d_dilation.json.gz"
    dilation = {f"V1_2/conv2d_dilation/{tm.name}": _dilation_of(tm) for tm in load_spec(spec)}
    code, records, out = run_cts(tmp_path, "--driver", "tests.broken_drivers:IgnoresDilation",
                                 "-k", "V1_2 and conv2d_dilation")
    assert code == 1, out[-2000:]
    assert set(records) == set(dilation)
    dilated = {i for i, d in dilation.items() if d > 1}
    assert dilated and dilated != set(dilation)  # both kinds are in the spec
    assert {i for i, r in records.items() if r["outcome"] == "failed"} == dilated
    assert all(records[i]["outcome"] == "passed" for i in set(dilation) - dilated)


def test_ignored_nchw_layout_is_caught(tmp_path):
    """FL3 fault: the layout flag read as NHWC. Models in NCHW fail (wrong values or shapes);
    their NHWC twins pass."""
    code, records, out = run_cts(tmp_path, "--driver", "tests.broken_drivers:IgnoresLayout",
                                 "-k", "V1_2 and (conv2d_dilation or resize_nearest_neighbor or roi_align"
                                       " or space_to_depth_v1_2)")
    assert code == 1, out[-2000:]
    failed = {i for i, r in records.items() if r["outcome"] == "failed"}
    nchw = {i for i in records if "nchw" in i}
    assert len(failed) >= 100 and failed <= nchw, sorted(failed - nchw)[:5]
    assert all(records[i]["outcome"] == "passed" for i in set(records) - nchw)
    for op in ("CONV_2D", "RESIZE_NEAREST_NEIGHBOR", "ROI_ALIGN", "SPACE_TO_DEPTH"):
        assert any(op in records[i]["operations"] for i in failed), op


def _fuses_relu6(tm) -> bool:
    """Whether a CONV_2D of the model has FuseCode RELU6: input 9 of the explicit-padding
    forms (10, 11 or 13 inputs, input 7 an INT32 stride), input 6 of the implicit ones."""
    from runtime.types import OperandType as T
    for op in tm.main.operations:
        if op.type.name == "CONV_2D":
            ins = [tm.main.operands[i] for i in op.inputs]
            explicit = len(ins) >= 10 and ins[7].type == T.INT32
            if int(ins[9 if explicit else 6].data) == 3:
                return True
    return False


def test_relu6_fused_as_relu_passes_the_corpus_and_fails_our_specs(tmp_path):
    """Issue 9: no vendored CONV_2D model fuses RELU6, so a CONV_2D that clamps RELU6 as
    RELU passes the corpus alone; our specs (cts/specs/conv.py) fail it, exactly on their
    CONV_2D models with RELU6."""
    from runtime.testing.test_model import load_spec
    from tests.cts_run import ROOT
    driver = ("--driver", "tests.broken_drivers:FusesRelu6AsRelu", "-k", "CONV_2D")
    code, records, out = run_cts(tmp_path / "corpus", *driver, "--corpus", str(ROOT / "cts" / "corpus"))
    assert code == 0, out[-2000:]
    judged = {i: r for i, r in records.items() if r.get("skip_kind") != "runtime_rejected"}
    # the front end rejects conv2d_v1_3_invalid_rank (expect_failure) while building it: no driver verdict
    assert {i for i in records if i not in judged} == {i for i in records if "conv2d_v1_3_invalid_rank" in i}
    assert len(judged) > 1000 and {r["outcome"] for r in judged.values()} == {"passed"}
    assert not any(i.startswith("SPECS/") for i in records)

    code, records, out = run_cts(tmp_path / "default", *driver)
    assert code == 1, out[-2000:]
    specs = load_spec(ROOT / "cts" / "specs" / "built" / "SPECS" / "conv.json.gz")
    relu6 = {tm.test_id for tm in specs if _fuses_relu6(tm)}
    failed = {i for i, r in records.items() if r["outcome"] == "failed"}
    assert len(relu6) >= 60 and failed == relu6
    assert any(tm.test_id in records and tm.test_id not in relu6 for tm in specs)  # RELU, RELU1 specs pass


def test_a_driver_that_never_writes_outputs_fails(tmp_path):
    """Output buffers and memories hold harness.binding.POISON before each execution: a driver
    that reports success without writing its outputs fails every model it accepts whose
    outputs hold at least one judged element, in user-buffer and memory modes alike (before
    the poison it passed every model whose expected bytes are all zero)."""
    from runtime.testing.test_model import iter_corpus
    from harness.locations import DEFAULT_ROOTS
    code, records, out = run_cts(tmp_path, "--driver", "tests.broken_drivers:NeverWritesOutputs",
                                 "--mode", "sync,memory", *SELECTION)
    models = {tm.test_id: tm for tm in iter_corpus(DEFAULT_ROOTS) if tm.test_id.startswith(("V1_0/", "V1_1/"))}
    writes = {tid for tid, tm in models.items() if not tm.expect_failure
              and any(tm.main.operands[i].data is not None and tm.main.operands[i].data.size
                      and not tm.main.operands[i].is_ignored for i in tm.main.output_indexes)}
    judged = {rid: r for rid, r in records.items() if rid.split("@")[0] in writes}
    assert len(judged) >= 500, len(judged)
    passed = [rid for rid, r in judged.items() if r["outcome"] != "failed"]
    assert not passed, passed[:10]
    assert {r["mode"] for r in judged.values()} == {"sync", "memory"}


#: Models of STALE_SELECTION whose outputs no valid change of their float/quantized inputs
#: can move (each output is one clipped or uniform value): a driver replaying its first
#: results still gives their right answer. Read off the corpus: RELU6-clipped pools of
#: inputs above 6, a softmax of a row of equal values, RELU1 of values all above 1.
INPUT_INDEPENDENT = {"V1_0/max_pool_float_3/max_pool_float_3", "V1_0/max_pool_quant8_3/max_pool_quant8_3",
                     "V1_0/softmax_float_1/softmax_float_1", "V1_0/softmax_quant8_1/softmax_quant8_1",
                     "V1_0/relu1_quant8_1/relu1_quant8_1_2"}
#: (Not the "all inputs as internal" twins: their ADD mark would pull in every V1_0 model.)
STALE_SELECTION = ["-k", "V1_0 and (conv_float or max_pool or relu1 or softmax or mul) and not internal"]
REUSING_MODES = ("burst", "reusable", "memory", "device")


def test_a_driver_replaying_its_first_results_fails_every_mode_that_reuses_objects(tmp_path):
    """tests.broken_drivers:ReplaysFirstResults computes each prepared model's first
    execution and replays it afterwards. The base mode executes once and passes; burst,
    reusable, memory and device modes run example -> changed -> example inputs over the same
    objects and fail at run 2 on every model whose outputs depend on its inputs."""
    code, records, out = run_cts(tmp_path, "--driver", "tests.broken_drivers:ReplaysFirstResults",
                                 "--mode", ",".join(("sync",) + REUSING_MODES), *STALE_SELECTION)
    assert code == 1, out[-2000:]
    by_mode = {}
    for r in records.values():
        by_mode.setdefault(r["mode"], {})[r["id"].split("@")[0]] = r
    models = set(by_mode["sync"])
    assert len(models) >= 20 and {r["outcome"] for r in by_mode["sync"].values()} == {"passed"}
    assert INPUT_INDEPENDENT < models
    independent = INPUT_INDEPENDENT
    for mode in REUSING_MODES:
        assert set(by_mode[mode]) == models, mode
        failed = {m for m, r in by_mode[mode].items() if r["outcome"] == "failed"}
        assert failed == models - independent, (mode, sorted(failed ^ (models - independent))[:5])
        assert all(f"{m}@{mode}: run 2 (changed inputs): output 0" in by_mode[mode][m]["message"]
                   for m in failed), mode


def test_a_driver_that_never_writes_outputs_fails_in_driver_memory_too(tmp_path):
    """Driver memories (device mode: memories from a descriptor, e.g. the sample driver's
    IBuffers) are poisoned with Memory.copy before each execution, so a driver that never
    writes its outputs fails there as in the other memory modes."""
    code, records, out = run_cts(tmp_path, "--driver", "tests.broken_drivers:NeverWritesOutputs",
                                 "--mode", "device", *STALE_SELECTION)
    assert code == 1, out[-2000:]
    assert len(records) >= 20 and {r["mode"] for r in records.values()} == {"device"}
    passed = [i for i, r in records.items() if r["outcome"] != "failed"]
    assert not passed, passed[:5]


def test_poison_is_far_from_every_expected_integral_value():
    """Boolean, quantized and int32 outputs are poisoned element by element away from the
    expected values (0x7F would be "true" in a TENSOR_BOOL8 and within one quantum of 127 or
    128 in 8-bit types). Golden values by hand: false where true is expected and true where
    false; integers moved by half their type's range."""
    import dataclasses

    import numpy as np

    from harness.binding import POISON, poison_for
    from runtime.testing.test_model import iter_corpus
    from harness.locations import CORPUS as DEFAULT_CORPUS
    from runtime.types import OperandType as T
    tm = next(iter_corpus([DEFAULT_CORPUS / "V1_0"]))

    def with_output(type_, values):
        j = tm.main.output_indexes[0]
        operands = list(tm.main.operands)
        operands[j] = dataclasses.replace(operands[j], type=type_, data=np.array(values))
        return dataclasses.replace(tm, main=dataclasses.replace(tm.main, operands=operands))

    assert poison_for(with_output(T.TENSOR_BOOL8, np.array([True, False])), 0, 2) == bytes([0, 1])
    assert poison_for(with_output(T.TENSOR_QUANT8_ASYMM, np.array([0, 127, 128, 255], np.uint8)), 0, 4) \
        == bytes([128, 255, 0, 127])
    assert poison_for(with_output(T.TENSOR_QUANT8_ASYMM_SIGNED, np.array([-128, -1, 0, 127], np.int8)), 0, 4) \
        == np.array([0, 127, -128, -1], np.int8).tobytes()
    assert poison_for(with_output(T.TENSOR_INT32, np.array([-5, 7], np.int32)), 0, 8) \
        == np.array([-5 + 2**31, 7 - 2**31], np.int64).astype(np.int32).tobytes()
    assert poison_for(with_output(T.TENSOR_FLOAT32, np.array([1.0], np.float32)), 0, 4) == bytes([POISON]) * 4
    # a buffer of another size than the expected values (dynamic or insufficient outputs)
    assert poison_for(with_output(T.TENSOR_BOOL8, np.array([True])), 0, 3) == bytes([POISON]) * 3


def test_a_driver_that_never_writes_a_true_boolean_output_fails(tmp_path):
    """V1_2 comparison models whose one boolean output is expected true passed a driver that
    never writes its outputs while the poison was 0x7F bytes (non-zero is true); corpus
    models, expected values from the AOSP corpus."""
    code, records, out = run_cts(tmp_path, "--driver", "tests.broken_drivers:NeverWritesOutputs", "--mode",
                                 "sync,device", "--corpus", "cts/corpus/V1_2", "-k", "quantized_overflow")
    assert code == 1, out[-2000:]
    assert len(records) >= 8, sorted(records)
    assert all(r["outcome"] == "failed" for r in records.values()), \
        [i for i, r in records.items() if r["outcome"] != "failed"]


def test_nms_linear_kernel_run_as_hard_is_caught(tmp_path):
    """Issue 24: BOX_WITH_NMS_LIMIT's linear kernel computed as hard NMS. The AOSP corpus's
    linear models already decide the kernel (their expected boxes and scores differ from hard
    NMS's, the effect analysis of ``nncts coverage`` finds them); the hard and gaussian models
    still pass. Expected values from the AOSP corpus."""
    code, records, out = run_cts(tmp_path, "--driver", "tests.broken_drivers:NmsLinearAsHard",
                                 "-k", "box_with_nms_limit_linear or box_with_nms_limit_hard")
    assert code == 1, out[-2000:]
    failed = {i for i, r in records.items() if r["outcome"] == "failed"}
    assert "V1_2/box_with_nms_limit_linear/box_with_nms_limit_linear" in failed
    assert failed and all("/box_with_nms_limit_linear/" in i for i in failed)
    assert any(r["outcome"] == "passed" for i, r in records.items() if "/box_with_nms_limit_hard/" in i)


def test_batch_matmul_ignoring_adjoints_on_square_matrices_is_caught_by_own_specs(tmp_path):
    """Issue 24: a driver ignoring BATCH_MATMUL's adj_x / adj_y when both matrices are square
    passes every corpus model (their adjoint models are non-square, where the shapes give it
    away) and fails exactly our square, non-symmetric specs with an adjoint set
    (cts/specs/dense.py, golden: numpy matrix products)."""
    code, records, out = run_cts(tmp_path, "--driver", "tests.broken_drivers:BatchMatmulIgnoresAdjointsOnSquare",
                                 "-k", "batch_matmul")
    assert code == 1, out[-2000:]
    failed = {i for i, r in records.items() if r["outcome"] == "failed"}
    assert failed == {f"SPECS/dense/batch_matmul_float32_square_adj_{a}" for a in ("01", "10", "11")}
    assert all(r["outcome"] == "passed" for i, r in records.items() if not i.startswith("SPECS/"))
    assert records["SPECS/dense/batch_matmul_float32_square_adj_00"]["outcome"] == "passed"
