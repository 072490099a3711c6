"""HAL data types (NNAPI HAL 1.3 / AIDL ``android.hardware.neuralnetworks``), in Pythonic form.

Operand indexes, pool indexes, offsets and lengths are plain ints; byte offsets/lengths are
in bytes; durations in :class:`Timing` are nanoseconds (``NO_TIMING`` when not measured).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..types import NO_TIMING, OperandLifeTime, OperandType, OperationType


@dataclass
class DataLocation:
    """Where a value lives: ``operand_values`` (pool_index ignored, CONSTANT_COPY) or
    ``pools[pool_index]`` at ``offset`` for ``length`` bytes (``padding`` extra bytes may
    follow, HAL AIDL ``DataLocation.padding``)."""

    pool_index: int = 0
    offset: int = 0
    length: int = 0
    padding: int = 0


@dataclass
class SymmPerChannelQuantParams:
    """Per-channel scales of a TENSOR_QUANT8_SYMM_PER_CHANNEL operand (FL3)."""

    scales: tuple[float, ...]
    channel_dim: int


@dataclass
class Operand:
    """A HAL operand: type, dimensions (0 = unknown), consumers, quantization, lifetime,
    value location and optional per-channel quantization (``extra_params``)."""

    type: OperandType
    dimensions: list[int] = field(default_factory=list)
    number_of_consumers: int = 0
    scale: float = 0.0
    zero_point: int = 0
    lifetime: OperandLifeTime = OperandLifeTime.TEMPORARY_VARIABLE
    location: DataLocation = field(default_factory=DataLocation)
    extra_params: SymmPerChannelQuantParams | None = None


@dataclass
class Operation:
    """An operation: its type and operand indexes of inputs and outputs."""

    type: OperationType
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)


@dataclass
class Subgraph:
    """Operands, operations (in execution order) and the subgraph's input/output indexes."""

    operands: list[Operand] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)
    input_indexes: list[int] = field(default_factory=list)
    output_indexes: list[int] = field(default_factory=list)


@dataclass
class ExtensionNameAndPrefix:
    """Maps a vendor extension name to the 16-bit prefix the model uses for it."""

    name: str
    prefix: int


@dataclass
class Model:
    """A HAL model: main subgraph, referenced subgraphs (IF/WHILE), CONSTANT_COPY bytes
    (``operand_values``), memory pools for CONSTANT_REFERENCE operands, relaxed float32
    computation flag and the extension prefix table."""

    main: Subgraph
    referenced: list[Subgraph] = field(default_factory=list)
    operand_values: bytes = b""
    pools: list = field(default_factory=list)
    relax_computation_float32_to_float16: bool = False
    extension_name_to_prefix: list[ExtensionNameAndPrefix] = field(default_factory=list)


@dataclass
class RequestArgument:
    """An execution input or output: no value, or a location in the request's pools with
    optional dimensions that refine the operand's (0 = unknown)."""

    has_no_value: bool = False
    location: DataLocation = field(default_factory=DataLocation)
    dimensions: list[int] = field(default_factory=list)


@dataclass
class Request:
    """Inputs, outputs (one argument per main-subgraph input/output) and memory pools."""

    inputs: list[RequestArgument] = field(default_factory=list)
    outputs: list[RequestArgument] = field(default_factory=list)
    pools: list = field(default_factory=list)


@dataclass
class OutputShape:
    """Actual dimensions of an output after execution; ``is_sufficient`` is False when the
    output buffer was too small (OUTPUT_INSUFFICIENT_SIZE)."""

    dimensions: list[int]
    is_sufficient: bool = True


@dataclass
class Timing:
    """Execution durations in nanoseconds; ``NO_TIMING`` (UINT64_MAX) when not measured."""

    time_on_device: int = NO_TIMING
    time_in_driver: int = NO_TIMING


@dataclass
class PerformanceInfo:
    """Relative performance vs. the CPU (lower is better): ``exec_time`` and
    ``power_usage`` as ratios; both must be positive (HAL ``PerformanceInfo``)."""

    exec_time: float = 1.0
    power_usage: float = 1.0


@dataclass
class Capabilities:
    """What a device reports about its performance (HAL 1.3 ``Capabilities``)."""

    relaxed_float32_to_float16_performance_scalar: PerformanceInfo = field(default_factory=PerformanceInfo)
    relaxed_float32_to_float16_performance_tensor: PerformanceInfo = field(default_factory=PerformanceInfo)
    operand_performance: dict[OperandType, PerformanceInfo] = field(default_factory=dict)
    if_performance: PerformanceInfo = field(default_factory=PerformanceInfo)
    while_performance: PerformanceInfo = field(default_factory=PerformanceInfo)

    def performance_of(self, operand_type: OperandType) -> PerformanceInfo:
        """Performance for ``operand_type``; the worst value (FLT_MAX) when not listed."""
        return self.operand_performance.get(
            operand_type, PerformanceInfo(3.4028234663852886e38, 3.4028234663852886e38))


@dataclass(frozen=True)
class MemoryDomainToken:
    """A request memory pool that is a driver-allocated buffer (HAL 1.3
    ``Request::MemoryPool::token``): the token ``IDevice.allocate`` returned (> 0)."""

    token: int


@dataclass
class BufferDesc:
    """Dimensions of a driver-allocated buffer (0 = unknown; [] = unknown rank)."""

    dimensions: list[int] = field(default_factory=list)


@dataclass
class BufferRole:
    """One use of a driver-allocated buffer: input or output ``io_index`` of prepared model
    ``model_index`` (index into the prepared-model list of ``allocate``), with a usage
    ``probability`` in (0, 1]."""

    model_index: int
    io_index: int
    probability: float = 1.0


@dataclass(frozen=True)
class ExtensionOperandTypeInformation:
    """An extension operand type: its code within the extension (low 16 bits), whether it is
    a tensor, and the byte size of a scalar or of one tensor element."""

    type: int
    is_tensor: bool
    byte_size: int


@dataclass
class Extension:
    """A vendor extension a driver supports: its name (``com.example.foo``) and operand
    types."""

    name: str
    operand_types: list[ExtensionOperandTypeInformation] = field(default_factory=list)
