"""The `harvest` command: extract, twin, report, pack, ptx, diff, run, bench.

One module per command holds its parser (`add_parser`) and what it prints (`run`); arguments.py holds what every
command's parser shares. Errors print one line (`harvest: error: ...`) and exit with the code of their kind (see
EXIT CODES in --help); --debug shows the traceback.
"""

from __future__ import annotations

import argparse
import sys

from harvest.cli import bench, diff, extract, pack, ptx, report, run, twin
from harvest.cli.arguments import DEBUG_HELP, EXIT_TEXT, INTERNAL_ERROR
from harvest.cli.extract import check_hint  # noqa: F401 (tests/test_first_hour.py imports it from harvest.cli)
from harvest.errors import HarvestError, Interrupted, UsageError
from harvest.version import __version__

# The commands, in the order --help lists them.
COMMANDS = {"extract": extract, "twin": twin, "report": report, "pack": pack, "ptx": ptx, "diff": diff, "run": run, "bench": bench}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harvest",
        description="Harvest what torch.compile generated: one standalone, readable, self-checking module per "
        "Triton kernel, a fusion report, and diffs between runs.",
        epilog=EXIT_TEXT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"harvest {__version__}")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS.values():
        command.add_parser(commands)
    return parser


def split_script_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """Everything after the first `--` belongs to the target script, untouched."""
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1 :]
    return argv, []


def refuse_empty_paths(options: argparse.Namespace) -> None:
    """An empty path argument (an unset shell variable, say) would mean the current directory: refuse it."""
    for name in ("target", "out", "directory", "path", "old", "new", "extraction"):
        value = getattr(options, name, None)
        if isinstance(value, str) and not value.strip():
            raise UsageError(f"{name.upper()} is an empty string: give a file or a directory")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    own, script_args = split_script_args(argv)
    parser = build_parser()
    options = parser.parse_args(own)
    if options.command is None:
        parser.print_help()
        return 2
    try:
        refuse_empty_paths(options)
        return COMMANDS[options.command].run(options, script_args)
    except HarvestError as exc:
        if options.debug:  # the traceback, and still the documented exit code
            import traceback

            traceback.print_exc()
            return exc.exit_code
        first, _, rest = str(exc).partition("\n")
        print(f"harvest: error: {first}", file=sys.stderr)
        if rest:
            print(rest, file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:  # Ctrl-C outside a capture (which turns it into Interrupted, saying what was kept)
        print("harvest: error: interrupted (Ctrl-C)", file=sys.stderr)
        return Interrupted.exit_code
    except Exception as exc:  # a bug in harvest, not bad input: say so, keep the traceback for --debug
        if options.debug:
            raise
        print(f"harvest: internal error: {type(exc).__name__}: {exc} (a bug in harvest; rerun with --debug and report it)", file=sys.stderr)
        return INTERNAL_ERROR
