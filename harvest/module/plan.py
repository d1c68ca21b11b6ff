"""Plan one standalone kernel module: every decision the template needs, made from the typed inputs.

Pure: `plan_module(context) -> ModulePlan`. The inputs are the stages' results (Kernel, Launch, Graph, the
RenameResult, the Reference, the RecordedLaunch, the autotune winner); harvest.module.render writes the plan out and
decides nothing. Nothing here reads back text that render wrote.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, replace

from harvest.fusion import KernelFusion, SourceLine
from harvest.helper_blocks import known_helpers
from harvest.model import AutotuneWinner, Capture, Graph, Kernel, Launch, RecordedLaunch
from harvest.module.arguments import Argument, RenderError, Storage, plan_arguments, runtime_params
from harvest.module.config import body_constant, build_config
from harvest.reference import Reference, kernel_outputs
from harvest.rename import RenameResult
from harvest.rename.template_tiles import LiftedTiles, lift_tiles
from harvest.syntax import dotted

__all__ = ["ModuleContext", "ModulePlan", "Grid", "GridAxis", "RenderError", "plan_module"]

WORKSPACE_PARAMS = {"ws_ptr": "*u8", "sem_ptr": "*u32"}  # Inductor's WorkspaceArg inner names, and their types
SUPPORTED_GRIDS = ("Grid1D", "Grid2D", "MixOrderReductionGrid", "CooperativeReductionGrid", "")
HEADER_SOURCE_LINES = 3  # source lines the module's docstring quotes; the rest by place (report.md lists all)
INSTALLED = "<installed>/"  # how harvest.paths names a file of an installed package
# Imports the template writes itself: a kernel's own imports beyond these go under them.
BASE_IMPORTS = {"import argparse", "import os", "import sys", "import torch", "import triton", "import triton.language as tl"}
LIBDEVICE_IMPORT = "from triton.language.extra import libdevice"
INDUCTOR_RUNTIME = "torch._inductor.runtime"  # where Inductor's kernels import triton_helpers from (private to torch)


@dataclass(frozen=True)
class ModuleContext:
    """What plan_module reads: one kernel, its launch and graph, and the other stages' results for it."""

    capture: Capture  # the run (or artifact): target, command, versions, device
    graph: Graph
    kernel: Kernel
    launch: Launch  # its first launch in the graph's call()
    code: RenameResult  # the kernel to embed: renamed (or, with --names inductor, only stripped)
    reference: Reference  # the eager reference: its source in the module's names, its fields in Inductor's
    fusion: KernelFusion  # for the user's source lines
    module_path: str  # where the module will live, relative to the extraction
    winner: AutotuneWinner | None = None
    recorded: RecordedLaunch | None = None  # the run's first launch of this kernel in this graph
    raw_dir: str = ""  # its graph's directory under raw/ (the graph's name; rank<r>/<name> in a torchrun job)


@dataclass(frozen=True)
class GridAxis:
    size: str  # a parameter of launch(), or the size's value
    block: str | None  # the config entry the size is divided by; None: one program per row


@dataclass(frozen=True)
class Grid:
    axes: tuple[GridAxis, ...] = ()  # Inductor's Grid1D/Grid2D, as expressions of launch()'s parameters
    recorded: tuple[int, ...] | None = None  # the run's grid, used as it is where harvest's model disagrees
    tiles: str = ""  # a matmul template's programs, one per output tile, as an expression of the config
    batch: int = 1  # a batched matmul template's second grid axis: its matrices


