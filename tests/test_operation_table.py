"""The operation table is complete for feature levels 1-3 and queryable."""
import sys

from runtime import ops
from runtime.drivers.sample import SampleDevice
from runtime.types import OperandType as T, OperationType as Op


def test_every_fl1_fl2_operation_is_implemented():
    assert set(ops.implemented(2)) == {Op(c) for c in range(38)}


def test_feature_levels_of_operations():
    # FL2 (NNAPI 1.1) added BATCH_TO_SPACE_ND, DIV, MEAN, PAD, SPACE_TO_BATCH_ND, SQUEEZE,
    # STRIDED_SLICE, SUB, TRANSPOSE (codes 29-37)
    assert set(ops.implemented(1)) == {Op(c) for c in range(29)}
    assert ops.get(Op.DIV).min_feature_level == 2


def test_signatures_are_queryable():
    assert ops.operand_types_at(Op.CONV_2D, 1) == {T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM}
    assert ops.operand_types_at(Op.SUB, 1) == set()
    assert T.TENSOR_FLOAT32 in ops.operand_types_at(Op.SUB, 2)
    conv_inputs = {len(s.inputs) for s in ops.signatures_at(Op.CONV_2D, 2)}
    assert conv_inputs == {7, 10}  # implicit and explicit padding


def test_sample_driver_capabilities_come_from_the_table():
    caps = SampleDevice().get_capabilities()
    assert T.TENSOR_QUANT8_ASYMM in caps.operand_performance
    assert all(p.exec_time > 0 and p.power_usage > 0 for p in caps.operand_performance.values())
    # the table's highest level (FL4: TENSOR_QUANT8_ASYMM_SIGNED; FL6-7: PACK, REVERSE, ...)
    top = max(s.feature_level for d in ops.REGISTRY.values() for s in d.signatures)
    assert SampleDevice().get_feature_level() == top >= 4


def test_signed_quant8_signatures_are_feature_level_4():
    assert T.TENSOR_QUANT8_ASYMM_SIGNED in ops.operand_types_at(Op.CONV_2D, 4)
    assert T.TENSOR_QUANT8_ASYMM_SIGNED not in ops.operand_types_at(Op.CONV_2D, 3)
    # SUB has no FL1-2 quant8 form, but TENSOR_QUANT8_ASYMM_SIGNED is listed at FL4 (types.spec)
    assert T.TENSOR_QUANT8_ASYMM_SIGNED not in ops.operand_types_at(Op.SUB, 3)
    assert T.TENSOR_QUANT8_ASYMM_SIGNED in ops.operand_types_at(Op.SUB, 4)


def test_every_fl3_operation_is_implemented():
    # FL3 (NNAPI 1.2, Android 10) added codes 38-94 (ABS ... RESIZE_NEAREST_NEIGHBOR)
    assert set(ops.implemented(3)) == {Op(c) for c in range(95)}
    assert {ops.get(Op(c)).min_feature_level for c in range(38, 95)} == {3}


def test_fl3_forms_of_fl1_operations():
    # TENSOR_FLOAT16 and per-channel filters are FL3 forms (NNAPI types.spec, HAL 1.2)
    assert T.TENSOR_FLOAT16 not in ops.operand_types_at(Op.CONV_2D, 2)
    assert T.TENSOR_FLOAT16 in ops.operand_types_at(Op.CONV_2D, 3)
    filters = {s.inputs[1].type for s in ops.signatures_at(Op.CONV_2D, 3)}
    assert T.TENSOR_QUANT8_SYMM_PER_CHANNEL in filters
    assert {len(s.inputs) for s in ops.signatures_at(Op.CONV_2D, 3)} >= {7, 8, 10, 11, 13}


def test_every_operation_is_documented_where_it_is_declared():
    """Each row's module docstring names the operation (its NNAPI definition lives there),
    and the row has a one-line summary."""
    for op_type, d in ops.REGISTRY.items():
        module = sys.modules[d.prepare.__module__]
        assert op_type.name in (module.__doc__ or ""), f"{op_type.name}: not named in {module.__name__}'s docstring"
        assert d.summary, f"{op_type.name}: no summary"


def test_operation_codes_quoted_in_docstrings_are_right():
    """``NAME (code)`` in an operation module's docstring gives the NNAPI code of
    runtime.types (checked against NeuralNetworksTypes.h when the enum was written)."""
    import re
    wrong = []
    for module in {sys.modules[d.prepare.__module__] for d in ops.REGISTRY.values()}:
        for name, code in re.findall(r"\b([A-Z][A-Z0-9_]{2,}) \((?:NNAPI code |code )?(\d+)\b", module.__doc__ or ""):
            if name in Op.__members__ and Op[name] != int(code):
                wrong.append(f"{module.__name__}: {name} ({code}), NNAPI code {int(Op[name])}")
    assert not wrong, wrong


def test_all_106_operations_are_implemented():
    # codes 0-105 (NeuralNetworksTypes.h): IF/WHILE ... REVERSE complete the set at FL4-7
    assert set(ops.implemented()) == set(Op) and len(Op) == 106
    levels = {op: ops.get(op).min_feature_level for op in (Op.IF, Op.WHILE, Op.ELU, Op.FILL, Op.RANK,
                                                            Op.BATCH_MATMUL, Op.PACK, Op.MIRROR_PAD, Op.REVERSE)}
    assert levels == {Op.IF: 4, Op.WHILE: 4, Op.ELU: 4, Op.FILL: 4, Op.RANK: 4, Op.BATCH_MATMUL: 6,
                      Op.PACK: 6, Op.MIRROR_PAD: 7, Op.REVERSE: 7}
