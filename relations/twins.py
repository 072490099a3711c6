"""The twins a relation builds from a source model: the same graph with other inputs, another
batch, the other data layout, another precision. Each returns a new test model (the source
is never changed) whose outputs and temporaries are left for the reference to infer
(dimensions 0 where they may change) and whose expected values are not set; the reference
(:func:`relations.running.resolved`) fills them or refuses the twin. A twin a source cannot
have raises :class:`relations.running.NotApplicable`.
"""
from __future__ import annotations

import copy

import numpy as np

from runtime import ops
from runtime.testing.test_model import TestModel, TestOperand, TestOperation
from runtime.types import OperandLifeTime as L, OperandType as T, OperationType, is_tensor_type, operand_dtype

from .running import NotApplicable

#: NHWC -> NCHW and back (NNAPI's two layouts of a rank-4 tensor, ``layout`` false / true).
TO_NCHW, TO_NHWC = (0, 3, 1, 2), (0, 2, 3, 1)
_DATA = (L.SUBGRAPH_INPUT, L.CONSTANT_COPY, L.CONSTANT_REFERENCE)
_FLOAT32_TO_16 = {T.TENSOR_FLOAT32: T.TENSOR_FLOAT16, T.FLOAT32: T.FLOAT16}


def _unknown_shapes(tm: TestModel) -> TestModel:
    """``tm`` with every temporary and output of main declared of unknown dimensions (rank
    kept) and no expected value: the reference infers them."""
    for o in tm.main.operands:
        if o.lifetime in (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT):
            o.dimensions = [0] * len(o.dimensions)
            o.data = None
    return tm


def with_inputs(tm: TestModel, values: dict[int, np.ndarray], name: str) -> TestModel:
    """A copy of ``tm`` named ``name`` whose operands ``values`` (operand index -> array:
    model inputs or constants) hold the given arrays, dimensions their shapes."""
    out = _unknown_shapes(copy.deepcopy(tm))
    out.name = f"{tm.name}-{name}"
    for i, v in values.items():
        o = out.main.operands[i]
        o.data = np.ascontiguousarray(v).astype(operand_dtype(o.type))
        o.dimensions = list(v.shape)
    return out


def batch_inputs(tm: TestModel, only_first: bool) -> list[int]:
    """The model inputs a batch twin cuts or stacks along axis 0: every tensor input with a
    value whose leading dimension equals the first such input's (``only_first``: that one
    alone). Empty when there is none or its leading dimension is 0."""
    sg = tm.main
    data = [i for i in sg.input_indexes
            if sg.operands[i].data is not None and is_tensor_type(sg.operands[i].type) and sg.operands[i].data.ndim]
    if not data or sg.operands[data[0]].data.shape[0] == 0:
        return []
    n = sg.operands[data[0]].data.shape[0]
    chosen = [i for i in data if sg.operands[i].data.shape[0] == n]
    return chosen[:1] if only_first else chosen


def batch_parts(tm: TestModel, inputs: list[int]) -> tuple[TestModel, list[TestModel]]:
    """(whole, parts): a model whose batch (axis 0 of ``inputs``) is the concatenation of the
    parts' batches. A source with a batch of N >= 2 is the whole, cut into rows [0, 1) and
    [1, N); a source with a batch of 1 is the first part, its inputs reversed (every element
    in reverse order, values of the same domain) the second, and the whole stacks them."""
    values = {i: tm.main.operands[i].data for i in inputs}
    n = next(iter(values.values())).shape[0]
    if n >= 2:
        return (with_inputs(tm, values, "whole"),
                [with_inputs(tm, {i: v[:1] for i, v in values.items()}, "rows0-1"),
                 with_inputs(tm, {i: v[1:] for i, v in values.items()}, f"rows1-{n}")])
    flipped = {i: v.reshape(-1)[::-1].reshape(v.shape) for i, v in values.items()}
    return (with_inputs(tm, {i: np.concatenate([v, flipped[i]]) for i, v in values.items()}, "stacked"),
            [with_inputs(tm, values, "row0"), with_inputs(tm, flipped, "row1")])


