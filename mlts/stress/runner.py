"""The runner: each stress test in its own process with a watchdog, outcomes classified and
appended to a JSON-lines file as they happen.

For each (test, driver) the runner starts a test process (:func:`mlts.stress.core.test_main`;
``multiprocessing`` forkserver start method, :func:`mlts.stress.core.mp_context`: a process
forked from a clean server that shares nothing with the runner, which never loads the
driver) and waits for its result, its death, or the watchdog
limit, whichever comes first. The limit is ``duration + grace`` seconds from the moment the
test process reports it has started (imports done, driver loaded: the moment the test's own
clock starts), and :data:`STARTUP_LIMIT_S` for getting there:

* a result -> the test's own outcome: SUCCESS, FAILURE (a check failed; message), or CRASH
  (a client process of the test died of a signal the test did not send);
* the process died without a result -> CRASH (``died of SIGABRT``, or the exit code), with
  the crash site from the faulthandler dump in its log;
* no result in time -> HANG: the runner asks for every thread's stack (SIGUSR1,
  faulthandler), then kills the test's whole process group (SIGKILL); the message names
  where the threads were stuck.

The test's process group is always killed at the end, so no client survives its test. Then
the next test runs. Each outcome is one record, appended and flushed at once::

    {"test": str, "driver": str, "outcome": "SUCCESS" | "FAILURE" | "HANG" | "CRASH",
     "duration": seconds (float), "message": str, "params": {...}, "details": {...},
     "log": str (the tail of the test process's stderr; failures only), "started": ISO time}
"""
from __future__ import annotations

import datetime
import json
import multiprocessing
import multiprocessing.connection
import os
import re
import signal
import sys
import tempfile
import time
from pathlib import Path

from .core import CRASH, FAILURE, HANG, SUCCESS, mp_context, scratch_root, signal_name, test_main
from .tests import TESTS

#: Characters of a failed test's log kept in its record.
LOG_TAIL_CHARS = 4000
#: Seconds a test process may take to start (interpreter, imports, loading the driver) before
#: its duration + grace begins; past it the test is a HANG ("did not start").
STARTUP_LIMIT_S = 60.0
#: Seconds a test process may take to exit after sending its result.
EXIT_GRACE_S = 5.0
#: Longest wait for faulthandler to dump the stacks of a hung test before it is killed (s).
DUMP_WAIT_S = 2.0


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def _frames(log: str) -> list[tuple[str, list[str]]]:
    """faulthandler dumps in ``log``: [(thread header, [frames, innermost first])]. Processes
    of one test dump at the same moment into one log, so a line may hold the start of another
    process's line: a frame is read from its last ``File "``, and a line two writers mixed
    character by character (no ``File "PATH", line N in NAME`` left in it) is no frame."""
    blocks, current = [], None
    for line in log.splitlines():
        if re.match(r"(Current thread|Thread) 0x[0-9a-f]+", line.strip()):
            current = (line.strip(), [])
            blocks.append(current)
        elif current is not None and line.strip().startswith("File "):
            line = line.strip()
            frame = line[line.rfind('File "'):] if 'File "' in line else line
            if _FRAME.fullmatch(frame):
                current[1].append(frame)
        elif current is not None and line.strip() == "":
            current = None
    return blocks


#: One faulthandler frame line.
_FRAME = re.compile(r'File "([^"]+)", line (\d+) in (\S+)')


#: Frames that only wait for other threads or processes: the runner's own orchestration.
_ORCHESTRATION = re.compile(r"/stress/(core\.py\", line \d+ in (watch_clients|stop|test_main|client_main|spawn_client)|"
                            r"tests\.py\", line \d+ in (_run_threads|_stop_compiler_processes|_compiler_processes))")
_STDLIB = re.compile(r'File "[^"]*/lib/python3\.\d+/(?!site-packages/)')


def _short(frame: str) -> str:
    m = _FRAME.match(frame)
    return f"{Path(m.group(1)).name}:{m.group(2)} in {m.group(3)}" if m else frame


def crash_site(log: str) -> str:
    """Innermost frame of the thread that crashed (faulthandler's "Current thread")."""
    for header, frames in _frames(log):
        if header.startswith("Current thread") and frames:
            return _short(frames[0])
    return ""


def hang_sites(log: str) -> list[str]:
    """Where the threads of the stack dumps in ``log`` were stuck: per thread, its innermost
    frame outside the standard library, unless that is the stress suite's own waiting for
    other threads or processes (at most 3, distinct)."""
    sites = []
    for _, frames in _frames(log):
        own = next((f for f in frames if not _STDLIB.match(f)), None)
        if own is None or _ORCHESTRATION.search(own):
            continue
        site = _short(own)
        if site not in sites:
            sites.append(site)
    return sites[:3]


