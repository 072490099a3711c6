"""The importer's data model: :class:`TFLiteImportError`, the TFLite tensor / operator
records (:class:`TensorInfo`, :class:`SparsityInfo`, :class:`DimensionLevel`), the import
result (:class:`ImportedModel` made of :class:`Partition` and :class:`FallbackStep` steps,
one :class:`OperatorMapping` per TFLite operator) and :func:`describe`, the mapping table
``nncts mlts import`` prints. See :mod:`mlts.tflite_import` for the mapping rules."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from runtime.testing.test_model import TestModel, TestOperand, TestSubgraph
from runtime.types import OperandLifeTime as L


class TFLiteImportError(ValueError):
    """The TFLite file cannot be imported (or an operator of it cannot run); the message
    names the file and, where it applies, the operator index and builtin name."""


#: TFLite TensorType code -> (name, numpy dtype or None when numpy has none we use).
TFLITE_TYPES = {0: ("FLOAT32", np.float32), 1: ("FLOAT16", np.float16), 2: ("INT32", np.int32),
                3: ("UINT8", np.uint8), 4: ("INT64", np.int64), 5: ("STRING", None),
                6: ("BOOL", np.bool_), 7: ("INT16", np.int16), 8: ("COMPLEX64", np.complex64),
                9: ("INT8", np.int8), 10: ("FLOAT64", np.float64), 11: ("COMPLEX128", np.complex128),
                12: ("UINT64", np.uint64), 13: ("RESOURCE", None), 14: ("VARIANT", None),
                15: ("UINT32", np.uint32), 16: ("UINT16", np.uint16), 17: ("INT4", None)}

#: TFLite ActivationFunctionType names (NONE, RELU, RELU_N1_TO_1, RELU6 equal NNAPI's FuseCode).
ACTIVATIONS = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}


@dataclass
class DimensionLevel:
    """One traversal level of a sparse tensor: ``format`` 0 DENSE (``dense_size``) or 1
    SPARSE_CSR (``segments``, ``indices``)."""

    format: int
    dense_size: int
    segments: np.ndarray | None = None
    indices: np.ndarray | None = None


@dataclass
class SparsityInfo:
    """TFLite ``SparsityParameters``: traversal order, block map, one level per traversed
    dimension (see :func:`mlts.fallback.densify`)."""

    traversal_order: list[int]
    block_map: list[int]
    dim_metadata: list[DimensionLevel]


@dataclass
class TensorInfo:
    """A TFLite tensor: ``index`` in subgraph 0, ``name``, static ``shape``, ``type_name``
    (TFLite TensorType name) and numpy ``dtype`` (None for STRING/RESOURCE/...),
    quantization (``scales`` float32 and ``zero_points`` int64 arrays, or None;
    ``quantized_dimension``), ``buffer`` (constant value: shaped numpy array, or the flat
    stored values of a sparse tensor; None when not constant), ``sparsity``,
    ``is_variable`` (a TFLite variable, e.g. LSTM state)."""

    index: int
    name: str
    shape: tuple[int, ...]
    type_name: str
    dtype: np.dtype | None
    scales: np.ndarray | None = None
    zero_points: np.ndarray | None = None
    quantized_dimension: int = 0
    buffer: np.ndarray | None = None
    sparsity: SparsityInfo | None = None
    is_variable: bool = False

    @property
    def quantized(self) -> bool:
        """Whether the tensor carries affine quantization (at least one scale)."""
        return self.scales is not None and self.scales.size > 0

    @property
    def per_channel(self) -> bool:
        """Whether the tensor has more than one scale (per-channel quantization)."""
        return self.quantized and self.scales.size > 1

    @property
    def scale(self) -> float:
        """The first scale (0.0 when not quantized)."""
        return float(self.scales[0]) if self.quantized else 0.0

    @property
    def zero_point(self) -> int:
        """The first zero point (0 when there is none)."""
        return int(self.zero_points[0]) if self.zero_points is not None and self.zero_points.size else 0

    @property
    def is_constant(self) -> bool:
        """Whether the file stores a value for the tensor."""
        return self.buffer is not None

    def describe(self) -> str:
        """E.g. ``FLOAT32[1,128,128,3]`` or ``INT8[1,10] q(0.0039, -128)``."""
        s = f"{self.type_name}[{','.join(map(str, self.shape))}]"
        if self.per_channel:
            s += f" q(per-channel x{self.scales.size}, dim {self.quantized_dimension})"
        elif self.quantized:
            s += f" q({self.scale:.6g}, {self.zero_point})"
        return s


@dataclass
class OperatorMapping:
    """How one TFLite operator was imported: ``index``, ``builtin`` name, ``status``
    ("nnapi", "folded", "fallback" or "unsupported"), ``nnapi`` (the NNAPI operations it
    became), ``reason`` (why it was folded / fell back), ``step`` (index in
    ``ImportedModel.steps``, None when folded)."""

    index: int
    builtin: str
    status: str
    nnapi: list[str] = field(default_factory=list)
    reason: str = ""
    step: int | None = None

    @property
    def target(self) -> str:
        """One line: the NNAPI operations, or ``CPU fallback: <reason>``, ``folded: ...``."""
        if self.status == "nnapi":
            return " + ".join(self.nnapi) + (f" ({self.reason})" if self.reason else "")
        if self.status == "folded":
            return f"folded at import: {self.reason}"
        if self.status == "fallback":
            return f"CPU fallback: {self.reason}"
        return f"unsupported: {self.reason}"


@dataclass
class Partition:
    """A run of consecutive mapped operators: one NNAPI model. ``model`` is the TestModel
    (main inputs = ``input_tensors``, main outputs = ``output_tensors``, TFLite tensor
    indexes in the same order), ``operand_of`` maps every TFLite tensor the partition
    reads or writes to its operand index, ``operators`` lists the TFLite operators,
    ``origin[k]`` is the TFLite operator NNAPI operation k of ``model`` comes from (the
    front end lists operations in its own topological order; match them by outputs)."""

    index: int
    operators: list[int]
    model: TestModel
    input_tensors: list[int]
    output_tensors: list[int]
    operand_of: dict[int, int]
    origin: list[int] = field(default_factory=list)
    _full: tuple[TestModel, list[int]] | None = None

    kind = "nnapi"

    @property
    def produced_tensors(self) -> list[int]:
        """TFLite tensors written by the partition's operations, in operand order."""
        out = [t for t, k in self.operand_of.items()
               if self.model.main.operands[k].lifetime in (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT)]
        return sorted(out, key=self.operand_of.__getitem__)

    def model_for(self, keep_tensors: bool = False) -> tuple[TestModel, list[int]]:
        """(TestModel, its output tensors): the partition as imported, or with every TFLite
        tensor it writes as an output (``keep_tensors``, for per-layer comparison)."""
        if not keep_tensors:
            return self.model, self.output_tensors
        if self._full is None:
            outs = list(self.output_tensors) + [t for t in self.produced_tensors
                                                if t not in self.output_tensors]
            main = self.model.main
            operands = [TestOperand(o.type, list(o.dimensions), o.scale, o.zero_point, o.lifetime,
                                    o.number_of_consumers, o.is_ignored, o.channel_quant, o.data)
                        for o in main.operands]
            for t in outs:
                operands[self.operand_of[t]].lifetime = L.SUBGRAPH_OUTPUT
            sg = TestSubgraph(operands, main.operations, list(main.input_indexes),
                              [self.operand_of[t] for t in outs])
            self._full = (make_test_model(self.model.name + "-all-tensors", sg), outs)
        return self._full


