"""A suite run's report directory: never lost, never mixed.

A run of ``nncts cts|vts|random-graph`` writes into a fresh directory beside the report
directory, ``<report-dir>.partial-<pid>`` (the same file system), and publishes it when the
run ends (:meth:`StagedReport.publish`): every file it wrote replaces the report
directory's file of that name (``os.replace``: each file is either the old one or the new
one, never a mix), the files of :data:`RUN_FILES` it did not write this time (the
``shard.json`` of an earlier sharded run) are removed, ``summary.json`` and ``index.html``
last; any other file a user put in the report directory is kept. Random-graph
reproducers (``graphs/``) are written in place, as the records name their paths.

Nothing is published (the report directory stays byte-identical) when the command line is
wrong (usage errors end the run before or inside pytest, :mod:`nncts.preflight`), when
pytest only lists (``--collect-only``, ``--setup-plan``, ``--setup-only``, ``--fixtures``,
...) and when no test was selected (``-k`` matching nothing). SIGINT and SIGTERM
(:class:`Interrupts`) end the run as an interrupt: pytest finishes its session, the records
so far are published with the page and ``summary.json`` marked ``"status": "interrupted"``.

With ``--resume`` the fresh directory starts with the report directory's records and run
description (``outcomes.jsonl``, ``run.json``), or with those of a run that was killed
outright (SIGKILL: a ``.partial-<pid>`` directory whose process is gone) when they are newer;
the fingerprint check is the plugin's (:mod:`harness.run_state`). Without ``--resume``
such left-over directories are removed.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
from pathlib import Path

#: The files a suite run writes into its report directory (stale ones are removed on publishing).
RUN_FILES = ("outcomes.jsonl", "junit.xml", "shard.json", "run.json", "summary.json", "index.html")
#: What a resumed run starts from.
RESUMED = ("outcomes.jsonl", "run.json")
#: Published last, in this order: the summary, then the page.
LAST = ("summary.json", "index.html")
#: Infix of the run directories beside the report directory.
PARTIAL = ".partial-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


class StagedReport:
    """The run directory (``stage``) of the report directory ``report_dir`` (``final``)."""

    def __init__(self, report_dir: str | Path):
        self.final = Path(report_dir)
        self.stage = self.final.absolute().parent / f"{self.final.name}{PARTIAL}{os.getpid()}"

    def abandoned(self) -> list[Path]:
        """Run directories of this report directory whose process is gone."""
        out = []
        for path in self.stage.parent.glob(f"{self.final.name}{PARTIAL}*"):
            pid = path.name.rsplit(PARTIAL, 1)[1]
            if path != self.stage and path.is_dir() and pid.isdigit() and not _alive(int(pid)):
                out.append(path)
        return out

    def start(self, resume: bool) -> Path:
        """Create the run directory (afresh) and return it; with ``resume``, copy into it the
        newest records (:data:`RESUMED`) of the report directory and of abandoned runs."""
        shutil.rmtree(self.stage, ignore_errors=True)
        self.stage.mkdir()
        left_over = self.abandoned()
        if resume:
            sources = [d for d in [self.final, *left_over] if (d / "outcomes.jsonl").is_file()]
            if sources:
                newest = max(sources, key=lambda d: (d / "outcomes.jsonl").stat().st_mtime)
                for name in RESUMED:
                    if (newest / name).is_file():
                        shutil.copy2(newest / name, self.stage / name)
        for path in left_over:
            shutil.rmtree(path, ignore_errors=True)
        return self.stage

    def discard(self) -> None:
        """Remove the run directory; the report directory is untouched."""
        shutil.rmtree(self.stage, ignore_errors=True)

    def publish(self) -> None:
        """Move the run directory's files into the report directory (see the module
        docstring), then remove the run directory."""
        self.final.mkdir(parents=True, exist_ok=True)
        written = {p.name for p in self.stage.iterdir()}
        for name in sorted(written - set(LAST)) + [n for n in LAST if n in written]:
            src, dst = self.stage / name, self.final / name
            if src.is_dir():
                shutil.rmtree(dst, ignore_errors=True)
            os.replace(src, dst)
        for name in set(RUN_FILES) - written:
            (self.final / name).unlink(missing_ok=True)
        self.discard()


class Interrupts:
    """Context manager: while it is active, SIGINT and SIGTERM raise KeyboardInterrupt in
    the main thread (pytest then ends its session as interrupted), once: ``signal`` is the
    first one received (None: none), later ones are ignored. Outside the main thread it
    does nothing."""

    def __init__(self):
        self.signal: int | None = None
        self._old: dict = {}

    @property
    def exit_code(self) -> int | None:
        """128 + the signal number (130 for SIGINT, 143 for SIGTERM); None without one."""
        return None if self.signal is None else 128 + self.signal

    def _handle(self, signum, frame):
        if self.signal is None:
            self.signal = signum
            raise KeyboardInterrupt(signal.Signals(signum).name)

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for s in (signal.SIGINT, signal.SIGTERM):
                self._old[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc):
        for s, handler in self._old.items():
            signal.signal(s, handler)
        self._old = {}
        return False

    @staticmethod
    @contextlib.contextmanager
    def held():
        """SIGINT and SIGTERM ignored for the duration (the reports being published)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)
