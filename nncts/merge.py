"""(being written) nncts subcommands."""


def add_parsers(sub) -> None:
    """Add this module's subcommands to the nncts parser's subparsers sub (each with
    set_defaults(handler=...); the handler takes (args, parser) and returns the exit code)."""
