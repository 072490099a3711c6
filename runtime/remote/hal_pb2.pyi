from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ExecutionPath(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SYNC: _ClassVar[ExecutionPath]
    ASYNC: _ClassVar[ExecutionPath]
    BURST: _ClassVar[ExecutionPath]
    REUSABLE: _ClassVar[ExecutionPath]
SYNC: ExecutionPath
ASYNC: ExecutionPath
BURST: ExecutionPath
REUSABLE: ExecutionPath

class Frame(_message.Message):
    __slots__ = ("method", "body")
    METHOD_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    method: str
    body: bytes
    def __init__(self, method: _Optional[str] = ..., body: _Optional[bytes] = ...) -> None: ...

class Empty(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Status(_message.Message):
    __slots__ = ("code", "message", "output_shapes")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SHAPES_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    output_shapes: _containers.RepeatedCompositeFieldContainer[OutputShape]
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ..., output_shapes: _Optional[_Iterable[_Union[OutputShape, _Mapping]]] = ...) -> None: ...

class Ack(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: Status
    def __init__(self, status: _Optional[_Union[Status, _Mapping]] = ...) -> None: ...

class DataLocation(_message.Message):
    __slots__ = ("pool_index", "offset", "length", "padding")
    POOL_INDEX_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    PADDING_FIELD_NUMBER: _ClassVar[int]
    pool_index: int
    offset: int
    length: int
    padding: int
    def __init__(self, pool_index: _Optional[int] = ..., offset: _Optional[int] = ..., length: _Optional[int] = ..., padding: _Optional[int] = ...) -> None: ...

class ChannelQuant(_message.Message):
    __slots__ = ("scales", "channel_dim")
    SCALES_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_DIM_FIELD_NUMBER: _ClassVar[int]
    scales: _containers.RepeatedScalarFieldContainer[float]
    channel_dim: int
    def __init__(self, scales: _Optional[_Iterable[float]] = ..., channel_dim: _Optional[int] = ...) -> None: ...

class Operand(_message.Message):
    __slots__ = ("type", "dimensions", "number_of_consumers", "scale", "zero_point", "lifetime", "location", "channel_quant", "extension")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    NUMBER_OF_CONSUMERS_FIELD_NUMBER: _ClassVar[int]
    SCALE_FIELD_NUMBER: _ClassVar[int]
    ZERO_POINT_FIELD_NUMBER: _ClassVar[int]
    LIFETIME_FIELD_NUMBER: _ClassVar[int]
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_QUANT_FIELD_NUMBER: _ClassVar[int]
    EXTENSION_FIELD_NUMBER: _ClassVar[int]
    type: int
    dimensions: _containers.RepeatedScalarFieldContainer[int]
    number_of_consumers: int
    scale: float
    zero_point: int
    lifetime: int
    location: DataLocation
    channel_quant: ChannelQuant
    extension: bytes
    def __init__(self, type: _Optional[int] = ..., dimensions: _Optional[_Iterable[int]] = ..., number_of_consumers: _Optional[int] = ..., scale: _Optional[float] = ..., zero_point: _Optional[int] = ..., lifetime: _Optional[int] = ..., location: _Optional[_Union[DataLocation, _Mapping]] = ..., channel_quant: _Optional[_Union[ChannelQuant, _Mapping]] = ..., extension: _Optional[bytes] = ...) -> None: ...

class Operation(_message.Message):
    __slots__ = ("type", "inputs", "outputs")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    type: int
    inputs: _containers.RepeatedScalarFieldContainer[int]
    outputs: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, type: _Optional[int] = ..., inputs: _Optional[_Iterable[int]] = ..., outputs: _Optional[_Iterable[int]] = ...) -> None: ...

class Subgraph(_message.Message):
    __slots__ = ("operands", "operations", "input_indexes", "output_indexes")
    OPERANDS_FIELD_NUMBER: _ClassVar[int]
    OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    INPUT_INDEXES_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INDEXES_FIELD_NUMBER: _ClassVar[int]
    operands: _containers.RepeatedCompositeFieldContainer[Operand]
    operations: _containers.RepeatedCompositeFieldContainer[Operation]
    input_indexes: _containers.RepeatedScalarFieldContainer[int]
    output_indexes: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, operands: _Optional[_Iterable[_Union[Operand, _Mapping]]] = ..., operations: _Optional[_Iterable[_Union[Operation, _Mapping]]] = ..., input_indexes: _Optional[_Iterable[int]] = ..., output_indexes: _Optional[_Iterable[int]] = ...) -> None: ...

