"""HAL tweaks (header bit 3): post-hoc perturbations of the HAL model and request that reach
what the corpus schema cannot say (locations, negative dimensions, raw enum codes, pool
sizes). A tweak does not change the test model; a finding records the tweaks as metadata.

Record layout (at most :data:`MAX_TWEAKS`, until the input ends)::

    u8      kind (byte % len(TWEAK_KINDS))
    varint  target index (taken modulo the number of targets when applied)
    u8      field selector
    u8      value selector: < 0x80 -> HOSTILE_INTS[byte % len]; else a zigzag varint follows
"""
from __future__ import annotations

from dataclasses import dataclass

from runtime.hal.memory import SharedMemory
from runtime.hal.types import (DataLocation, ExtensionNameAndPrefix, Model, Request,
                               SymmPerChannelQuantParams)
from runtime.types import OperandLifeTime, OperandType, OperationType

from .common import HOSTILE_FLOATS, HOSTILE_INTS, ByteReader

MAX_TWEAKS = 8
TWEAK_KINDS = ("operand_dim", "operand_rank", "operand_location", "operand_type",
               "operand_lifetime", "operand_quant", "operand_consumers", "operation_type",
               "operation_io", "subgraph_io", "request_input_location",
               "request_output_location", "request_arg", "pool_size", "extra_params",
               "extension_prefix")


@dataclass(frozen=True)
class Tweak:
    """One HAL-level perturbation: ``kind`` (a TWEAK_KINDS name), target ``index``,
    ``field`` selector and ``value``."""

    kind: str
    index: int
    field: int
    value: int

    def describe(self) -> str:
        """``kind[index].field=value``, as a finding records it."""
        return f"{self.kind}[{self.index}].{self.field}={self.value}"


def decode_tweaks(r: ByteReader) -> list[Tweak]:
    """The tweak records of the rest of the input (see the module docstring)."""
    tweaks = []
    while r.remaining and len(tweaks) < MAX_TWEAKS:
        kind = TWEAK_KINDS[r.u8() % len(TWEAK_KINDS)]
        index = r.varint()
        fld = r.u8()
        b = r.u8()
        value = HOSTILE_INTS[b % len(HOSTILE_INTS)] if b < 0x80 else r.zigzag()
        tweaks.append(Tweak(kind, index, fld, value))
    return tweaks


def apply_tweaks(tweaks: list[Tweak], model: Model, request: Request) -> None:
    """Apply ``tweaks`` in order to a HAL ``model`` and ``request`` (in place). Sizes are
    never grown past 1 MiB here: a hostile size is only ever *claimed*, not allocated."""
    sg = model.main
    for tw in tweaks:
        v = tw.value
        if tw.kind.startswith("operand_") and not sg.operands:
            continue
        if tw.kind.startswith("operand_"):
            o = sg.operands[tw.index % len(sg.operands)]
        if tw.kind == "operand_dim":
            dims = list(o.dimensions)
            k = tw.field % (len(dims) + 1)
            if k == len(dims):
                dims.append(v)
            else:
                dims[k] = v
            o.dimensions = dims
        elif tw.kind == "operand_rank":
            o.dimensions = list(o.dimensions) + [1] * (tw.field + 1)
        elif tw.kind == "operand_location":
            loc = o.location
            name = ("pool_index", "offset", "length", "padding")[tw.field % 4]
            o.location = DataLocation(**{**loc.__dict__, name: v})
        elif tw.kind == "operand_type":
            o.type = _enum_or_int(OperandType, v)
        elif tw.kind == "operand_lifetime":
            o.lifetime = _enum_or_int(OperandLifeTime, v)
        elif tw.kind == "operand_quant":
            if tw.field & 1:
                o.scale = HOSTILE_FLOATS[(tw.field >> 1) % len(HOSTILE_FLOATS)]
            else:
                o.zero_point = v
        elif tw.kind == "operand_consumers":
            o.number_of_consumers = v
        elif tw.kind == "operation_type" and sg.operations:
            sg.operations[tw.index % len(sg.operations)].type = _enum_or_int(OperationType, v)
        elif tw.kind == "operation_io" and sg.operations:
            op = sg.operations[tw.index % len(sg.operations)]
            lst = op.inputs if tw.field & 1 else op.outputs
            _set_or_append(lst, tw.field >> 1, v)
        elif tw.kind == "subgraph_io":
            _set_or_append(sg.input_indexes if tw.field & 1 else sg.output_indexes, tw.index, v)
        elif tw.kind in ("request_input_location", "request_output_location"):
            args = request.inputs if tw.kind == "request_input_location" else request.outputs
            if args:
                arg = args[tw.index % len(args)]
                name = ("pool_index", "offset", "length", "padding")[tw.field % 4]
                arg.location = DataLocation(**{**arg.location.__dict__, name: v})
        elif tw.kind == "request_arg":
            args = request.inputs if tw.field & 1 else request.outputs
            if args:
                arg = args[tw.index % len(args)]
                if tw.field & 2:
                    arg.has_no_value = not arg.has_no_value
                else:
                    arg.dimensions = [v] * (1 + (tw.field >> 2) % 5)
        elif tw.kind == "pool_size":
            size = min(max(v, 0), 1 << 20)
            which = tw.field % 3
            if which == 0:
                model.operand_values = bytes(model.operand_values[:size]).ljust(size, b"\0")
            elif which == 1 and model.pools:
                k = tw.index % len(model.pools)
                model.pools[k] = SharedMemory(data=bytes(model.pools[k].buffer[:size]).ljust(size, b"\0"))
            elif which == 2 and request.pools:
                k = tw.index % len(request.pools)
                pool = request.pools[k]
                if isinstance(pool, SharedMemory):
                    request.pools[k] = SharedMemory(data=bytes(pool.buffer[:size]).ljust(size, b"\0"))
        elif tw.kind == "extra_params" and sg.operands:
            o = sg.operands[tw.index % len(sg.operands)]
            if tw.field & 1:
                o.extra_params = bytes([tw.field]) * (1 + tw.field % 8)
            else:
                n = (tw.field >> 1) % 5
                o.extra_params = SymmPerChannelQuantParams(
                    tuple(HOSTILE_FLOATS[(tw.field + k) % len(HOSTILE_FLOATS)] if k % 2 else 0.5
                          for k in range(n)), v)
        elif tw.kind == "extension_prefix":
            name = "" if tw.field & 1 else f"com.example.fuzz{tw.field % 4}"
            model.extension_name_to_prefix.append(ExtensionNameAndPrefix(name, v))


def _enum_or_int(enum_cls, v: int):
    try:
        return enum_cls(v)
    except ValueError:
        return v


def _set_or_append(lst: list, k: int, v: int) -> None:
    if lst and k % (len(lst) + 1) < len(lst):
        lst[k % (len(lst) + 1)] = v
    else:
        lst.append(v)