@dataclass(frozen=True)
class ModulePlan:
    """Everything templates/kernel.py.j2 needs, decided. Names are the module's (renamed) names throughout."""

    # where it came from (the module docstring)
    target: str
    graph_name: str
    module_path: str
    inductor_name: str
    kind: str
    aten_ops: tuple[str, ...]
    source_lines: tuple[str, ...]
    torch_version: str
    triton_version: str
    device: str
    command: str
    renamed: tuple[tuple[str, str, str], ...]  # (module name, Inductor name, FX node or "") of each changed name
    notes: tuple[str, ...]
    # the kernel and its launch
    kernel_name: str
    kernel_code: str  # imports split off; specialized as Inductor compiled it
    kernel_sha256: str  # of kernel_code, stripped: check() knows from it whether the kernel was edited
    imports: tuple[str, ...]  # the kernel's imports beyond the template's own
    harness_imports: tuple[str, ...]  # what it imports from the harness beyond Tensor and main ("triton_helpers")
    needs_shim: bool  # libdevice / triton_helpers calls: the interpreter needs harvest.interpret_shim
    config: tuple[tuple[str, int | float | bool], ...]  # constexprs, num_warps, num_stages, in order
    config_origin: str
    grid: Grid
    arguments: tuple[Argument, ...]  # in launch order
    arguments_origin: str
    storages: tuple[Storage, ...]
    written_only: tuple[str, ...]  # tensor arguments the kernel only writes (made-up inputs leave them zeroed)
    workspaces: tuple[str, ...]  # the scratch workspaces Inductor's wrapper zeroes: zeroed before every launch
    # launch options besides the config: a cooperative reduction's programs must all run at once (its grid barrier)
    launch_options: tuple[str, ...]
    # the oracles
    outputs: tuple[str, ...]  # what check() compares
    record_path: str | None  # the run's data for this launch, relative to the module
    record_device: str | None  # where it was recorded (outputs match bit for bit there)
    exact_possible: bool  # False when the result depends on launch order (atomics)
    reference_code: str  # `def reference(...)`, in the module's names
    reference_params: tuple[str, ...]
    unchecked: tuple[tuple[str, str], ...]  # (output, why the reference cannot compute it)
    split_outputs: bool  # the reference holds a split reduction's partials: compare() combines them
    matmul: tuple[tuple[str, int], ...]  # a matmul template's M, N, K (--bench's TFLOP/s); () for other kernels
    matmul_dtype: str  # its A operand's dtype ("torch.bfloat16"): the cuBLAS matmul --bench times beside it