def run_one(test: str, driver: str, params: dict, grace: float, log_dir: str | None = None) -> dict:
    """Run ``test`` (a name of :data:`~mlts.stress.tests.TESTS`) on ``driver`` in its own process
    under the watchdog; returns its record."""
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    log_file = tempfile.NamedTemporaryFile(prefix=f"nncts-stress-{test}-", suffix=".log", dir=log_dir or scratch_root(),
                                           delete=False)
    log_file.close()
    mp = mp_context()
    recv, send = mp.Pipe(duplex=False)
    process = mp.Process(target=test_main, args=(test, TESTS[test].body, driver, params, send, log_file.name),
                         name=f"stress-{test}")
    t0 = time.monotonic()
    budget = float(params["duration"]) + float(grace)
    deadline = t0 + max(STARTUP_LIMIT_S, budget)  # until the test reports it has started
    began = None
    process.start()
    send.close()
    result, progress, outcome, message = None, "", None, ""
    try:
        while result is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            ready = multiprocessing.connection.wait([recv, process.sentinel], remaining)
            if recv in ready:
                try:
                    kind, payload = recv.recv()
                except Exception:  # noqa: BLE001 - EOF or a torn message: the process is ending
                    break
                if kind == "started":
                    began = time.monotonic()
                    deadline = began + budget
                elif kind == "progress":
                    progress = payload
                elif kind == "result":
                    result = payload
            elif process.sentinel in ready:
                break
        duration = time.monotonic() - t0
        if result is None and time.monotonic() < deadline:
            # it is ending: its descriptors close before it can be reaped, so wait for it
            process.join(max(0.0, min(EXIT_GRACE_S, deadline - time.monotonic())))
        if result is not None:
            process.join(EXIT_GRACE_S)
            outcome, message = result["outcome"], result["message"]
        elif process.is_alive():
            try:  # every process of the test dumps its threads' stacks (faulthandler)
                os.killpg(process.pid, signal.SIGUSR1)
            except OSError:
                pass
            _wait_for_dump(log_file.name)
            _kill_group(process.pid)
            process.join()
            outcome = HANG
            sites = hang_sites(_read(log_file.name))
            if began is None:
                message = f"the test did not start (load the driver) within {deadline - t0:.0f} s: killed"
            else:
                message = (f"no result {budget:.1f} s after the test started (duration {float(params['duration']):g} s"
                           f" + grace {float(grace):g} s): killed")
            message += f"; stuck in {', '.join(sites)}" if sites else ""
        else:
            process.join()
            outcome = CRASH
            site = crash_site(_read(log_file.name))
            code = process.exitcode
            message = ((f"the test process died of {signal_name(code)}" if code is not None and code < 0 else
                        f"the test process ended ({signal_name(code)}) without a result")
                       + f" after {duration:.1f} s" + (f" in {site}" if site else ""))
        if outcome != SUCCESS and progress and result is None:
            message += f"; last progress: {progress}"
        record = {"test": test, "driver": driver, "outcome": outcome, "duration": round(duration, 3),
                  "message": message, "params": params, "details": (result or {}).get("details", {}),
                  "started": started}
        if outcome != SUCCESS:
            record["log"] = _read(log_file.name)[-LOG_TAIL_CHARS:]
        return record
    finally:
        if process.is_alive():
            process.kill()
            process.join()
        _kill_group(process.pid)
        recv.close()
        try:
            os.unlink(log_file.name)
        except OSError:
            pass


def _wait_for_dump(path: str) -> None:
    """Wait until the log has grown and then stayed the same for 0.2 s (the stack dumps are
    written), at most :data:`DUMP_WAIT_S`."""
    def size() -> int:
        try:
            return os.path.getsize(path)
        except OSError:
            return 0
    before, end = size(), time.monotonic() + DUMP_WAIT_S
    last, stable_since = before, None
    while time.monotonic() < end:
        time.sleep(0.05)
        now = size()
        if now != last:
            last, stable_since = now, time.monotonic()
        elif now > before and stable_since is not None and time.monotonic() - stable_since >= 0.2:
            return


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


#: Tests that measure time and so run alone, after the others, when tests run concurrently.
EXCLUSIVE = ("performance-degradation",)


def run_tests(plan: list[tuple[str, str, dict]], grace: float, report: str | os.PathLike | None = None,
              progress: bool = True, append: bool = False, jobs: int = 1,
              exclusive=EXCLUSIVE) -> list[dict]:
    """Run each (test, driver, params) of ``plan`` (:func:`run_one`), ``jobs`` at a time (the
    tests named in ``exclusive`` alone, after the others); each record is appended to
    the JSON-lines file ``report`` as soon as it is known (the file is started afresh unless
    ``append``). Progress: a tqdm bar when tqdm is installed, else one line per test on
    stderr (``progress=False``: nothing). Returns the records, in plan order."""
    import threading
    from concurrent.futures import ThreadPoolExecutor
    out = None
    if report is not None:
        Path(report).parent.mkdir(parents=True, exist_ok=True)
        out = open(report, "a" if append else "w", encoding="utf-8")
    bar = None
    if progress:
        try:
            from tqdm import tqdm
            bar = tqdm(total=len(plan), unit="test", file=sys.stderr, dynamic_ncols=True)
        except ImportError:
            bar = None
    records: list[dict | None] = [None] * len(plan)
    lock = threading.Lock()

    def one(k: int) -> None:
        test, driver, params = plan[k]
        if bar is not None and jobs <= 1:
            bar.set_description(f"{test} [{driver}]")
        record = run_one(test, driver, params, grace)
        with lock:
            records[k] = record
            if out is not None:
                out.write(json.dumps(record, sort_keys=True) + "\n")
                out.flush()
            line = f"{record['outcome']:7s} {test} [{driver}] {record['duration']:.1f} s: {record['message']}"
            if bar is not None:
                bar.write(line)
                bar.update(1)
            elif progress:
                done = sum(r is not None for r in records)
                print(f"[{done}/{len(plan)}] {line}", file=sys.stderr, flush=True)

    try:
        shared = [k for k, (t, _, _) in enumerate(plan) if jobs <= 1 or t not in exclusive]
        alone = [k for k in range(len(plan)) if k not in shared]
        if jobs <= 1:
            for k in shared:
                one(k)
        else:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                list(pool.map(one, shared))
        for k in alone:
            one(k)
    finally:
        if bar is not None:
            bar.close()
        if out is not None:
            out.close()
    return [r for r in records if r is not None]


__all__ = ["run_one", "run_tests", "crash_site", "hang_sites", "SUCCESS", "FAILURE", "HANG", "CRASH"]
