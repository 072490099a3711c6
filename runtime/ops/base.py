"""The operation table's building blocks.

Each NNAPI operation is declared once, as an :class:`OperationDef`: its signatures per
feature level (operand types and ranks of every input and output), an optional static
``validate`` (rules needing constant values), ``prepare`` (shape inference, which also
checks parameter values) and ``execute`` (the numpy reference kernel). Validation, the
sample drivers, random graphs and reports all read :data:`REGISTRY`.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from ..errors import OperationError
from ..types import ErrorStatus, OperandType, OperationType, is_tensor_type

ANY_RANK = None


@dataclass(frozen=True)
class Arg:
    """One input or output slot of a signature.

    ``ranks``: allowed ranks for a tensor (``None``: any); ignored for scalars.
    ``optional``: the operand may be omitted (lifetime ``NO_VALUE`` or an input bound with
    no value).
    ``fixed_quant``: ``(scale, zero_point)`` the NNAPI spec fixes for a quantized slot, or
    ``None``: the outputs of LOGISTIC, TANH, SOFTMAX and L2_NORMALIZATION, the TENSOR_QUANT16
    boxes of the detection and ROI operations, QUANTIZED_16BIT_LSTM's cell state,
    HASHTABLE_LOOKUP's hits. Signature matching ignores it; the coverage matrix and the
    random-graph / fuzz generators read it, and who enforces it is ``fixed_quant_at``.
    ``fixed_quant_at``: ``"validation"``: model validation rejects other parameters
    (:func:`fixed_quant_violation`, read by ``runtime.hal.validate``; the activations'
    outputs); ``"prepare"``: the model is valid and the operation's ``prepare`` rejects them
    when it runs (AOSP's prepare checks the box operands and sets the outputs'; see
    ``detection.BOX_QUANT``).
    """

    name: str
    type: OperandType
    ranks: tuple[int, ...] | None = None
    optional: bool = False
    fixed_quant: tuple[float, int] | None = None
    fixed_quant_at: str = "prepare"

    def accepts(self, operand_type: OperandType, dims: Sequence[int], omitted: bool) -> bool:
        """Whether an operand of ``operand_type`` / ``dims`` fits this slot."""
        if omitted and self.optional:
            return True
        if operand_type != self.type:
            return False
        if self.ranks is not None and is_tensor_type(operand_type) and len(dims) > 0 \
                and not self.optional:
            return len(dims) in self.ranks
        return True


def _scale_text(scale: float) -> str:
    """``1/256`` for a reciprocal of an integer, else the float's repr."""
    inv = 1.0 / scale if scale else 0.0
    return f"1/{round(inv)}" if inv and abs(inv - round(inv)) < 1e-9 else repr(scale)


def fixed_quant_violation(op: OperationType, sig: "Signature", inputs: Sequence["OperandView"],
                          outputs: Sequence["OperandView"], at: str = "validation") -> str | None:
    """The message for the first operand of a use of ``op`` matched to ``sig`` whose scale /
    zeroPoint differs from its slot's ``fixed_quant`` (slots with ``fixed_quant_at == at``;
    scales compared as float32, as AOSP compares ``1.f / 256``), else None.

    E.g. ``"LOGISTIC: output 0 (TENSOR_QUANT8_ASYMM) must have scale 1/256 and zeroPoint 0,
    got scale 0.5 and zeroPoint 3"``."""
    for kind, args, views in (("input", sig.inputs, inputs), ("output", sig.outputs, outputs)):
        for j, (a, v) in enumerate(zip(args, views)):
            if a.fixed_quant is None or a.fixed_quant_at != at or v.omitted or v.type != a.type:
                continue
            scale, zp = a.fixed_quant
            if np.float32(v.scale) != np.float32(scale) or v.zero_point != zp:
                return (f"{OperationType(op).name}: {kind} {j} ({OperandType(v.type).name}) must "
                        f"have scale {_scale_text(scale)} and zeroPoint {zp}, got scale {v.scale} "
                        f"and zeroPoint {v.zero_point}")
    return None


