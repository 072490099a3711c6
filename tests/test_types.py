"""Enum codes equal NNAPI's (NeuralNetworksTypes.h / HAL types), checked against the spec's
numbers written out here."""
from runtime.types import (BYTE_SIZE_OF_CACHE_TOKEN, MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES,
                           ErrorStatus, FeatureLevelCode, OperandType, OperationType, PriorityCode,
                           ResultCode)


def test_codes():
    assert len(OperationType) == 106 and OperationType.REVERSE == 105 and OperationType.IF == 96
    assert OperandType.MODEL == 15 and OperandType.TENSOR_QUANT8_ASYMM_SIGNED == 14
    assert ResultCode.DEAD_OBJECT == 14 and ResultCode.OUTPUT_INSUFFICIENT_SIZE == 8
    assert ErrorStatus.DEAD_OBJECT == 10000 and ErrorStatus.INVALID_ARGUMENT == 4
    assert FeatureLevelCode.FEATURE_LEVEL_5 == 31 and FeatureLevelCode.FEATURE_LEVEL_8 == 1000008
    assert PriorityCode.HIGH == 110
    assert MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES == 128 and BYTE_SIZE_OF_CACHE_TOKEN == 32
