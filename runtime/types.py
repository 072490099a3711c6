"""NNAPI enumerations and constants, with the exact codes of ``NeuralNetworks.h`` and the
HAL (``types.hal`` / AIDL).

Every enum is an :class:`enum.IntEnum` so a value compares equal to its NNAPI code.
"""
from __future__ import annotations

import enum

import numpy as np

__all__ = [
    "OperandType", "OperationType", "FuseCode", "PaddingCode", "PreferenceCode",
    "PriorityCode", "DeviceTypeCode", "ResultCode", "DurationCode", "FeatureLevelCode",
    "ErrorStatus", "OperandLifeTime", "MeasureTiming",
    "MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES", "BYTE_SIZE_OF_CACHE_TOKEN",
    "MAX_NUMBER_OF_CACHE_FILES", "NO_TIMING", "FEATURE_LEVEL_CODES",
    "operand_dtype", "operand_element_size", "is_tensor_type", "is_quantized_type",
    "is_float_type", "RESULT_CODE_OF_ERROR_STATUS",
]


class OperandType(enum.IntEnum):
    """``ANEURALNETWORKS_*`` operand types (``OperandCode``), codes 0-15."""

    FLOAT32 = 0
    INT32 = 1
    UINT32 = 2
    TENSOR_FLOAT32 = 3
    TENSOR_INT32 = 4
    TENSOR_QUANT8_ASYMM = 5
    BOOL = 6
    TENSOR_QUANT16_SYMM = 7
    TENSOR_FLOAT16 = 8
    TENSOR_BOOL8 = 9
    FLOAT16 = 10
    TENSOR_QUANT8_SYMM_PER_CHANNEL = 11
    TENSOR_QUANT16_ASYMM = 12
    TENSOR_QUANT8_SYMM = 13
    TENSOR_QUANT8_ASYMM_SIGNED = 14
    MODEL = 15
    SUBGRAPH = 15  # the HAL's name for MODEL (alias)


class OperationType(enum.IntEnum):
    """``ANEURALNETWORKS_*`` operation types (``OperationCode``), codes 0-105."""

    ADD = 0
    AVERAGE_POOL_2D = 1
    CONCATENATION = 2
    CONV_2D = 3
    DEPTHWISE_CONV_2D = 4
    DEPTH_TO_SPACE = 5
    DEQUANTIZE = 6
    EMBEDDING_LOOKUP = 7
    FLOOR = 8
    FULLY_CONNECTED = 9
    HASHTABLE_LOOKUP = 10
    L2_NORMALIZATION = 11
    L2_POOL_2D = 12
    LOCAL_RESPONSE_NORMALIZATION = 13
    LOGISTIC = 14
    LSH_PROJECTION = 15
    LSTM = 16
    MAX_POOL_2D = 17
    MUL = 18
    RELU = 19
    RELU1 = 20
    RELU6 = 21
    RESHAPE = 22
    RESIZE_BILINEAR = 23
    RNN = 24
    SOFTMAX = 25
    SPACE_TO_DEPTH = 26
    SVDF = 27
    TANH = 28
    BATCH_TO_SPACE_ND = 29
    DIV = 30
    MEAN = 31
    PAD = 32
    SPACE_TO_BATCH_ND = 33
    SQUEEZE = 34
    STRIDED_SLICE = 35
    SUB = 36
    TRANSPOSE = 37
    ABS = 38
    ARGMAX = 39
    ARGMIN = 40
    AXIS_ALIGNED_BBOX_TRANSFORM = 41
    BIDIRECTIONAL_SEQUENCE_LSTM = 42
    BIDIRECTIONAL_SEQUENCE_RNN = 43
    BOX_WITH_NMS_LIMIT = 44
    CAST = 45
    CHANNEL_SHUFFLE = 46
    DETECTION_POSTPROCESSING = 47
    EQUAL = 48
    EXP = 49
    EXPAND_DIMS = 50
    GATHER = 51
    GENERATE_PROPOSALS = 52
    GREATER = 53
    GREATER_EQUAL = 54
    GROUPED_CONV_2D = 55
    HEATMAP_MAX_KEYPOINT = 56
    INSTANCE_NORMALIZATION = 57
    LESS = 58
    LESS_EQUAL = 59
    LOG = 60
    LOGICAL_AND = 61
    LOGICAL_NOT = 62
    LOGICAL_OR = 63
    LOG_SOFTMAX = 64
    MAXIMUM = 65
    MINIMUM = 66
    NEG = 67
    NOT_EQUAL = 68
    PAD_V2 = 69
    POW = 70
    PRELU = 71
    QUANTIZE = 72
    QUANTIZED_16BIT_LSTM = 73
    RANDOM_MULTINOMIAL = 74
    REDUCE_ALL = 75
    REDUCE_ANY = 76
    REDUCE_MAX = 77
    REDUCE_MIN = 78
    REDUCE_PROD = 79
    REDUCE_SUM = 80
    ROI_ALIGN = 81
    ROI_POOLING = 82
    RSQRT = 83
    SELECT = 84
    SIN = 85
    SLICE = 86
    SPLIT = 87
    SQRT = 88
    TILE = 89
    TOPK_V2 = 90
    TRANSPOSE_CONV_2D = 91
    UNIDIRECTIONAL_SEQUENCE_LSTM = 92
    UNIDIRECTIONAL_SEQUENCE_RNN = 93
    RESIZE_NEAREST_NEIGHBOR = 94
    QUANTIZED_LSTM = 95
    IF = 96
    WHILE = 97
    ELU = 98
    HARD_SWISH = 99
    FILL = 100
    RANK = 101
    BATCH_MATMUL = 102
    PACK = 103
    MIRROR_PAD = 104
    REVERSE = 105


