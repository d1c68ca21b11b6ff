"""`harvest bench`: its arguments, the tables printed after it, or the ncu command lines."""

from __future__ import annotations

import argparse

from harvest.cli.arguments import EXIT_TEXT, add_command, add_quiet
from harvest.progress import ProgressDisplay

HELP = "time extracted kernels against Inductor's own (in its graph and alone), eager and the CUDA twin"
DESCRIPTION = ("Time every kernel PATH selects (an extraction, one of its graph directories, or one kernel "
               "module) on the run's recorded inputs: the extracted kernel, Inductor's kernel inside its graph and "
               "launched alone, the eager reference, and the CUDA twin when there is one.")
EXAMPLES = """\
examples:
  harvest bench extracted/square_square                  every kernel: extracted, Inductor in its graph and alone, eager
  harvest bench extracted/gpt2/g1_backward -k '*layer_norm*'     one graph's kernels matching a pattern
  harvest bench extracted/square_square --sweep          BLOCK sizes x num_warps (x num_stages): table + sweep.png
  harvest bench extracted/pytorch_square --profile       profiler op tables (eager vs extracted) + trace.json
  harvest bench extracted/square_square/g0_inference/square_square_kernel.py --ncu       print the ncu command
  harvest bench extracted/small_model --sweep --check-only       no GPU: check every swept config on the CPU

Timing needs a CUDA device: CUDA events after a warm-up, the L2 cache flushed before each repetition, median and
p20/p80; compile (the first call) reported apart; GB/s against a device copy timed in the same run. Inductor's
own module (raw/<graph>/output_code.py) runs in a child process, and only for an extraction this machine made by
running a target on CUDA (remembered outside the extraction, never read from its manifest), or with
--trust-artifact. Results: <extraction>/bench/bench.csv and bench.json (and the sweep and
profile files); a module's own `python k.py --bench --json FILE` times with the same code.
"""

EPILOG = EXAMPLES + "\n" + EXIT_TEXT


def add_parser(commands) -> None:
    bench = add_command(commands, "bench", HELP, DESCRIPTION, EPILOG)
    bench.add_argument("path", metavar="PATH", help="an extraction directory, a graph directory in it, or a kernel module")
    bench.add_argument("-k", "--kernel", metavar="PATTERN", help="only kernels whose name (module's or Inductor's) matches this glob")
    bench.add_argument("--sweep", action="store_true", help="also time every BLOCK size x num_warps (x num_stages) config, each checked against the record first")
    bench.add_argument("--sweep-max", type=int, default=64, metavar="N", help="configs per kernel at most: the N nearest to Inductor's choice (default 64)")
    bench.add_argument("--check-only", action="store_true", help="with --sweep: only check each config against the record (runs on the CPU under TRITON_INTERPRET=1; nothing is timed)")
    bench.add_argument("--profile", action="store_true", help="the torch profiler's op tables (eager vs extracted) and a Chrome trace (trace.json)")
    bench.add_argument("--ncu", nargs="?", const="print", choices=("print", "run"), help="print the Nsight Compute command for each kernel instead of timing; `--ncu run` runs it (ncu on PATH) and saves <module>.ncu-rep")
    bench.add_argument("--trust-artifact", "--run-artifact", dest="run_artifact", action="store_true", help="run the output_code.py of an extraction this machine did not make (an artifact's, or one from elsewhere) to time Inductor's kernels in their graph: executes the extraction's code, so only for files you trust")
    bench.add_argument("-o", "--out", metavar="DIR", help="where the CSV/JSON/PNG go (default: <extraction>/bench)")
    add_quiet(bench)


def run(options: argparse.Namespace, script_args: list[str]) -> int:
    """`harvest bench`: progress on stderr, the tables on stdout (or the ncu command lines)."""
    from rich.console import Console

    from harvest.bench.command import bench
    from harvest.bench.ncu import ncu
    from harvest.bench.output import print_result
    from harvest.bench.plan import select

    with ProgressDisplay.on_stderr("harvest bench", options.quiet) as progress:
        if options.ncu:
            for line in ncu(select(options.path, options.kernel), options.ncu == "run", progress):
                print(line)
            return 0
        result = bench(options.path, pattern=options.kernel, sweep=options.sweep, sweep_max=options.sweep_max,
                       profile=options.profile, run_artifact=options.run_artifact, check_only=options.check_only,
                       out_dir=options.out, on_progress=progress)
    print_result(Console(highlight=False, soft_wrap=True), result)
    failed = [row for rows in result.sweeps.values() for row in rows if row.check != "ok"]
    if options.check_only:
        checked = sum(len(rows) for rows in result.sweeps.values())
        print(f"swept configs that match the record: {checked - len(failed)} of {checked}")
        return 1 if failed or not checked else 0
    return 0
