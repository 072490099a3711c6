"""Time from the call to MISSED_DEADLINE_* per execution path (sync, async, fenced, burst,
reusable), straight on a driver's HAL, for the contracts vts/test_device_loop_timeout.py
checks: the endless WHILE (AOSP ``while_infinite_loop``) under loop timeouts of 1 ms, 100 ms
and 2 s, under a 100 ms deadline (loop timeout at its 15 s maximum), and the 400-ADD
loop-free model under a 100 ms deadline. Prints a Markdown table of the median and maximum
seconds over ``--repeat`` runs; a cell where a run ended otherwise than with
MISSED_DEADLINE_TRANSIENT names the other statuses.

Usage: python benchmarks/deadline_timing.py [--driver sample] [--repeat 5]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runtime.drivers import load_driver  # noqa: E402
from runtime.testing.hal_convert import to_hal_model, to_hal_request  # noqa: E402
from runtime.testing.test_model import load_spec  # noqa: E402
from runtime.types import MeasureTiming  # noqa: E402
from vts.hal_harness import PATHS, execute, prepare  # noqa: E402
from vts.test_device_loop_timeout import (ENDLESS_SPEC, LONG_DEADLINE_NS, MAX_LOOP_TIMEOUT_NS,  # noqa: E402
                                          long_model)

#: (column, model, loop timeout ns, deadline ns from the call)
BOUNDS = (("loop 1 ms", "endless", 1_000_000, None), ("loop 100 ms", "endless", 100_000_000, None),
          ("loop 2 s", "endless", 2_000_000_000, None),
          ("deadline 100 ms, loop", "endless", MAX_LOOP_TIMEOUT_NS, 100_000_000),
          ("deadline 100 ms, 400 ADDs", "long", None, LONG_DEADLINE_NS))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--driver", default="sample")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    hal = load_driver(args.driver)
    endless = next(m for m in load_spec(ENDLESS_SPEC) if m.name == "while_infinite_loop")
    models = {name: (tm, prepare(hal, to_hal_model(tm)).value) for name, tm in (("endless", endless),
                                                                               ("long", long_model()))}
    print("| path | " + " | ".join(b[0] for b in BOUNDS) + " |")
    print("|---" * (len(BOUNDS) + 1) + "|")
    statuses = set()
    for path in PATHS:
        cells = []
        for _, name, loop_ns, deadline_ns in BOUNDS:
            tm, prepared = models[name]
            times, ended = [], set()
            for _ in range(args.repeat):
                start = time.monotonic()
                run = execute(path, prepared, to_hal_request(tm), MeasureTiming.NO,
                              None if deadline_ns is None else time.monotonic_ns() + deadline_ns, 30.0,
                              loop_timeout_ns=loop_ns)
                times.append(time.monotonic() - start)
                ended.add(run.status.name)
            statuses |= ended
            other = ended - {"MISSED_DEADLINE_TRANSIENT"}
            cells.append(f"{statistics.median(times):.3f} / {max(times):.3f}" + (f" ({', '.join(sorted(other))})"
                                                                                  if other else ""))
        print(f"| {path} | " + " | ".join(cells) + " |")
    print(f"\nmedian / max seconds over {args.repeat} runs; statuses: {', '.join(sorted(statuses))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
