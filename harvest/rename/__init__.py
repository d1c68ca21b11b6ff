"""Rename: takes one kernel's source as Inductor wrote it and a `RenameContext` (hints from its launch and graph);
strips Inductor's runtime and renames tmp17, in_ptr2, xnumel, XBLOCK... without changing what runs; gives a
`RenameResult` (the code, the kernel's name, the mapping; Inductor's names kept, with a warning, when it cannot).

Pipeline, pure (strings and model objects in, frozen results out, never raises):

    strip_inductor_decorators(source)     drop Inductor's runtime (decorator, driver call, imports); plain triton imports
    rename_kernel(source, context)        strip, then gather facts with a visitor, plan names, apply with a transformer

The rename is a bijection on names inside the kernel function (scope.py says which Name nodes are the kernel's own), plus two
deletions that cannot change a result: Inductor's dead compatibility aliases (`rnumel = r0_numel`, `rindex = r0_index`
when nothing reads them) and pure aliases (`x0 = xindex`) merged into the name they copy when every read of the alias
sees the same value as the original. The scheme is documented in docs/naming.md.
"""

from __future__ import annotations

import functools

import libcst as cst

from harvest.kernel_facts import kernel_facts
from harvest.model import Graph, Kernel, Launch
from harvest.rename.apply import rename_module
from harvest.rename.context import RESERVED, DroppedParam, RenameContext, RenameResult, failure
from harvest.rename.names import IDENT, buffer_base, extern_producers, readable_kernel_name
from harvest.rename.standalone import kernel_def, standalone
from harvest.syntax import kernel_trees

__all__ = [
    "RESERVED", "DroppedParam", "RenameContext", "RenameResult", "build_context", "kernel_code", "kernel_names", "readable_kernel_name",
    "rename_kernel", "strip_inductor_decorators",
]  # fmt: skip


def build_context(kernel: Kernel, launch: Launch | None, graph: Graph | None, kernel_name: str = "") -> RenameContext:
    """Collect naming hints for `kernel` from its launch (what each pointer binds to) and its graph."""
    hints: list[tuple[str, str, str]] = []
    if launch is not None:
        producers = extern_producers(graph) if graph is not None else {}
        inputs = set(graph.inputs) if graph is not None else set()
        for arg in launch.args:
            buffer = arg.buffer or (arg.expr if IDENT.fullmatch(arg.expr) else None)
            base = buffer_base(buffer, inputs, producers, graph) if buffer else ""
            hints.append((arg.param, base, arg.expr))
    return RenameContext(kernel_name=kernel_name, param_hints=tuple(hints), fragment=kernel.comment.fragment)


def kernel_code(kernel: Kernel, launch: Launch, graph: Graph, kernel_name: str, names: str = "readable") -> RenameResult:
    """The code a kernel's module holds: renamed with its launch's and graph's hints (`names="readable"`), or with
    Inductor's names kept (`"inductor"`); a user-written kernel always as its author wrote it.

    The one way an extraction asks for a kernel's code, so harvest/prewarm.py, which asks while the target still
    runs, asks exactly what rendering asks after the run (and rename_kernel's cache answers the second time)."""
    if names == "readable" and kernel.kind != "user":
        return rename_kernel(kernel.source, build_context(kernel, launch, graph, kernel_name))
    return RenameResult(strip_inductor_decorators(kernel.source), kernel.jit_name or kernel.name, mapping=(),
                        params=tuple((p, p) for p in kernel.signature), ok=True)


def kernel_names(graph: Graph) -> dict[str, str]:
    """Inductor kernel name -> readable name (`layer_norm_fwd_kernel`, `add_kernel_1`), unique within the graph; a
    user-written kernel keeps its own (`scaled_relu_kernel` for Inductor's `scaled_relu_kernel_0`)."""
    names: dict[str, str] = {}
    taken: dict[str, int] = {}
    for kernel in graph.kernels:
        # a user's kernel keeps the name they gave it
        base = kernel.jit_name or kernel.name if kernel.kind == "user" else \
            readable_kernel_name(kernel.name, kernel.comment.aten_ops, kernel.comment.source_nodes)
        count = taken.get(base, 0)
        taken[base] = count + 1
        names[kernel.name] = base if count == 0 else f"{base}_{count}"
    return names


def _parsed(source: str) -> cst.Module:
    """The kernel's libcst tree, parsed once for the whole extraction (harvest.syntax.kernel_trees)."""
    trees = kernel_trees(source)
    if trees.cst is None:
        raise trees.cst_error or ValueError("the kernel source does not parse")
    return trees.cst


def strip_inductor_decorators(source: str) -> str:
    """The kernel as a plain `@triton.jit` function with standard-Triton imports (Inductor's names kept).

    Returns `source` unchanged when it does not parse.
    """
    try:
        return standalone(_parsed(source), source).code
    except Exception:  # a kernel we cannot read stays as Inductor wrote it; callers compare and warn
        return source


@functools.lru_cache(maxsize=4096)
def rename_kernel(source: str, context: RenameContext | None = None) -> RenameResult:
    """Rename Inductor's anonymous names in one kernel module; never raises, never returns a half-renamed kernel.

    Pure, so its results are kept per process: `harvest extract` renames each kernel while the target still runs
    (harvest/prewarm.py), and the renders after the run find the result here."""
    context = context or RenameContext()
    try:
        stripped = standalone(_parsed(source), source)
    except Exception as exc:
        return failure(source, "", f"cannot parse the kernel source: {type(exc).__name__}: {exc}")
    try:
        kernel = kernel_def(stripped)  # the source's kernel def (its name kept; its loads and stores too)
        function = kernel_facts(source).named(kernel.name.value) if kernel is not None else None
        if function is None:
            raise ValueError("no kernel function in the stripped source")
        return rename_module(stripped, context, function)
    except Exception as exc:  # any surprise falls back to Inductor's names, with the reason
        return failure(stripped.code, kernel_def(stripped).name.value if kernel_def(stripped) else "",
                        f"rename failed, Inductor names kept: {type(exc).__name__}: {exc}")
