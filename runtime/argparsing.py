"""Command lines of every nncts program (the ``nncts`` CLI, the driver host, the fuzzer):
a bad one is one line on stderr and exit code 2."""
from __future__ import annotations

import argparse


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (``PROG: error: ...``,
    no usage text) and exit code 2; its subparsers are of this class too."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")

    def parse_with_libfuzzer_flags(self, argv=None):
        """``(args, rest)``: our options, and the libFuzzer flags (``-name=value``, one dash)
        and corpus directories to hand to atheris. An unknown ``--option`` is a usage error
        (libFuzzer has none), not a flag silently passed on."""
        args, rest = self.parse_known_args(argv)
        unknown = [a for a in rest if a.startswith("--")]
        if unknown:
            self.error(f"unrecognized arguments: {' '.join(unknown)} (libFuzzer flags take one dash: -runs=N)")
        return args, rest
