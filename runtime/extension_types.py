"""NNAPI vendor extensions (``NeuralNetworksExtensions.h``, feature level 3): the encoding of
extension operand and operation type codes, and the helpers the front end, HAL validation,
the executor and extension drivers share.

Encoding (HAL 1.2 ``Model::ExtensionTypeEncoding``): a type code is a 32-bit value
``(prefix << LOW_BITS_TYPE) | type_within_extension``: the low 16 bits (``LOW_BITS_TYPE``) are
the type within the extension, the high 16 bits (``HIGH_BITS_PREFIX``) the extension's
prefix. Prefix 0 is the base NNAPI range (codes 0..``BASE_MAX`` = 0xFFFF, the HAL's
``OperandTypeRange::BASE_MAX`` / ``OperationTypeRange::BASE_MAX``), so any code above
``BASE_MAX`` is an extension type; the HAL model's ``extension_name_to_prefix`` table says
which extension a prefix stands for. The front end (:class:`runtime.nnapi.Model`) assigns
prefixes per model, from 1 in order of first use (AOSP's ``TypeManager`` assigns them per
process; either way a driver must read the model's table, never assume a prefix).

An extension's operand types are described by the driver
(:class:`runtime.hal.types.ExtensionOperandTypeInformation`: scalar or tensor, and the byte
size of the scalar or of one tensor element); the HAL model itself does not carry that
information, so HAL validation cannot size extension operands (see
:func:`runtime.hal.validate.validate_model`). Extension operands carry no scale or zero point;
per-operand parameters travel as opaque bytes (``Operand.extra_params``, set by
``Model.set_operand_extension_data``) whose layout the extension defines.

Bundled example: :mod:`runtime.drivers.fibonacci` (``com.example.fibonacci``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .types import is_tensor_type

if TYPE_CHECKING:  # annotations only: the HAL's extension description
    from .hal.types import ExtensionOperandTypeInformation

__all__ = [
    "LOW_BITS_TYPE", "HIGH_BITS_PREFIX", "BASE_MAX", "MAX_PREFIX", "ExtensionTypeCode",
    "is_extension_type", "extension_prefix", "type_within_extension", "make_extension_type",
    "type_name", "prefix_table", "find_prefix", "extension_name_of",
    "is_tensor_operand_type",
]

#: Bits of a type code holding the type within its extension (the low bits).
LOW_BITS_TYPE = 16
#: Bits of a type code holding the extension prefix (the high bits).
HIGH_BITS_PREFIX = 16
#: Highest base (non-extension) operand or operation type code.
BASE_MAX = (1 << LOW_BITS_TYPE) - 1
#: Highest extension prefix (AOSP ``kMaxPrefix``); prefix 0 is the base range.
MAX_PREFIX = (1 << HIGH_BITS_PREFIX) - 1


def is_extension_type(code) -> bool:
    """True when ``code`` (an operand or operation type code) is an extension type: above
    ``BASE_MAX``, i.e. its prefix is not 0."""
    try:
        return int(code) > BASE_MAX
    except (TypeError, ValueError):
        return False


def extension_prefix(code) -> int:
    """The extension prefix of type ``code`` (its high 16 bits; 0 for a base type)."""
    return (int(code) >> LOW_BITS_TYPE) & MAX_PREFIX


def type_within_extension(code) -> int:
    """The type within its extension of type ``code`` (its low 16 bits)."""
    return int(code) & BASE_MAX


def make_extension_type(prefix: int, type_within: int) -> int:
    """The code of type ``type_within`` (0..0xFFFF) of the extension with ``prefix``
    (1..0xFFFF). Raises ValueError when either is out of range."""
    if not 1 <= int(prefix) <= MAX_PREFIX:
        raise ValueError(f"extension prefix {prefix} must be in [1, {MAX_PREFIX}]")
    if not 0 <= int(type_within) <= BASE_MAX:
        raise ValueError(f"type within an extension {type_within} must be in [0, {BASE_MAX}]")
    return (int(prefix) << LOW_BITS_TYPE) | int(type_within)


class ExtensionTypeCode(int):
    """An extension type code as the front end hands it out: an ``int`` equal to the NNAPI
    code, which also knows its extension's name and, for an operand type, the driver-reported
    :class:`ExtensionOperandTypeInformation` (``info``).

    ``name`` (``"com.example.fibonacci:1"``) lets messages print it like an ``OperandType`` /
    ``OperationType`` member; everything else treats it as the plain code.
    """

    extension: str
    info: ExtensionOperandTypeInformation | None

    def __new__(cls, code: int, extension: str, info: ExtensionOperandTypeInformation | None = None):
        self = super().__new__(cls, int(code))
        self.extension = extension
        self.info = info
        return self

    def __reduce__(self):
        return (ExtensionTypeCode, (int(self), self.extension, self.info))

    @property
    def prefix(self) -> int:
        return extension_prefix(self)

    @property
    def type_within_extension(self) -> int:
        return type_within_extension(self)

    @property
    def name(self) -> str:
        return f"{self.extension}:{self.type_within_extension}"

    def __repr__(self) -> str:
        return f"ExtensionTypeCode({int(self):#x}, {self.extension!r})"


def type_name(code) -> str:
    """A printable name of an operand or operation type code: an enum member's or an
    :class:`ExtensionTypeCode`'s ``name``; ``EXTENSION(prefix=P, type=T)`` for a bare
    extension code; else the number."""
    name = getattr(code, "name", None)
    if isinstance(name, str):
        return name
    if is_extension_type(code):
        return f"EXTENSION(prefix={extension_prefix(code)}, type={type_within_extension(code)})"
    return str(code)


def prefix_table(model) -> dict[int, str]:
    """Prefix -> extension name of a HAL model's ``extension_name_to_prefix``."""
    return {int(e.prefix): e.name for e in model.extension_name_to_prefix}


def find_prefix(model, extension_name: str) -> int | None:
    """The prefix a HAL model uses for ``extension_name``, or None when it uses none."""
    for e in model.extension_name_to_prefix:
        if e.name == extension_name:
            return int(e.prefix)
    return None


def extension_name_of(model, code) -> str | None:
    """The name of the extension type ``code`` belongs to in HAL ``model`` (None for a base
    type or a prefix the model does not declare)."""
    if not is_extension_type(code):
        return None
    return prefix_table(model).get(extension_prefix(code))


def is_tensor_operand_type(code) -> bool | None:
    """Whether operand type ``code`` is a tensor type: from the base table, or from the
    ``info`` an :class:`ExtensionTypeCode` carries; None when unknown (a bare extension code)."""
    if is_extension_type(code):
        info = getattr(code, "info", None)
        return None if info is None else bool(info.is_tensor)
    return is_tensor_type(code)