def plan_module(ctx: ModuleContext) -> ModulePlan:
    """Decide the module: its arguments, config, grid, kernel code, reference, oracles and notes."""
    kernel, capture, recorded = ctx.kernel, ctx.capture, ctx.recorded
    rename = dict(ctx.code.params)
    outputs, write_only = kernel_outputs(kernel)
    if recorded is not None:  # outputs the run saw written count too (a store the scan did not see)
        written_storages = {i for i, s in enumerate(recorded.storages) if s.written}
        extra = [a.param for a in recorded.args if a.view is not None and a.view.storage in written_storages]
        outputs = tuple(p for p in kernel.params if p in outputs or p in extra)
    # A workspace (a split scan's carries and flags, a reduction's partials, semaphores) holds no value of the graph: no
    # output, made up as zeros (Inductor's names tell them without a recorded graph). launch() zeroes those Inductor's
    # wrapper zeroes: a split scan's, the semaphores (partials are written before they are read).
    workspaces = tuple(p for p in kernel.params if p in ctx.reference.scratch
                       or WORKSPACE_PARAMS.get(p) == kernel.signature.get(p))
    zeroed = [p for p in workspaces if kernel.kind == "split_scan" or kernel.signature.get(p) == WORKSPACE_PARAMS["sem_ptr"]]
    outputs = tuple(p for p in outputs if p not in workspaces)
    write_only = tuple(dict.fromkeys((*write_only, *workspaces)))
    record_path = f"../raw/{ctx.raw_dir or ctx.graph.name}/records/{recorded.data}" if recorded is not None and recorded.data else None

    from harvest.module.arguments import launched_kernel  # (issue 19 part 3; hoist to the imports above)

    kernel = launched_kernel(kernel, ctx.code.dropped_params)  # the sizes the body fixes are not launch() params
    planned = plan_arguments(kernel, ctx.launch, ctx.graph, recorded, rename, write_only)
    arguments = planned.arguments
    values = {a.inductor_param: a.value for a in arguments if not a.is_tensor and a.value is not None}
    values |= {d.param: d.value for d in ctx.code.dropped_params}  # their values, for the grid and default config
    config, config_origin = build_config(ctx.kernel, ctx.recorded.config if ctx.recorded is not None else None,
                                         ctx.winner, rename, values)
    tiles = template_tiles(kernel, ctx.code, recorded.grid if recorded else None)
    if tiles is not None:  # a matmul template: its tile sizes are the config's, and the grid follows them
        config = {**tiles.tiles, **config}
        grid, grid_note = Grid(tiles=tiles.grid_text(), batch=tiles.batch), ""
    else:
        grid, grid_note = build_grid(kernel, rename, values, config, recorded.grid if recorded else None)
    renamed = replace(ctx.code, code=tiles.code) if tiles is not None else ctx.code
    code = kernel_code(renamed, [rename.get(p, p) for p in unspecialized_params(kernel)])
    imports, harness_imports, helpers_note = helper_imports(sorted(set(code.imports) - BASE_IMPORTS), code.helpers)
    # torch's helpers under the interpreter: the shim, for triton <= 3.3 (max2 -> tl.int1 zeros; harvest's own
    # helpers get it from the harness)
    if code.uses_helpers and not harness_imports and not any("libdevice" in line for line in imports):
        imports.append(LIBDEVICE_IMPORT)

    notes = list(ctx.reference.warnings) + list(ctx.code.warnings) + ([helpers_note] if helpers_note else [])
    notes += [f"{a.param}: {a.note}" for a in arguments if a.note]
    if grid_note:
        notes.append(grid_note)
    if recorded is not None:
        origin = "as recorded in the real run"
        if recorded.launches > 1:
            origin += f" (its first of {recorded.launches} launches in this graph"
            origin += f", {recorded.distinct} distinct)" if recorded.distinct > 1 else ", all alike)"
        if record_path is None:
            notes.append(f"no data recorded for this launch: {recorded.data_note or 'layouts only'}; --check uses made-up inputs")
    else:
        origin = "as read from the wrapper's text (no run was recorded: an artifact target)"

    return ModulePlan(
        target=capture.target,
        graph_name=ctx.graph.name,
        module_path=ctx.module_path,
        inductor_name=kernel.name,
        kind=kernel.kind,
        aten_ops=tuple(kernel.comment.aten_ops),
        source_lines=header_source_lines(ctx.fusion.source_lines),
        torch_version=capture.torch_version,
        triton_version=capture.triton_version,
        device=capture.device,
        command=" ".join(["harvest", "extract", capture.target, *capture.command]),
        renamed=tuple((new, old, node) for new, old, node in ctx.code.mapping if new != old),
        notes=tuple(notes),
        kernel_name=ctx.code.kernel_name,
        kernel_code=code.code,
        kernel_sha256=hashlib.sha256(code.code.strip().encode("utf-8")).hexdigest(),
        imports=tuple(imports),
        harness_imports=harness_imports + tuple(name for name in ("triton_rand", "triton_randn")
                                                if f"{name}(" in ctx.reference.source),
        needs_shim=code.uses_helpers,
        config=tuple(config.items()),
        config_origin=config_origin,
        grid=grid,
        arguments=arguments,
        arguments_origin=origin,
        storages=planned.storages,
        written_only=tuple(rename.get(p, p) for p in write_only),
        workspaces=tuple(rename.get(p, p) for p in zeroed),
        launch_options=("launch_cooperative_grid=True",) if kernel.triton_meta.get("launch_cooperative_grid") else (),
        outputs=tuple(rename.get(p, p) for p in outputs),
        record_path=record_path,
        record_device=capture.record_device if record_path else None,
        # (a split scan's decoupled look-back adds its predecessors' values in the order they finish)
        exact_possible=not code.uses_atomics and kernel.kind != "split_scan",
        reference_code=ctx.reference.source.strip(),
        reference_params=tuple(rename.get(p, p) for p in ctx.reference.params),
        unchecked=tuple({rename.get(p, p): reason for p, reason in ctx.reference.unchecked}.items()),
        split_outputs=bool(ctx.reference.split_outputs),
        matmul=(tuple(tiles.sizes.items()) + ((("B", tiles.batch),) if tiles.batch > 1 else ())) if tiles is not None else (),
        matmul_dtype=next((a.dtype for a in arguments if tiles is not None and a.param == rename.get(tiles.a_param, tiles.a_param)), ""),
    )


def template_tiles(kernel: Kernel, code: RenameResult, recorded_grid: tuple[int, ...] | None) -> LiftedTiles | None:
    """A matmul template with its tile sizes lifted into CONFIG, when the tile grid they give is the grid the run
    launched (a persistent or TMA template launches one program per SM: it keeps its recorded grid). A batched
    matmul's (bmm's) second grid axis, its matrices (`tl.program_id(1)` in the body), is the recorded one."""
    if kernel.kind != "template":
        return None
    lifted = lift_tiles(code.code, code.kernel_name)
    if lifted is None:
        return None
    recorded = tuple(recorded_grid) + (1,) * (3 - len(recorded_grid)) if recorded_grid is not None else None
    if recorded is not None and recorded[1] > 1 and "tl.program_id(1)" in lifted.code:
        lifted = replace(lifted, batch=recorded[1])
    want = (lifted.tile_programs(lifted.tiles), lifted.batch, 1)
    if recorded is not None and recorded != want:
        return None
    return lifted


