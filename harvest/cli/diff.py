"""`harvest diff OLD NEW`: its arguments and gates; the markdown or JSON it prints (harvest/diff.py)."""

from __future__ import annotations

import argparse

from harvest.cli.arguments import add_command

HELP = "what changed in fusion between two extractions (or targets): kernels added/removed/split/merged"
DESCRIPTION = ("Compare OLD and NEW (extraction directories, or targets to extract first). Markdown by "
               "default, fit for a pull-request comment. With a gate option it exits non-zero when the gate trips.")
EPILOG = "exit codes: 0 ok; 8 when --max-kernels or --fail-on-unfuse trips; others as for extract"


def add_parser(commands) -> None:
    diff = add_command(commands, "diff", HELP, DESCRIPTION, EPILOG, keep_line_breaks=False)
    diff.add_argument("old", help="extraction directory or target")
    diff.add_argument("new", help="extraction directory or target")
    diff.add_argument("--json", action="store_true", help="machine-readable output")
    diff.add_argument("--max-kernels", type=int, default=None, metavar="N", help="gate: fail if NEW has more than N Triton kernels in total")
    diff.add_argument("--fail-on-unfuse", action="store_true", help="gate: fail if any op stopped fusing")


def run(options: argparse.Namespace, script_args: list[str]) -> int:
    from harvest.diff import diff_command

    text, code = diff_command(options.old, options.new, options.json, options.max_kernels, options.fail_on_unfuse)
    print(text, end="" if text.endswith("\n") else "\n")
    return code
