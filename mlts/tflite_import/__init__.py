"""Import a TFLite flatbuffer into NNAPI models, the way TFLite's NNAPI delegate maps builtin
operators (``tensorflow/lite/delegates/nnapi/nnapi_delegate.cc``: ``Validate``, ``Map``,
``AddOpsAndTensors``; the facts are restated here, nothing is copied).

``import_tflite(path_or_bytes) -> ImportedModel``. The model is read with the ``tflite``
package (the generated flatbuffer classes of TFLite's ``schema.fbs``); only subgraph 0 is
imported. Each operator, in TFLite's execution order, is

- **mapped**: it becomes one or more NNAPI operations of the current NNAPI partition
  (a :class:`Partition`, whose ``model`` is a :class:`runtime.testing.test_model.TestModel`
  with main inputs/outputs tied to TFLite tensor indexes);
- **folded**: evaluated once at import because every input is constant: a DEQUANTIZE of a
  constant float16 tensor (the delegate converts such weights to float32 constants,
  ``NN_TENSOR_FLAG_HALF_TO_FLOAT_CONVERSION``, and drops the DEQUANTIZE node), or a CPU
  fallback operator with constant inputs (DENSIFY of sparse weights: the delegate's
  ``DensifyAndDequantizeConstTensor``);
- **CPU fallback**: no NNAPI mapping; it runs a numpy kernel of :mod:`mlts.fallback` as a
  :class:`FallbackStep` between partitions (the delegate leaves such nodes to the
  interpreter and partitions the graph around them);
- **unsupported**: no mapping and no kernel; the import succeeds (``describe`` shows it)
  but running the model raises :class:`TFLiteImportError` naming the operator.

Operand types (TFLite tensor type -> NNAPI, ``NNAPIOpBuilder::AddTensor``, feature level 4
targets): FLOAT32 -> TENSOR_FLOAT32; FLOAT16 -> TENSOR_FLOAT16; UINT8 -> TENSOR_QUANT8_ASYMM;
INT8 -> TENSOR_QUANT8_ASYMM_SIGNED, or TENSOR_QUANT8_SYMM_PER_CHANNEL (``channelDim`` =
TFLite ``quantized_dimension``) when the tensor has more than one scale; INT32 ->
TENSOR_INT32 (a quantized operation's bias gets scale input_scale * filter_scale, or 0 with a
per-channel filter, zeroPoint 0); INT16 -> TENSOR_QUANT16_SYMM; BOOL -> TENSOR_BOOL8;
constant INT64 shape/axis tensors -> TENSOR_INT32. A quantized tensor of scale 0 gets scale 1
(NNAPI forbids 0, as the delegate does). A rank-0 tensor becomes shape [1] (NNAPI reads
rank 0 as "unknown rank"; the delegate's scalar-as-tensor rule); values are reshaped back to
the TFLite shape when read. Layout is NHWC throughout (the NNAPI layout flag, when present,
is false). Shapes are the static ``shape`` (not ``shape_signature``), as the delegate without
``allow_dynamic_dimensions``. Constants of more than 128 bytes are CONSTANT_REFERENCE (one
memory pool per partition, like the delegate's mmap sharing), smaller ones CONSTANT_COPY.

Operator mapping (TFLite builtin -> NNAPI; options as the delegate's ``Map``):

- ADD, SUB, MUL, DIV -> same (+ fused activation; NNAPI broadcasts like TFLite). A fused
  TANH or SIGN_BIT activation (any operator) is dropped, noted in the mapping: TFLite's
  kernels ignore it (``CalculateActivationRange`` clamps only for RELU, RELU_N1_TO_1, RELU6).
- CONV_2D -> CONV_2D (implicit padding SAME=1/VALID=2, strides, activation; the layout flag
  and dilations only when a dilation is not 1); a missing bias becomes a zero bias; a float
  input with int8/uint8 weights (hybrid) gets DEQUANTIZE operations for weights and bias
  (``AddDequantizeOperatorsWhereNeeded``).
- DEPTHWISE_CONV_2D -> DEPTHWISE_CONV_2D, depth multiplier = filter channels / input
  channels (TFLite's kernel derives it from the shapes, the option may be stale).
- FULLY_CONNECTED -> FULLY_CONNECTED (zero bias when absent; NNAPI flattens an input of rank
  2-4 to [batch, input_size], other ranks get a RESHAPE first; with ``keep_num_dims`` the
  [batch, units] result is RESHAPEd to the TFLite output shape, ``AppendReshape``). Int8
  weights with per-channel scales (which NNAPI FULLY_CONNECTED cannot take) become RESHAPE +
  CONV_2D 1x1 with a per-channel filter + RESHAPE.
- TRANSPOSE_CONV -> TRANSPOSE_CONV_2D (inputs reordered; zero bias when absent).
- AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D -> same (padding, strides, filter, activation).
- CONCATENATION -> CONCATENATION (axis made non-negative); a fused activation becomes a
  following RELU/RELU1/RELU6. PACK -> a RESHAPE per input (inserting the axis) +
  CONCATENATION (the delegate's CONCATENATION + RESHAPE lowering, valid for every axis).
- RESHAPE -> RESHAPE (new shape = the output tensor's static shape); SQUEEZE -> SQUEEZE;
  EXPAND_DIMS, TRANSPOSE, SLICE, STRIDED_SLICE (no ellipsis / new-axis masks), GATHER, TILE,
  SPLIT, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND (zero crops), DEPTH_TO_SPACE, SPACE_TO_DEPTH,
  PAD / PADV2 (constant paddings; PADV2's value as a scalar) -> same.
- SOFTMAX (beta), LOG_SOFTMAX (beta 1, axis -1), L2_NORMALIZATION,
  LOCAL_RESPONSE_NORMALIZATION, LOGISTIC, TANH, RELU, RELU_N1_TO_1 (-> RELU1), RELU6,
  HARD_SWISH, ELU (alpha 1), EXP, LOG, SQRT, RSQRT, SIN, ABS, NEG, FLOOR, CAST, PRELU,
  LEAKY_RELU (-> PRELU with a one-element alpha), MAXIMUM, MINIMUM, POW, the comparisons,
  LOGICAL_AND/OR/NOT, SELECT, ARG_MAX/ARG_MIN (int32 output), MEAN, SUM, REDUCE_PROD,
  REDUCE_MAX, REDUCE_MIN, REDUCE_ANY, RESIZE_BILINEAR (output size; ``align_corners`` /
  ``half_pixel_centers`` when set), RESIZE_NEAREST_NEIGHBOR -> the NNAPI operation of the
  same meaning. A quantized MEAN / REDUCE_MAX / REDUCE_MIN whose output quantization differs
  from its input's (NNAPI requires them equal; the delegate would leave it on the CPU)
  becomes DEQUANTIZE + the float reduction + QUANTIZE.
- QUANTIZE -> QUANTIZE (a quantized input, i.e. requantization, gets a DEQUANTIZE first).
- DEQUANTIZE: constant float16 input -> folded (see above); other float16 input -> CAST to
  float32; int8/uint8 input -> DEQUANTIZE.
- UNIDIRECTIONAL_SEQUENCE_LSTM (float32) -> UNIDIRECTIONAL_SEQUENCE_LSTM: TFLite inputs 0-19
  (an omitted optional input -> a NO_VALUE operand), activation, cell_clip, proj_clip,
  time_major, then the four layer-normalization weights (NO_VALUE when absent). TFLite's
  variable state tensors (inputs 18, 19) become zero constants: each run starts from zero
  state, like a fresh interpreter or one after ``reset_all_variables``. The same holds for
  the state of LSTM (full kernel, one step; NNAPI LSTM with temporary scratch and state
  outputs), RNN, UNIDIRECTIONAL_SEQUENCE_RNN and SVDF (float32; their activation must be
  a FuseCode: a TANH cell activation, real in TFLite, has no NNAPI form).
- TOPK_V2 (constant k, int32 indices), FILL (constant dims and value), EMBEDDING_LOOKUP ->
  same.

Everything else is a CPU fallback (:data:`mlts.fallback.KERNELS`) or unsupported. A
mapping the front end rejects when the partition is built (a type combination NNAPI lacks)
also falls back: the operator is re-imported as a CPU fallback with the front end's reason.

Errors: :class:`TFLiteImportError` (a ``ValueError``) naming the file and, where it applies,
the operator index and builtin name: unreadable file, a file of more than
:data:`MAX_TFLITE_BYTES` (512 MiB), not a TFLite flatbuffer (identifier ``TFL3``), missing
``tflite`` package, a graph input that is also an output, ...

The package, by layer (each imports only those above it):

- :mod:`~mlts.tflite_import.model`: the error, the tensor records and the import result
  (:class:`ImportedModel`, :class:`Partition`, :class:`FallbackStep`,
  :class:`OperatorMapping`), :func:`describe`;
- :mod:`~mlts.tflite_import.reader`: the bounded file read and the flatbuffer reading
  (tensors, operators, builtin options);
- :mod:`~mlts.tflite_import.builder`: the NNAPI partition under construction, operand types,
  the helpers the mappings share;
- :mod:`~mlts.tflite_import.weighted`, :mod:`~mlts.tflite_import.recurrent`,
  :mod:`~mlts.tflite_import.operators`: the operator mappings and the table :data:`MAPPERS`;
- :mod:`~mlts.tflite_import.importer`: :func:`import_tflite`, the import driver.
"""
from __future__ import annotations

from .importer import import_tflite
from .model import (ACTIVATIONS, TFLITE_TYPES, DimensionLevel, FallbackStep, ImportedModel, OperatorMapping,
                    Partition, SparsityInfo, TensorInfo, TFLiteImportError, describe, make_test_model)
from .operators import MAPPERS
from .reader import MAX_TFLITE_BYTES


__all__ = [
    "ACTIVATIONS", "MAPPERS", "MAX_TFLITE_BYTES", "TFLITE_TYPES", "DimensionLevel", "FallbackStep",
    "ImportedModel", "OperatorMapping", "Partition", "SparsityInfo", "TFLiteImportError", "TensorInfo",
    "describe", "import_tflite", "make_test_model",
]
