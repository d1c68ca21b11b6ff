"""`harvest report DIR`: its arguments, and the paths of the reports written again (harvest/report_html.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harvest.cli.arguments import EXIT_TEXT, add_command

HELP = "write report.md and report.html of an extraction again (no run)"
DESCRIPTION = ("Write DIR/report.md and DIR/report.html again from DIR/manifest.json and what DIR holds (the "
               "capture record, bench results, the modules): nothing is run, and no other file is written but manifest.json's "
               "record of the reports' hashes. Use it after upgrading harvest, after `harvest bench`, or to get back a report "
               "you edited. Prints the reports' paths.")
EXAMPLES = """\
examples:
  harvest report extracted/small_model             write report.md and report.html again
  harvest report extracted/small_model --html      report.html only (open it in a browser: it works offline)
  git diff extracted/small_model/report.md         what the re-render changed

report.md shows, per graph: the ATen ops before fusion against the Triton kernels after, the ops that did not
fuse and where they went, the boundaries between kernels, a row per kernel (its ops, loads / stores / reductions,
the user source lines, what the run recorded, its module) and a mermaid fusion graph (GitHub renders it); then
"What to tune first", a CUDA twins section once `harvest twin` ran and a PTX section once `harvest ptx` ran.
report.html holds the same and more, self-contained (no network): the fusion graphs drawn, a kernel table to
filter and search, and per kernel its source lines, the FX ops it fused and its renamed code side by side.

What to tune first ranks every kernel by its share of the step: measured after `harvest bench` on a GPU (device
time in its graph over the step's time, GB/s against the copy bandwidth, the step time saved at that bound), else
an estimate from the bytes each launch moves times the launches the run recorded, labelled as such.
The same inputs give the same bytes: no timestamps, manifest order throughout.
"""
EXIT_REPORT = "for report: 2 when DIR holds no manifest.json, 6 when its manifest.json is not one harvest wrote, 7 when a report cannot be written"
EPILOG = EXAMPLES + "\n" + EXIT_TEXT + "\n" + EXIT_REPORT


def add_parser(commands) -> None:
    report = add_command(commands, "report", HELP, DESCRIPTION, EPILOG)
    report.add_argument("directory", metavar="DIR", help="an extraction directory (holds manifest.json)")
    only = report.add_mutually_exclusive_group()
    only.add_argument("--html", action="store_true", help="write report.html only")
    only.add_argument("--md", action="store_true", help="write report.md only")


def run(options: argparse.Namespace, script_args: list[str]) -> int:
    from harvest.report_html import report_command

    formats = ("report.html",) if options.html else ("report.md",) if options.md else ("report.md", "report.html")
    for path in report_command(Path(options.directory), formats):
        print(path)
    return 0