class ExtensionNameAndPrefix(_message.Message):
    __slots__ = ("name", "prefix")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    name: str
    prefix: int
    def __init__(self, name: _Optional[str] = ..., prefix: _Optional[int] = ...) -> None: ...

class Model(_message.Message):
    __slots__ = ("main", "referenced", "operand_values", "pools", "relax_computation_float32_to_float16", "extension_name_to_prefix")
    MAIN_FIELD_NUMBER: _ClassVar[int]
    REFERENCED_FIELD_NUMBER: _ClassVar[int]
    OPERAND_VALUES_FIELD_NUMBER: _ClassVar[int]
    POOLS_FIELD_NUMBER: _ClassVar[int]
    RELAX_COMPUTATION_FLOAT32_TO_FLOAT16_FIELD_NUMBER: _ClassVar[int]
    EXTENSION_NAME_TO_PREFIX_FIELD_NUMBER: _ClassVar[int]
    main: Subgraph
    referenced: _containers.RepeatedCompositeFieldContainer[Subgraph]
    operand_values: bytes
    pools: _containers.RepeatedCompositeFieldContainer[Pool]
    relax_computation_float32_to_float16: bool
    extension_name_to_prefix: _containers.RepeatedCompositeFieldContainer[ExtensionNameAndPrefix]
    def __init__(self, main: _Optional[_Union[Subgraph, _Mapping]] = ..., referenced: _Optional[_Iterable[_Union[Subgraph, _Mapping]]] = ..., operand_values: _Optional[bytes] = ..., pools: _Optional[_Iterable[_Union[Pool, _Mapping]]] = ..., relax_computation_float32_to_float16: _Optional[bool] = ..., extension_name_to_prefix: _Optional[_Iterable[_Union[ExtensionNameAndPrefix, _Mapping]]] = ...) -> None: ...

class SharedRegion(_message.Message):
    __slots__ = ("fd_index", "offset", "size", "read_only")
    FD_INDEX_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    fd_index: int
    offset: int
    size: int
    read_only: bool
    def __init__(self, fd_index: _Optional[int] = ..., offset: _Optional[int] = ..., size: _Optional[int] = ..., read_only: _Optional[bool] = ...) -> None: ...

class Pool(_message.Message):
    __slots__ = ("data", "shared", "token", "invalid")
    DATA_FIELD_NUMBER: _ClassVar[int]
    SHARED_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    INVALID_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    shared: SharedRegion
    token: int
    invalid: bool
    def __init__(self, data: _Optional[bytes] = ..., shared: _Optional[_Union[SharedRegion, _Mapping]] = ..., token: _Optional[int] = ..., invalid: _Optional[bool] = ...) -> None: ...