class FuseCode(enum.IntEnum):
    """Fused activation (``ANEURALNETWORKS_FUSED_*``)."""

    NONE = 0
    RELU = 1
    RELU1 = 2
    RELU6 = 3


class PaddingCode(enum.IntEnum):
    """Implicit padding scheme (``ANEURALNETWORKS_PADDING_*``)."""

    SAME = 1
    VALID = 2


class PreferenceCode(enum.IntEnum):
    """Execution preference (``ANEURALNETWORKS_PREFER_*``)."""

    LOW_POWER = 0
    FAST_SINGLE_ANSWER = 1
    SUSTAINED_SPEED = 2


class PriorityCode(enum.IntEnum):
    """Compilation priority (``ANEURALNETWORKS_PRIORITY_*``), feature level 4."""

    LOW = 90
    MEDIUM = 100
    HIGH = 110
    DEFAULT = 100  # alias of MEDIUM


class DeviceTypeCode(enum.IntEnum):
    """Device type (``ANEURALNETWORKS_DEVICE_*``), feature level 3."""

    UNKNOWN = 0
    OTHER = 1
    CPU = 2
    GPU = 3
    ACCELERATOR = 4


class ResultCode(enum.IntEnum):
    """Front-end result codes (``ANEURALNETWORKS_*``), 0-14."""

    NO_ERROR = 0
    OUT_OF_MEMORY = 1
    INCOMPLETE = 2
    UNEXPECTED_NULL = 3
    BAD_DATA = 4
    OP_FAILED = 5
    BAD_STATE = 6
    UNMAPPABLE = 7
    OUTPUT_INSUFFICIENT_SIZE = 8
    UNAVAILABLE_DEVICE = 9
    MISSED_DEADLINE_TRANSIENT = 10
    MISSED_DEADLINE_PERSISTENT = 11
    RESOURCE_EXHAUSTED_TRANSIENT = 12
    RESOURCE_EXHAUSTED_PERSISTENT = 13
    DEAD_OBJECT = 14


class DurationCode(enum.IntEnum):
    """Which duration ``Execution.get_duration`` reports (``ANEURALNETWORKS_DURATION_*``)."""

    ON_HARDWARE = 0
    IN_DRIVER = 1
    FENCED_ON_HARDWARE = 2
    FENCED_IN_DRIVER = 3


class FeatureLevelCode(enum.IntEnum):
    """``ANEURALNETWORKS_FEATURE_LEVEL_*`` (levels 1-5 are Android API levels 27-31)."""

    FEATURE_LEVEL_1 = 27
    FEATURE_LEVEL_2 = 28
    FEATURE_LEVEL_3 = 29
    FEATURE_LEVEL_4 = 30
    FEATURE_LEVEL_5 = 31
    FEATURE_LEVEL_6 = 1000006
    FEATURE_LEVEL_7 = 1000007
    FEATURE_LEVEL_8 = 1000008


#: Feature level number (1..8) -> its FeatureLevelCode.
FEATURE_LEVEL_CODES = {i + 1: code for i, code in enumerate(FeatureLevelCode)}


class ErrorStatus(enum.IntEnum):
    """The HAL's error status (``ErrorStatus`` of HAL 1.3 / AIDL)."""

    NONE = 0
    DEVICE_UNAVAILABLE = 1
    GENERAL_FAILURE = 2
    OUTPUT_INSUFFICIENT_SIZE = 3
    INVALID_ARGUMENT = 4
    MISSED_DEADLINE_TRANSIENT = 5
    MISSED_DEADLINE_PERSISTENT = 6
    RESOURCE_EXHAUSTED_TRANSIENT = 7
    RESOURCE_EXHAUSTED_PERSISTENT = 8
    DEAD_OBJECT = 10000