def unspecialized_params(kernel: Kernel) -> list[str]:
    """Launch parameters Inductor compiled with no specialization (no divisible-by-16 assumption): dynamic sizes
    such as ks0, and pointers it could not prove aligned. Triton's jit would specialize them on their values at
    run time and can then emit other code (another vector width, another order of a reduction's additions): the
    module opts out for the same ones, so that it compiles what Inductor compiled."""
    if not kernel.configs or not isinstance(kernel.configs[0], dict):
        return []
    specialized: set[int] = set()
    for key in kernel.configs[0]:  # Inductor's keys name parameter indices: "(0,)", "(1, 3)"
        specialized.update(int(i) for i in re.findall(r"\d+", str(key)))
    order = list(kernel.signature)
    return [p for p in runtime_params(kernel) if order.index(p) not in specialized]


def build_grid(kernel: Kernel, rename: dict[str, str], values: dict[str, int | float | bool], config: dict,
               recorded_grid: tuple[int, ...] | None) -> tuple[Grid, str]:
    """The launch grid as expressions of launch()'s parameters and the config, and a note when it is not.

    Follows Inductor's Grid1D/Grid2D: cdiv(numel, BLOCK) per axis, one program per row when the kernel has no BLOCK
    for the axis. A size that is not a parameter of launch() is written as its value. When the recorded grid of the
    run disagrees with this (a grid type harvest does not model), the recorded grid is used as it is.
    """
    grid_type = str(kernel.inductor_meta.get("grid_type", ""))
    params = set(runtime_params(kernel))

    def axis(numel: str, block: str) -> tuple[GridAxis | None, int | None]:
        value = values.get(numel)
        if value is None:
            value = body_constant(kernel, numel)
        if numel in params:
            size = rename.get(numel, numel)
        elif value is not None:
            size = str(value)
        else:
            return None, None
        block_value = config.get(rename.get(block, block))
        if block not in kernel.signature:  # no_x_dim kernels: one program per row
            return GridAxis(size, None), value
        number = None if value is None or block_value is None else -(-int(value) // int(block_value))
        return GridAxis(size, rename.get(block, block)), number

    dims = [axis("xnumel", "RSPLIT_SIZE" if grid_type == "MixOrderReductionGrid" else "XBLOCK")]
    if grid_type == "CooperativeReductionGrid":  # RSPLIT programs share each block of rows (and a grid barrier)
        rsplit = rename.get("RSPLIT", "RSPLIT")
        dims.insert(0, (GridAxis(f'config["{rsplit}"]', None), config.get(rsplit)))
    if "ynumel" in kernel.signature and (grid_type == "Grid2D" or "YBLOCK" in kernel.signature):
        dims.append(axis("ynumel", "YBLOCK"))
    if "znumel" in kernel.signature:
        dims.append(axis("znumel", "ZBLOCK"))
    computed = [n for _, n in dims]
    modelled = grid_type in SUPPORTED_GRIDS and all(a is not None for a, _ in dims)
    if recorded_grid is not None:
        want = list(recorded_grid) + [1] * (3 - len(recorded_grid))
        got = computed + [1] * (3 - len(computed))
        if kernel.kind == "user":
            return Grid(recorded=tuple(want)), f"grid {tuple(want)}: the user's grid, as recorded in the run"
        if not modelled or got != want:
            note = f"grid {tuple(want)} as recorded in the run (harvest does not model {grid_type or 'this'} grids; change it with the config)"
            return Grid(recorded=tuple(want)), note
    if not modelled:
        raise RenderError(f"cannot compute the launch grid ({grid_type or 'unknown'} grid type) and no grid was recorded")
    return Grid(axes=tuple(a for a, _ in dims if a is not None)), ""


@dataclass(frozen=True)
class KernelCode:
    code: str  # the kernel without its module-level imports, specialized as Inductor compiled it
    imports: tuple[str, ...]  # its module-level imports, as written
    uses_helpers: bool  # calls libdevice or triton_helpers
    uses_atomics: bool  # calls a tl.atomic_* (the result then depends on launch order)
    helpers: frozenset[str] = frozenset()  # the triton_helpers.NAME it reads


_HELPERS = frozenset({"libdevice", "triton_helpers"})
_JIT_COMMENT = "# Not specialized on their values, as Inductor compiled it (the same code for every value):"


def kernel_code(code: RenameResult, unspecialized: list[str]) -> KernelCode:
    """The rename stage's kernel, read once with Python's ast: its imports (merged into the module's), the rest with
    `@triton.jit` -> `@triton.jit(do_not_specialize=[...])` (see unspecialized_params), and what it calls.

    An import goes with the blank lines and comments above it, as a statement's leading lines do in libcst."""
    tree = ast.parse(code.code)
    lines = code.code.splitlines(keepends=True)
    imports: list[str] = []
    keep = [True] * len(lines)
    previous_end = 0
    for statement in tree.body:
        end = statement.end_lineno or statement.lineno
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            imports.append("".join(lines[previous_end:end]).strip())
            keep[previous_end:end] = [False] * (end - previous_end)
        previous_end = end
    kernel = next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == code.kernel_name), None)
    if unspecialized and kernel is not None and kernel.decorator_list and dotted(kernel.decorator_list[-1]) == "triton.jit":
        jit = kernel.decorator_list[-1].lineno - 1
        lines[jit] = f"{_JIT_COMMENT}\n@triton.jit(do_not_specialize={unspecialized!r})\n"
    rest = [node for statement in tree.body if not isinstance(statement, (ast.Import, ast.ImportFrom))
            for node in ast.walk(statement)]
    return KernelCode(
        code="".join(line for line, kept in zip(lines, keep) if kept).strip(),
        imports=tuple(imports),
        uses_helpers=any(isinstance(n, ast.Attribute) and (isinstance(n.value, ast.Name) and n.value.id in _HELPERS
                                                           or isinstance(n.value, ast.Attribute) and n.value.attr in _HELPERS)
                         for n in rest),
        uses_atomics=any(isinstance(n, ast.Call) and _is_atomic(n.func) for n in rest),
        helpers=frozenset(n.attr for n in rest if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "triton_helpers"),
    )


