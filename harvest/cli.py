"""The `harvest` command: extract, report, diff, bench.

Errors print one line (`harvest: error: ...`) and exit with the code of their kind (see EXIT CODES in --help);
--debug shows the traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harvest import __version__
from harvest.errors import HarvestError, Interrupted, UsageError, exit_codes_text
from harvest.progress import ProgressDisplay

EPILOG_EXTRACT = """\
examples:
  harvest extract examples/square_square.py             run the script, extract its kernels
  harvest extract train.py -o out/train -- --steps 3    arguments after -- go to the script
  harvest extract debug_dir/ | trace.log | output_code.py   read an artifact, no run
  harvest extract extracted/square_square               replay an extraction from its raw/ (no run)
  harvest extract big_train.py --record layouts         record launch layouts only, no tensor data
  harvest extract output_code.py --run-artifact         run a trusted artifact to record its real launches
  harvest extract --nproc-per-node 2 train_ddp.py       a torchrun job: every rank captured (raw/rank<r>/)
  harvest extract -- torchrun --nnodes 1 --nproc-per-node 2 train_ddp.py --steps 3    torchrun's own spelling
  TRITON_INTERPRET=1 python extracted/square_square/g0_inference/square_square_kernel.py --check

without a GPU, the target runs on Inductor's CPU Triton backend: the same Triton source, compiled for an
offline GPU target (--target-sm), executed by the Triton interpreter. Every kernel launch is recorded while
the target runs; each kernel's first launch keeps its data (raw/<graph>/records/), so a module's --check runs
the kernel on the run's own inputs and compares what it writes with what Inductor's kernel wrote (bit for bit
on the device it was recorded on). Output is deterministic: the same
capture gives byte-identical files (on a GPU, Inductor's autotuner may pick another config from one run to
the next; a replay of raw/ never changes). A kernel module you edited is never overwritten (see --force).
"""

EPILOG_PTX = """\
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

EPILOG_TWIN = """\
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

INTERNAL_ERROR = 70  # EX_SOFTWARE
EXIT_TEXT = f"exit codes: 0 ok, {exit_codes_text()}, {INTERNAL_ERROR} internal error"


EPILOG_RUN = """\
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

