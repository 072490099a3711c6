"""The fuzzer's generated mode draws its models from the operation table (fuzz/decoder/):
scalar values from runtime/ops/domains.py by Arg name, output quantizations from the
slots' ``fixed_quant``, shapes and parameter tensors through the rows' ``generate`` hooks;
its hostility setting decides how often a drawn value leaves its domain; the byte-driven
random source behaves like numpy's; the fuzz package is layered (runtime only, no import
dodging a cycle)."""
from __future__ import annotations

import ast
import dataclasses
import random
from pathlib import Path

import numpy as np
import pytest

from fuzz.decoder import HOSTILITY_LEVELS, decode
from fuzz.decoder.byterng import ByteRng
from fuzz.decoder.common import ByteReader, table_codes
from runtime import ops
from runtime.errors import HalError
from runtime.hal.validate import validate_model
from runtime.ops.base import Arg
from runtime.ops.domains import DOMAINS
from runtime.ops.generation import Draft, draft_defaults, outside_domain
from runtime.testing.hal_convert import to_hal_model
from runtime.types import OperandLifeTime as L, OperandType as T, OperationType as O

ROOT = Path(__file__).resolve().parents[1]


def _inputs(n: int, length: int = 300):
    """``n`` fixed pseudo-random generated-mode inputs (header: generated, level 0)."""
    return [bytes([0x01]) + random.Random(f"gen/{i}").randbytes(length) for i in range(n)]


def _valid(tm) -> bool:
    try:
        validate_model(to_hal_model(tm))
    except HalError:
        return False
    return True


def _one_operation(op: O, sig_index: int, tail: bytes, hostility: int | None = None):
    """The model of the generated-mode input naming table row ``op`` and signature
    ``sig_index`` (one operation, header level 0), followed by ``tail``."""
    k = table_codes().index(op)
    return decode(bytes([0x01, 0x00, k, sig_index]) + tail, hostility).model


def test_hostility_levels_of_the_header():
    assert HOSTILITY_LEVELS == (0, 1, 16, 64)  # never, 1/256, 1/16, 1/4 (module docstring)


def test_hostility_zero_gives_valid_models_and_full_hostility_mostly_invalid_ones():
    """The same bytes at hostility 0 and at 256/256 (every escape fires): the drafted
    models pass the reference validator; pushed out of their domains, nearly none do."""
    data = _inputs(150)
    calm = [_valid(decode(d, hostility=0).model) for d in data]
    wild = [_valid(decode(d, hostility=256).model) for d in data]
    assert all(calm)
    assert sum(wild) < 0.1 * len(wild)


@pytest.mark.parametrize("op", [O.ADD, O.MUL, O.CONV_2D, O.DEPTHWISE_CONV_2D, O.FULLY_CONNECTED,
                                O.AVERAGE_POOL_2D, O.L2_POOL_2D])
def test_scalar_parameters_come_from_the_domains_by_arg_name(monkeypatch, op):
    """Narrow the ``activation`` domain to RELU6 (3): at hostility 0 the operand feeding
    the slot named ``activation`` holds 3 (the decoder knows no operation's parameters)."""
    monkeypatch.setitem(DOMAINS, "activation", (("RELU6", 3),))
    values = _slot_values(op, "activation", 0, 40)
    assert len(values) > 20 and {v for v, _ in values} == {3}


def test_fixed_output_quantization_comes_from_the_slot(monkeypatch):
    """Give RELU's TENSOR_QUANT8_ASYMM output slot a fixed_quant of (0.5, 7): every
    generated RELU of that signature declares it (no per-operation list in the decoder)."""
    row = ops.get(O.RELU)
    k = next(i for i, s in enumerate(row.signatures) if s.outputs[0].type == T.TENSOR_QUANT8_ASYMM)
    sigs = list(row.signatures)
    sigs[k] = dataclasses.replace(sigs[k], outputs=(dataclasses.replace(sigs[k].outputs[0], fixed_quant=(0.5, 7)),))
    monkeypatch.setattr(row, "signatures", tuple(sigs))
    for j in range(20):
        tm = _one_operation(O.RELU, k, random.Random(f"relu/{j}").randbytes(200), hostility=0)
        [op] = tm.main.operations
        out = tm.main.operands[op.outputs[0]]
        assert (out.scale, out.zero_point) == (0.5, 7)


def test_logistic_output_takes_the_nnapi_fixed_quantization():
    """NNAPI: a TENSOR_QUANT8_ASYMM LOGISTIC output has scale 1/256, zero point 0."""
    row = ops.get(O.LOGISTIC)
    k = next(i for i, s in enumerate(row.signatures) if s.inputs[0].type == T.TENSOR_QUANT8_ASYMM)
    for j in range(10):
        tm = _one_operation(O.LOGISTIC, k, random.Random(f"logistic/{j}").randbytes(200), hostility=0)
        out = tm.main.operands[tm.main.operations[0].outputs[0]]
        assert (out.scale, out.zero_point) == (1 / 256, 0)


def _slot_values(op: O, name: str, hostility: int, n: int = 150) -> list[tuple[int, int]]:
    """(value, rank of input 0) of the constant feeding slot ``name`` in the one-operation
    models of ``op``'s first signature over ``n`` tails."""
    row = ops.get(op)
    pos = [a.name for a in row.signatures[0].inputs].index(name)
    out = []
    for j in range(n):
        tm = _one_operation(op, 0, random.Random(f"{op.name}/{j}").randbytes(200), hostility)
        ins = tm.main.operations[0].inputs
        o = tm.main.operands[ins[pos]]
        if o.data is not None and o.lifetime == L.CONSTANT_COPY and len(ins) == len(row.signatures[0].inputs):
            out.append((int(o.data), len(tm.main.operands[ins[0]].dimensions)))
    return out