class PoolData(_message.Message):
    __slots__ = ("index", "data")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    index: int
    data: bytes
    def __init__(self, index: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class PerformanceInfo(_message.Message):
    __slots__ = ("exec_time", "power_usage")
    EXEC_TIME_FIELD_NUMBER: _ClassVar[int]
    POWER_USAGE_FIELD_NUMBER: _ClassVar[int]
    exec_time: float
    power_usage: float
    def __init__(self, exec_time: _Optional[float] = ..., power_usage: _Optional[float] = ...) -> None: ...

class OperandPerformance(_message.Message):
    __slots__ = ("type", "info")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    type: int
    info: PerformanceInfo
    def __init__(self, type: _Optional[int] = ..., info: _Optional[_Union[PerformanceInfo, _Mapping]] = ...) -> None: ...

class Capabilities(_message.Message):
    __slots__ = ("relaxed_float32_to_float16_performance_scalar", "relaxed_float32_to_float16_performance_tensor", "operand_performance", "if_performance", "while_performance")
    RELAXED_FLOAT32_TO_FLOAT16_PERFORMANCE_SCALAR_FIELD_NUMBER: _ClassVar[int]
    RELAXED_FLOAT32_TO_FLOAT16_PERFORMANCE_TENSOR_FIELD_NUMBER: _ClassVar[int]
    OPERAND_PERFORMANCE_FIELD_NUMBER: _ClassVar[int]
    IF_PERFORMANCE_FIELD_NUMBER: _ClassVar[int]
    WHILE_PERFORMANCE_FIELD_NUMBER: _ClassVar[int]
    relaxed_float32_to_float16_performance_scalar: PerformanceInfo
    relaxed_float32_to_float16_performance_tensor: PerformanceInfo
    operand_performance: _containers.RepeatedCompositeFieldContainer[OperandPerformance]
    if_performance: PerformanceInfo
    while_performance: PerformanceInfo
    def __init__(self, relaxed_float32_to_float16_performance_scalar: _Optional[_Union[PerformanceInfo, _Mapping]] = ..., relaxed_float32_to_float16_performance_tensor: _Optional[_Union[PerformanceInfo, _Mapping]] = ..., operand_performance: _Optional[_Iterable[_Union[OperandPerformance, _Mapping]]] = ..., if_performance: _Optional[_Union[PerformanceInfo, _Mapping]] = ..., while_performance: _Optional[_Union[PerformanceInfo, _Mapping]] = ...) -> None: ...

class ExtensionOperandTypeInformation(_message.Message):
    __slots__ = ("type", "is_tensor", "byte_size")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    IS_TENSOR_FIELD_NUMBER: _ClassVar[int]
    BYTE_SIZE_FIELD_NUMBER: _ClassVar[int]
    type: int
    is_tensor: bool
    byte_size: int
    def __init__(self, type: _Optional[int] = ..., is_tensor: _Optional[bool] = ..., byte_size: _Optional[int] = ...) -> None: ...

class Extension(_message.Message):
    __slots__ = ("name", "operand_types")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPERAND_TYPES_FIELD_NUMBER: _ClassVar[int]
    name: str
    operand_types: _containers.RepeatedCompositeFieldContainer[ExtensionOperandTypeInformation]
    def __init__(self, name: _Optional[str] = ..., operand_types: _Optional[_Iterable[_Union[ExtensionOperandTypeInformation, _Mapping]]] = ...) -> None: ...

class DescribeRequest(_message.Message):
    __slots__ = ("shared_memory_probe", "probe_bytes")
    SHARED_MEMORY_PROBE_FIELD_NUMBER: _ClassVar[int]
    PROBE_BYTES_FIELD_NUMBER: _ClassVar[int]
    shared_memory_probe: SharedRegion
    probe_bytes: bytes
    def __init__(self, shared_memory_probe: _Optional[_Union[SharedRegion, _Mapping]] = ..., probe_bytes: _Optional[bytes] = ...) -> None: ...

class DeviceInfo(_message.Message):
    __slots__ = ("status", "name", "version", "type", "feature_level", "capabilities", "extensions", "model_cache_files", "data_cache_files", "shared_memory", "pid")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    FEATURE_LEVEL_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    EXTENSIONS_FIELD_NUMBER: _ClassVar[int]
    MODEL_CACHE_FILES_FIELD_NUMBER: _ClassVar[int]
    DATA_CACHE_FILES_FIELD_NUMBER: _ClassVar[int]
    SHARED_MEMORY_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    status: Status
    name: str
    version: str
    type: int
    feature_level: int
    capabilities: Capabilities
    extensions: _containers.RepeatedCompositeFieldContainer[Extension]
    model_cache_files: int
    data_cache_files: int
    shared_memory: bool
    pid: int
    def __init__(self, status: _Optional[_Union[Status, _Mapping]] = ..., name: _Optional[str] = ..., version: _Optional[str] = ..., type: _Optional[int] = ..., feature_level: _Optional[int] = ..., capabilities: _Optional[_Union[Capabilities, _Mapping]] = ..., extensions: _Optional[_Iterable[_Union[Extension, _Mapping]]] = ..., model_cache_files: _Optional[int] = ..., data_cache_files: _Optional[int] = ..., shared_memory: _Optional[bool] = ..., pid: _Optional[int] = ...) -> None: ...

class ModelRequest(_message.Message):
    __slots__ = ("model",)
    MODEL_FIELD_NUMBER: _ClassVar[int]
    model: Model
    def __init__(self, model: _Optional[_Union[Model, _Mapping]] = ...) -> None: ...

class SupportedOperations(_message.Message):
    __slots__ = ("status", "supported")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SUPPORTED_FIELD_NUMBER: _ClassVar[int]
    status: Status
    supported: _containers.RepeatedScalarFieldContainer[bool]
    def __init__(self, status: _Optional[_Union[Status, _Mapping]] = ..., supported: _Optional[_Iterable[bool]] = ...) -> None: ...

class CacheFile(_message.Message):
    __slots__ = ("data", "fd_index", "invalid", "read_only", "write_only")
    DATA_FIELD_NUMBER: _ClassVar[int]
    FD_INDEX_FIELD_NUMBER: _ClassVar[int]
    INVALID_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    WRITE_ONLY_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    fd_index: int
    invalid: bool
    read_only: bool
    write_only: bool
    def __init__(self, data: _Optional[bytes] = ..., fd_index: _Optional[int] = ..., invalid: _Optional[bool] = ..., read_only: _Optional[bool] = ..., write_only: _Optional[bool] = ...) -> None: ...

class PrepareModelRequest(_message.Message):
    __slots__ = ("model", "preference", "priority", "deadline_ns", "model_cache", "data_cache", "token", "has_token", "has_cache")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PREFERENCE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_NS_FIELD_NUMBER: _ClassVar[int]
    MODEL_CACHE_FIELD_NUMBER: _ClassVar[int]
    DATA_CACHE_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    HAS_TOKEN_FIELD_NUMBER: _ClassVar[int]
    HAS_CACHE_FIELD_NUMBER: _ClassVar[int]
    model: Model
    preference: int
    priority: int
    deadline_ns: int
    model_cache: _containers.RepeatedCompositeFieldContainer[CacheFile]
    data_cache: _containers.RepeatedCompositeFieldContainer[CacheFile]
    token: bytes
    has_token: bool
    has_cache: bool
    def __init__(self, model: _Optional[_Union[Model, _Mapping]] = ..., preference: _Optional[int] = ..., priority: _Optional[int] = ..., deadline_ns: _Optional[int] = ..., model_cache: _Optional[_Iterable[_Union[CacheFile, _Mapping]]] = ..., data_cache: _Optional[_Iterable[_Union[CacheFile, _Mapping]]] = ..., token: _Optional[bytes] = ..., has_token: _Optional[bool] = ..., has_cache: _Optional[bool] = ...) -> None: ...

class PrepareFromCacheRequest(_message.Message):
    __slots__ = ("deadline_ns", "model_cache", "data_cache", "token")
    DEADLINE_NS_FIELD_NUMBER: _ClassVar[int]
    MODEL_CACHE_FIELD_NUMBER: _ClassVar[int]
    DATA_CACHE_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    deadline_ns: int
    model_cache: _containers.RepeatedCompositeFieldContainer[CacheFile]
    data_cache: _containers.RepeatedCompositeFieldContainer[CacheFile]
    token: bytes
    def __init__(self, deadline_ns: _Optional[int] = ..., model_cache: _Optional[_Iterable[_Union[CacheFile, _Mapping]]] = ..., data_cache: _Optional[_Iterable[_Union[CacheFile, _Mapping]]] = ..., token: _Optional[bytes] = ...) -> None: ...

class Prepared(_message.Message):
    __slots__ = ("status", "prepared_model", "model_cache", "data_cache")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    PREPARED_MODEL_FIELD_NUMBER: _ClassVar[int]
    MODEL_CACHE_FIELD_NUMBER: _ClassVar[int]
    DATA_CACHE_FIELD_NUMBER: _ClassVar[int]
    status: Status
    prepared_model: int
    model_cache: _containers.RepeatedCompositeFieldContainer[CacheFile]
    data_cache: _containers.RepeatedCompositeFieldContainer[CacheFile]
    def __init__(self, status: _Optional[_Union[Status, _Mapping]] = ..., prepared_model: _Optional[int] = ..., model_cache: _Optional[_Iterable[_Union[CacheFile, _Mapping]]] = ..., data_cache: _Optional[_Iterable[_Union[CacheFile, _Mapping]]] = ...) -> None: ...

class RequestArgument(_message.Message):
    __slots__ = ("has_no_value", "location", "dimensions")
    HAS_NO_VALUE_FIELD_NUMBER: _ClassVar[int]
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    has_no_value: bool
    location: DataLocation
    dimensions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, has_no_value: _Optional[bool] = ..., location: _Optional[_Union[DataLocation, _Mapping]] = ..., dimensions: _Optional[_Iterable[int]] = ...) -> None: ...

