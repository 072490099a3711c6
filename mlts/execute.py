"""Run an :class:`~mlts.tflite_import.ImportedModel` through the NNAPI front end.

``prepare_imported(imported, device, cache_dir=None, *, keep_tensors=False)`` builds every
NNAPI partition (:func:`runtime.testing.frontend.build_model`) and compiles it for
``device`` (``Compilation.create_for_devices``, as the delegate does with an
``accelerator_name``), optionally with compilation caching (token: sha256 of the TFLite
file, the partition index and the keep_tensors flag); the result records the compile time
of each step so a benchmark can time compilation on its own and reuse it. Operations the
device does not support (``getSupportedOperationsForDevices``) are compiled for the
runtime's CPU reference device beside it, the front end partitioning the model between the
two: the delegate leaves such nodes to TFLite's CPU kernels
(``GetOperationsSupportedByTargetNnApiDevices``); ``PreparedImported.cpu_operations`` lists
them.

``run_imported(imported, device, inputs, *, keep_tensors=False, mode="sync", prepared=None)
-> RunResult`` executes the steps in order: an NNAPI partition as one ``Execution``
(``mode`` "sync": ``compute``; "async": ``start_compute`` then ``Event.wait``; "burst":
``burst_compute`` in a ``Burst`` kept by the prepared model across runs), a CPU fallback
operator with its numpy kernel (:mod:`mlts.fallback`). ``RunResult.outputs``: one array per
TFLite graph output, in TFLite's shape and dtype; ``RunResult.tensors``: with
``keep_tensors``, the value of every TFLite tensor the run computed (every partition then
makes all the TFLite tensors it writes outputs), plus the graph inputs; else {}.

Inputs: one numpy array per TFLite graph input, of its shape (or the same number of
elements) and dtype (a value of another dtype is converted when numpy can do so without
changing kind, e.g. float64 -> float32; otherwise ValueError).

``run_isolated(imported, device, reference)`` runs each mapped TFLite operator alone on
reference inputs (e.g. TFLite's own intermediate tensors), separating a layer's own error
from the error accumulated before it.

Errors: ValueError for wrong inputs or an unknown mode (naming the model and input);
:class:`~mlts.tflite_import.TFLiteImportError` for an unsupported operator (no NNAPI mapping
and no CPU kernel) or a failed CPU kernel; ``runtime.errors.NnapiError`` from the front end
(compilation or execution), its message prefixed with the model and partition.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field

import numpy as np

from runtime.errors import NnapiError
from runtime.nnapi import Compilation, Execution, get_supported_operations_for_devices
from runtime.nnapi.burst import Burst
from runtime.nnapi.device import cpu_device
from runtime.testing.frontend import build_model
from runtime.types import operand_dtype

from .fallback import FallbackError
from .tflite_import import FallbackStep, ImportedModel, Partition, TFLiteImportError, make_test_model

MODES = ("sync", "async", "burst")


@dataclass
class RunResult:
    """``outputs``: TFLite graph outputs (TFLite shapes/dtypes); ``tensors``: TFLite tensor
    index -> value (only with keep_tensors); ``step_seconds``: wall time of each step."""

    outputs: list[np.ndarray]
    tensors: dict[int, np.ndarray] = field(default_factory=dict)
    step_seconds: list[float] = field(default_factory=list)


@dataclass
class PreparedImported:
    """Compilations of an imported model for one device: ``compilations[k]`` for partition
    step k (None for CPU fallback steps), ``output_tensors[k]`` the TFLite tensors its
    outputs hold, ``compile_seconds[k]`` (0 for fallback steps), ``keep_tensors``,
    ``cpu_operations[k]``: the NNAPI operations of partition k that ``device`` does not
    support, compiled for the runtime's CPU reference device beside it (absent when the
    device takes the whole partition). Bursts for mode "burst" are created on first use and
    kept; :meth:`close` frees them."""

    imported: ImportedModel
    device: object
    keep_tensors: bool
    compilations: list
    output_tensors: list
    compile_seconds: list
    cache_dir: str | None = None
    cpu_operations: dict = field(default_factory=dict)
    bursts: dict = field(default_factory=dict)

    @property
    def total_compile_seconds(self) -> float:
        return float(sum(self.compile_seconds))

    def burst(self, k: int) -> Burst:
        if k not in self.bursts:
            self.bursts[k] = Burst(self.compilations[k])
        return self.bursts[k]

    def close(self) -> None:
        for b in self.bursts.values():
            try:
                b.free()
            except NnapiError:
                pass
        self.bursts.clear()


def _where(imported: ImportedModel, step) -> str:
    if isinstance(step, Partition):
        ops = step.operators
        return f"{imported.name}: partition {step.index} (operators {ops[0]}-{ops[-1]})"
    return f"{imported.name}: operator {step.operator} ({step.builtin})"


def _token(imported: ImportedModel, k: int, keep: bool) -> bytes:
    return hashlib.sha256(f"{imported.digest}:{k}:{int(keep)}".encode()).digest()


def prepare_imported(imported: ImportedModel, device, cache_dir=None, *,
                     keep_tensors: bool = False) -> PreparedImported:
    """Build and compile every partition for ``device`` (a ``runtime.nnapi.Device``);
    ``cache_dir``: enable compilation caching there. Raises NnapiError (message naming the
    model and partition) when the front end refuses a model or the compilation fails."""
    comps, outs, secs, cpu_ops = [], [], [], {}
    for k, step in enumerate(imported.steps):
        if not isinstance(step, Partition):
            comps.append(None)
            outs.append(None)
            secs.append(0.0)
            continue
        tm, out_tensors = step.model_for(keep_tensors)
        t0 = time.perf_counter()
        try:
            model = build_model(tm)
            devices = [device]
            supported = get_supported_operations_for_devices(model, [device])
            if not all(supported):
                # The delegate leaves what the accelerator cannot run to TFLite's CPU
                # kernels; here the runtime's CPU reference device takes it.
                devices.append(cpu_device())
                ops = model.to_hal().main.operations
                cpu_ops[k] = [ops[j].type.name for j, ok in enumerate(supported) if not ok]
            c = Compilation.create_for_devices(model, devices)
            if cache_dir is not None:
                c.set_caching(str(cache_dir), _token(imported, k, keep_tensors))
            c.finish()
        except NnapiError as e:
            raise NnapiError(e.code, f"{_where(imported, step)}: {e.message}") from e
        secs.append(time.perf_counter() - t0)
        comps.append(c)
        outs.append(out_tensors)
    return PreparedImported(imported, device, keep_tensors, comps, outs, secs,
                            None if cache_dir is None else str(cache_dir), cpu_ops)


def _check_inputs(imported: ImportedModel, inputs) -> list[np.ndarray]:
    inputs = list(inputs)
    if len(inputs) != len(imported.inputs):
        raise ValueError(f"{imported.name}: {len(inputs)} inputs given, the model has "
                         f"{len(imported.inputs)} ({', '.join(t.name for t in imported.inputs)})")
    out = []
    for j, (x, info) in enumerate(zip(inputs, imported.inputs)):
        x = np.asarray(x)
        if x.dtype != info.dtype:
            if x.dtype.kind != info.dtype.kind and not (x.dtype.kind in "iu" and info.dtype.kind in "iu"):
                raise ValueError(f"{imported.name}: input {j} ({info.name}) must be {info.dtype}, "
                                 f"got {x.dtype}")
            x = x.astype(info.dtype)
        n = int(np.prod(info.shape)) if info.shape else 1
        if x.size != n:
            raise ValueError(f"{imported.name}: input {j} ({info.name}) must have shape "
                             f"{list(info.shape)}, got {list(x.shape)}")
        out.append(np.ascontiguousarray(x.reshape(info.shape)))
    return out


def _run_partition(prepared: PreparedImported, k: int, step: Partition, env: dict, mode: str) -> None:
    imported = prepared.imported
    c = prepared.compilations[k]
    tm, out_tensors = step.model_for(prepared.keep_tensors)
    main = tm.main
    ex = Execution(c)
    for j, t in enumerate(step.input_tensors):
        dims = main.operands[main.input_indexes[j]].dimensions
        ex.set_input(j, np.ascontiguousarray(env[t]).reshape(dims))
    bufs = []
    for j, t in enumerate(out_tensors):
        o = main.operands[main.output_indexes[j]]
        buf = np.empty(o.dimensions, operand_dtype(o.type))
        ex.set_output(j, buf)
        bufs.append(buf)
    try:
        if mode == "sync":
            ex.compute()
        elif mode == "async":
            ex.start_compute().wait()
        else:
            ex.burst_compute(prepared.burst(k))
    except NnapiError as e:
        raise NnapiError(e.code, f"{_where(imported, step)}: {e.message}") from e
    for t, buf in zip(out_tensors, bufs):
        env[t] = buf.reshape(imported.tensors[t].shape)


def _run_fallback(imported: ImportedModel, step: FallbackStep, env: dict, wide: bool = False) -> None:
    """Run CPU fallback ``step`` on the values of ``env`` (TFLite tensor -> array) and store
    its outputs there, in their tensors' dtypes (``wide``: float outputs kept as float64, for
    the float64 truth of :mod:`mlts.three_way`)."""
    if step.kernel is None:
        raise TFLiteImportError(f"{_where(imported, step)}: cannot run: {step.reason}")
    vals = []
    for t in step.inputs:
        if t < 0:
            vals.append(None)
            continue
        v = env.get(t)
        if v is None:
            v = imported.constant(t)
        if v is None:
            v = imported.tensors[t].buffer
        if v is None and imported.tensors[t].is_variable:
            v = np.zeros(imported.tensors[t].shape, imported.tensors[t].dtype)
        if v is None:
            raise TFLiteImportError(f"{_where(imported, step)}: input tensor {t} has no value")
        vals.append(v)
    try:
        outs = step.kernel(vals, step)
    except FallbackError as e:
        raise TFLiteImportError(f"{imported.name}: {e}") from None
    for t, v in zip(step.outputs, outs):
        info = imported.tensors[t]
        dtype = np.float64 if wide and np.dtype(info.dtype).kind == "f" else info.dtype
        env[t] = np.asarray(v, dtype).reshape(info.shape)


def collect_outputs(imported: ImportedModel, env: dict) -> list[np.ndarray]:
    """The TFLite graph outputs of a run from ``env`` (TFLite tensor -> value; a constant
    output from the model), each in TFLite's shape. Raises TFLiteImportError for an output
    the run never computed."""
    outputs = []
    for info in imported.outputs:
        v = env.get(info.index)
        if v is None:
            v = imported.constant(info.index)
        if v is None:
            raise TFLiteImportError(f"{imported.name}: graph output {info.index} ({info.name}) "
                                    f"was never computed")
        outputs.append(np.asarray(v).reshape(info.shape))
    return outputs


def run_imported(imported: ImportedModel, device, inputs, *, keep_tensors: bool = False,
                 mode: str = "sync", prepared: PreparedImported | None = None) -> RunResult:
    """Run ``imported`` on ``device`` with ``inputs`` (see the module docstring).
    ``prepared``: compilations from :func:`prepare_imported` to reuse (its keep_tensors
    setting wins); otherwise the model is compiled first."""
    if mode not in MODES:
        raise ValueError(f"{imported.name}: mode {mode!r} is not one of {', '.join(MODES)}")
    xs = _check_inputs(imported, inputs)
    if prepared is None:
        prepared = prepare_imported(imported, device, keep_tensors=keep_tensors)
    elif prepared.imported is not imported:
        raise ValueError(f"{imported.name}: the prepared model belongs to {prepared.imported.name}")
    env: dict[int, np.ndarray] = {info.index: x for info, x in zip(imported.inputs, xs)}
    secs = []
    for k, step in enumerate(imported.steps):
        t0 = time.perf_counter()
        if isinstance(step, Partition):
            _run_partition(prepared, k, step, env, mode)
        else:
            _run_fallback(imported, step, env)
        secs.append(time.perf_counter() - t0)
    return RunResult(collect_outputs(imported, env), env if prepared.keep_tensors else {}, secs)


@dataclass
class IsolatedResult:
    """One TFLite operator run alone (:func:`run_isolated`): ``operator`` index,
    ``builtin``, ``outputs`` (TFLite tensor -> value computed from the reference inputs),
    ``nnapi`` (the NNAPI operations run)."""

    operator: int
    builtin: str
    outputs: dict
    nnapi: list


def run_isolated(imported: ImportedModel, device, reference: dict, operators=None) -> list[IsolatedResult]:
    """Run every mapped TFLite operator (or those in ``operators``) on its own: a model of
    just its NNAPI operations whose inputs are the ``reference`` values (TFLite tensor index
    -> array, e.g. TFLite's preserved intermediate tensors). The error of each operator is
    then its own, not accumulated from earlier layers: what tells a wrong mapping or kernel
    from rounding differences growing through a deep quantized network. Operators whose
    inputs are missing from ``reference`` are skipped. Raises NnapiError naming the
    operator when the front end refuses or the execution fails."""
    from runtime.testing.test_model import TestOperand, TestOperation, TestSubgraph
    from runtime.types import OperandLifeTime as L
    wanted = None if operators is None else set(operators)
    results = []
    for part in imported.partitions:
        main = part.model.main
        tensor_of = {k: t for t, k in part.operand_of.items()}
        writer = {o: j for j, op in enumerate(main.operations) for o in op.outputs}
        for operator in part.operators:
            if wanted is not None and operator not in wanted:
                continue
            group = {j for j, o in enumerate(part.origin) if o == operator}
            todo = list(group)
            while todo:  # pull in producers of importer temporaries (e.g. a shared DEQUANTIZE)
                j = todo.pop()
                for i in main.operations[j].inputs:
                    if i not in tensor_of and i in writer and writer[i] not in group:
                        group.add(writer[i])
                        todo.append(writer[i])
            ops_ = [main.operations[j] for j in sorted(group)]
            written = {o for op in ops_ for o in op.outputs}
            outs = [o for op in ops_ for o in op.outputs if o in tensor_of
                    and part.origin[writer[o]] == operator]
            feeds = sorted({i for op in ops_ for i in op.inputs if i not in written
                            and main.operands[i].lifetime in (L.SUBGRAPH_INPUT, L.TEMPORARY_VARIABLE,
                                                              L.SUBGRAPH_OUTPUT)})
            if not outs or any(tensor_of.get(i) not in reference for i in feeds):
                continue
            remap: dict[int, int] = {}
            operands = []
            for i in sorted({i for op in ops_ for i in op.inputs + op.outputs}):
                o = main.operands[i]
                lt = o.lifetime
                if i in feeds:
                    lt = L.SUBGRAPH_INPUT
                elif i in outs:
                    lt = L.SUBGRAPH_OUTPUT
                elif i in written:
                    lt = L.TEMPORARY_VARIABLE
                remap[i] = len(operands)
                operands.append(TestOperand(o.type, list(o.dimensions), o.scale, o.zero_point, lt, 0, False,
                                            o.channel_quant, o.data))
            sg = TestSubgraph(operands, [TestOperation(op.type, [remap[i] for i in op.inputs],
                                                       [remap[o] for o in op.outputs]) for op in ops_],
                              [remap[i] for i in feeds], [remap[o] for o in outs])
            builtin = next(m.builtin for m in imported.mapping if m.index == operator)
            try:
                c = Compilation.create_for_devices(build_model(make_test_model(f"{imported.name}-op{operator}", sg)),
                                                   [device])
                c.finish()
                ex = Execution(c)
                for j, i in enumerate(feeds):
                    ex.set_input(j, np.ascontiguousarray(reference[tensor_of[i]]).reshape(main.operands[i].dimensions))
                bufs = []
                for j, o in enumerate(outs):
                    buf = np.empty(main.operands[o].dimensions, operand_dtype(main.operands[o].type))
                    ex.set_output(j, buf)
                    bufs.append(buf)
                ex.compute()
            except NnapiError as e:
                raise NnapiError(e.code, f"{imported.name}: operator {operator} ({builtin}) alone: "
                                 f"{e.message}") from e
            results.append(IsolatedResult(
                operator, builtin,
                {tensor_of[o]: b.reshape(imported.tensors[tensor_of[o]].shape) for o, b in zip(outs, bufs)},
                [op.type.name for op in ops_]))
    return results