@dataclass
class FallbackStep:
    """One TFLite operator run by a numpy kernel: ``operator`` index, ``builtin``,
    ``inputs`` / ``outputs`` (TFLite tensor indexes, -1 = omitted), their
    :class:`TensorInfo` (``input_info``, ``output_info``; None for omitted), ``options``,
    ``kernel`` (None when unsupported), ``reason``."""

    index: int
    operator: int
    builtin: str
    inputs: list[int]
    outputs: list[int]
    input_info: list[TensorInfo | None]
    output_info: list[TensorInfo]
    options: dict
    kernel: Callable | None
    reason: str

    kind = "fallback"


@dataclass
class ImportedModel:
    """The result of :func:`import_tflite` (see the module docstring).

    ``name`` (file stem), ``path`` (None for bytes), ``digest`` (sha256 hex of the file),
    ``tensors`` (every :class:`TensorInfo`), ``inputs`` / ``outputs`` (the subgraph's
    input/output TensorInfo, in TFLite order), ``steps`` (:class:`Partition` and
    :class:`FallbackStep` in execution order), ``mapping`` (one :class:`OperatorMapping`
    per TFLite operator), ``operand_of`` (TFLite tensor -> (step index, operand index) of
    the partition that writes it, else of the first partition reading it), ``constants``
    (tensor -> value folded at import), ``tflite_version`` (the model's schema version).
    """

    name: str
    path: Path | None
    digest: str
    tensors: list[TensorInfo]
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    steps: list
    mapping: list[OperatorMapping]
    operand_of: dict[int, tuple[int, int]]
    constants: dict[int, np.ndarray]
    tflite_version: int = 3

    @property
    def partitions(self) -> list[Partition]:
        """The NNAPI partitions among ``steps``, in order."""
        return [s for s in self.steps if isinstance(s, Partition)]

    @property
    def fallbacks(self) -> list[OperatorMapping]:
        """The operators left to the CPU (or unsupported), in order."""
        return [m for m in self.mapping if m.status in ("fallback", "unsupported")]

    def constant(self, t: int) -> np.ndarray | None:
        """Constant value of tensor ``t`` (folded or stored; sparse tensors not densified
        give None), shaped as the tensor."""
        return constant_of(self.tensors, self.constants, t)