class Request(_message.Message):
    __slots__ = ("inputs", "outputs", "pools")
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    POOLS_FIELD_NUMBER: _ClassVar[int]
    inputs: _containers.RepeatedCompositeFieldContainer[RequestArgument]
    outputs: _containers.RepeatedCompositeFieldContainer[RequestArgument]
    pools: _containers.RepeatedCompositeFieldContainer[Pool]
    def __init__(self, inputs: _Optional[_Iterable[_Union[RequestArgument, _Mapping]]] = ..., outputs: _Optional[_Iterable[_Union[RequestArgument, _Mapping]]] = ..., pools: _Optional[_Iterable[_Union[Pool, _Mapping]]] = ...) -> None: ...

class OutputShape(_message.Message):
    __slots__ = ("dimensions", "is_sufficient")
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    IS_SUFFICIENT_FIELD_NUMBER: _ClassVar[int]
    dimensions: _containers.RepeatedScalarFieldContainer[int]
    is_sufficient: bool
    def __init__(self, dimensions: _Optional[_Iterable[int]] = ..., is_sufficient: _Optional[bool] = ...) -> None: ...

class Timing(_message.Message):
    __slots__ = ("time_on_device", "time_in_driver")
    TIME_ON_DEVICE_FIELD_NUMBER: _ClassVar[int]
    TIME_IN_DRIVER_FIELD_NUMBER: _ClassVar[int]
    time_on_device: int
    time_in_driver: int
    def __init__(self, time_on_device: _Optional[int] = ..., time_in_driver: _Optional[int] = ...) -> None: ...

