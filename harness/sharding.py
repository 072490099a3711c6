"""``--shard I/N``: run one of N parts of a suite (pytest plugin part of :mod:`harness.plugin`,
so every suite has it: cts, vts, random_graph).

Shards are numbered from 1: ``--shard 1/3``, ``--shard 2/3`` and ``--shard 3/3`` together run
every collected test exactly once. The split is *balanced and deterministic*: the collected
items are sorted by :func:`shard_key` (the test module's dotted name and the rest of the node
id: the same on every machine, whatever directory the suite is installed in or collected
from, and whatever the collection order) and dealt round-robin, item ``k`` of the sorted list
(0-based) to shard ``k % N + 1``, so shard sizes differ by at most one. The split is made on
the tests selected (after ``-k``, ``-m``, ``--deselect``), counting those ``--nncts-resume``
skips as already recorded, so a resumed shard keeps its part of the partition. Under
pytest-xdist each worker collects and deselects identically.

The run's report directory (``--nncts-report DIR``) gets ``shard.json``
(``{"shard": I, "of": N, "driver": ..., "collected": ..., "selected": ...}``: the tests
split and the tests this shard runs; under pytest-xdist only ``selected``) for ``nncts merge``
(:mod:`nncts.merge`); a run without ``--shard`` removes a stale one.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.driver import driver_spec
from runtime.files import load_json

#: The run metadata file a sharded run writes into its report directory.
SHARD_FILE = "shard.json"

#: Plugin parts loaded with this one: running on pytest-xdist's remote execnet gateways.
pytest_plugins = ["nncts.gateways"]


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` -> ``(I, N)``, 1-based: ``1 <= I <= N``. Raises ValueError with a one-line
    message for anything else (``"0/2"``, ``"3/2"``, ``"a/b"``, ``"1/0"``, ``"2"``)."""
    index, sep, count = str(text).strip().partition("/")
    try:
        if not sep:
            raise ValueError
        i, n = int(index), int(count)
    except ValueError:
        raise ValueError(f"expected I/N (shard I of N, e.g. 1/4), got {text!r}") from None
    if n < 1:
        raise ValueError(f"the number of shards must be at least 1, got {text!r}")
    if not 1 <= i <= n:
        raise ValueError(f"shard I of I/N is counted from 1 and must be at most N={n}, got {text!r}")
    return i, n


def shard_key(item) -> str:
    """The sort key of a test item: its module's dotted name (``cts.test_generated``) and the
    node id after the file part (``test_model[V1_0/add/add@async]``), independent of the
    rootdir and of where the suite is installed."""
    module = getattr(getattr(item, "module", None), "__name__", None) or Path(item.path).name
    rest = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else item.name
    return f"{module}::{rest}"


def split(items, index: int, count: int) -> tuple[list, list]:
    """``(keep, drop)``: the items of shard ``index`` of ``count`` (1-based) and the others,
    each in the order of ``items``: sorted by :func:`shard_key`, dealt round-robin."""
    ranked = sorted(range(len(items)), key=lambda k: (shard_key(items[k]), items[k].nodeid))
    mine = {k for position, k in enumerate(ranked) if position % count == index - 1}
    keep = [item for k, item in enumerate(items) if k in mine]
    drop = [item for k, item in enumerate(items) if k not in mine]
    return keep, drop


def pytest_addoption(parser):
    g = parser.getgroup("nncts")
    g.addoption("--shard", default=None, metavar="I/N",
                help="run shard I of N (1-based): the collected tests sorted by module and name, dealt "
                     "round-robin; shards 1/N..N/N together run every test once (nncts merge joins their "
                     "report directories)")


def configured_shard(config) -> tuple[int, int] | None:
    """``(I, N)`` of ``--shard``, None without it; pytest.UsageError for a bad value."""
    text = config.getoption("shard", None)
    if text is None:
        return None
    try:
        return parse_shard(text)
    except ValueError as e:
        raise pytest.UsageError(f"--shard: {e}") from None


def _shard_file(config) -> Path | None:
    report_dir = config.getoption("nncts_report", None)
    if not report_dir or hasattr(config, "workerinput"):
        return None
    return Path(report_dir) / SHARD_FILE


def _write_meta(config, **counts) -> None:
    path, shard = _shard_file(config), config._nncts_shard
    if path is None or shard is None:
        return
    meta = {"shard": shard[0], "of": shard[1], "driver": driver_spec(config),
            "split": "sorted by module and name, dealt round-robin"}
    if path.exists():  # the counts another phase wrote; anything unreadable is written anew
        try:
            old = load_json(path)
        except (OSError, ValueError):
            old = {}
        meta.update({k: v for k, v in old.items() if k in ("collected", "selected")} if isinstance(old, dict) else {})
    meta.update(counts)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def pytest_configure(config):
    config._nncts_shard = configured_shard(config)
    path = _shard_file(config)
    if path is not None and config._nncts_shard is None and path.exists():
        path.unlink()
    _write_meta(config)


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config, items):
    """Keep the items of ``--shard I/N``, deselecting the rest: after every other selection
    (``-k``, ``-m``, ``--deselect``), over the items selected plus those only
    ``--nncts-resume`` deselected (already recorded), so shard sizes are balanced and a
    resumed shard keeps its part."""
    shard = getattr(config, "_nncts_shard", None)
    collected = list(items)
    result = yield
    if shard is None:
        return result
    remaining = {id(item) for item in items}
    done = getattr(config, "_nncts_done", set())
    base = [item for item in collected if id(item) in remaining or _record_id(item) in done]
    keep, _ = split(base, *shard)
    mine = {id(item) for item in keep}
    drop = [item for item in items if id(item) not in mine]
    config._nncts_shard_collected = len(base)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [item for item in items if id(item) in mine]
    return result


def _record_id(item) -> str | None:
    spec = getattr(item, "callspec", None)
    return spec.id if spec is not None else None


def pytest_collection_finish(session):
    """Record in ``shard.json`` how many items were collected and how many the shard runs."""
    config = session.config
    if getattr(config, "_nncts_shard", None) is not None and hasattr(config, "_nncts_shard_collected"):
        _write_meta(config, collected=config._nncts_shard_collected, selected=len(session.items))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """Under pytest-xdist the controller collects nothing: a worker's selected items count."""
    config = node.config
    if getattr(config, "_nncts_shard", None) is not None:
        _write_meta(config, selected=len(ids))
