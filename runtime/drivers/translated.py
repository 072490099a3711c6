"""Shared plumbing of the drivers that translate an NNAPI HAL model into another engine's
format and let that engine compute it (``onnxruntime``: :mod:`.onnxrt`; ``litert``:
:mod:`.litert`). Nothing here knows an engine:

* :class:`TranslatedPreparedModel`: HAL ``executeSynchronously`` around an engine call: the
  request is validated (HAL ``validateRequest``), each main input the engine reads is copied
  out of its pool as a numpy array of the operand's dtype and dimensions (refined by the
  request argument), the engine runs (:meth:`~TranslatedPreparedModel.run_engine`), and its
  results are written back into the output pools (``executor.write_outputs``, which raises
  OUTPUT_INSUFFICIENT_SIZE with the shapes). An engine exception is GENERAL_FAILURE.
* :class:`TranslatingDevice`: ``getSupportedOperations`` and the checks of
  ``prepareModel`` from one per-operation question, :meth:`~TranslatingDevice.unsupported_reason`
  (None when the translator maps that use of the operation faithfully, else the reason).
* :class:`Unsupported` and :class:`OperandAccess`: a use the translator does not map (with
  the reason), and the translators' reading of an operation's operands (types, dimensions,
  constant values, scalar parameters), which raises Unsupported where a mapping needs a
  constant or known dimensions.
"""
from __future__ import annotations

import importlib.util
import threading
import time

import numpy as np

from ..errors import HalError
from ..executor import write_outputs
from ..hal.interfaces import IDevice, IPreparedModel
from ..hal.types import Capabilities, MemoryDomainToken, Model, OutputShape, PerformanceInfo, Request, Timing
from ..hal.static_shapes import check_static_shapes
from ..hal.validate import constant_value, merged_dimensions, validate_model, validate_prepare_arguments, validate_request
from ..types import DeviceTypeCode, ErrorStatus, MeasureTiming, OperandType, is_tensor_type, operand_dtype
from ..types import OperandLifeTime as L


class Unsupported(Exception):
    """This use of an operation is not mapped (the message says why)."""


class OperandAccess:
    """Read access to the operands of subgraph ``sg`` of ``model`` for a translator."""

    def __init__(self, model, sg):
        self.model, self.sg = model, sg

    def operand(self, idx: int):
        return self.sg.operands[idx]

    def dims(self, idx: int) -> list[int]:
        return list(self.operand(idx).dimensions)

    def rank(self, op, k: int = 0) -> int:
        """Rank of input ``k`` (Unsupported when unknown)."""
        d = self.operand(op.inputs[k]).dimensions
        if not d:
            raise Unsupported(f"input {k} has unknown rank")
        return len(d)

    def static_dims(self, op, k: int) -> list[int]:
        """Dimensions of input ``k``, all known (Unsupported otherwise)."""
        d = self.dims(op.inputs[k])
        if not d or 0 in d:
            raise Unsupported(f"input {k} needs known dimensions, has {d}")
        return d

    def omitted(self, op, k: int) -> bool:
        """Input ``k`` is absent or has lifetime NO_VALUE."""
        return k >= len(op.inputs) or self.operand(op.inputs[k]).lifetime == L.NO_VALUE

    def is_constant(self, op, k: int) -> bool:
        return self.operand(op.inputs[k]).lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE)

    def constant(self, op, k: int) -> np.ndarray:
        """The value of constant input ``k`` (Unsupported when it is not a constant)."""
        o = self.operand(op.inputs[k])
        if o.lifetime not in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE):
            raise Unsupported(f"input {k} must be a constant for this mapping")
        return np.array(constant_value(self.model, o))

    def scalar(self, op, k: int, default=None):
        """Python value of scalar parameter ``k``; ``default`` when omitted (Unsupported
        when omitted without a default, not a constant, or not one value)."""
        if self.omitted(op, k):
            if default is None:
                raise Unsupported(f"input {k} is omitted")
            return default
        v = self.constant(op, k).reshape(-1)
        if v.size != 1:
            raise Unsupported(f"input {k} is not a scalar")
        return v[0].item()