@dataclass(frozen=True)
class Signature:
    """The operand types/ranks one feature level of an operation accepts."""

    feature_level: int
    inputs: tuple[Arg, ...]
    outputs: tuple[Arg, ...]

    def describe(self) -> str:
        ins = ", ".join(a.type.name + ("?" if a.optional else "") for a in self.inputs)
        outs = ", ".join(a.type.name for a in self.outputs)
        return f"FL{self.feature_level}: ({ins}) -> ({outs})"


@dataclass
class OperandView:
    """An operand as an operation sees it during validation or execution.

    ``dims``: tuple of ints (0 = unknown); ``value``: numpy array of shape ``dims`` (0-d for
    scalars) with the operand's dtype, or ``None`` when omitted or not known yet.
    ``channel_quant``: ``(scales: np.ndarray[float32], channel_dim: int)`` for
    TENSOR_QUANT8_SYMM_PER_CHANNEL, else ``None``. ``extension_data``: the extension data
    (bytes) of an extension operand, whose ``type`` is then its extension type code (int).
    """

    type: OperandType
    dims: tuple[int, ...]
    scale: float = 0.0
    zero_point: int = 0
    value: np.ndarray | None = None
    omitted: bool = False
    channel_quant: tuple[np.ndarray, int] | None = None
    extension_data: bytes | None = None

    @property
    def rank(self) -> int:
        return len(self.dims)


@dataclass
class OpContext:
    """What ``validate``/``prepare``/``execute`` receive.

    ``inputs``/``outputs``: operand views in the operation's order (outputs carry the
    declared type, dims, scale and zero point, never a value). ``relaxed``: the model allows
    float32 to be computed at float16 range/precision. ``prepared``: what ``prepare`` left
    for ``execute`` of the same context (the executor calls both on one context; None
    otherwise), e.g. the checked parameters with the ``inputs`` list they were read from,
    so execute does not check them again.
    """

    operation: OperationType
    inputs: list[OperandView]
    outputs: list[OperandView]
    relaxed: bool = False
    required_feature_level: int = 1
    required_because: str = ""
    prepared: object = None

    def require_feature_level(self, level: int, reason: str) -> None:
        """Record that this use of the operation needs feature level ``level`` (a rule of
        lower levels is broken, as AOSP ``validateOperation`` computes a model's minimum
        feature level); validation for a lower level then rejects it with ``reason``."""
        if level > self.required_feature_level:
            self.required_feature_level, self.required_because = level, reason

    def scalar(self, index: int):
        """Python value (int, float or bool) of scalar input ``index``; raises OperationError
        when it has no value."""
        v = self.inputs[index].value
        if v is None:
            raise OperationError(f"input {index} must have a value")
        return v.item() if isinstance(v, np.ndarray) else v

    def value(self, index: int) -> np.ndarray:
        """numpy value of input ``index``; raises OperationError when omitted/unknown."""
        v = self.inputs[index].value
        if v is None:
            raise OperationError(f"input {index} must have a value")
        return v

    def has_value(self, index: int) -> bool:
        return index < len(self.inputs) and self.inputs[index].value is not None


