"""The import driver: :func:`import_tflite` reads the model (:mod:`~mlts.tflite_import.reader`),
walks its operators in TFLite's execution order, folding the constant ones, mapping the rest
into NNAPI partitions (:data:`~mlts.tflite_import.operators.MAPPERS`, one
:class:`~mlts.tflite_import.builder.Builder` per run of mapped operators) and leaving the
others to CPU fallback steps (:mod:`mlts.fallback`), then builds every partition with the
NNAPI front end; an operation the front end rejects sends its TFLite operator back to the
CPU and the walk is redone (at most once per operator)."""
from __future__ import annotations

import hashlib
import re

import numpy as np

from runtime.errors import NnapiError
from runtime.nnapi.model import run_order
from runtime.testing.frontend import build_model
from runtime.types import OperandLifeTime as L

from .. import fallback
from .builder import Builder, Unmappable
from .model import (FallbackStep, ImportedModel, OperatorMapping, Partition, TensorInfo, TFLiteImportError,
                    constant_of)
from .operators import MAPPERS
from .reader import Op, read_model


class _Importer:
    """One import under way: the model's ``tensors`` and ``ops`` (subgraph 0), graph inputs
    ``gin`` and outputs ``gout``, and the ``constants`` folded so far (tensor -> value). It is
    the :class:`~mlts.tflite_import.builder.TensorSource` its builders read."""

    def __init__(self, where: str, name: str, tensors, ops, gin, gout):
        self.where, self.name = where, name
        self.tensors: list[TensorInfo] = tensors
        self.ops: list[Op] = ops
        self.gin, self.gout = gin, gout
        self.constants: dict[int, np.ndarray] = {}

    def constant(self, t: int) -> np.ndarray | None:
        """Tensor ``t``'s constant value (folded or stored), None when computed."""
        return constant_of(self.tensors, self.constants, t)

    def _fold(self, op: Op, kernel) -> str | None:
        """Evaluate ``op`` now if every input is constant (SHAPE: always, from the static
        shape); returns the reason or None."""
        if op.builtin == "SHAPE" and len(op.inputs) == 1 and len(op.outputs) == 1:
            out = self.tensors[op.outputs[0]]
            if out.dtype is not None and out.dtype.kind in "iu":
                self.constants[op.outputs[0]] = np.asarray(self.tensors[op.inputs[0]].shape, out.dtype)
                return f"the static shape of tensor {op.inputs[0]}"
        if not op.inputs or any(t >= 0 and self.constant(t) is None and not
                                (self.tensors[t].is_constant and self.tensors[t].sparsity is not None)
                                for t in op.inputs):
            return None
        if any(self.tensors[t].is_variable for t in op.outputs):
            return None
        if op.builtin == "DEQUANTIZE" and self.tensors[op.inputs[0]].type_name == "FLOAT16":
            v = self.constant(op.inputs[0])
            if v is None:
                return None
            self.constants[op.outputs[0]] = v.astype(np.float32).reshape(self.tensors[op.outputs[0]].shape)
            return "constant float16 -> float32 (the delegate's HALF_TO_FLOAT conversion)"
        if kernel is None:
            return None
        step = self._fallback_step(-1, op, kernel, "")
        vals = []
        for t in op.inputs:
            if t < 0:
                vals.append(None)
            else:
                v = self.constant(t)
                vals.append(self.tensors[t].buffer if v is None else v)  # sparse: stored values
        try:
            outs = kernel(vals, step)
        except (fallback.FallbackError, ArithmeticError, IndexError, TypeError, ValueError):
            return None  # not folded: mapped, or left to run (and report) as a fallback step
        for t, v in zip(op.outputs, outs):
            self.constants[t] = np.asarray(v).reshape(self.tensors[t].shape)
        why = "no NNAPI mapping" if op.builtin not in MAPPERS else "integer shape arithmetic"
        return f"constant inputs, evaluated by the CPU kernel ({why})"

    def _fallback_step(self, index: int, op: Op, kernel, reason: str) -> FallbackStep:
        return FallbackStep(index, op.index, op.builtin, list(op.inputs), list(op.outputs),
                            [self.tensors[t] if t >= 0 else None for t in op.inputs],
                            [self.tensors[t] for t in op.outputs], dict(op.options), kernel, reason)

    def run(self, refused: dict[int, str]) -> tuple[list, list[OperatorMapping]]:
        """One pass over the operators; ``refused``: operator -> reason the front end gave
        for a previous mapping (those fall back)."""
        steps: list = []
        mapping: list[OperatorMapping] = []
        self.constants = {}
        b = Builder(self)
        entries: list[OperatorMapping] = []  # mapped operators of the current builder

        def close():
            nonlocal b, entries
            if not b.empty:
                for m in entries:
                    m.step = len(steps)
                steps.append(b)
            b, entries = Builder(self), []

        for op in self.ops:
            mapper = MAPPERS.get(op.builtin)
            kernel = fallback.kernel_for(op.builtin)
            # Constant subgraphs: an unmapped operator, or integer shape arithmetic (which
            # NNAPI often has no integer form of, e.g. STRIDED_SLICE), is evaluated here.
            shape_math = all(self.tensors[t].type_name in ("INT32", "INT64", "BOOL")
                             and not self.tensors[t].quantized for t in op.outputs)
            folded = self._fold(op, kernel if mapper is None or shape_math else None)
            if folded is not None:
                mapping.append(OperatorMapping(op.index, op.builtin, "folded", reason=folded))
                continue
            reason = refused.get(op.index)
            if mapper is not None and reason is None:
                cp = b.checkpoint()
                b.current, b.note = op.index, ""
                try:
                    names = mapper(b, op)
                except Unmappable as e:
                    b.rollback(cp)
                    reason = f"no NNAPI mapping: {e}"
                except (IndexError, KeyError, TypeError, ValueError) as e:
                    b.rollback(cp)
                    reason = f"no NNAPI mapping: malformed operator ({type(e).__name__}: {e})"
                else:
                    b.operators.append(op.index)
                    entries.append(OperatorMapping(op.index, op.builtin, "nnapi", names, reason=b.note))
                    mapping.append(entries[-1])
                    continue
            elif reason is None:
                reason = "no NNAPI mapping (the delegate maps no such operator)"
            close()
            status = "fallback" if kernel is not None else "unsupported"
            if kernel is None:
                reason += "; no CPU kernel"
            steps.append(self._fallback_step(len(steps), op, kernel, reason))
            mapping.append(OperatorMapping(op.index, op.builtin, status, reason=reason, step=len(steps) - 1))
        close()
        return steps, mapping


