"""`harvest run TARGET --with EXTRACTION`: its arguments, and the verdict and timings printed after it."""

from __future__ import annotations

import argparse
from pathlib import Path

from harvest.cli.arguments import EXIT_TEXT, add_command, add_quiet
from harvest.progress import ProgressDisplay

HELP = "re-run the target with edited kernel modules in place of Inductor's, and check its results end to end"
DESCRIPTION = ("Run TARGET under torch.compile twice: with Inductor's kernels, then with the edited modules of "
               "EXTRACTION (its extraction) in their place; compare every graph output of the two runs.")
EXAMPLES = """\
examples:
  harvest run examples/square_square.py --with extracted/square_square     every edited module in place of its kernel
  harvest run train.py --with out/train -k softmax_kernel -- --steps 1     one module, edited or not; script args after --
  harvest run train.py --with out/train --rtol 1e-3 --atol 1e-5            tolerances of your own (default: torch.testing's)

Edit a module of the extraction (its kernel, or CONFIG), then run the target with it: the target runs twice, with
Inductor's kernels and with the edited ones, fresh caches, the same seeds; every graph's outputs (a backward's are
the gradients) are compared. The first output that differs is named with the first kernel whose recorded outputs
differ. Results: EXTRACTION/runs/<n>/run.md and run.json, listed in report.md. Exit 13 when the
results differ, 12 when an edit cannot replace its kernel (no edit, Inductor now writes another kernel there, a
parameter that no longer maps, an edit that does not compile). On a GPU the run with the edits then times the
compiled step (every graph once, on its first call's inputs) with Inductor's kernels and with the edited ones,
interleaved in one process: the step with CUDA events, each replaced kernel's device time in its graph, and each
swapped launch's host time, in one before/after table. On the CPU path: correctness only. Only an extraction this
machine made by running the target is run (--trust-artifact for one from elsewhere).
"""

EPILOG = EXAMPLES + "\n" + EXIT_TEXT


def add_parser(commands) -> None:
    run = add_command(commands, "run", HELP, DESCRIPTION, EPILOG)
    run.add_argument("target", help="the script the extraction was made from")
    run.add_argument("script_args", nargs="*", metavar="-- ARGS", help="arguments passed to the script (after --)")
    run.add_argument("--with", dest="extraction", required=True, metavar="EXTRACTION", help="the extraction whose edited modules to run")
    run.add_argument("-k", "--kernel", dest="kernels", action="append", default=[], metavar="NAME", help="run this module (name, path or Inductor's kernel name; a glob), edited or not; repeat for more (default: every edited module)")
    run.add_argument("--rtol", type=float, default=None, help="relative tolerance of the comparison (with --atol)")
    run.add_argument("--atol", type=float, default=None, help="absolute tolerance of the comparison (with --rtol)")
    run.add_argument("--timeout", type=float, default=None, metavar="SECONDS", help="stop each run of the target that runs longer")
    run.add_argument("--trust-artifact", action="store_true", help="run with the modules of an extraction this machine did not make by running the target (one from elsewhere): imports its modules, so only for files you trust")
    run.add_argument("--no-timing", action="store_true", help="on a GPU, compare results only: no A/B timing of the kernels and the step")
    add_quiet(run)


def run(options: argparse.Namespace, script_args: list[str]) -> int:
    """`harvest run --with`: progress on stderr, then the counts of outputs compared, the verdict and the timings."""
    from harvest.run.command import raise_if_differ, run_with, timing_markdown

    with ProgressDisplay.on_stderr("harvest", options.quiet) as progress:
        result = run_with(Path(options.target), Path(options.extraction), names=options.kernels, rtol=options.rtol,
                          atol=options.atol, args=tuple(options.script_args + script_args), timeout=options.timeout,
                          timing=not options.no_timing, trust=options.trust_artifact, on_progress=progress)
    counts = {v: sum(1 for c in result.checks if c.verdict == v) for v in ("bit for bit", "within tolerance", "differs")}
    print(f"{len(result.checks)} graph outputs compared: " + ", ".join(f"{n} {v}" for v, n in counts.items()))
    print(("results equal" if result.equal else "results DIFFER") + f"; report: {result.directory / 'run.md'}")
    if result.device == "cpu":
        print("CPU path: correctness only (the Triton interpreter's times are not GPU times)")
    else:
        print("\n".join(timing_markdown(result)))
    raise_if_differ(result)
    return 0