@dataclass
class OperationDef:
    """One row of the operation table.

    ``prepare(ctx) -> list[tuple[int, ...]]``: output dimensions from the inputs (values of
    all inputs known); raises :class:`OperationError` on an invalid parameter or shape.
    ``execute(ctx) -> list[np.ndarray]``: output values (dtype of the output operand type).
    ``validate(ctx)``: optional rules checkable at model time (constants have values,
    other inputs have ``value=None``); raises :class:`OperationError`.
    """

    type: OperationType
    signatures: tuple[Signature, ...]
    prepare: Callable[[OpContext], list[tuple[int, ...]]]
    execute: Callable[[OpContext], list[np.ndarray]]
    validate: Callable[[OpContext], None] | None = None
    summary: str = ""

    #: True when the first input slot repeats (n >= 1 tensors, then the fixed trailing
    #: inputs), as NNAPI CONCATENATION's inputs do.
    variadic: bool = False

    #: Index of the input slot that repeats when ``variadic``: 0 (CONCATENATION), or the
    #: slot after fixed leading inputs (NNAPI PACK: axis, then n >= 1 tensors: 1).
    variadic_index: int = 0

    #: True when the (single) output slot repeats (n >= 1 outputs of that slot), as NNAPI
    #: SPLIT's outputs do.
    variadic_outputs: bool = False

    #: Random-graph generation constraints (:mod:`runtime.ops.generation`):
    #: ``generate(draft)`` states what the defaults cannot know about a valid use (filter
    #: and bias shapes, parameter tensors, value ranges, fixed output quantizations); None:
    #: the defaults suffice (element-wise operations).
    generate: Callable | None = None

    #: AOSP facts: which operands AOSP's CPU executor (``packages/modules/NeuralNetworks``,
    #: ``common/CpuExecutor.cpp``) lets this operation take. The coverage matrix marks the
    #: cells they rule out impossible; validation and execution do not read them. Defaults
    #: are conservative (not allowed). ``allows_zero_sized_input``: AOSP registers the
    #: operation with ``allowZeroSizedInput`` (or runs it itself without a zero-size check);
    #: otherwise ``checkNoZeroSizedInput`` (``allParametersPresent`` for the operations the
    #: executor runs itself) rejects an input with a dimension of 0.
    allows_zero_sized_input: bool = False

    #: AOSP registers the operation with ``allowOmittedOperand`` (or runs it itself without
    #: ``allParametersPresent``); otherwise ``checkNoOmittedOperand`` / ``allParametersPresent``
    #: rejects an omitted (NO_VALUE) operand.
    allows_omitted_operand: bool = False

    #: AOSP requires the ``axis`` input >= 0 (CONCATENATION, PACK, REVERSE check
    #: ``axis >= 0``); other operations with an axis take [-rank, rank).
    nonnegative_axis: bool = False

    #: NNAPI gives input 0 equal height and width (HEATMAP_MAX_KEYPOINT's heatmaps are
    #: [num_boxes, heatmap_size, heatmap_size, num_keypoints]): no non-square spatial shape.
    square_spatial: bool = False

    #: The AOSP file those facts come from: ``<Name>Execution.cpp`` (in
    #: ``common/operations/``, an ``NN_REGISTER_OPERATION`` call) or ``CpuExecutor.cpp``
    #: (a case of the executor's own switch).
    aosp_source: str = ""

    #: The outputs are random draws (RANDOM_MULTINOMIAL): a result is judged by its
    #: distribution, never compared value by value, so random graphs leave the operation out.
    nondeterministic: bool = False

    #: AOSP's quantization-coupling test (``GeneratedTestHarness``
    #: ``QuantizationCouplingTest``: a TENSOR_QUANT8_ASYMM model re-run as
    #: TENSOR_QUANT8_ASYMM_SIGNED) leaves the operation out; the row says why in a comment.
    coupling_excluded: bool = False

    #: AOSP derives no dynamic-output-shape (or insufficient-output) variant of a model
    #: using the operation (``GeneratedTestHarness``); the row says why in a comment.
    dynamic_shape_excluded: bool = False

    #: Names of the input slots holding a weight matrix (FULLY_CONNECTED ``weights``
    #: [num_units, input_size], BATCH_MATMUL ``rhs``: its last two dimensions); the coverage
    #: matrix asks for square and non-square ones.
    weight_slots: tuple[str, ...] = ()

    #: Invalid uses of this row that its signatures alone cannot tell (in the spirit of
    #: PyTorch OpInfo's ``error_inputs_func``): ``error_inputs(inputs, outputs)``, given the
    #: operand views of a valid use, yields :class:`ErrorInput` variants, each breaking one
    #: rule of the operation, with the message fragment the rejection names, the rule and
    #: when NNAPI rejects it (model validation or the operation's prepare). Builders:
    #: :mod:`runtime.ops.error_inputs`. None: none.
    error_inputs: Callable[[list, list], Iterator["ErrorInput"]] | None = None

    #: Error budget of the operation's float outputs (TENSOR_FLOAT32 / TENSOR_FLOAT16):
    #: ``error_budget(ctx) -> runtime.precision.budgets.Budget`` given the context of one use
    #: (input views with their values and shapes, output views with their dims), the bound,
    #: in ULP of the output type, a correct implementation stays within against the float64
    #: truth; formulas and their sources in :mod:`runtime.precision.budgets`. None: no float
    #: output, or none declared yet (graded "no budget").
    error_budget: Callable[[OpContext], object] | None = None

    #: For a discontinuous operation (comparisons, ARGMAX / ARGMIN, TOPK_V2, FLOOR, CAST or
    #: QUANTIZE of a float ...): ``decision(ctx, errors, results)`` -> per output a bool mask
    #: of its shape (or None: no element), true where the element's answer could change when
    #: each input moves within its allowed error (``errors``: per input None, exact, or a
    #: float64 array of absolute errors in real units broadcastable to its value;
    #: ``results``: the reference's outputs), so more than one answer is right. Rules:
    #: :mod:`runtime.ops.decision_rules`; read by :mod:`runtime.precision.decisions`. None: a
    #: continuous operation.
    decision: Callable | None = None

    @property
    def min_feature_level(self) -> int:
        return min(s.feature_level for s in self.signatures)

    def signatures_for(self, n_inputs: int, n_outputs: int | None = None) -> tuple[Signature, ...]:
        """Signatures for a use with ``n_inputs`` inputs: for a variadic operation, each
        signature's slot ``variadic_index`` (the first by default) repeated to fill (none
        if there is no room for one); for an operation with variadic outputs and
        ``n_outputs`` >= 1 given, its output slot repeated ``n_outputs`` times."""
        sigs = self.signatures
        if self.variadic_outputs and n_outputs is not None and n_outputs >= 1:
            sigs = tuple(Signature(s.feature_level, s.inputs, (s.outputs[0],) * n_outputs)
                         for s in sigs)
        if not self.variadic:
            return sigs
        out, k = [], self.variadic_index
        for s in sigs:
            n = n_inputs - (len(s.inputs) - 1)
            if n >= 1:
                out.append(Signature(s.feature_level,
                                     s.inputs[:k] + (s.inputs[k],) * n + s.inputs[k + 1:],
                                     s.outputs))
        return tuple(out)

    def match(self, inputs: Sequence[OperandView], outputs: Sequence[OperandView],
              max_feature_level: int = 99) -> Signature | None:
        """The lowest-level signature accepting these operands (types, counts, ranks), expanded
        to the input (output) count for a variadic operation; None if none fits."""
        for s in self._candidates(len(inputs), len(outputs)):
            if s.feature_level > max_feature_level:
                break
            if all(a.accepts(o.type, o.dims, o.omitted) for a, o in zip(s.inputs, inputs)) and \
                    all(a.accepts(o.type, o.dims, False) for a, o in zip(s.outputs, outputs)):
                return s
        return None

    def _candidates(self, n_inputs: int, n_outputs: int) -> tuple[Signature, ...]:
        """The signatures with exactly these operand counts, lowest feature level first
        (memoised per count pair; the memo is bounded and follows ``signatures``)."""
        memo = self.__dict__.get("_memo")
        if memo is None or memo[0] is not self.signatures or len(memo[1]) > 64:
            memo = self.__dict__["_memo"] = (self.signatures, {})
        key = (n_inputs, n_outputs)
        found = memo[1].get(key)
        if found is None:
            found = memo[1][key] = tuple(sorted(
                (s for s in self.signatures_for(n_inputs, n_outputs)
                 if len(s.inputs) == n_inputs and len(s.outputs) == n_outputs),
                key=lambda s: s.feature_level))
        return found