def helper_imports(imports: list[str], helpers: frozenset[str]) -> tuple[list[str], tuple[str, ...], str]:
    """The kernel's imports with Inductor's `triton_helpers` taken from the harness, which carries harvest's own
    versions (harvest/inductor_helpers.py), so the module needs only torch's public API: (imports, names to import
    from the harness, a note). Where the kernel calls a helper harvest has no version of, torch's import stays and
    the note says which."""
    for position, line in enumerate(imports):
        statement = ast.parse(line).body[0]
        if not (isinstance(statement, ast.ImportFrom) and statement.module == INDUCTOR_RUNTIME
                and any(a.name == "triton_helpers" and a.asname is None for a in statement.names)):
            continue
        missing = sorted(helpers - known_helpers())
        if missing:
            return imports, (), (f"calls triton_helpers.{', '.join(missing)}, which harvest has no version of: this module "
                                 f"imports torch's private {INDUCTOR_RUNTIME}.triton_helpers (torch's API may change)")
        rest = [a for a in statement.names if a.name != "triton_helpers"]
        kept = [f"from {INDUCTOR_RUNTIME} import " + ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in rest)] if rest else []
        return imports[:position] + kept + imports[position + 1 :], ("triton_helpers",), ""
    return imports, (), ""


def _is_atomic(func: ast.expr) -> bool:
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return name.startswith("atomic_") and len(name) > len("atomic_")


def header_source_lines(lines: tuple[SourceLine, ...], shown: int = HEADER_SOURCE_LINES) -> tuple[str, ...]:
    """The docstring's source lines: `shown` of them quoted, the rest by place on one line ("and file:1, 2; ...").

    Quoted first: the user's own files before installed packages', then the files that hold more of the kernel's
    lines; a file's lines in order. The header stays short, and two kernels of one layer share at most a few lines.
    """
    if len(lines) <= shown + 1:
        return tuple(f"{s.file}:{s.line} in {s.function}: {s.code}" for s in lines)
    files = list(dict.fromkeys(s.file for s in lines))
    count = {file: sum(s.file == file for s in lines) for file in files}
    ranked = sorted(files, key=lambda f: (f.startswith(INSTALLED), -count[f], files.index(f)))
    ordered = [s for file in ranked for s in lines if s.file == file]
    quoted, rest = ordered[:shown], ordered[shown:]
    places = [f"{file}:{', '.join(str(s.line) for s in rest if s.file == file)}" for file in ranked
              if any(s.file == file for s in rest)]
    return (*(f"{s.file}:{s.line} in {s.function}: {s.code}" for s in quoted), "and " + "; ".join(places))