def constant_of(tensors, constants: dict, t: int) -> np.ndarray | None:
    """Tensor ``t``'s constant value: folded (``constants``) or stored in the file; None for
    a computed tensor or a sparse one not densified yet."""
    if t in constants:
        return constants[t]
    info = tensors[t]
    if info.buffer is None or info.sparsity is not None:
        return None
    return info.buffer


def make_test_model(name: str, sg: TestSubgraph) -> TestModel:
    """A :class:`~runtime.testing.test_model.TestModel` named ``name`` with main subgraph
    ``sg``, as the importer builds them (test suite "mlts", no expected results, no
    relaxed float32 computation)."""
    return TestModel(name, "mlts", "", "UNKNOWN", False, False, 0.0, sg)


def describe(imported: ImportedModel) -> str:
    """The per-operator mapping table (what ``nncts mlts import MODEL.tflite`` prints):
    a header (model, inputs, outputs, steps), one line per TFLite operator (index, builtin,
    where it went), and a summary of the operators left to the CPU."""
    lines = [f"model {imported.name}" + (f" ({imported.path})" if imported.path else ""),
             "inputs:  " + "; ".join(f"{t.index} {t.name} {t.describe()}" for t in imported.inputs),
             "outputs: " + "; ".join(f"{t.index} {t.name} {t.describe()}" for t in imported.outputs)]
    n_ops = sum(len(p.model.main.operations) for p in imported.partitions)
    lines.append(f"steps: {len(imported.steps)} ({len(imported.partitions)} NNAPI partitions with "
                 f"{n_ops} NNAPI operations, {len(imported.steps) - len(imported.partitions)} CPU "
                 f"fallback operators); {sum(m.status == 'folded' for m in imported.mapping)} "
                 f"operators folded at import")
    width = max([len(m.builtin) for m in imported.mapping] + [8])
    lines.append(f"{'op':>4}  {'builtin':<{width}}  step  NNAPI")
    for m in imported.mapping:
        step = "-" if m.step is None else str(m.step)
        lines.append(f"{m.index:>4}  {m.builtin:<{width}}  {step:>4}  {m.target}")
    left = imported.fallbacks
    if left:
        names = sorted({m.builtin for m in left})
        lines.append(f"not mapped to NNAPI: {', '.join(names)} "
                     f"({len(left)} operator{'s' if len(left) != 1 else ''})")
    else:
        lines.append("every operator runs on NNAPI (or was folded at import)")
    return "\n".join(lines)