class ExecuteRequest(_message.Message):
    __slots__ = ("path", "prepared_model", "burst", "execution", "request", "memory_identifier_tokens", "measure", "deadline_ns", "loop_timeout_duration_ns")
    PATH_FIELD_NUMBER: _ClassVar[int]
    PREPARED_MODEL_FIELD_NUMBER: _ClassVar[int]
    BURST_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    MEMORY_IDENTIFIER_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MEASURE_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_NS_FIELD_NUMBER: _ClassVar[int]
    LOOP_TIMEOUT_DURATION_NS_FIELD_NUMBER: _ClassVar[int]
    path: ExecutionPath
    prepared_model: int
    burst: int
    execution: int
    request: Request
    memory_identifier_tokens: _containers.RepeatedScalarFieldContainer[int]
    measure: int
    deadline_ns: int
    loop_timeout_duration_ns: int
    def __init__(self, path: _Optional[_Union[ExecutionPath, str]] = ..., prepared_model: _Optional[int] = ..., burst: _Optional[int] = ..., execution: _Optional[int] = ..., request: _Optional[_Union[Request, _Mapping]] = ..., memory_identifier_tokens: _Optional[_Iterable[int]] = ..., measure: _Optional[int] = ..., deadline_ns: _Optional[int] = ..., loop_timeout_duration_ns: _Optional[int] = ...) -> None: ...

class ExecuteReply(_message.Message):
    __slots__ = ("status", "output_shapes", "timing", "written")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SHAPES_FIELD_NUMBER: _ClassVar[int]
    TIMING_FIELD_NUMBER: _ClassVar[int]
    WRITTEN_FIELD_NUMBER: _ClassVar[int]
    status: Status
    output_shapes: _containers.RepeatedCompositeFieldContainer[OutputShape]
    timing: Timing
    written: _containers.RepeatedCompositeFieldContainer[PoolData]
    def __init__(self, status: _Optional[_Union[Status, _Mapping]] = ..., output_shapes: _Optional[_Iterable[_Union[OutputShape, _Mapping]]] = ..., timing: _Optional[_Union[Timing, _Mapping]] = ..., written: _Optional[_Iterable[_Union[PoolData, _Mapping]]] = ...) -> None: ...

class FenceDependency(_message.Message):
    __slots__ = ("signaled_status", "pending", "invalid")
    SIGNALED_STATUS_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    INVALID_FIELD_NUMBER: _ClassVar[int]
    signaled_status: int
    pending: int
    invalid: bool
    def __init__(self, signaled_status: _Optional[int] = ..., pending: _Optional[int] = ..., invalid: _Optional[bool] = ...) -> None: ...