class TranslatedPreparedModel(IPreparedModel):
    """A prepared model whose main subgraph an external engine computes.

    Subclasses set ``engine_name`` (for messages) and implement :meth:`reads` and
    :meth:`run_engine`; calls of :meth:`run_engine` are serialized by a lock (engines'
    sessions/interpreters are not re-entrant)."""

    engine_name = "engine"

    def __init__(self, model: Model):
        self.model = model
        self._lock = threading.Lock()

    def reads(self, operand_index: int) -> bool:
        """Whether the engine's graph has main input operand ``operand_index`` as an input."""
        raise NotImplementedError

    def run_engine(self, feed: dict[int, np.ndarray]) -> list[np.ndarray]:
        """The engine's results, one array per main output in HAL order, for ``feed``
        (main input operand index -> array of the operand's dtype and full dimensions)."""
        raise NotImplementedError

    def execute_synchronously(self, request: Request, measure=MeasureTiming.NO, deadline_ns=None,
                              loop_timeout_duration_ns=None) -> tuple[list[OutputShape], Timing]:
        validate_request(request, self.model)
        if any(isinstance(p, MemoryDomainToken) for p in request.pools):
            raise HalError(ErrorStatus.INVALID_ARGUMENT,
                           "execute: a request pool is a driver buffer token; this driver allocates none")
        if deadline_ns is not None and time.monotonic_ns() >= deadline_ns:
            raise HalError(ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed before execution")
        start = time.monotonic_ns()
        sg = self.model.main
        feed = {}
        for j, (arg, idx) in enumerate(zip(request.inputs, sg.input_indexes)):
            if not self.reads(idx):
                continue  # an input no operation reads
            operand = sg.operands[idx]
            if arg.has_no_value:
                raise HalError(ErrorStatus.GENERAL_FAILURE, f"execute: input {j} has no value; "
                               f"the {self.engine_name} graph needs every input it reads")
            dims = merged_dimensions(f"request input {j}", operand, arg.dimensions)
            dtype = operand_dtype(operand.type)
            count = int(np.prod(dims, dtype=np.int64)) if dims else 1
            pool = request.pools[arg.location.pool_index]
            arr = np.frombuffer(pool.buffer, dtype=dtype, count=count, offset=arg.location.offset)
            feed[idx] = arr.reshape(dims).copy()
        try:
            with self._lock:
                results = self.run_engine(feed)
        except HalError:
            raise
        except Exception as e:  # noqa: BLE001 - the engine's failure is the execution's
            raise HalError(ErrorStatus.GENERAL_FAILURE, f"{self.engine_name} run failed: {e}") from None
        arrays = []
        for idx, result in zip(sg.output_indexes, results):
            operand = sg.operands[idx]
            arr = np.ascontiguousarray(np.asarray(result).astype(operand_dtype(operand.type), copy=False))
            arrays.append(arr if is_tensor_type(operand.type) else arr.reshape(()))
        shapes = write_outputs(request, sg, arrays)
        elapsed = time.monotonic_ns() - start
        timing = Timing(elapsed, elapsed) if measure == MeasureTiming.YES else Timing()
        return shapes, timing


def translate_every(b, operations, translate_operation) -> None:
    """Translate each of ``operations`` into builder ``b`` with ``translate_operation(b,
    op)`` (``b.where`` names the operation); raises HalError(INVALID_ARGUMENT) naming the
    operation when one is not mapped (:class:`Unsupported`)."""
    for k, op in enumerate(operations):
        b.where = f"operation {k} ({getattr(op.type, 'name', op.type)})"
        try:
            translate_operation(b, op)
        except Unsupported as e:
            raise HalError(ErrorStatus.INVALID_ARGUMENT, f"{b.where}: {e}") from None


class TranslatingDevice(IDevice):
    """An IDevice whose support is decided per operation use by a translator.

    Subclasses set :attr:`engine_modules` (the engine's top-level modules, checked at
    construction: ImportError with :attr:`install_hint` when one is missing) and
    :attr:`types` (the operand types of its capabilities), give
    :meth:`translate_operation` (a builder of theirs, one operation; raises
    :class:`Unsupported`) and :meth:`new_builder`; :meth:`unsupported_reason` is the
    translation's refusal, :meth:`get_supported_operations` answers from it and
    :meth:`check_preparable` runs the HAL checks of ``prepareModel`` (arguments, model
    validity, every operation supported, deadline, static shapes)."""

    #: Engine modules that must be importable (``importlib.util.find_spec``).
    engine_modules: tuple[str, ...] = ()
    #: The ImportError's message when one is missing (which extra to install).
    install_hint = ""
    #: Highest NNAPI feature level among the operations translated.
    feature_level = 7
    #: Operand types of :meth:`get_capabilities` (all at performance 0.9).
    types: tuple[OperandType, ...] = ()
    #: Operations this device declines whatever the use (OperationType -> reason).
    declined: dict = {}

    def __init__(self):
        missing = [m for m in self.engine_modules if importlib.util.find_spec(m) is None]
        if missing:
            raise ImportError(f"{self.install_hint} (missing: {', '.join(missing)})")

    def get_name(self) -> str:
        return self.name

    def get_type(self) -> DeviceTypeCode:
        return DeviceTypeCode.CPU

    def get_feature_level(self) -> int:
        return self.feature_level

    def get_capabilities(self) -> Capabilities:
        perf = {t: PerformanceInfo(0.9, 0.9) for t in self.types}
        return Capabilities(PerformanceInfo(0.9, 0.9), PerformanceInfo(0.9, 0.9), perf,
                            PerformanceInfo(0.9, 0.9), PerformanceInfo(0.9, 0.9))

    def new_builder(self, model: Model):
        """A translation builder over ``model.main`` (the subclass's)."""
        raise NotImplementedError

    def translate_operation(self, builder, operation) -> None:
        """Translate one operation into ``builder``; raises :class:`Unsupported`."""
        raise NotImplementedError

    def unsupported_reason(self, model: Model, operation, level: int | None) -> str | None:
        """Why this use of ``operation`` (of ``model.main``, at NNAPI feature level
        ``level``) is not mapped; None if it is."""
        name = getattr(operation.type, "name", str(operation.type))
        if level is None or level > self.feature_level:
            return f"{name}: feature level {level} is above {self.feature_level}"
        if operation.type in self.declined:
            return f"{name}: {self.declined[operation.type]}"
        b = self.new_builder(model)
        b.where = name
        try:
            self.translate_operation(b, operation)
        except Unsupported as e:
            return str(e)
        return None

    def get_supported_operations(self, model: Model) -> list[bool]:
        levels = validate_model(model)
        return [self.unsupported_reason(model, op, levels.level_of(op)) is None for op in model.main.operations]

    def check_preparable(self, model: Model, preference, priority, deadline_ns) -> None:
        """HAL ``prepareModel`` checks: INVALID_ARGUMENT for bad arguments, an invalid
        model or any unsupported operation (the reasons listed); MISSED_DEADLINE_PERSISTENT
        when ``deadline_ns`` (monotonic ns) has passed."""
        validate_prepare_arguments(preference, priority)
        levels = validate_model(model)
        reasons = [f"operation {k} ({r})" for k, op in enumerate(model.main.operations)
                   if (r := self.unsupported_reason(model, op, levels.level_of(op))) is not None]
        if reasons:
            raise HalError(ErrorStatus.INVALID_ARGUMENT, "unsupported: " + "; ".join(reasons))
        if deadline_ns is not None and time.monotonic_ns() >= deadline_ns:
            raise HalError(ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed before preparation")
        # shapes already certain must satisfy NNAPI's rules (INVALID_ARGUMENT, as the sample
        # driver answers) before the engine sees them: engines refuse them late, as a
        # load or run failure (GENERAL_FAILURE)
        check_static_shapes(model)
