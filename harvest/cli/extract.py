"""`harvest extract`: its arguments, the target and torchrun's part of them, and the summary printed after it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harvest.cli.arguments import EXIT_TEXT, add_command, add_quiet
from harvest.errors import UsageError
from harvest.progress import ProgressDisplay

HELP = "run a script under torch.compile (or read an artifact) and extract every Triton kernel"
DESCRIPTION = ("Capture every Inductor graph of TARGET and write, under OUT: raw/<graph>/output_code.py "
               "(the untouched capture, written first), <graph>/<kernel>.py (standalone: kernel, launch(), "
               "make_inputs(), reference(), --check), manifest.json and report.md.")
EXAMPLES = """\
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

EPILOG = EXAMPLES + "\n" + EXIT_TEXT


def add_parser(commands) -> None:
    extract = add_command(commands, "extract", HELP, DESCRIPTION, EPILOG)
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
    add_quiet(extract)


def run(options: argparse.Namespace, script_args: list[str]) -> int:
    """`harvest extract`: progress on stderr, then a line per graph and kernel module, and how to check one."""
    from harvest.api import ExtractOptions, extract

    target, args, launcher = extract_target(options, script_args)
    chosen = ExtractOptions(
        args=args, timeout=options.timeout, force=options.force, names=options.names,
        target_sm=options.target_sm, device=options.device, record=options.record, record_cap_mib=options.record_cap,
        record_total_cap_mib=options.record_total_cap, run_artifact=options.run_artifact, launcher=launcher,
    )
    with ProgressDisplay.on_stderr("harvest", options.quiet) as progress:
        result = extract(target, options.out, chosen, on_progress=progress)
    summarize(progress.console, result)
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