EPILOG_BENCH = """\
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


EPILOG_REPORT = """\
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harvest",
        description="Harvest what torch.compile generated: one standalone, readable, self-checking module per "
        "Triton kernel, a fusion report, and diffs between runs.",
        epilog=EXIT_TEXT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"harvest {__version__}")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks for errors")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    # --debug is accepted after the command too (`harvest extract x.py --debug`)
    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show Python tracebacks for errors")

    extract = commands.add_parser(
        "extract",
        parents=[debug],
        help="run a script under torch.compile (or read an artifact) and extract every Triton kernel",
        description="Capture every Inductor graph of TARGET and write, under OUT: raw/<graph>/output_code.py "
        "(the untouched capture, written first), <graph>/<kernel>.py (standalone: kernel, launch(), "
        "make_inputs(), reference(), --check), manifest.json and report.md.",
        epilog=EPILOG_EXTRACT + "\n" + EXIT_TEXT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    extract.add_argument("target", nargs="?", help="a script that calls torch.compile, an output_code.py, a TORCH_COMPILE_DEBUG dir, a TORCH_TRACE dir/log, or an earlier extraction; left out when the command after -- is torchrun's")
    extract.add_argument("script_args", nargs="*", metavar="-- ARGS", help="arguments passed to the script (after --)")
    extract.add_argument("-o", "--out", help="extraction directory (default: extracted/<target name>)")
    extract.add_argument("--timeout", type=float, default=None, metavar="SECONDS", help="stop a target that runs longer (default: no limit)")
    extract.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto", help="auto: CUDA when torch sees a GPU, else the CPU Triton path")
    extract.add_argument("--target-sm", type=int, default=90, metavar="SM", help="GPU target Inductor generates code for on the CPU path (default 90: Hopper)")
    extract.add_argument("--names", choices=("readable", "inductor"), default="readable", help="rename Inductor's tmpN/in_ptrN/XBLOCK names (default) or keep them")
    extract.add_argument("--force", action="store_true", help="replace kernel modules you edited by hand (a .bak copy is kept), or OUT's extraction of another target")
    extract.add_argument("--record", choices=("data", "layouts"), default="data", help="data (default): save each kernel's first launch (inputs before, outputs after) under raw/ for --check and benchmarks; layouts: record layouts and scalar values only")
    extract.add_argument("--record-cap", type=float, default=1024, metavar="MIB", help="largest launch whose data is saved, before+after (default 1024 MiB); bigger ones keep layouts and a checksum")
    extract.add_argument("--record-total-cap", type=float, default=4096, metavar="MIB", help="data saved per extraction at most (default 4096 MiB)")
    extract.add_argument("--run-artifact", action="store_true", help="run an artifact's own call(get_args()) (random inputs, seed 0) under the launch recorder, so every intermediate buffer gets its real layout; executes the artifact's code, so only for files you trust (default: an artifact is only read)")
    extract.add_argument("--nproc-per-node", type=int, default=None, metavar="N", help="run the script as a torchrun job of N ranks on this machine (torchrun --standalone): every rank is captured into raw/rank<r>/; a kernel every rank compiled identically is written once, the others per rank (OUT/g<i>_<role>_rank<r>/)")
    extract.add_argument("-q", "--quiet", action="store_true", help="no progress lines")

    twin = commands.add_parser(
        "twin",
        parents=[debug],
        help="write a CUDA C++ twin of each kernel (load_inline), checked against the run's record",
        description="Translate the Triton kernel of each module PATH selects (an extraction, one graph directory, "
        "or one kernel module) into CUDA C++: OUT/<graph>/twin/<kernel>.cu and <kernel>_twin.py. A kernel outside "
        "the translated subset gets `no twin: <reason>` in manifest.json and report.md, never a twin that computes "
        "something else.",
        epilog=EPILOG_TWIN + "\n" + EXIT_TEXT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    twin.add_argument("path", metavar="PATH", help="an extraction directory, a graph directory in it, or a kernel module")
    twin.add_argument("--arch", default="sm_90", help="architecture `nvcc -ptx` checks each twin against (default sm_90)")
    twin.add_argument("--no-compile", action="store_true", help="do not run nvcc on the twins (by default each is compiled with `nvcc -ptx` when nvcc is found)")
    twin.add_argument("--force", action="store_true", help="replace twins you edited by hand (a .bak copy is kept)")
    twin.add_argument("-q", "--quiet", action="store_true", help="no progress lines")

    report = commands.add_parser(
        "report",
        parents=[debug],
        help="write report.md and report.html of an extraction again (no run)",
        description="Write DIR/report.md and DIR/report.html again from DIR/manifest.json and what DIR holds (the "
        "capture record, bench results, the modules): nothing is run, and no other file is written but manifest.json's "
        "record of the reports' hashes. Use it after upgrading harvest, after `harvest bench`, or to get back a report "
        "you edited. Prints the reports' paths.",
        epilog=EPILOG_REPORT + "\n" + EXIT_TEXT + "\n" + EXIT_REPORT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    report.add_argument("directory", metavar="DIR", help="an extraction directory (holds manifest.json)")
    only = report.add_mutually_exclusive_group()
    only.add_argument("--html", action="store_true", help="write report.html only")
    only.add_argument("--md", action="store_true", help="write report.md only")

    pack = commands.add_parser(
        "pack",
        parents=[debug],
        help="one kernel module as a single file (harness inlined) for a bug report or a Triton issue",
        description="Write KERNEL (OUT/<graph>/<kernel>.py) as one self-contained file: the pieces of its "
        "extraction's harness.py it uses are inlined, so it imports only torch and triton, and its --check and "
        "--bench work as before. The run's record, when the module has one, is copied beside it "
        "(<name>.record.pt). The module is read as text, never imported.",
        epilog="example:\n  harvest pack extracted/small_model/g0_forward/softmax_kernel.py -o softmax.py\n"
        "  TRITON_INTERPRET=1 python softmax.py --check\n\n" + EXIT_TEXT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    pack.add_argument("kernel", metavar="KERNEL", help="a kernel module written by `harvest extract`")
    pack.add_argument("-o", "--out", metavar="FILE", help="where to write it (default: <kernel>.packed.py in the current directory)")

    ptx = commands.add_parser(
        "ptx",
        parents=[debug],
        help="compile a kernel (and its CUDA twin) to PTX offline and compare: diff, instruction mix, registers",
        description="Compile the Triton kernel of KERNEL (OUT/<graph>/<kernel>.py), or of every kernel in OUT or "
        "OUT/<graph>, to PTX for --arch with no GPU, and its CUDA twin with nvcc when there is one; write the "
        "normalised PTX, their diff, SASS and the tables under OUT/<graph>/ptx/.",
        epilog=EPILOG_PTX + "\n" + EXIT_TEXT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ptx.add_argument("target", metavar="KERNEL|OUT|OUT/GRAPH", help="a kernel module written by `harvest extract`, an extraction directory, or one graph's directory in it")
    ptx.add_argument("--arch", default="sm_90", help="GPU architecture to compile for: sm_80, sm_90 (default), sm_100, ...")
    ptx.add_argument("-q", "--quiet", action="store_true", help="no progress lines")

    diff = commands.add_parser(
        "diff",
        parents=[debug],
        help="what changed in fusion between two extractions (or targets): kernels added/removed/split/merged",
        description="Compare OLD and NEW (extraction directories, or targets to extract first). Markdown by "
        "default, fit for a pull-request comment. With a gate option it exits non-zero when the gate trips.",
        epilog="exit codes: 0 ok; 8 when --max-kernels or --fail-on-unfuse trips; others as for extract",
    )
    diff.add_argument("old", help="extraction directory or target")
    diff.add_argument("new", help="extraction directory or target")
    diff.add_argument("--json", action="store_true", help="machine-readable output")
    diff.add_argument("--max-kernels", type=int, default=None, metavar="N", help="gate: fail if NEW has more than N Triton kernels in total")
    diff.add_argument("--fail-on-unfuse", action="store_true", help="gate: fail if any op stopped fusing")
    run = commands.add_parser(
        "run",
        parents=[debug],
        help="re-run the target with edited kernel modules in place of Inductor's, and check its results end to end",
        description="Run TARGET under torch.compile twice: with Inductor's kernels, then with the edited modules of "
        "EXTRACTION (its extraction) in their place; compare every graph output of the two runs.",
        epilog=EPILOG_RUN + "\n" + EXIT_TEXT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("target", help="the script the extraction was made from")
    run.add_argument("script_args", nargs="*", metavar="-- ARGS", help="arguments passed to the script (after --)")
    run.add_argument("--with", dest="extraction", required=True, metavar="EXTRACTION", help="the extraction whose edited modules to run")
    run.add_argument("-k", "--kernel", dest="kernels", action="append", default=[], metavar="NAME", help="run this module (name, path or Inductor's kernel name; a glob), edited or not; repeat for more (default: every edited module)")
    run.add_argument("--rtol", type=float, default=None, help="relative tolerance of the comparison (with --atol)")
    run.add_argument("--atol", type=float, default=None, help="absolute tolerance of the comparison (with --rtol)")
    run.add_argument("--timeout", type=float, default=None, metavar="SECONDS", help="stop each run of the target that runs longer")
    run.add_argument("--trust-artifact", action="store_true", help="run with the modules of an extraction this machine did not make by running the target (one from elsewhere): imports its modules, so only for files you trust")
    run.add_argument("--no-timing", action="store_true", help="on a GPU, compare results only: no A/B timing of the kernels and the step")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    bench = commands.add_parser(
        "bench",
        parents=[debug],
        help="time extracted kernels against Inductor's own (in its graph and alone), eager and the CUDA twin",
        description="Time every kernel PATH selects (an extraction, one of its graph directories, or one kernel "
        "module) on the run's recorded inputs: the extracted kernel, Inductor's kernel inside its graph and "
        "launched alone, the eager reference, and the CUDA twin when there is one.",
        epilog=EPILOG_BENCH + "\n" + EXIT_TEXT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    bench.add_argument("path", metavar="PATH", help="an extraction directory, a graph directory in it, or a kernel module")
    bench.add_argument("-k", "--kernel", metavar="PATTERN", help="only kernels whose name (module's or Inductor's) matches this glob")
    bench.add_argument("--sweep", action="store_true", help="also time every BLOCK size x num_warps (x num_stages) config, each checked against the record first")
    bench.add_argument("--sweep-max", type=int, default=64, metavar="N", help="configs per kernel at most: the N nearest to Inductor's choice (default 64)")
    bench.add_argument("--check-only", action="store_true", help="with --sweep: only check each config against the record (runs on the CPU under TRITON_INTERPRET=1; nothing is timed)")
    bench.add_argument("--profile", action="store_true", help="the torch profiler's op tables (eager vs extracted) and a Chrome trace (trace.json)")
    bench.add_argument("--ncu", nargs="?", const="print", choices=("print", "run"), help="print the Nsight Compute command for each kernel instead of timing; `--ncu run` runs it (ncu on PATH) and saves <module>.ncu-rep")
    bench.add_argument("--trust-artifact", "--run-artifact", dest="run_artifact", action="store_true", help="run the output_code.py of an extraction this machine did not make (an artifact's, or one from elsewhere) to time Inductor's kernels in their graph: executes the extraction's code, so only for files you trust")
    bench.add_argument("-o", "--out", metavar="DIR", help="where the CSV/JSON/PNG go (default: <extraction>/bench)")
    bench.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    return parser


def run_bench(options: argparse.Namespace) -> int:
    """`harvest bench`: progress on stderr, the tables on stdout (or the ncu command lines)."""
    from rich.console import Console

    from harvest.bench.command import bench, ncu, select
    from harvest.bench.output import print_result

    console = Console(stderr=True, highlight=False, soft_wrap=True)
    with ProgressDisplay(console, "harvest bench", options.quiet) as progress:
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


def run_with_edits(options: argparse.Namespace, script_args: list[str]) -> int:
    from rich.console import Console

    from harvest.run.command import raise_if_differ, run_with, timing_markdown

    console = Console(stderr=True, highlight=False, soft_wrap=True)
    with ProgressDisplay(console, "harvest", options.quiet) as progress:
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


def split_script_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """Everything after the first `--` belongs to the target script, untouched."""
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1 :]
    return argv, []


def run_extract(options: argparse.Namespace, script_args: list[str]) -> int:
    from rich.console import Console

    from harvest.api import ExtractOptions, extract

    target, args, launcher = extract_target(options, script_args)
    chosen = ExtractOptions(
        args=args, timeout=options.timeout, force=options.force, names=options.names,
        target_sm=options.target_sm, device=options.device, record=options.record, record_cap_mib=options.record_cap,
        record_total_cap_mib=options.record_total_cap, run_artifact=options.run_artifact, launcher=launcher,
    )
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    with ProgressDisplay(console, "harvest", options.quiet) as progress:
        result = extract(target, options.out, chosen, on_progress=progress)
    summarize(console, result)
    return 0


TORCHRUN = (("torchrun",), ("python", "-m", "torch.distributed.run"), ("python3", "-m", "torch.distributed.run"))


def extract_target(options: argparse.Namespace, script_args: list[str]) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """(target, its arguments, torchrun's arguments) from `extract TARGET [-- ARGS]`, `extract --nproc-per-node N
    TARGET`, or `extract -- torchrun [TORCHRUN OPTIONS] TARGET [ARGS]` (torchrun's options are those before the
    first word naming a .py file)."""
    words = list(options.script_args) + list(script_args)
    prefix = next((p for p in TORCHRUN if options.target is None and tuple(Path(w).name for w in words[: len(p)]) == p), None)
    if prefix is not None:
        if options.nproc_per_node is not None:
            raise UsageError("give torchrun's ranks once: either --nproc-per-node or torchrun's own options after --")
        rest = words[len(prefix) :]
        at = next((i for i, word in enumerate(rest) if word.endswith(".py") and not word.startswith("-")), None)
        if at is None:
            raise UsageError(f"`{' '.join(words)}`: no script to run (a .py file after torchrun's options); "
                             "harvest runs scripts, not torchrun's -m modules")
        if any(word in ("-m", "--module", "--no-python", "--no_python") for word in rest[:at]):
            raise UsageError("torchrun's -m/--no-python: harvest runs a .py script under torchrun; give the script's path")
        return rest[at], tuple(rest[at + 1 :]), tuple(rest[:at])
    if options.target is None:
        raise UsageError("extract needs a TARGET (a script, an artifact or an extraction), or `-- torchrun ... SCRIPT`; see harvest extract --help")
    if options.nproc_per_node is not None:
        if options.nproc_per_node < 1:
            raise UsageError(f"--nproc-per-node must be at least 1, not {options.nproc_per_node}")
        if not options.target.endswith(".py"):
            raise UsageError(f"--nproc-per-node runs a script as a torchrun job; {options.target} is not a .py script")
        return options.target, tuple(words), ("--standalone", f"--nproc-per-node={options.nproc_per_node}")
    return options.target, tuple(words), ()


def summarize(console, result) -> None:
    """One line per graph and per kernel module; extern calls counted per graph."""
    from collections import Counter

    from harvest.ops import op_short_name
    from harvest.text_output import plural

    console.print(f"[bold]extracted to {result.out_dir}[/]")
    for graph in result.manifest["graphs"]:
        externs = Counter(op_short_name(e["op"]) for e in graph["externs"])
        extern_text = ", ".join(f"{n} {op}" for op, n in sorted(externs.items())) or "none"
        console.print(f"  {graph['name']}: {plural(len(graph['kernels']), 'Triton kernel')}; extern calls: {extern_text}")
        for kernel in graph["kernels"]:
            if kernel["module"]:
                console.print(f"    {kernel['module']}  [dim]{kernel['kind']}, from {kernel['name']}[/]")
            else:
                console.print(f"    [yellow]{kernel['name']}: not standalone ({kernel['standalone_reason']})[/]")
    recorded = [k["recorded"] for g in result.manifest["graphs"] for k in g["kernels"] if k.get("recorded")]
    if recorded:
        with_data = [r for r in recorded if r.get("data") and (result.out_dir / r["data"]).is_file()]
        size = sum(r.get("data_bytes", 0) for r in with_data) / (1 << 20)
        missing = sum(1 for r in recorded if r.get("data")) - len(with_data)
        gone = f"; {missing} recorded with data that is not under raw/ (--check uses made-up inputs for those)" if missing else ""
        console.print(f"launch record: {len(recorded)} kernels recorded, {len(with_data)} with their data for --check ({size:.1f} MiB of tensors under raw/){gone}")
    writes = result.writes
    for path in writes.kept_edited:
        console.print(f"[yellow]kept your edited {result.out_dir / path}[/] (differs from what harvest wrote; --force replaces it, keeping a .bak)")
    for path in writes.backups:
        console.print(f"[yellow]saved your edited version as {result.out_dir / path}[/]")
    if result.target_log is not None:
        lines = result.outcome.output.lines
        console.print(f"the target's output: {result.target_log} ({lines} line{'' if lines == 1 else 's'})")
    console.print(f"report: {result.out_dir / 'report.md'} (in a browser: {result.out_dir / 'report.html'})   manifest: {result.out_dir / 'manifest.json'}")
    hint = check_hint(result)
    if hint:
        console.print(hint)


def check_hint(result) -> str:
    """How to run the first kernel module's --check, with the interpreter that has harvest (and torch); "" when the
    extraction holds no module. The interpreter form only where no GPU is: the module then runs on numpy."""
    import shlex

    modules = [kernel["module"] for graph in result.manifest["graphs"] for kernel in graph["kernels"] if kernel["module"]]
    if not modules:
        return ""
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(result.out_dir / modules[0]))} --check"
    return f"check a kernel: {command}" if gpu_here(result) else f"check a kernel: TRITON_INTERPRET=1 {command}"


def gpu_here(result) -> bool:
    """This machine has a GPU: the target just ran on CUDA, or torch sees one."""
    if result.outcome is not None and result.outcome.capture.mode == "cuda":
        return True
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # a broken torch: the interpreter form is the safe hint
        return False


def run_ptx(options: argparse.Namespace) -> int:
    """`harvest ptx`: a progress line per kernel, a summary table, and the first kernel error's exit code."""
    from rich.console import Console

    from harvest.ptx import ptx_command
    from harvest.ptx.tables import SUMMARY_COLUMNS, summary_rows, summary_title
    from harvest.text_output import plural, print_table

    console = Console(stderr=True, highlight=False, soft_wrap=True)
    with ProgressDisplay(console, "harvest ptx", options.quiet) as progress:
        run = ptx_command(Path(options.target), options.arch, on_progress=progress)
    if run.results:  # a rich table where it fits, else plain text: a kernel's name is never cut
        print_table(Console(highlight=False, soft_wrap=True), summary_title(run.arch), SUMMARY_COLUMNS, summary_rows(run.results))
        tables = sorted({str(p.parent) for p in run.written if p.name.endswith(".ptx.md")})
        console.print(f"tables and diffs in: {', '.join(tables)}")
    for note in run.notes:
        console.print(f"[yellow]{note}[/]")
    if run.errors:
        label, first = run.errors[0]
        if len(run.errors) == 1 and not run.results:
            raise first
        console.print(f"[red]{len(run.errors)} of {plural(run.kernels, 'kernel')} failed[/]")
        print(f"harvest: error: {label}: {str(first).partition(chr(10))[0]}", file=sys.stderr)
        return first.exit_code
    return 0


def run_twin(options: argparse.Namespace) -> int:
    """`harvest twin`: a line per kernel, then the counts per kernel kind and the reasons for kernels left out."""
    from rich.console import Console

    from harvest.twin.command import summary, twin_command

    console = Console(stderr=True, highlight=False, soft_wrap=True)
    with ProgressDisplay(console, "harvest twin", options.quiet) as progress:
        run = twin_command(Path(options.path), force=options.force, compile_check=not options.no_compile, arch=options.arch, on_progress=progress)
    counts = summary(run)
    for kind, row in counts["kinds"].items():
        console.print(f"{kind}: {row['translated']} of {row['kernels']} translated")
    for reason, count in counts["reasons"].items():
        console.print(f"  [yellow]{count} x no twin: {reason}[/]")
    if run.compiled_with and any(o.status == "ok" for o in run.outcomes):
        console.print(f"every twin written compiles with {run.compiled_with} -ptx -arch={options.arch}")
    for path in run.writes.kept_edited:
        console.print(f"[yellow]kept your edited {run.out_dir / path}[/] (--force replaces it, keeping a .bak)")
    console.print(f"twins: {run.out_dir}/<graph>/twin/   run one: python <graph>/twin/<kernel>_twin.py --check (GPU; on the CPU: --check --emulate)")
    return 1 if any(o.status == "compile error" for o in run.outcomes) else 0


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
        if options.command == "extract":
            return run_extract(options, script_args)
        if options.command == "twin":
            return run_twin(options)
        if options.command == "bench":
            return run_bench(options)
        if options.command == "run":
            return run_with_edits(options, script_args)
        if options.command == "report":
            from harvest.report_html import report_command

            formats = ("report.html",) if options.html else ("report.md",) if options.md else ("report.md", "report.html")
            for path in report_command(Path(options.directory), formats):
                print(path)
            return 0
        if options.command == "pack":
            from harvest.pack import pack_command

            packed = pack_command(Path(options.kernel), Path(options.out) if options.out else None)
            print(f"packed {options.kernel} into {packed.module}" + (f" (its record: {packed.record})" if packed.record else " (no record: --check runs on made-up inputs)"))
            return 0
        if options.command == "ptx":
            return run_ptx(options)
        if options.command == "diff":
            from harvest.diff import diff_command

            text, code = diff_command(options.old, options.new, options.json, options.max_kernels, options.fail_on_unfuse)
            print(text, end="" if text.endswith("\n") else "\n")
            return code
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
    return 0