def _layout_slot(opdef, operands: list[TestOperand]) -> int | None:
    """Index of the BOOL ``layout`` input of the table signature whose slots match the
    operation's operands by type and count, None when it has none."""
    for sig in opdef.signatures:
        if len(sig.inputs) != len(operands):
            continue
        if all(a.optional and o.lifetime == L.NO_VALUE or a.type == o.type for a, o in zip(sig.inputs, operands)):
            names = [a.name for a in sig.inputs]
            return names.index("layout") if "layout" in names else None
    return None


def _transpose(sg, source: int, perm: tuple[int, ...], target: int | None = None) -> tuple[TestOperation, int]:
    """A TRANSPOSE of operand ``source`` by ``perm`` (a new TENSOR_INT32 constant) into
    ``target``, or into a new temporary of ``source``'s type and quantization (dimensions
    left to the reference); returns (the operation, its output operand)."""
    sg.operands.append(TestOperand(T.TENSOR_INT32, [4], 0.0, 0, L.CONSTANT_COPY, 1, False, None,
                                   np.array(perm, np.int32)))
    p = len(sg.operands) - 1
    if target is None:
        o = copy.copy(sg.operands[source])
        o.lifetime, o.data, o.dimensions, o.number_of_consumers = L.TEMPORARY_VARIABLE, None, [0] * 4, 1
        sg.operands.append(o)
        target = len(sg.operands) - 1
    return TestOperation(OperationType.TRANSPOSE, [source, p], [target]), target


def layout_twin(tm: TestModel) -> tuple[TestModel, dict[int, tuple[int, ...]]]:
    """The other-layout twin of ``tm``: every operation with a constant ``layout`` flag has it
    flipped, and its input 0 and rank-4 outputs (the tensors whose layout the flag names)
    transposed NHWC <-> NCHW. A model input or constant that only layout operations read as
    their input 0 has its value transposed, a model output that no operation reads its
    declared order; any other layout tensor gets a TRANSPOSE operation into or out of the
    operation. Returns (twin, {output position j: the permutation taking the twin's output j
    back to the source's}); raises NotApplicable when no operation has a constant layout flag."""
    out = _unknown_shapes(copy.deepcopy(tm))
    out.name = f"{tm.name}-other-layout"
    sg, src = out.main, tm.main
    readers: dict[int, list[tuple[int, int]]] = {}
    for k, op in enumerate(sg.operations):
        for pos, i in enumerate(op.inputs):
            readers.setdefault(i, []).append((k, pos))
    slots = [_layout_slot(ops.REGISTRY[op.type], [sg.operands[i] for i in op.inputs]) for op in sg.operations]
    flipped, back, operations = set(), {}, []
    for k, op in enumerate(sg.operations):
        slot = slots[k]
        flag = sg.operands[op.inputs[slot]] if slot is not None else None
        if flag is None or flag.lifetime not in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE) or flag.data is None:
            operations.append(op)
            continue
        nchw = bool(src.operands[op.inputs[slot]].data.reshape(-1)[0])
        if op.inputs[slot] not in flipped:
            flag.data = np.logical_not(flag.data).astype(flag.data.dtype)
            flipped.add(op.inputs[slot])
        perm, inverse = (TO_NHWC, TO_NCHW) if nchw else (TO_NCHW, TO_NHWC)
        x, o = op.inputs[0], sg.operands[op.inputs[0]]
        own = all(pos == 0 and slots[r] is not None for r, pos in readers[x])
        if o.lifetime in _DATA and o.data is not None and o.data.ndim == 4 and own:
            if x not in back:  # transpose each input once
                o.data = np.ascontiguousarray(np.transpose(src.operands[x].data, perm))
                o.dimensions = list(o.data.shape)
                back[x] = perm
        else:
            transpose, op.inputs[0] = _transpose(sg, x, perm)
            operations.append(transpose)
        after = []
        for pos, y in enumerate(op.outputs):
            if len(sg.operands[y].dimensions) != 4:
                continue
            if y in sg.output_indexes and y not in readers:
                back[y] = inverse
                continue
            o = copy.copy(sg.operands[y])
            o.lifetime, o.data, o.number_of_consumers = L.TEMPORARY_VARIABLE, None, 1
            sg.operands.append(o)
            op.outputs[pos] = len(sg.operands) - 1
            after.append(_transpose(sg, op.outputs[pos], inverse, y)[0])
        operations += [op, *after]
    if not flipped:
        raise NotApplicable("no operation has a constant layout flag")
    sg.operations = operations
    return out, {j: back[i] for j, i in enumerate(sg.output_indexes) if i in back}


