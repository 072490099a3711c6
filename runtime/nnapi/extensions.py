"""The front end's view of the vendor extensions its devices support
(``NeuralNetworksExtensions.h``, feature level 3): which extensions are usable (AOSP's
``TypeManager::registerExtension`` disables one that two devices describe differently)
and the description of an extension operand type. The type-code arithmetic is
:mod:`runtime.extension_types`."""
from __future__ import annotations

from ..hal.types import Extension, ExtensionOperandTypeInformation

__all__ = ["operand_type_info", "collect_extensions", "InconsistentExtension"]


def operand_type_info(extension: Extension, type_within: int) -> ExtensionOperandTypeInformation | None:
    """The operand type ``type_within`` of ``extension``, or None if it declares no such type."""
    for info in extension.operand_types:
        if int(info.type) == int(type_within):
            return info
    return None


class InconsistentExtension(ValueError):
    """Two devices describe the same extension differently (AOSP disables such an extension)."""


def _key(extension: Extension):
    return sorted((int(i.type), bool(i.is_tensor), int(i.byte_size)) for i in extension.operand_types)


def collect_extensions(devices) -> tuple[dict[str, Extension], set[str]]:
    """The extensions ``devices`` (front-end :class:`runtime.nnapi.Device` or HAL
    ``IDevice`` objects) support, by name, and the names two devices describe differently
    (unusable, as AOSP's ``TypeManager::registerExtension`` disables them). A device whose
    ``get_supported_extensions`` raises or returns garbage contributes nothing."""
    found: dict[str, Extension] = {}
    inconsistent: set[str] = set()
    for device in devices:
        hal = getattr(device, "hal", device)
        try:
            extensions = list(hal.get_supported_extensions())
        except Exception:  # noqa: BLE001 - untrusted driver code
            continue
        for ext in extensions:
            if not isinstance(ext, Extension) or not isinstance(ext.name, str):
                continue
            if ext.name in found and _key(found[ext.name]) != _key(ext):
                inconsistent.add(ext.name)
            found.setdefault(ext.name, ext)
    for name in inconsistent:
        found.pop(name, None)
    return found, inconsistent
