"""Per-process memos of work the harness would otherwise repeat for every execution mode of
one test model: the modes of a model run one after the other in one pytest item
(:mod:`harness.grouped`), so a small
least-recently-used table keyed by the identity of the objects the work was computed from
turns ten builds, validations and compilations of a model into one.

Keys hold the objects themselves, not only their ``id``: a hit must be the very objects
(an ``id`` can be reused once an object is freed)."""
from __future__ import annotations

import collections
from typing import Any, Callable


class IdentityMemo:
    """A least-recently-used table of at most ``size`` values, each computed from a tuple
    of objects (compared by identity) and a tuple of plain hashable options (compared by
    value).

    :meth:`get` returns the kept value or computes, keeps and returns a new one; an
    exception raised by ``compute`` is not kept (the next call computes again)."""

    def __init__(self, size: int):
        if size < 1:
            raise ValueError(f"an IdentityMemo keeps at least 1 value, not {size}")
        self.size = size
        self._table: collections.OrderedDict = collections.OrderedDict()

    def get(self, objects: tuple, options: tuple, compute: Callable[[], Any]) -> Any:
        """The value for (``objects`` by identity, ``options`` by value), computed by
        ``compute()`` when not kept."""
        key = (tuple(id(o) for o in objects), options)
        hit = self._table.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], objects)):
            self._table.move_to_end(key)
            return hit[1]
        value = compute()
        self._table[key] = (objects, value)
        self._table.move_to_end(key)
        while len(self._table) > self.size:
            self._table.popitem(last=False)
        return value

    def clear(self) -> None:
        """Forget every value (e.g. after a failure: a driver that failed may have lost the
        state a kept compilation stands on)."""
        self._table.clear()

    def __len__(self) -> int:
        return len(self._table)
