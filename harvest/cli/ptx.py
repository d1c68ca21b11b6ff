"""`harvest ptx`: its arguments, a summary table of the kernels compiled, and the first kernel error's exit code."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harvest.cli.arguments import EXIT_TEXT, add_command, add_quiet
from harvest.progress import ProgressDisplay

HELP = "compile a kernel (and its CUDA twin) to PTX offline and compare: diff, instruction mix, registers"
DESCRIPTION = ("Compile the Triton kernel of KERNEL (OUT/<graph>/<kernel>.py), or of every kernel in OUT or "
               "OUT/<graph>, to PTX for --arch with no GPU, and its CUDA twin with nvcc when there is one; write the "
               "normalised PTX, their diff, SASS and the tables under OUT/<graph>/ptx/.")
EXAMPLES = """\
examples:
  harvest ptx extracted/square_square/g0_inference/square_square_kernel.py    one kernel, for sm_90
  harvest ptx extracted/small_model                    every kernel of an extraction (a line per kernel)
  harvest ptx extracted/small_model/g0_forward --arch sm_100    one graph's kernels, for Blackwell
  diff -u extracted/square_square/g0_inference/ptx/square_square_kernel.{triton,twin}.norm.ptx

no GPU needed: the kernel between the module's `# >>> kernel` markers is compiled by Triton for the named
architecture (triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32))), specialized as the module's
recorded launch would be (CONFIG's block sizes and warps, ARGUMENTS' dtypes, alignment and values). When
OUT/<graph>/twin/<kernel>.cu exists (`harvest twin` writes it), `nvcc -ptx` compiles it for the same arch.
Both PTX texts are normalised (no comments, .loc or debug sections; registers and labels renumbered; one
header) and diffed; ptxas -v gives registers and spills, nvdisasm the SASS. Written beside the kernel, in
OUT/<graph>/ptx/: <kernel>.triton.ptx, .twin.ptx, their .norm.ptx, <kernel>.ptx.diff, .sass, and
<kernel>.ptx.md (the instruction-mix and register tables, and what differs most between Triton and the twin:
`global loads: Triton 16x v4, twin 48x v1`); the manifest keeps a summary and report.md gets a
PTX section. The module is read, not imported: only a kernel region holding exactly one @triton.jit def in
Triton's own vocabulary is run, and it is refused otherwise. nvcc is looked for on PATH, then in $CUDA_HOME/bin,
then in pip's nvidia/cu13/bin.
"""

EPILOG = EXAMPLES + "\n" + EXIT_TEXT


def add_parser(commands) -> None:
    ptx = add_command(commands, "ptx", HELP, DESCRIPTION, EPILOG)
    ptx.add_argument("target", metavar="KERNEL|OUT|OUT/GRAPH", help="a kernel module written by `harvest extract`, an extraction directory, or one graph's directory in it")
    ptx.add_argument("--arch", default="sm_90", help="GPU architecture to compile for: sm_80, sm_90 (default), sm_100, ...")
    add_quiet(ptx)


def run(options: argparse.Namespace, script_args: list[str]) -> int:
    """`harvest ptx`: a progress line per kernel, a summary table, and the first kernel error's exit code."""
    from rich.console import Console

    from harvest.ptx import ptx_command
    from harvest.ptx.tables import SUMMARY_COLUMNS, summary_rows, summary_title
    from harvest.text_output import plural, print_table

    with ProgressDisplay.on_stderr("harvest ptx", options.quiet) as progress:
        compiled = ptx_command(Path(options.target), options.arch, on_progress=progress)
    console = progress.console
    if compiled.results:  # a rich table where it fits, else plain text: a kernel's name is never cut
        print_table(Console(highlight=False, soft_wrap=True), summary_title(compiled.arch), SUMMARY_COLUMNS, summary_rows(compiled.results))
        tables = sorted({str(p.parent) for p in compiled.written if p.name.endswith(".ptx.md")})
        console.print(f"tables and diffs in: {', '.join(tables)}")
    for note in compiled.notes:
        console.print(f"[yellow]{note}[/]")
    if compiled.errors:
        label, first = compiled.errors[0]
        if len(compiled.errors) == 1 and not compiled.results:
            raise first
        console.print(f"[red]{len(compiled.errors)} of {plural(compiled.kernels, 'kernel')} failed[/]")
        print(f"harvest: error: {label}: {str(first).partition(chr(10))[0]}", file=sys.stderr)
        return first.exit_code
    return 0