@dataclass(frozen=True)
class ErrorInput:
    """One invalid variant of a valid use of an operation (see
    ``OperationDef.error_inputs``): which operand changed (``where``: ``"input 1"``,
    ``"output 0"``), the operand views of the variant (every other view is the valid use's
    own object), ``error``, a fragment of the message the rejection names, and ``reason``,
    the rule broken with its NNAPI source (``types.spec`` / AOSP).

    ``at``: when NNAPI rejects the variant. ``"validation"``: model validation (the row's
    ``validate``, a ``fixed_quant`` slot): HAL ``INVALID_ARGUMENT`` from
    ``getSupportedOperations`` / ``prepareModel``, ``ANEURALNETWORKS_BAD_DATA`` from the
    front end's ``ANeuralNetworksModel_finish``. ``"prepare"``: the model is valid (AOSP
    validates operand types, not shapes or parameter values); the operation's ``prepare``
    rejects it when it runs: HAL ``GENERAL_FAILURE`` from the execution,
    ``ANEURALNETWORKS_OP_FAILED`` from the front end."""

    where: str
    inputs: list
    outputs: list
    error: str
    reason: str
    at: str = "validation"

    @property
    def status(self) -> ErrorStatus:
        """The HAL status the rejection carries (see ``at``)."""
        return ErrorStatus.INVALID_ARGUMENT if self.at == "validation" else ErrorStatus.GENERAL_FAILURE


