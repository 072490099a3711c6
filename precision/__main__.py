"""``python -m precision``: replay chosen inputs of one precision sweep on a driver, the
command the precision page gives for a sweep's worst inputs::

    python -m precision --driver NAME --case PRECISION/EXP/TENSOR_FLOAT16/exhaustive --input 0x4900 --input 10.5
    python -m precision --list [--mode quick]          # the case ids

Each ``--input`` is a bit pattern (``0x4900``: float16 10.0) or a number (a float for a float
input, the stored integer for a quantized one; a negative one in exponent form as
``--input=-1e-10``); without ``--input`` the whole sweep runs. The
model, truth and judgement are the suite's (:mod:`precision.measure`); the table gives per
element the input, its bits, the driver's output, the float64 truth, the error (ULP, quanta
or units) and the verdict (``ok``, ``FAIL``: beyond AOSP's tolerance, ``over budget``,
``undefined``: not judged). Exit 0 when no element fails, 1 when one does, 2 (one line) for
bad options: an unknown case, an input the type cannot hold, a driver that does not load.
The driver options are the suites' (``--driver``, ``--driver-process``, ``--driver-endpoint``
with its TLS files, ``--driver-timeout``)."""
from __future__ import annotations

import sys

import numpy as np

from harness.driver import ENDPOINT_OPTIONS, add_driver_options, driver_spec
from harness.runner import Failure
from runtime.argparsing import OneLineParser
from runtime.errors import NnapiError
from runtime.loader import DriverNotFound, load_driver
from runtime.nnapi import Device
from runtime.remote.access import endpoint_tls
from runtime.remote.client import set_call_timeout, set_endpoint_tls
from runtime.types import operand_dtype

from .cases import MODES, SweepCase, cases, sweep_inputs
from .measure import SweepSkip, bits_text, judge, run_on_device, sweep_model, truth_of

PROG = "python -m precision"
#: Most inputs one command line may give.
MAX_INPUTS = 4096


class _Options:
    """The parsed arguments as :func:`harness.driver.driver_spec` reads a pytest config."""

    def __init__(self, args):
        self.args = args

    def getoption(self, name, default=None):
        return getattr(self.args, name, default)


def parse_input(text: str, case: SweepCase) -> np.generic:
    """One ``--input`` of ``case``'s input type: ``0x...`` a bit pattern of the type's width,
    else a number; ValueError (naming the input) when the type cannot hold it."""
    dtype = np.dtype(operand_dtype(case.in_type))
    try:
        if text.lower().startswith("0x"):
            bits = int(text, 16)
            if bits >= 1 << (8 * dtype.itemsize) or dtype.kind != "f":
                raise ValueError("not a bit pattern of the type")
            return np.array([bits], np.uint16 if dtype.itemsize == 2 else np.uint32).view(dtype)[0]
        if dtype.kind == "f":
            return dtype.type(float(text))
        value = int(text)
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise ValueError(f"outside [{info.min}, {info.max}]")
        return dtype.type(value)
    except (ValueError, OverflowError) as e:
        raise ValueError(f"--input {text!r}: not a {case.in_type.name} value ({e})") from None


def _row(cells) -> str:
    return "  ".join(f"{c:>14}" if k != 5 else f"{c:<12}" for k, c in enumerate(cells))


def replay(args) -> int:
    """Run the case on the driver and print the table (module docstring); the exit code."""
    found = {c.id: c for c in cases(args.mode)}
    case = found.get(args.case)
    if case is None:
        raise ValueError(f"--case {args.case!r}: no such sweep in mode {args.mode} ({PROG} --list names them)")
    if len(args.input) > MAX_INPUTS:
        raise ValueError(f"--input: at most {MAX_INPUTS}, got {len(args.input)}")
    dtype = operand_dtype(case.in_type)
    inputs = np.array([parse_input(t, case) for t in args.input], dtype) if args.input \
        else sweep_inputs(case, args.mode)
    try:
        set_endpoint_tls(endpoint_tls(*(getattr(args, o, None) for o in ENDPOINT_OPTIONS)))
        if args.driver_timeout:
            set_call_timeout(args.driver_timeout)
        device = Device(load_driver(driver_spec(_Options(args))))
    except (DriverNotFound, TypeError, ValueError) as e:
        raise ValueError(f"--driver {args.driver}: {e}") from None
    tm = sweep_model(case, inputs)
    truth, budget = truth_of(case, tm)
    try:
        actual = run_on_device(tm, device)
    except SweepSkip as e:
        print(f"{case.id}: not run: {e}")
        return 0
    except (NnapiError, Failure) as e:
        print(f"{case.id}: the driver failed: {e}")
        return 1
    j = judge(case, tm, inputs, actual, truth, budget)
    print(f"{case.id} on {device.name}: error in {j.unit}; tolerance atol {j.tolerance.atol:g}, rtol "
          f"{j.tolerance.rtol:g}; budget {'none' if j.budget is None else f'{j.budget.ulps:g} ULP'}")
    print(_row(["input", "bits", "actual", "truth", "error", "verdict"]))
    for i in range(len(inputs)):
        verdict = "undefined" if j.undefined[i] else "FAIL" if j.failing[i] else "over budget" if j.over[i] else "ok"
        print(_row([repr(inputs[i].item()), bits_text(inputs[i]), repr(actual[i].item()),
                    f"{float(truth[i]):.9g}" if truth.dtype.kind == "f" else str(int(truth[i])),
                    f"{j.error[i]:.4g}", verdict]))
    failing = int(j.failing.sum())
    print(f"{failing} of {len(inputs)} element(s) beyond AOSP's tolerance, {int(j.over.sum())} over the budget, "
          f"{int(j.undefined.sum())} not judged")
    return 1 if failing else 0


def main(argv=None) -> int:
    p = OneLineParser(prog=PROG, description="Replay inputs of one precision sweep on a driver: a table of "
                                             "output, float64 truth, error and verdict per element.")
    add_driver_options(p.add_argument)
    p.add_argument("--case", default=None, help="the sweep's id (PRECISION/<operation>/<types>/<sweep>[-<pair>])")
    p.add_argument("--mode", default="full", choices=MODES, help="the sweep mode the case belongs to (default full)")
    p.add_argument("--input", action="append", default=[], metavar="VALUE",
                   help="an input (repeatable): a bit pattern 0x... or a number; default: the whole sweep")
    p.add_argument("--list", action="store_true", help="print the case ids of --mode and exit")
    args = p.parse_args(argv)
    if args.list:
        print("\n".join(c.id for c in cases(args.mode)))
        return 0
    if not args.case:
        p.error("--case is required (or --list)")
    try:
        return replay(args)
    except ValueError as e:
        p.error(str(e))


if __name__ == "__main__":
    sys.exit(main())
