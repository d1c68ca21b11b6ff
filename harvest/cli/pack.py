"""`harvest pack KERNEL`: its arguments, and where the packed module (and its record) went (harvest/pack.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harvest.cli.arguments import EXIT_TEXT, add_command

HELP = "one kernel module as a single file (harness inlined) for a bug report or a Triton issue"
DESCRIPTION = ("Write KERNEL (OUT/<graph>/<kernel>.py) as one self-contained file: the pieces of its "
               "extraction's harness.py it uses are inlined, so it imports only torch and triton, and its --check and "
               "--bench work as before. The run's record, when the module has one, is copied beside it "
               "(<name>.record.pt). The module is read as text, never imported.")
EPILOG = ("example:\n  harvest pack extracted/small_model/g0_forward/softmax_kernel.py -o softmax.py\n"
          "  TRITON_INTERPRET=1 python softmax.py --check\n\n" + EXIT_TEXT)


def add_parser(commands) -> None:
    pack = add_command(commands, "pack", HELP, DESCRIPTION, EPILOG)
    pack.add_argument("kernel", metavar="KERNEL", help="a kernel module written by `harvest extract`")
    pack.add_argument("-o", "--out", metavar="FILE", help="where to write it (default: <kernel>.packed.py in the current directory)")


def run(options: argparse.Namespace, script_args: list[str]) -> int:
    from harvest.pack import pack_command

    packed = pack_command(Path(options.kernel), Path(options.out) if options.out else None)
    print(f"packed {options.kernel} into {packed.module}" + (f" (its record: {packed.record})" if packed.record else " (no record: --check runs on made-up inputs)"))
    return 0