#: The operation table: OperationType -> OperationDef. Filled by the family modules.
REGISTRY: dict[OperationType, OperationDef] = {}


def register(op: OperationDef) -> OperationDef:
    """Add ``op`` to :data:`REGISTRY` (one definition per OperationType)."""
    if op.type in REGISTRY:
        raise RuntimeError(f"{op.type.name} registered twice")
    REGISTRY[op.type] = op
    return op


@contextmanager
def registered(op: OperationDef) -> Iterator[OperationDef]:
    """Within the block, ``op`` is the table row of ``op.type`` (replacing the row there,
    if any, which is put back on exit): a row declared in a test reaches every consumer of
    :data:`REGISTRY` (validation, drivers, generators, the coverage matrix) unchanged."""
    previous = REGISTRY.get(op.type)
    REGISTRY[op.type] = op
    try:
        yield op
    finally:
        if previous is None:
            REGISTRY.pop(op.type, None)
        else:
            REGISTRY[op.type] = previous


# --- helpers for declaring signatures ------------------------------------------------

T = OperandType
RANKS_1_4 = (1, 2, 3, 4)


def tensor(name: str, t: OperandType, ranks: Iterable[int] | None = RANKS_1_4,
           optional: bool = False, fixed_quant: tuple[float, int] | None = None,
           fixed_quant_at: str = "prepare") -> Arg:
    """A tensor slot of type ``t`` with allowed ``ranks`` (default 1..4); ``fixed_quant``:
    the ``(scale, zero_point)`` the spec fixes for it, enforced at ``fixed_quant_at``
    (see :class:`Arg`)."""
    return Arg(name, t, tuple(ranks) if ranks is not None else None, optional, fixed_quant,
               fixed_quant_at)


def scalar(name: str, t: OperandType, optional: bool = False) -> Arg:
    """A scalar slot (INT32, FLOAT32, BOOL, ...)."""
    return Arg(name, t, None, optional)


def sig(feature_level: int, inputs: Sequence[Arg], outputs: Sequence[Arg]) -> Signature:
    return Signature(feature_level, tuple(inputs), tuple(outputs))


def check(condition: bool, message: str) -> None:
    """Raise :class:`OperationError` with ``message`` unless ``condition``."""
    if not condition:
        raise OperationError(message)
