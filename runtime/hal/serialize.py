"""Safe binary serialization of a HAL :class:`~runtime.hal.types.Model` (no pickle, no eval).

Used by drivers for compilation caches and by fuzzers/reproducers to store models. Decoding is
*total*: :func:`model_from_bytes` raises only :class:`ValueError` on malformed input (truncated,
bad header, bad JSON, wrong keys or value types, unknown enum values, lengths past the end,
trailing bytes), and allocates nothing larger than the input itself.

Byte layout (all integers little-endian)::

    offset  size     field
    0       8        magic  b"NNCTSMDL"
    8       4        u32 format version (FORMAT_VERSION = 1)
    12      4        u32 flags (reserved, must be 0)
    16      8        u64 J: length of the structure document
    24      8        u64 V: length of operand_values
    32      4        u32 P: number of memory pools (at most MAX_POOLS)
    36      8*P      u64 length of each pool
    ...     J        structure: JSON object in ASCII (below; non-ASCII text escaped as JSON \\uXXXX)
    ...     V        operand_values bytes
    ...     sum      each pool's bytes, in order
    (the data must end exactly there)

Structure document (every object has exactly these keys)::

    {"main": Subgraph, "referenced": [Subgraph, ...], "relax": bool,
     "extensions": [{"name": str, "prefix": int}, ...]}
    Subgraph  = {"operands": [Operand, ...], "operations": [Operation, ...],
                 "inputs": [int, ...], "outputs": [int, ...]}
    Operand   = {"type": int, "dims": [int, ...], "consumers": int, "scale": number,
                 "zero_point": int, "lifetime": int,
                 "location": [pool_index, offset, length, padding],
                 "extra_params": null
                               | {"channel_quant": {"scales": [number, ...], "channel_dim": int}}
                               | {"extension": hex string}}
    (``extra_params`` is HAL ``Operand.extraParams``: per-channel quantization as
    :class:`SymmPerChannelQuantParams`, or an extension's opaque bytes)
    Operation = {"type": int, "inputs": [int, ...], "outputs": [int, ...]}

The serializer is structural, not a validator: a model that ``validate_model`` rejects (an
out-of-range index, a negative offset, a NaN scale) still round-trips, so reproducers can
store invalid models. What it does require:

* operand ``type``: an :class:`OperandType` code or an extension type
  (``prefix << 16 | code``, i.e. 0x10000..0xFFFFFFFF); operation ``type`` likewise with
  :class:`OperationType` (NNAPI ``ANeuralNetworksModel_getExtensionOperandType`` /
  ``getExtensionOperationType`` encode extension codes this way);
* ``lifetime``: an :class:`OperandLifeTime` code;
* every other integer within int64/uint64 range (``-2**63 .. 2**64-1``), extension prefixes
  within uint16 (HAL ``Model.ExtensionNameAndPrefix.prefix``);
* pools: objects with a ``buffer`` (decoded as :class:`SharedMemory`).

:func:`model_to_bytes` raises ValueError for a model outside this domain (or not built of
the HAL dataclasses), so whatever it writes, :func:`model_from_bytes` reads back equal (and
re-encodes to the same bytes). Decoded enums are :class:`OperandType` / :class:`OperationType`
/ :class:`OperandLifeTime` members; extension codes come back as plain ints (what a front-end
``ExtensionTypeCode`` knows beyond its code is not part of the HAL model).
"""
from __future__ import annotations

import json
import struct

from ..types import OperandLifeTime, OperandType, OperationType
from .memory import SharedMemory
from .types import (DataLocation, ExtensionNameAndPrefix, Model, Operand, Operation, Subgraph,
                    SymmPerChannelQuantParams)

MAGIC = b"NNCTSMDL"
FORMAT_VERSION = 1
#: Most memory pools a serialized model may declare.
MAX_POOLS = 1 << 16

_HEADER = struct.Struct("<8sIIQQI")  # magic, version, flags, J, V, P
_U64 = struct.Struct("<Q")

_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1
_EXT_MIN, _EXT_MAX = 0x10000, 0xFFFFFFFF

_MODEL_KEYS = frozenset({"main", "referenced", "relax", "extensions"})
_SUBGRAPH_KEYS = frozenset({"operands", "operations", "inputs", "outputs"})
_OPERAND_KEYS = frozenset({"type", "dims", "consumers", "scale", "zero_point", "lifetime",
                           "location", "extra_params"})
