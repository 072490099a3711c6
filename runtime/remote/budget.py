"""How much a request would cost to decode, found before decoding it.

The protobuf decoder allocates an object per repeated submessage and a slot per repeated
value, so a few wire bytes can cost a hundred times their size: an empty ``Operand`` is 2 bytes
on the wire and about 100 bytes decoded (a 2 MB frame of a million of them decoded into
98 MB; a 256 MiB frame would have made 12 GB). The frame limit bounds bytes, not objects.

:func:`check_elements` counts the *elements* a request would decode into (entries of repeated
message fields, values of repeated scalar fields) with the decoder itself, on a *shadow* of
each message: the same field numbers, but every message field and every repeated scalar field
declared ``repeated bytes``. Decoding a shadow copies no submessage and makes one bytes object
per occurrence, so counts come at C speed; only messages that hold repeated fields further
down (a model's subgraphs, a request) are descended into, at most :data:`MAX_CONTAINERS` of
them. The driver host (:mod:`runtime.remote.frames`) checks every request over
:data:`SCAN_ABOVE` bytes so before decoding it; the model count limits
(:mod:`runtime.hal.model_limits`) are then checked on the decoded message.
"""
from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError

from ..hal.model_limits import MAX_OPERANDS, MAX_OPERATIONS, MAX_POOLS, MAX_SUBGRAPHS
from . import hal_pb2 as pb

#: Most elements one request may decode into: 6 per operand and per operation at the count
#: limits (dimensions, operation inputs and outputs are repeated values), about 800,000,
#: under 100 MB decoded.
MAX_ELEMENTS = 6 * (MAX_OPERANDS + MAX_OPERATIONS) + 2 * MAX_POOLS + MAX_SUBGRAPHS
#: Most messages with repeated fields below them (models, subgraphs, requests) one request
#: may hold: each is decoded on its own.
MAX_CONTAINERS = MAX_SUBGRAPHS + 16
#: Requests up to this many bytes are decoded without counting (they cannot cost more than
#: a few MB).
SCAN_ABOVE = 1 << 16

_HIGH = bytes(range(0x80, 0x100))
_FIXED = {FieldDescriptor.TYPE_DOUBLE: 8, FieldDescriptor.TYPE_FIXED64: 8, FieldDescriptor.TYPE_SFIXED64: 8,
          FieldDescriptor.TYPE_FLOAT: 4, FieldDescriptor.TYPE_FIXED32: 4, FieldDescriptor.TYPE_SFIXED32: 4}


class OverBudget(ValueError):
    """The request would decode into more elements than the budget allows."""


def _shadow_classes() -> dict[str, type]:
    """full name of each hal.proto message -> its shadow class (see the module docstring)."""
    proto = descriptor_pb2.FileDescriptorProto()
    pb.DESCRIPTOR.CopyToProto(proto)
    proto.name, proto.package = "nncts_hal_shadow.proto", "nncts.hal.shadow"
    del proto.service[:]
    for message in proto.message_type:
        del message.oneof_decl[:]
        for f in message.field:
            f.ClearField("oneof_index")
            if f.type == FieldDescriptor.TYPE_MESSAGE or f.label == FieldDescriptor.LABEL_REPEATED:
                f.type, f.label = FieldDescriptor.TYPE_BYTES, FieldDescriptor.LABEL_REPEATED
                f.ClearField("type_name")
            elif f.type == FieldDescriptor.TYPE_ENUM:
                f.type_name = f.type_name.replace(".nncts.hal.v1.", ".nncts.hal.shadow.")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {m.full_name: message_factory.GetMessageClass(pool.FindMessageTypeByName(
        m.full_name.replace("nncts.hal.v1.", "nncts.hal.shadow.")))
        for m in pb.DESCRIPTOR.message_types_by_name.values()}


def _holds_repeated(descriptor, seen=()) -> bool:
    """Whether ``descriptor`` has a repeated message field, here or further down."""
    return any(f.message_type is not None and (f.is_repeated or (
        f.message_type.full_name not in seen and _holds_repeated(f.message_type, (*seen, descriptor.full_name))))
        for f in descriptor.fields)


_SHADOWS = _shadow_classes()
#: message full name -> [(field name, element size: None message, 0 varint, 4/8 fixed, -1
#: bytes/string; descend into it)] of its repeated or message fields
_PLANS = {d.full_name: [(f.name, None if f.message_type else -1 if f.type in (f.TYPE_BYTES, f.TYPE_STRING)
                         else _FIXED.get(f.type, 0),
                         f.message_type if f.message_type and _holds_repeated(f.message_type) else None)
                        for f in d.fields if f.message_type is not None or f.is_repeated]
          for d in pb.DESCRIPTOR.message_types_by_name.values()}


def check_elements(data, descriptor, budget: int = MAX_ELEMENTS) -> int:
    """The number of elements (repeated submessages and repeated values) ``data``, a
    serialized ``descriptor`` message, decodes into; counted without decoding it. Raises
    :class:`OverBudget` past ``budget`` or past :data:`MAX_CONTAINERS` containers,
    DecodeError for bytes that are not such a message."""
    count, containers, todo = 0, 0, [(descriptor, data)]
    while todo:
        desc, chunk = todo.pop()
        containers += 1
        if containers > MAX_CONTAINERS:
            raise OverBudget(f"the request holds more than {MAX_CONTAINERS} models, subgraphs or requests "
                             f"(runtime.remote.budget.MAX_CONTAINERS)")
        shadow = _SHADOWS[desc.full_name].FromString(chunk)
        for name, size, descend in _PLANS[desc.full_name]:
            values = getattr(shadow, name)
            if not values:
                continue
            if size is None or size == -1:  # submessages (or strings): one element per occurrence
                count += len(values)
            elif size == 0:  # packed varints: one per terminating byte (a non-packed value, 1)
                count += sum(len(v.translate(None, _HIGH)) for v in values)
            else:
                count += sum(len(v) // size for v in values)
            if count > budget:
                raise OverBudget(f"the request would decode into more than {budget} elements (repeated "
                                 f"submessages and values, counted up to {desc.name}.{name}; "
                                 f"runtime.remote.budget.MAX_ELEMENTS)")
            if descend is not None:
                todo.extend((descend, v) for v in values)
    return count


__all__ = ["check_elements", "OverBudget", "MAX_ELEMENTS", "MAX_CONTAINERS", "SCAN_ABOVE", "DecodeError"]
