"""`harvest ptx`: what a Triton kernel and its CUDA twin compile to, side by side, on a machine with no GPU.
Takes: an extraction's kernel modules (text, checked before Triton compiles them) and their twins' .cu (`harvest twin`).
Gives: PtxRun, a KernelPtx per kernel (both sides' normalized PTX, instruction mix, ptxas resources); OUT/<graph>/ptx/.

    module = read_kernel_module(text, "g0_inference/square_kernel.py")  # pure: `ast` only, nothing is executed
    args = compile_args(module)                        # pure: the signature Triton's launcher would specialize
    [ptx] = compile_triton_ptx([module], arch)         # a child process runs triton.compile(ASTSource(...))
    twin = compile_twin_ptx(cu_path, arch, nvcc)       # nvcc -ptx
    norm = normalize_ptx(ptx.text)                     # pure: no comments/debug info, registers/labels renumbered
    mix = instruction_mix(norm)                        # pure: static instruction counts by kind
    run = ptx_command(Path("extracted/square_square"), "sm_90")   # `harvest ptx`: all of it, files and report

Safety: the kernel module is data. Its `def` is executed (that is how Triton gets a JITFunction) only after the text
between the kernel markers is checked to be only functions whose decorator is `triton.jit` (the kernel's optionally
with a literal `do_not_specialize` list), whose parameters have no defaults and no annotation but `tl.constexpr`:
running such `def`s evaluates nothing but `triton.jit` and `tl.constexpr`. The body is only compiled, but Triton's front end
calls Python functions it reaches at compile time, so the body is held to Triton's own vocabulary too: its names are
its parameters, its own variables, `tl`, `libdevice`, `triton_helpers`, `tl_math` and a few builtins; no attribute
starts with `_`; and every dotted name off a module is resolved, before the def runs, to a Triton function, dtype or
constant. Compilation runs in a child process without TRITON_INTERPRET and with a throw-away Triton cache.

Output is deterministic for a given toolchain: no temporary paths and no timestamps in the files written.
"""

from harvest.nvcc import find_nvcc
from harvest.ptx.command import PtxRun, ptx_command, resolve_targets
from harvest.ptx.module import (
    Arch,
    CompileArgs,
    KernelModule,
    compile_args,
    parse_arch,
    read_kernel_module,
)
from harvest.ptx.tables import CompiledSide, KernelPtx, render_tables
from harvest.ptx.text import diff_counts, instruction_kinds, instruction_mix, normalize_ptx, parse_ptxas_log
from harvest.ptx.toolchain import compile_triton_ptx, compile_twin_ptx, toolchain_versions

__all__ = [
    "Arch", "CompileArgs", "CompiledSide", "KernelModule", "KernelPtx", "PtxRun", "compile_args",
    "compile_triton_ptx", "compile_twin_ptx", "diff_counts", "find_nvcc", "instruction_kinds", "instruction_mix",
    "normalize_ptx", "parse_arch", "parse_ptxas_log", "ptx_command", "read_kernel_module",
    "render_tables", "resolve_targets", "toolchain_versions",
]  # fmt: skip
