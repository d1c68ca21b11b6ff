"""`harvest twin`: its arguments, and a line per kernel kind and per reason a kernel has no twin."""

from __future__ import annotations

import argparse
from pathlib import Path

from harvest.cli.arguments import EXIT_TEXT, add_command, add_quiet
from harvest.progress import ProgressDisplay

HELP = "write a CUDA C++ twin of each kernel (load_inline), checked against the run's record"
DESCRIPTION = ("Translate the Triton kernel of each module PATH selects (an extraction, one graph directory, "
               "or one kernel module) into CUDA C++: OUT/<graph>/twin/<kernel>.cu and <kernel>_twin.py. A kernel outside "
               "the translated subset gets `no twin: <reason>` in manifest.json and report.md, never a twin that computes "
               "something else.")
EXAMPLES = """\
examples:
  harvest twin extracted/square_square                 a twin for every kernel of an extraction
  harvest twin extracted/small_model/g0_forward/softmax_kernel.py      one kernel
  python extracted/square_square/g0_inference/twin/square_square_kernel_twin.py --check   (GPU)
  python extracted/square_square/g0_inference/twin/square_square_kernel_twin.py --bench   twin vs Triton (GPU)
  python extracted/square_square/g0_inference/twin/square_square_kernel_twin.py --check --emulate
                                                       no GPU: the twin compiled with g++ against harvest's
                                                       CUDA emulation and checked on the CPU (slow; no timing)
  harvest ptx extracted/square_square                  then: the two PTX side by side

Pointwise kernels become one element per thread (16-byte vector loads and stores, 4 floats a thread, when a
kernel reads and writes at the element's own index and the pointers are aligned); reductions become one thread
block per row, its threads striding over the row (or 32 rows per block when the reduced dimension is the outer
one, so loads coalesce), partials combined with warp shuffles and shared memory
(sum, max/min with Inductor's NaN rules, prod, any, Welford, argmax/argmin, online softmax); scans take a row in
tiles of a warp's or a block's threads with a carry; cooperative reductions and split scans split each row over
the blocks the GPU holds at once, which meet at a grid barrier (a cooperative launch). Math follows
Triton: libdevice.* are CUDA's accurate functions, tl.exp/log/sin/cos the fast intrinsics; tl.rand/randn are
Philox like Triton's. The twin's kernel file needs only CUDA headers; its module builds it with load_inline
(ninja) into twin/build/<kernel>/, where main.cpp, cuda.cu and build.ninja stay to read.
"""

EPILOG = EXAMPLES + "\n" + EXIT_TEXT


def add_parser(commands) -> None:
    twin = add_command(commands, "twin", HELP, DESCRIPTION, EPILOG)
    twin.add_argument("path", metavar="PATH", help="an extraction directory, a graph directory in it, or a kernel module")
    twin.add_argument("--arch", default="sm_90", help="architecture `nvcc -ptx` checks each twin against (default sm_90)")
    twin.add_argument("--no-compile", action="store_true", help="do not run nvcc on the twins (by default each is compiled with `nvcc -ptx` when nvcc is found)")
    twin.add_argument("--force", action="store_true", help="replace twins you edited by hand (a .bak copy is kept)")
    add_quiet(twin)


def run(options: argparse.Namespace, script_args: list[str]) -> int:
    """`harvest twin`: a line per kernel, then the counts per kernel kind and the reasons for kernels left out."""
    from harvest.twin.command import summary, twin_command

    with ProgressDisplay.on_stderr("harvest twin", options.quiet) as progress:
        twins = twin_command(Path(options.path), force=options.force, compile_check=not options.no_compile, arch=options.arch, on_progress=progress)
    console, counts = progress.console, summary(twins)
    for kind, row in counts["kinds"].items():
        console.print(f"{kind}: {row['translated']} of {row['kernels']} translated")
    for reason, count in counts["reasons"].items():
        console.print(f"  [yellow]{count} x no twin: {reason}[/]")
    if twins.compiled_with and any(o.status == "ok" for o in twins.outcomes):
        console.print(f"every twin written compiles with {twins.compiled_with} -ptx -arch={options.arch}")
    for path in twins.writes.kept_edited:
        console.print(f"[yellow]kept your edited {twins.out_dir / path}[/] (--force replaces it, keeping a .bak)")
    console.print(f"twins: {twins.out_dir}/<graph>/twin/   run one: python <graph>/twin/<kernel>_twin.py --check (GPU; on the CPU: --check --emulate)")
    return 1 if any(o.status == "compile error" for o in twins.outcomes) else 0