def import_tflite(path_or_bytes, name: str | None = None) -> ImportedModel:
    """Import a ``.tflite`` file (path, at most :data:`~mlts.tflite_import.reader.MAX_TFLITE_BYTES`)
    or flatbuffer (bytes) as described in :mod:`mlts.tflite_import`. ``name`` defaults to the
    file's stem ("model" for bytes). Raises TFLiteImportError naming the file (and operator)."""
    data, path, where, tensors, ops, gin, gout, version = read_model(path_or_bytes)
    name = name or (path.stem if path is not None else "model")
    both = set(gin) & set(gout)
    if both:
        raise TFLiteImportError(f"{where}: tensor {sorted(both)[0]} is both a graph input and a graph "
                                f"output, which an NNAPI model cannot express")
    for k, op in enumerate(ops):
        for t in op.inputs + op.outputs:
            if t >= len(tensors):
                raise TFLiteImportError(f"{where}: operator {k} ({op.builtin}) refers to tensor {t} "
                                        f"({len(tensors)} tensors)")
    imp = _Importer(where, name, tensors, ops, gin, gout)
    refused: dict[int, str] = {}
    for _ in range(len(ops) + 1):
        steps, mapping = imp.run(refused)
        later_reads = _later_reads(steps, imp, gout)
        finished = []
        failed = False
        for k, s in enumerate(steps):
            if isinstance(s, Builder):
                part = s.finish(k, name, later_reads(k))
                try:
                    build_model(part.model)
                except NnapiError as e:
                    culprit = _culprit(s, e.message)
                    if culprit is None or culprit in refused:
                        raise TFLiteImportError(f"{where}: partition {k} (operators {s.operators[0]}-"
                                                f"{s.operators[-1]}) is not a valid NNAPI model: "
                                                f"{e.message}") from None
                    refused[culprit] = f"the NNAPI mapping is invalid ({e.message})"
                    failed = True
                    break
                finished.append(part)
            else:
                finished.append(s)
        if not failed:
            break
    operand_of: dict[int, tuple[int, int]] = {}
    for s in finished:
        if isinstance(s, Partition):
            for t, k in s.operand_of.items():
                if t not in operand_of or s.model.main.operands[k].lifetime in (L.TEMPORARY_VARIABLE,
                                                                                L.SUBGRAPH_OUTPUT):
                    operand_of[t] = (s.index, k)
    return ImportedModel(name, path, hashlib.sha256(data).hexdigest(), tensors,
                         [tensors[t] for t in gin], [tensors[t] for t in gout], finished, mapping,
                         operand_of, dict(imp.constants), version)


def _culprit(builder: Builder, message: str) -> int | None:
    """The TFLite operator whose NNAPI operation a front-end error message names, if any."""
    m = re.search(r"operation (\d+) \((\w+)\)", message)
    if not m:
        return None
    k, name = int(m.group(1)), m.group(2)
    order = run_order(builder.operations)  # the front end's order: its messages index it
    if k < len(order) and builder.operations[order[k]].type.name == name:
        return builder.origin[order[k]]
    same = [j for j, o in enumerate(builder.operations) if o.type.name == name]
    return builder.origin[same[0]] if len(same) == 1 else None


def _later_reads(steps, imp: _Importer, gout):
    """For step k: a predicate "tensor t is read by a later step or is a graph output"."""
    readers: dict[int, set[int]] = {}
    for k, s in enumerate(steps):
        ins = s.input_tensors if isinstance(s, Builder) else [t for t in s.inputs if t >= 0]
        for t in ins:
            readers.setdefault(t, set()).add(k)
    outs = set(gout)

    def for_step(k: int):
        return lambda t: t in outs or any(r > k for r in readers.get(t, ()))
    return for_step