@pytest.mark.parametrize("op,name", [(O.ADD, "activation"), (O.ARGMAX, "axis"), (O.LOG_SOFTMAX, "axis")])
def test_hostility_pushes_scalars_outside_their_domain(op, name):
    """At hostility 0 the fused activation stays a FuseCode (0..3) and the axis in
    [-rank, rank); at 64/256 some leave it."""
    def inside(v, rank):
        return 0 <= v <= 3 if name == "activation" else -rank <= v < rank
    calm = _slot_values(op, name, 0)
    assert calm and all(inside(v, r) for v, r in calm)
    wild = _slot_values(op, name, 64)
    assert any(not inside(v, r) for v, r in wild)


def test_hostility_breaks_fixed_output_quantization():
    """LOGISTIC's TENSOR_QUANT8_ASYMM output (NNAPI: 1/256, 0) keeps it at hostility 0;
    with every escape firing, some outputs get another quantization."""
    row = ops.get(O.LOGISTIC)
    k = next(i for i, s in enumerate(row.signatures) if s.inputs[0].type == T.TENSOR_QUANT8_ASYMM)
    quants = set()
    for j in range(60):
        tm = _one_operation(O.LOGISTIC, k, random.Random(f"logistic/{j}").randbytes(200), 256)
        out = tm.main.operands[tm.main.operations[0].outputs[-1]]
        quants.add((out.scale, out.zero_point))
    assert quants - {(1 / 256, 0)}


def test_outside_domain_values():
    # activation: domain 0..3, EXTRA_VALUES 4 (TANH) and 6 (SIGMOID): 7 above, -1 below, gap 5
    assert outside_domain(Arg("activation", T.INT32), 4) == (7, -1, 5)
    # an axis of a rank-3 input: [-3, 3) allowed; nonnegative rows: -1 is outside too
    assert outside_domain(Arg("axis", T.INT32), 3) == (3, -4, 4)
    assert outside_domain(Arg("axis", T.INT32), 3, nonnegative_axis=True) == (3, -4, 4, -1)
    assert outside_domain(Arg("type", T.INT32), 2) == (4, 0)  # LSHProjectionType 1..3
    assert outside_domain(Arg("layout", T.BOOL), 4) == ()
    assert outside_domain(Arg("stride_width", T.INT32), 4) == ()


@pytest.mark.parametrize("op,nonnegative", [(O.REVERSE, True), (O.CONCATENATION, True), (O.MEAN, False),
                                            (O.ARGMAX, False)])
def test_default_axes_respect_nonnegative_axis(op, nonnegative):
    """The drafting defaults (no hook) draw axes in [0, rank) for nonnegative_axis rows
    and in [-rank, rank) otherwise."""
    row = ops.get(op)
    sig = row.signatures[0]
    k = next(i for i, a in enumerate(sig.inputs) if a.name in ("axis", "axes"))
    values = []
    for seed in range(60):
        d = Draft(row, sig, np.random.default_rng(seed))
        draft_defaults(d)
        rank = max(d.rank0, 1)
        v = np.asarray(d[k].value).reshape(-1)
        assert all(-rank <= x < rank for x in v)
        values += v.tolist()
    assert (min(values) >= 0) == nonnegative


def test_byte_rng_draws_like_numpy():
    rng = ByteRng(ByteReader(bytes([7, 200, 3, 0xFF, 0xFF, 10, 20, 30, 40]) + bytes(range(256))))
    assert rng.integers(0, 4) == 3          # 7 % 4
    assert rng.integers(5) == 0             # [0, 5): 200 % 5
    assert rng.integers(-2, 2, endpoint=True) == -2 + 3 % 5
    assert rng.integers(0, 65536) == 0xFFFF  # two bytes, little-endian
    assert rng.random() == 10 / 256
    assert rng.uniform(0.0, 2.0) == pytest.approx(2.0 * 20.5 / 256)
    assert sorted(rng.permutation(5).tolist()) == [0, 1, 2, 3, 4]
    arr = rng.integers(-3, 3, size=(4, 5))
    assert arr.shape == (4, 5) and arr.min() >= -3 and arr.max() < 3
    assert sorted(rng.choice(10, size=10, replace=False).tolist()) == list(range(10))
    with pytest.raises(ValueError):
        rng.integers(3, 3)


def test_byte_rng_past_the_end_draws_the_lowest_values():
    rng = ByteRng(ByteReader(b""))
    assert (rng.integers(2, 9), rng.random(), rng.choice([5, 6, 7])) == (2, 0.0, 5)
    # Fisher-Yates swapping each i = 3, 2, 1 with index 0: a rotation
    assert rng.permutation(4).tolist() == [1, 2, 3, 0]


def _imports(path: Path):
    tree = ast.parse(path.read_text())
    top, nested = [], []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [("." * node.level) + (node.module or "")]
            top += names
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            nested += [n for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))]
    return top, nested


def test_the_decoder_imports_only_runtime_and_nothing_inside_functions():
    allowed = {"runtime", "numpy", "__future__", "math", "struct", "threading", "dataclasses"}
    files = sorted((ROOT / "fuzz" / "decoder").glob("*.py")) + [ROOT / "fuzz" / "findings.py",
                                                                ROOT / "fuzz" / "request.py"]
    for path in files:
        top, nested = _imports(path)
        assert not nested, f"{path.name}: import inside a function"
        if path.parent.name == "decoder":
            outside = {n.split(".")[0] for n in top if not n.startswith(".")} - allowed
            assert not outside, (path.name, outside)
        assert len(path.read_text().splitlines()) <= 600, path.name
