"""The operation table is complete for feature levels 1-2 and queryable."""
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
    # the table's highest level: TENSOR_QUANT8_ASYMM_SIGNED signatures are feature level 4
    assert SampleDevice().get_feature_level() == 4


def test_signed_quant8_signatures_are_feature_level_4():
    assert T.TENSOR_QUANT8_ASYMM_SIGNED in ops.operand_types_at(Op.CONV_2D, 4)
    assert T.TENSOR_QUANT8_ASYMM_SIGNED not in ops.operand_types_at(Op.CONV_2D, 3)
    assert T.TENSOR_QUANT8_ASYMM_SIGNED not in ops.operand_types_at(Op.SUB, 4)  # no FL1-2 quant8 SUB