class ExecuteFencedRequest(_message.Message):
    __slots__ = ("prepared_model", "execution", "request", "wait_for", "measure", "deadline_ns", "loop_timeout_duration_ns", "duration_ns")
    PREPARED_MODEL_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    WAIT_FOR_FIELD_NUMBER: _ClassVar[int]
    MEASURE_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_NS_FIELD_NUMBER: _ClassVar[int]
    LOOP_TIMEOUT_DURATION_NS_FIELD_NUMBER: _ClassVar[int]
    DURATION_NS_FIELD_NUMBER: _ClassVar[int]
    prepared_model: int
    execution: int
    request: Request
    wait_for: _containers.RepeatedCompositeFieldContainer[FenceDependency]
    measure: int
    deadline_ns: int
    loop_timeout_duration_ns: int
    duration_ns: int
    def __init__(self, prepared_model: _Optional[int] = ..., execution: _Optional[int] = ..., request: _Optional[_Union[Request, _Mapping]] = ..., wait_for: _Optional[_Iterable[_Union[FenceDependency, _Mapping]]] = ..., measure: _Optional[int] = ..., deadline_ns: _Optional[int] = ..., loop_timeout_duration_ns: _Optional[int] = ..., duration_ns: _Optional[int] = ...) -> None: ...

class ExecuteFencedReply(_message.Message):
    __slots__ = ("status", "fence", "written", "signaled", "fence_status", "timing_launched", "timing_fenced", "callback_status")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    WRITTEN_FIELD_NUMBER: _ClassVar[int]
    SIGNALED_FIELD_NUMBER: _ClassVar[int]
    FENCE_STATUS_FIELD_NUMBER: _ClassVar[int]
    TIMING_LAUNCHED_FIELD_NUMBER: _ClassVar[int]
    TIMING_FENCED_FIELD_NUMBER: _ClassVar[int]
    CALLBACK_STATUS_FIELD_NUMBER: _ClassVar[int]
    status: Status
    fence: int
    written: _containers.RepeatedCompositeFieldContainer[PoolData]
    signaled: bool
    fence_status: int
    timing_launched: Timing
    timing_fenced: Timing
    callback_status: int
    def __init__(self, status: _Optional[_Union[Status, _Mapping]] = ..., fence: _Optional[int] = ..., written: _Optional[_Iterable[_Union[PoolData, _Mapping]]] = ..., signaled: _Optional[bool] = ..., fence_status: _Optional[int] = ..., timing_launched: _Optional[_Union[Timing, _Mapping]] = ..., timing_fenced: _Optional[_Union[Timing, _Mapping]] = ..., callback_status: _Optional[int] = ...) -> None: ...

class SignalFenceRequest(_message.Message):
    __slots__ = ("pending", "status")
    PENDING_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    pending: int
    status: int
    def __init__(self, pending: _Optional[int] = ..., status: _Optional[int] = ...) -> None: ...

class WaitFenceRequest(_message.Message):
    __slots__ = ("fence", "timeout_s")
    FENCE_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    fence: int
    timeout_s: float
    def __init__(self, fence: _Optional[int] = ..., timeout_s: _Optional[float] = ...) -> None: ...

class WaitFenceReply(_message.Message):
    __slots__ = ("status", "signaled", "fence_status", "timing_launched", "timing_fenced", "callback_status", "written")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SIGNALED_FIELD_NUMBER: _ClassVar[int]
    FENCE_STATUS_FIELD_NUMBER: _ClassVar[int]
    TIMING_LAUNCHED_FIELD_NUMBER: _ClassVar[int]
    TIMING_FENCED_FIELD_NUMBER: _ClassVar[int]
    CALLBACK_STATUS_FIELD_NUMBER: _ClassVar[int]
    WRITTEN_FIELD_NUMBER: _ClassVar[int]
    status: Status
    signaled: bool
    fence_status: int
    timing_launched: Timing
    timing_fenced: Timing
    callback_status: int
    written: _containers.RepeatedCompositeFieldContainer[PoolData]
    def __init__(self, status: _Optional[_Union[Status, _Mapping]] = ..., signaled: _Optional[bool] = ..., fence_status: _Optional[int] = ..., timing_launched: _Optional[_Union[Timing, _Mapping]] = ..., timing_fenced: _Optional[_Union[Timing, _Mapping]] = ..., callback_status: _Optional[int] = ..., written: _Optional[_Iterable[_Union[PoolData, _Mapping]]] = ...) -> None: ...

class ObjectRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class ObjectReply(_message.Message):
    __slots__ = ("status", "id")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    status: Status
    id: int
    def __init__(self, status: _Optional[_Union[Status, _Mapping]] = ..., id: _Optional[int] = ...) -> None: ...

class ReleaseMemoryRequest(_message.Message):
    __slots__ = ("burst", "token")
    BURST_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    burst: int
    token: int
    def __init__(self, burst: _Optional[int] = ..., token: _Optional[int] = ...) -> None: ...

class ReusableRequest(_message.Message):
    __slots__ = ("prepared_model", "request", "measure", "loop_timeout_duration_ns")
    PREPARED_MODEL_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    MEASURE_FIELD_NUMBER: _ClassVar[int]
    LOOP_TIMEOUT_DURATION_NS_FIELD_NUMBER: _ClassVar[int]
    prepared_model: int
    request: Request
    measure: int
    loop_timeout_duration_ns: int
    def __init__(self, prepared_model: _Optional[int] = ..., request: _Optional[_Union[Request, _Mapping]] = ..., measure: _Optional[int] = ..., loop_timeout_duration_ns: _Optional[int] = ...) -> None: ...

class BufferRole(_message.Message):
    __slots__ = ("model_index", "io_index", "probability")
    MODEL_INDEX_FIELD_NUMBER: _ClassVar[int]
    IO_INDEX_FIELD_NUMBER: _ClassVar[int]
    PROBABILITY_FIELD_NUMBER: _ClassVar[int]
    model_index: int
    io_index: int
    probability: float
    def __init__(self, model_index: _Optional[int] = ..., io_index: _Optional[int] = ..., probability: _Optional[float] = ...) -> None: ...

class AllocateRequest(_message.Message):
    __slots__ = ("dimensions", "prepared_models", "input_roles", "output_roles")
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    PREPARED_MODELS_FIELD_NUMBER: _ClassVar[int]
    INPUT_ROLES_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_ROLES_FIELD_NUMBER: _ClassVar[int]
    dimensions: _containers.RepeatedScalarFieldContainer[int]
    prepared_models: _containers.RepeatedScalarFieldContainer[int]
    input_roles: _containers.RepeatedCompositeFieldContainer[BufferRole]
    output_roles: _containers.RepeatedCompositeFieldContainer[BufferRole]
    def __init__(self, dimensions: _Optional[_Iterable[int]] = ..., prepared_models: _Optional[_Iterable[int]] = ..., input_roles: _Optional[_Iterable[_Union[BufferRole, _Mapping]]] = ..., output_roles: _Optional[_Iterable[_Union[BufferRole, _Mapping]]] = ...) -> None: ...

class AllocateReply(_message.Message):
    __slots__ = ("status", "buffer", "token")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    BUFFER_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    status: Status
    buffer: int
    token: int
    def __init__(self, status: _Optional[_Union[Status, _Mapping]] = ..., buffer: _Optional[int] = ..., token: _Optional[int] = ...) -> None: ...

class CopyToRequest(_message.Message):
    __slots__ = ("buffer", "dst")
    BUFFER_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    buffer: int
    dst: Pool
    def __init__(self, buffer: _Optional[int] = ..., dst: _Optional[_Union[Pool, _Mapping]] = ...) -> None: ...

class CopyToReply(_message.Message):
    __slots__ = ("status", "data")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    status: Status
    data: bytes
    def __init__(self, status: _Optional[_Union[Status, _Mapping]] = ..., data: _Optional[bytes] = ...) -> None: ...

class CopyFromRequest(_message.Message):
    __slots__ = ("buffer", "src", "dimensions")
    BUFFER_FIELD_NUMBER: _ClassVar[int]
    SRC_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    buffer: int
    src: Pool
    dimensions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, buffer: _Optional[int] = ..., src: _Optional[_Union[Pool, _Mapping]] = ..., dimensions: _Optional[_Iterable[int]] = ...) -> None: ...

class ReleaseRequest(_message.Message):
    __slots__ = ("ids",)
    IDS_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, ids: _Optional[_Iterable[int]] = ...) -> None: ...
