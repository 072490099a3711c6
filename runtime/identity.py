"""Objects declared immutable, and what was derived from them, kept by identity for as long
as each object lives: the executor's programs of a prepared model (:func:`runtime.executor.hold`),
kernels' forms of a held model's constants (:func:`runtime.ops.common.freeze`), the
validation key of a model its owner declared final (:func:`runtime.hal.validate.freeze_model`).

A lookup is by ``id`` and checks the object is the very one (an ``id`` can be reused once an
object is freed); an entry goes when its object is garbage collected."""
from __future__ import annotations

import weakref


class IdentityTable:
    """``id(obj) -> (weak reference to obj, {key: derived value})`` for the objects
    :meth:`add` declared immutable. Changing such an object in place afterwards is
    undefined: what was derived from it stays."""

    def __init__(self):
        self._table: dict[int, tuple[weakref.ref, dict]] = {}

    def add(self, obj) -> bool:
        """Declare ``obj`` immutable (again: nothing changes). False when ``obj`` takes no
        weak reference (then it is not kept: every lookup misses)."""
        key = id(obj)
        entry = self._table.get(key)
        if entry is not None and entry[0]() is obj:
            return True
        table = self._table
        try:
            ref = weakref.ref(obj, lambda _r, key=key: table.pop(key, None))
        except TypeError:
            return False
        table[key] = (ref, {})
        return True

    def store(self, obj) -> dict | None:
        """The dict of values kept with ``obj`` when it was declared immutable, else None."""
        entry = self._table.get(id(obj))
        if entry is None or entry[0]() is not obj:
            return None
        return entry[1]

    def __len__(self) -> int:
        return len(self._table)
