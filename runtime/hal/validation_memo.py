"""A small memo of :func:`runtime.hal.validate.validate_model` verdicts, keyed by the exact
content of the model.

The same model is validated several times on its way to a driver: the front end's
``Model.finish``, then each driver's ``get_supported_operations`` and ``prepare_model`` (the
sample drivers validate with the reference validator, as AOSP's sample driver calls
``validateModel`` in both). The verdict is a pure function of the model's content and the
feature level, so a repeat is answered from here.

The key is a BLAKE2b digest of the model serialized exactly: ``pickle`` of every field of
the subgraphs (:data:`KEYED_FIELDS`), the relaxed-computation flag, the extension table and
the feature level (pickle keeps the type of every value, so ``1``, ``1.0`` and ``True`` or
``0.0`` and ``-0.0`` give different keys), then ``operandValues`` and every pool's type,
size and bytes. A model that cannot be serialized
(an exotic object planted by a fuzzer or a VTS mutation) is not memoized: it is validated
every time. Nothing is ever answered for a model whose content differs from the one
validated, so a model changed in place after validation is validated again.

The memo holds :data:`CAPACITY` verdicts (least recently used dropped), each a digest and
either the message of the ``INVALID_ARGUMENT`` or the per-operation feature levels.
"""
from __future__ import annotations

import hashlib
import pickle
import threading
from collections import OrderedDict

#: Verdicts kept (least recently used first out).
CAPACITY = 256

_lock = threading.Lock()
_verdicts: OrderedDict[bytes, tuple[str | None, list]] = OrderedDict()


def _subgraph_rows(sg) -> tuple:
    """Every field of ``sg`` as plain values (the location flattened), for pickling: a
    tuple per operand and per operation, pickled far faster than the dataclasses."""
    return ([(o.type, o.dimensions, o.number_of_consumers, o.scale, o.zero_point, o.lifetime,
              o.location.pool_index, o.location.offset, o.location.length, o.location.padding,
              o.extra_params) for o in sg.operands],
            [(op.type, op.inputs, op.outputs) for op in sg.operations],
            sg.input_indexes, sg.output_indexes)


#: The fields :func:`model_key` reads, per HAL class (a test checks they are all of them).
KEYED_FIELDS = {
    "Model": ("main", "referenced", "operand_values", "pools", "relax_computation_float32_to_float16",
              "extension_name_to_prefix"),
    "Subgraph": ("operands", "operations", "input_indexes", "output_indexes"),
    "Operand": ("type", "dimensions", "number_of_consumers", "scale", "zero_point", "lifetime",
                "location", "extra_params"),
    "DataLocation": ("pool_index", "offset", "length", "padding"),
    "Operation": ("type", "inputs", "outputs"),
}


def model_key(model, feature_level: int) -> bytes | None:
    """The 16-byte digest naming ``model``'s content at ``feature_level``; None when some
    part of it cannot be serialized."""
    try:
        h = hashlib.blake2b(pickle.dumps(
            ([_subgraph_rows(sg) for sg in (model.main, *model.referenced)],
             model.relax_computation_float32_to_float16, model.extension_name_to_prefix,
             int(feature_level)), protocol=5), digest_size=16)
        h.update(len(model.operand_values).to_bytes(8, "little"))
        h.update(model.operand_values)
        for pool in model.pools:
            data = pool.buffer
            h.update(type(pool).__qualname__.encode() + len(data).to_bytes(8, "little"))
            h.update(data)
    except Exception:  # noqa: BLE001 - unserializable content: no memo, validate as usual
        return None
    return h.digest()


def lookup(key: bytes | None) -> tuple[str | None, list] | None:
    """The verdict stored under ``key``: (error message or None, levels per subgraph)."""
    if key is None:
        return None
    with _lock:
        verdict = _verdicts.get(key)
        if verdict is not None:
            _verdicts.move_to_end(key)
        return verdict


def store(key: bytes | None, error: str | None, levels: list) -> None:
    """Remember the verdict on the model named ``key``: the INVALID_ARGUMENT message
    (``error``) or, for a valid model, its per-subgraph per-operation ``levels``."""
    if key is None:
        return
    with _lock:
        _verdicts[key] = (error, levels)
        _verdicts.move_to_end(key)
        while len(_verdicts) > CAPACITY:
            _verdicts.popitem(last=False)


def clear() -> None:
    """Forget every verdict."""
    with _lock:
        _verdicts.clear()
