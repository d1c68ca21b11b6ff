"""`harvest bench --ncu`: the Nsight Compute command for each selected kernel, printed, or run (`--ncu run`) with
its report and output written beside the module."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from harvest.bench.children import require_cuda
from harvest.bench.output import shown
from harvest.bench.plan import Selection
from harvest.errors import UsageError
from harvest.progress import OnProgress
from harvest.writer import write_file


def kernel_function_name(module_source: str, fallback: str) -> str:
    """The @triton.jit function's name in a module (what the GPU, the profiler and ncu call the kernel); `fallback`
    when the module is not one harvest can read."""
    from harvest.module.file import ModuleFileError, read_module_file

    try:
        return read_module_file(module_source, fallback).name
    except ModuleFileError:
        return fallback


def ncu_command(module: Path, kernel: str, python: str = "python") -> list[str]:
    """Nsight Compute on one kernel: the module's --check launches it once on the recorded inputs; --kernel-name keeps
    ncu to that kernel (not the reference's ATen kernels), --set full collects every section, --clock-control none
    leaves the GPU's clocks as they are (ncu would lock them to base otherwise), -o writes <module>.ncu-rep next to
    the module."""
    report = module.with_suffix("")
    return ["ncu", "--set", "full", "--kernel-name", kernel, "--launch-count", "1", "--clock-control", "none", "-f",
            "-o", shown(report), python, shown(module), "--check"]


def ncu(selection: Selection, run: bool, on_progress: OnProgress) -> list[str]:
    """Print (or run) the ncu command of each selected kernel; returns the command lines."""
    lines = []
    modules = [(g, k) for g, k in selection.kernels if k["module"]]
    if run:
        require_cuda()
        if shutil.which("ncu") is None:
            raise UsageError("--ncu run: ncu is not on PATH (Nsight Compute, e.g. /usr/local/cuda/bin); --ncu prints the command to run where it is")
    for _, kernel in modules:
        module = selection.extraction / kernel["module"]
        name = kernel_function_name(module.read_text(encoding="utf-8"), kernel["display_name"])
        command = ncu_command(module, name, sys.executable if run else "python")
        lines.append(shlex.join(command))
        if not run:
            continue
        on_progress(f"ncu on {kernel['module']} (kernel {name}): {shlex.join(command)}")
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        log = module.with_suffix(".ncu.txt")
        write_file(log, done.stdout + done.stderr)
        report = module.with_suffix(".ncu-rep")
        state = f"report {shown(report)}" if done.returncode == 0 and report.exists() else f"ncu exited {done.returncode}, no report"
        tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
        lines.append(f"  {state}; its output: {shown(log)}" + ("".join(f"\n    {t}" for t in tail) if done.returncode else ""))
    return lines