_OPERATION_KEYS = frozenset({"type", "inputs", "outputs"})
_CHANNEL_KEYS = frozenset({"scales", "channel_dim"})
_EXTENSION_KEYS = frozenset({"name", "prefix"})


# -- checked conversions (shared by encoder and decoder) ------------------------------------
def _int(value, where: str, lo: int = _INT_MIN, hi: int = _INT_MAX) -> int:
    """``value`` as a plain int in [lo, hi] (numpy integers accepted, bools refused)."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise ValueError(f"{where}: expected an integer, got {type(value).__name__}")
    n = value.__index__()
    if not lo <= n <= hi:
        raise ValueError(f"{where}: {n} is outside [{lo}, {hi}]")
    return n


def _float(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise ValueError(f"{where}: expected a number, got {type(value).__name__}")
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError) as e:
        raise ValueError(f"{where}: not a number ({e})") from None


def _list(value, where: str) -> list:
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{where}: expected a list, got {type(value).__name__}")
    return list(value)


def _ints(value, where: str) -> list[int]:
    return [_int(v, f"{where}[{i}]") for i, v in enumerate(_list(value, where))]


def _obj(value, keys: frozenset, where: str) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected an object, got {type(value).__name__}")
    if set(value) != keys:
        missing, extra = sorted(keys - set(value)), sorted(map(str, set(value) - keys))
        raise ValueError(f"{where}: wrong keys (missing {missing}, unexpected {extra})")
    return value


def _enum_or_extension(value, enum_type, where: str):
    """An ``enum_type`` member, or a plain int in the extension range."""
    n = _int(value, where, 0, _EXT_MAX)
    if n in enum_type._value2member_map_:
        return enum_type(n)
    if n >= _EXT_MIN:
        return n
    raise ValueError(f"{where}: {n} is not a valid {enum_type.__name__} nor an extension type")


def _lifetime(value, where: str) -> OperandLifeTime:
    n = _int(value, where, 0, _EXT_MAX)
    if n not in OperandLifeTime._value2member_map_:
        raise ValueError(f"{where}: {n} is not a valid OperandLifeTime")
    return OperandLifeTime(n)


def _bytes_of(value, where: str) -> bytes:
    try:
        return memoryview(value).tobytes()
    except TypeError:
        raise ValueError(f"{where}: not a bytes-like object ({type(value).__name__})") from None


# -- encoding ------------------------------------------------------------------------------
def _encode_operand(o: Operand, where: str) -> dict:
    loc = o.location
    ep, extra = o.extra_params, None
    if isinstance(ep, SymmPerChannelQuantParams):
        extra = {"channel_quant": {
            "scales": [_float(s, f"{where} scales[{i}]") for i, s in enumerate(_list(ep.scales, f"{where} scales"))],
            "channel_dim": _int(ep.channel_dim, f"{where} channel_dim")}}
    elif isinstance(ep, (bytes, bytearray, memoryview)):
        extra = {"extension": bytes(ep).hex()}
    elif ep is not None:
        raise ValueError(f"{where} extra_params: {type(ep).__name__} is neither per-channel "
                         f"quantization nor extension bytes")
    return {"type": int(_enum_or_extension(o.type, OperandType, f"{where} type")),
            "dims": _ints(o.dimensions, f"{where} dims"),
            "consumers": _int(o.number_of_consumers, f"{where} consumers"),
            "scale": _float(o.scale, f"{where} scale"),
            "zero_point": _int(o.zero_point, f"{where} zero_point"),
            "lifetime": int(_lifetime(o.lifetime, f"{where} lifetime")),
            "location": [_int(loc.pool_index, f"{where} pool_index"), _int(loc.offset, f"{where} offset"),
                         _int(loc.length, f"{where} length"), _int(loc.padding, f"{where} padding")],
            "extra_params": extra}


def _encode_subgraph(sg: Subgraph, where: str) -> dict:
    return {"operands": [_encode_operand(o, f"{where} operand {i}") for i, o in enumerate(sg.operands)],
            "operations": [{"type": int(_enum_or_extension(op.type, OperationType, f"{where} operation {k} type")),
                            "inputs": _ints(op.inputs, f"{where} operation {k} inputs"),
                            "outputs": _ints(op.outputs, f"{where} operation {k} outputs")}
                           for k, op in enumerate(sg.operations)],
            "inputs": _ints(sg.input_indexes, f"{where} inputs"),
            "outputs": _ints(sg.output_indexes, f"{where} outputs")}


def model_to_bytes(model: Model) -> bytes:
    """Serialize ``model`` (layout in the module docstring). Deterministic: equal models give
    equal bytes. Raises ValueError when the model holds something the format cannot carry
    (an unknown enum code, a non-integer index, a pool without a buffer)."""
    try:
        return _model_to_bytes(model)
    except (TypeError, AttributeError) as e:
        raise ValueError(f"model_to_bytes: not a well-formed HAL model ({type(e).__name__}: {e})") from None


def _model_to_bytes(model: Model) -> bytes:
    if not isinstance(model, Model):
        raise ValueError(f"model_to_bytes: expected a HAL Model, got {type(model).__name__}")
    if model.relax_computation_float32_to_float16 not in (True, False):
        raise ValueError("model: relax_computation_float32_to_float16 must be a bool")
    exts = []
    for i, e in enumerate(model.extension_name_to_prefix):
        if not isinstance(e.name, str):
            raise ValueError(f"extension {i}: name must be a str")
        exts.append({"name": e.name, "prefix": _int(e.prefix, f"extension {i} prefix", 0, 0xFFFF)})
    doc = {"main": _encode_subgraph(model.main, "main"),
           "referenced": [_encode_subgraph(sg, f"referenced subgraph {r}")
                          for r, sg in enumerate(model.referenced)],
           "relax": bool(model.relax_computation_float32_to_float16),
           "extensions": exts}
    try:
        structure = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    except (ValueError, UnicodeError) as e:
        raise ValueError(f"model_to_bytes: cannot encode the structure ({e})") from None
    values = _bytes_of(model.operand_values, "operand_values")
    if len(model.pools) > MAX_POOLS:
        raise ValueError(f"model_to_bytes: {len(model.pools)} pools, at most {MAX_POOLS}")
    pools = []
    for i, pool in enumerate(model.pools):
        if not hasattr(pool, "buffer"):
            raise ValueError(f"pool {i}: {type(pool).__name__} has no buffer to serialize")
        pools.append(_bytes_of(pool.buffer, f"pool {i}"))
    header = _HEADER.pack(MAGIC, FORMAT_VERSION, 0, len(structure), len(values), len(pools))
    return b"".join([header, *(_U64.pack(len(p)) for p in pools), structure, values, *pools])


# -- decoding ------------------------------------------------------------------------------
def _decode_operand(d, where: str) -> Operand:
    d = _obj(d, _OPERAND_KEYS, where)
    loc = _list(d["location"], f"{where} location")
    if len(loc) != 4:
        raise ValueError(f"{where} location: expected 4 integers, got {len(loc)}")
    extra = d["extra_params"]
    if isinstance(extra, dict) and set(extra) == {"channel_quant"}:
        cq = _obj(extra["channel_quant"], _CHANNEL_KEYS, f"{where} channel_quant")
        extra = SymmPerChannelQuantParams(
            tuple(_float(s, f"{where} scales[{i}]") for i, s in enumerate(_list(cq["scales"], f"{where} scales"))),
            _int(cq["channel_dim"], f"{where} channel_dim"))
    elif isinstance(extra, dict) and set(extra) == {"extension"}:
        if not isinstance(extra["extension"], str):
            raise ValueError(f"{where} extra_params extension: expected a hex string")
        try:
            extra = bytes.fromhex(extra["extension"])
        except ValueError:
            raise ValueError(f"{where} extra_params extension: not a hex string") from None
    elif extra is not None:
        raise ValueError(f"{where} extra_params: expected null, {{\"channel_quant\": ...}} or "
                         f"{{\"extension\": ...}}")
    return Operand(_enum_or_extension(d["type"], OperandType, f"{where} type"),
                   _ints(d["dims"], f"{where} dims"),
                   _int(d["consumers"], f"{where} consumers"),
                   _float(d["scale"], f"{where} scale"),
                   _int(d["zero_point"], f"{where} zero_point"),
                   _lifetime(d["lifetime"], f"{where} lifetime"),
                   DataLocation(*(_int(v, f"{where} location[{i}]") for i, v in enumerate(loc))),
                   extra)


def _decode_operation(d, where: str) -> Operation:
    d = _obj(d, _OPERATION_KEYS, where)
    return Operation(_enum_or_extension(d["type"], OperationType, f"{where} type"),
                     _ints(d["inputs"], f"{where} inputs"), _ints(d["outputs"], f"{where} outputs"))


def _decode_subgraph(d, where: str) -> Subgraph:
    d = _obj(d, _SUBGRAPH_KEYS, where)
    return Subgraph([_decode_operand(o, f"{where} operand {i}")
                     for i, o in enumerate(_list(d["operands"], f"{where} operands"))],
                    [_decode_operation(op, f"{where} operation {k}")
                     for k, op in enumerate(_list(d["operations"], f"{where} operations"))],
                    _ints(d["inputs"], f"{where} inputs"), _ints(d["outputs"], f"{where} outputs"))


def _no_duplicate_keys(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError(f"duplicate key {k!r}")
        d[k] = v
    return d


def model_from_bytes(data) -> Model:
    """The Model serialized in ``data`` (bytes-like). Raises ValueError, naming the field or
    offset at fault, for any malformed input: never another exception, and no allocation
    larger than ``data``. Pools come back as :class:`SharedMemory` copies."""
    try:
        data = memoryview(data).cast("B")
    except TypeError:
        raise ValueError(f"model_from_bytes: expected bytes, got {type(data).__name__}") from None
    if len(data) < _HEADER.size:
        raise ValueError(f"model_from_bytes: {len(data)} bytes, shorter than the {_HEADER.size}-byte header")
    magic, version, flags, n_struct, n_values, n_pools = _HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise ValueError(f"model_from_bytes: bad magic {magic!r} (expected {MAGIC!r})")
    if version != FORMAT_VERSION:
        raise ValueError(f"model_from_bytes: format version {version}, this reader knows {FORMAT_VERSION}")
    if flags != 0:
        raise ValueError(f"model_from_bytes: reserved flags {flags:#x} must be 0")
    if n_pools > MAX_POOLS:
        raise ValueError(f"model_from_bytes: {n_pools} pools, at most {MAX_POOLS}")
    pos = _HEADER.size
    if pos + 8 * n_pools > len(data):
        raise ValueError(f"model_from_bytes: {n_pools} pool lengths run past the end ({len(data)} bytes)")
    pool_lengths = [_U64.unpack_from(data, pos + 8 * i)[0] for i in range(n_pools)]
    pos += 8 * n_pools
    total = pos + n_struct + n_values + sum(pool_lengths)
    if total != len(data):
        raise ValueError(f"model_from_bytes: the header declares {total} bytes, the data has {len(data)}"
                         + (" (truncated or lengths past the end)" if total > len(data) else " (trailing bytes)"))
    raw_struct = data[pos:pos + n_struct]
    pos += n_struct
    values = data[pos:pos + n_values].tobytes()
    pos += n_values
    pools = []
    for n in pool_lengths:
        pools.append(SharedMemory(data=data[pos:pos + n].tobytes()))
        pos += n
    try:
        text = raw_struct.tobytes().decode("ascii")
        doc = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except (ValueError, UnicodeError, RecursionError) as e:
        raise ValueError(f"model_from_bytes: structure is not valid JSON ({e})") from None
    try:
        doc = _obj(doc, _MODEL_KEYS, "model")
        if not isinstance(doc["relax"], bool):
            raise ValueError("model relax: expected a bool")
        exts = []
        for i, e in enumerate(_list(doc["extensions"], "extensions")):
            e = _obj(e, _EXTENSION_KEYS, f"extension {i}")
            if not isinstance(e["name"], str):
                raise ValueError(f"extension {i} name: expected a str")
            exts.append(ExtensionNameAndPrefix(e["name"], _int(e["prefix"], f"extension {i} prefix", 0, 0xFFFF)))
        main = _decode_subgraph(doc["main"], "main")
        referenced = [_decode_subgraph(sg, f"referenced subgraph {r}")
                      for r, sg in enumerate(_list(doc["referenced"], "referenced"))]
    except RecursionError:
        raise ValueError("model_from_bytes: structure nested too deeply") from None
    return Model(main, referenced, values, pools, doc["relax"], exts)
