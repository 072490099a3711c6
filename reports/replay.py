"""The command that replays one recorded test: ``python -m pytest '<node id>'`` with the
run's driver options, corpus and the suite's own options that make the node exist (the CTS
``--mode``; a random graph's configuration and seed), run from the directory the run was
started in (relative ``--corpus`` paths are the run's own). A node id selects exactly one
test, where ``-k '<record id>'`` would also select every id it is a substring of."""
from __future__ import annotations

import shlex

from harness.locations import DEFAULT_CORPUS_LABEL, ROOT, SPECS_LABEL
from harness.suites import suite


def driver_options(label: str | None, tls: dict[str, str] | None = None) -> list[str]:
    """pytest options for a run's ``meta["driver"]`` label as nncts.cli writes it: ``NAME``,
    ``NAME (out of process)`` or ``ADDRESS (driver endpoint)``, the endpoint's mutual-TLS
    files from ``meta["driver_tls"]`` (``{"--driver-endpoint-key": path, ...}``) after it."""
    if not label:
        return []
    if label.endswith(" (driver endpoint)"):
        tls_options = [word for option, path in sorted((tls or {}).items()) for word in (option, path)]
        return ["--driver-endpoint", label.removesuffix(" (driver endpoint)"), *tls_options]
    if label.endswith(" (out of process)"):
        return ["--driver", label.removesuffix(" (out of process)"), "--driver-process"]
    return ["--driver", label]


def corpus_options(corpus: list[str] | None) -> list[str]:
    """``--corpus DIR`` per root of a run's ``meta["corpus"]`` (``--specs`` for the built
    specs); none for the default roots."""
    if not corpus or DEFAULT_CORPUS_LABEL in corpus:
        return []
    out: list[str] = []
    for root in corpus:
        out += ["--specs"] if root == SPECS_LABEL else ["--corpus", root]
    return out


def suite_options(record: dict) -> list[str]:
    """The options under which the record's test exists (the suite table's
    ``replay_options``: CTS ``--mode``; a random graph's ``--config NAME --first-seed SEED
    --seeds 1``); none for a suite the table does not know."""
    try:
        spec = suite(record.get("suite", "cts"))
    except ValueError:
        return []
    return spec.replay_options(record)


def node_path(nodeid: str) -> str:
    """The node id with its file made absolute when it is one of this project's files."""
    path, sep, rest = nodeid.partition("::")
    return str(ROOT / path) + sep + rest if (ROOT / path).is_file() else nodeid


def replay_argv(record: dict, meta: dict | None) -> list[str] | None:
    """argv (``python -m pytest ...``) replaying ``record`` under a run's ``meta``; None for
    a record without a node id."""
    if not record.get("nodeid"):
        return None
    meta = meta or {}
    return (["python", "-m", "pytest", node_path(record["nodeid"])]
            + driver_options(meta.get("driver"), meta.get("driver_tls"))
            + corpus_options(meta.get("corpus")) + suite_options(record))


def replay_command(record: dict, meta: dict | None) -> str:
    """:func:`replay_argv` as one shell line ("" when there is none)."""
    argv = replay_argv(record, meta)
    return shlex.join(argv) if argv else ""
