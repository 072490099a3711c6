"""Run corpus test models through the reference executor (HAL path) and judge the results
with the suites' criteria (:func:`runtime.testing.criteria.judge`: element-wise NNAPI
tolerances, expected dimensions, the distribution check of RANDOM_MULTINOMIAL): a quick
check of the reference kernels.

Usage: ``python -m runtime.tools.refcheck [--corpus DIR] [--versions V1_0 V1_1] [--op CONV_2D] [-v]``
"""
from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

import numpy as np

from ..errors import HalError
from ..executor import execute
from ..hal.validate import validate_model, validate_request
from ..testing.criteria import judge
from ..testing.hal_convert import read_outputs, to_hal_model, to_hal_request
from ..testing.support import not_implemented_reason
from ..testing.test_model import iter_corpus

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "cts" / "corpus"


def check_model(tm) -> tuple[str, str]:
    """(outcome, detail) for one test model: outcome is pass, fail or skip."""
    model = to_hal_model(tm)
    reason = not_implemented_reason(model, signatures_too=not tm.expect_failure)
    if reason:
        return "skip", reason
    request = to_hal_request(tm)
    try:
        validate_model(model)
        validate_request(request, model)
        shapes = execute(model, request)
    except HalError as e:
        return ("pass", str(e)) if tm.expect_failure else ("fail", str(e))
    if tm.expect_failure:
        return "fail", "expected a failure, got success"
    outputs = read_outputs(tm, request, shapes)
    problems = judge(tm, [np.ascontiguousarray(o).tobytes() for o in outputs],
                     [s.dimensions for s in shapes])
    return ("fail", "; ".join(problems)) if problems else ("pass", "")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    p.add_argument("--versions", nargs="+", default=["V1_0", "V1_1"])
    p.add_argument("--op", nargs="*", default=[])
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    counts = collections.Counter()
    per_op = collections.defaultdict(collections.Counter)
    roots = [Path(args.corpus) / v for v in args.versions]
    for tm in iter_corpus([r for r in roots if r.exists()]):
        names = [t.name for t in tm.operation_types]
        if args.op and not set(args.op) & set(names):
            continue
        outcome, detail = check_model(tm)
        counts[outcome] += 1
        for n in names:
            per_op[n][outcome] += 1
        if outcome == "fail" or (args.verbose and outcome == "skip"):
            print(f"{outcome.upper()} {tm.test_id}: {detail[:400]}")
    for n in sorted(per_op):
        c = per_op[n]
        print(f"  {n:32s} pass {c['pass']:5d}  fail {c['fail']:4d}  skip {c['skip']:5d}")
    print(f"{counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped")
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