#: How the runtime converts a HAL ErrorStatus into a front-end ResultCode
#: (AOSP ``convertErrorStatusToResultCode``).
RESULT_CODE_OF_ERROR_STATUS = {
    ErrorStatus.NONE: ResultCode.NO_ERROR,
    ErrorStatus.DEVICE_UNAVAILABLE: ResultCode.UNAVAILABLE_DEVICE,
    ErrorStatus.GENERAL_FAILURE: ResultCode.OP_FAILED,
    ErrorStatus.OUTPUT_INSUFFICIENT_SIZE: ResultCode.OUTPUT_INSUFFICIENT_SIZE,
    ErrorStatus.INVALID_ARGUMENT: ResultCode.BAD_DATA,
    ErrorStatus.MISSED_DEADLINE_TRANSIENT: ResultCode.MISSED_DEADLINE_TRANSIENT,
    ErrorStatus.MISSED_DEADLINE_PERSISTENT: ResultCode.MISSED_DEADLINE_PERSISTENT,
    ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT: ResultCode.RESOURCE_EXHAUSTED_TRANSIENT,
    ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT: ResultCode.RESOURCE_EXHAUSTED_PERSISTENT,
    ErrorStatus.DEAD_OBJECT: ResultCode.DEAD_OBJECT,
}


class OperandLifeTime(enum.IntEnum):
    """HAL operand lifetime (HAL 1.3 ``OperandLifeTime``)."""

    TEMPORARY_VARIABLE = 0
    SUBGRAPH_INPUT = 1
    SUBGRAPH_OUTPUT = 2
    CONSTANT_COPY = 3
    CONSTANT_REFERENCE = 4
    NO_VALUE = 5
    SUBGRAPH = 6
    POINTER = 7  # runtime-internal: a value held by the runtime's own pointer


class MeasureTiming(enum.IntEnum):
    """Whether an execution measures its duration (HAL ``MeasureTiming``)."""

    NO = 0
    YES = 1


#: Operand values up to this many bytes are copied by ``setOperandValue``.
MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES = 128
#: Size in bytes of a compilation cache token.
BYTE_SIZE_OF_CACHE_TOKEN = 32
#: Maximum number of model or data cache files a driver may ask for (HAL 1.2).
MAX_NUMBER_OF_CACHE_FILES = 32
#: Duration reported when timing was not measured (UINT64_MAX).
NO_TIMING = 2**64 - 1

_DTYPES = {
    OperandType.FLOAT32: np.dtype("<f4"),
    OperandType.INT32: np.dtype("<i4"),
    OperandType.UINT32: np.dtype("<u4"),
    OperandType.TENSOR_FLOAT32: np.dtype("<f4"),
    OperandType.TENSOR_INT32: np.dtype("<i4"),
    OperandType.TENSOR_QUANT8_ASYMM: np.dtype("u1"),
    OperandType.BOOL: np.dtype("bool"),
    OperandType.TENSOR_QUANT16_SYMM: np.dtype("<i2"),
    OperandType.TENSOR_FLOAT16: np.dtype("<f2"),
    OperandType.TENSOR_BOOL8: np.dtype("bool"),
    OperandType.FLOAT16: np.dtype("<f2"),
    OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL: np.dtype("i1"),
    OperandType.TENSOR_QUANT16_ASYMM: np.dtype("<u2"),
    OperandType.TENSOR_QUANT8_SYMM: np.dtype("i1"),
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: np.dtype("i1"),
    OperandType.SUBGRAPH: np.dtype("<u4"),
}

_TENSOR_TYPES = frozenset({
    OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32, OperandType.TENSOR_QUANT8_ASYMM,
    OperandType.TENSOR_QUANT16_SYMM, OperandType.TENSOR_FLOAT16, OperandType.TENSOR_BOOL8,
    OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL, OperandType.TENSOR_QUANT16_ASYMM,
    OperandType.TENSOR_QUANT8_SYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
})

_QUANTIZED_TYPES = frozenset({
    OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT16_SYMM,
    OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL, OperandType.TENSOR_QUANT16_ASYMM,
    OperandType.TENSOR_QUANT8_SYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
})

_FLOAT_TYPES = frozenset({
    OperandType.FLOAT32, OperandType.TENSOR_FLOAT32, OperandType.FLOAT16,
    OperandType.TENSOR_FLOAT16,
})


def operand_dtype(operand_type: OperandType) -> np.dtype:
    """The numpy dtype of one element of ``operand_type`` (little-endian, as NNAPI stores it).
    Raises ValueError for a code that is no OperandType."""
    try:
        return _DTYPES[operand_type]  # int codes hash as their IntEnum members
    except (KeyError, TypeError):
        return _DTYPES[OperandType(operand_type)]


def operand_element_size(operand_type: OperandType) -> int:
    """Size in bytes of one element of ``operand_type`` (BOOL and TENSOR_BOOL8: 1 byte)."""
    return operand_dtype(operand_type).itemsize


def is_tensor_type(operand_type: OperandType) -> bool:
    """True for the ``TENSOR_*`` operand types."""
    return operand_type in _TENSOR_TYPES


def is_quantized_type(operand_type: OperandType) -> bool:
    """True for the quantized tensor types (8- and 16-bit, symmetric and asymmetric)."""
    return operand_type in _QUANTIZED_TYPES


def is_float_type(operand_type: OperandType) -> bool:
    """True for FLOAT32, FLOAT16 and their tensor types."""
    return operand_type in _FLOAT_TYPES
