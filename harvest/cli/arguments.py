"""What every command's parser shares: the exit codes line, --debug after the command, -q."""

from __future__ import annotations

import argparse

from harvest.errors import exit_codes_text

INTERNAL_ERROR = 70  # EX_SOFTWARE
EXIT_TEXT = f"exit codes: 0 ok, {exit_codes_text()}, {INTERNAL_ERROR} internal error"
DEBUG_HELP = "show Python tracebacks for errors"


def add_command(commands, name: str, help: str, description: str, epilog: str,
                keep_line_breaks: bool = True) -> argparse.ArgumentParser:
    """A command's parser in `commands` (what the top parser's add_subparsers() returned): --debug accepted after
    the command too (`harvest extract x.py --debug`), and its description and epilog printed with the line breaks
    they were written with (argparse's own wrapping with keep_line_breaks=False)."""
    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP)
    formatter = argparse.RawDescriptionHelpFormatter if keep_line_breaks else argparse.HelpFormatter
    return commands.add_parser(name, parents=[debug], help=help, description=description, epilog=epilog,
                               formatter_class=formatter)


def add_quiet(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