def permuted(tm: TestModel, seed: int) -> tuple[TestModel, np.ndarray]:
    """(twin, permutation): ``tm`` with the elements of every tensor model input and
    constant of the shape of its first output permuted by one seeded permutation of the
    flattened positions. Raises NotApplicable when the outputs do not all share a shape of
    at least 2 elements or no input has it."""
    sg = tm.main
    shapes = {tuple(sg.operands[i].dimensions) for i in sg.output_indexes}
    if len(shapes) != 1 or 0 in next(iter(shapes)) or int(np.prod(next(iter(shapes)))) < 2:
        raise NotApplicable("the outputs do not share one shape of two or more elements")
    shape = next(iter(shapes))
    perm = np.random.default_rng(seed).permutation(int(np.prod(shape)))
    chosen = {i: o.data.reshape(-1)[perm].reshape(shape) for i, o in enumerate(sg.operands)
              if o.lifetime in _DATA and o.data is not None and is_tensor_type(o.type)
              and tuple(o.data.shape) == shape}
    if not any(i in chosen for i in sg.input_indexes):
        raise NotApplicable("no model input has the outputs' shape")
    return with_inputs(tm, chosen, f"permuted{seed}"), perm


def float32_only(tm: TestModel) -> bool:
    """Whether ``tm`` computes in float32: some TENSOR_FLOAT32 operand, no float16 operand,
    not relaxed, and one subgraph."""
    types = {o.type for o in tm.main.operands}
    return T.TENSOR_FLOAT32 in types and not types & {T.TENSOR_FLOAT16, T.FLOAT16} \
        and not tm.is_relaxed and not tm.referenced


def relaxed_twin(tm: TestModel) -> TestModel:
    """``tm`` with ``relaxComputationFloat32toFloat16`` set."""
    out = _unknown_shapes(copy.deepcopy(tm))
    out.name, out.is_relaxed = f"{tm.name}-relaxed", True
    return out


def float16_twin(tm: TestModel) -> TestModel:
    """``tm`` converted to float16: every TENSOR_FLOAT32 / FLOAT32 operand becomes
    TENSOR_FLOAT16 / FLOAT16, its value rounded to float16 (to nearest even; a value beyond
    float16's range becomes ±inf, as a float16 model would hold it)."""
    out = _unknown_shapes(copy.deepcopy(tm))
    out.name = f"{tm.name}-float16"
    for o in out.main.operands:
        if o.type in _FLOAT32_TO_16:
            o.type = _FLOAT32_TO_16[o.type]
            if o.data is not None:
                with np.errstate(over="ignore"):
                    o.data = o.data.astype(np.float16)
    return out


def swappable(tm: TestModel) -> list[int]:
    """Operations of ``tm`` whose inputs 0 and 1 are tensors of one type: those whose
    operands :func:`swapped` may exchange."""
    sg = tm.main
    return [k for k, op in enumerate(sg.operations) if len(op.inputs) >= 2
            and is_tensor_type(sg.operands[op.inputs[0]].type)
            and sg.operands[op.inputs[0]].type == sg.operands[op.inputs[1]].type]


def swapped(tm: TestModel, operations: list[int]) -> TestModel:
    """``tm`` with inputs 0 and 1 of each of ``operations`` exchanged."""
    out = _unknown_shapes(copy.deepcopy(tm))
    out.name = f"{tm.name}-swapped-{'-'.join(map(str, operations))}"
    for k in operations:
        ins = out.main.operations[k].inputs
        ins[0], ins[1] = ins[1], ins[0]
    return out
