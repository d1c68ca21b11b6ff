"""Render one standalone kernel module: kernel, launcher, make_inputs, eager reference, a checking __main__.

Pure: `render_kernel_module(context) -> str`. The module reads like Triton's tutorial 01 and imports only torch and
triton (plus Inductor's triton_helpers where a kernel needs a helper plain Triton lacks).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import pprint
import re
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
import libcst.matchers as m

from harvest.dtypes import ITEMSIZE, triton_pointer_dtype
from harvest.errors import HarvestError
from harvest.interpret_shim import SHIM_SOURCE
from harvest.model import AutotuneWinner, Graph, Kernel, Launch, LaunchArg, RecordedLaunch, TensorMeta
from harvest.reference import Reference
from harvest.rename import RenameResult
from harvest.resources import load_template
from harvest.shapes import evaluate
from harvest.syntax import kernel_trees

SUPPORTED_GRIDS = ("Grid1D", "Grid2D", "")


class RenderError(HarvestError):
    """A kernel that cannot be rendered as a standalone module (the reason goes into the manifest)."""


@dataclass(frozen=True)
class ModuleContext:
    target: str
    graph_name: str
    module_path: str  # where the module will live, for the header's run lines
    kernel: Kernel
    launch: Launch
    graph: Graph
    code: RenameResult  # the kernel to embed: renamed (or, with --names inductor, only stripped)
    reference: Reference  # the eager reference, in Inductor's parameter names
    winner: AutotuneWinner | None
    torch_version: str
    triton_version: str
    device: str
    command: str
    source_lines: tuple[str, ...] = ()
    aten_ops: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    recorded: RecordedLaunch | None = None  # the run's first launch of this kernel in this graph
    record_path: str = ""  # its data file, relative to the module ("" when only layouts were recorded)
    record_device: str = ""  # "cpu" or "cuda:<GPU name>": where the record was made
    outputs: tuple[str, ...] = ()  # Inductor parameters the kernel writes
    write_only: tuple[str, ...] = ()  # outputs it never reads (made-up inputs leave them zero)


@functools.lru_cache(maxsize=1)
def timing_source() -> str:
    """The marked timing section of harvest/timing.py, pasted into every module: its --bench times with the same
    lines as `harvest bench` (read as text: importing harvest.timing would import torch here)."""
    text = (Path(__file__).resolve().parent / "timing.py").read_text(encoding="utf-8")
    return text[text.index("# >>> timing") : text.index("# <<< timing") + len("# <<< timing")]


def next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


@dataclass(frozen=True)
class Layout:
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int


def reinterpret_layout(expr: str, hints: dict) -> tuple[str, Layout] | None:
    """`reinterpret_tensor(buf4, (2048, 512), (512, 1), 0)` -> ("buf4", layout)."""
    try:
        node = cst.parse_expression(expr)
    except cst.ParserSyntaxError:
        return None
    if not m.matches(node, m.Call(func=m.Name("reinterpret_tensor"))):
        return None
    call = cst.ensure_type(node, cst.Call)
    parts = [cst.Module([]).code_for_node(arg.value) for arg in call.args]
    if len(parts) < 3:
        return None
    shape = _resolve_sizes(parts[1], hints)
    stride = _resolve_sizes(parts[2], hints)
    offset = evaluate(parts[3], hints) if len(parts) > 3 else 0
    if shape is None or stride is None or offset is None:
        return None
    return parts[0], Layout(shape, stride, int(offset))


def _resolve_sizes(text: str, hints: dict) -> tuple[int, ...] | None:
    node = cst.parse_expression(text)
    if not isinstance(node, cst.Tuple):
        return None
    values = [evaluate(cst.Module([]).code_for_node(e.value), hints) for e in node.elements]
    return None if any(v is None for v in values) else tuple(int(v) for v in values)  # type: ignore[arg-type]


def _meta_layout(meta: TensorMeta, hints: dict, offset: int | str = 0) -> Layout | None:
    shape = [evaluate(str(s), hints) for s in meta.shape]
    stride = [evaluate(str(s), hints) for s in meta.stride]
    off = evaluate(str(offset), hints)
    if any(v is None for v in shape + stride) or off is None:
        return None
    return Layout(tuple(int(v) for v in shape), tuple(int(v) for v in stride), int(off))  # type: ignore[arg-type]


def index_bounds(kernel_source: str) -> int | None:
    """Smallest upper bound of Inductor's indirect-indexing asserts ("index out of bounds: 0 <= tmp6 < 1000")."""
    bounds = [int(b) for b in re.findall(r"index out of bounds: 0 <= \w+ < (\d+)", kernel_source)]
    return min(bounds) if bounds else None


@dataclass(frozen=True)
class Argument:
    """One launch argument as the generated module builds it: a view of one of the storages, or a scalar."""

    param: str  # name in the module
    inductor_param: str
    storage: int | None = None
    shape: tuple[int, ...] = ()
    stride: tuple[int, ...] = ()
    offset: int = 0
    dtype: str = ""  # "torch.float32"
    value: int | float | bool | None = None
    note: str = ""

    @property
    def is_tensor(self) -> bool:
        return self.storage is not None

    def line(self) -> str:
        if self.is_tensor:
            return f'"{self.param}": View({self.storage}, {self.shape}, {self.stride}, {self.offset}, {self.dtype}),'
        return f'"{self.param}": {self.value!r},' + (f"  # {self.note}" if self.note else "")


@dataclass(frozen=True)
class ArgumentPlan:
    arguments: tuple[Argument, ...]
    storages: tuple[tuple[int, int], ...]  # (lo, hi): the bytes of each storage the arguments view
    recorded: bool  # layouts and values come from the run's record (else from the wrapper's text)


def _extent_bytes(shape: tuple[int, ...], stride: tuple[int, ...], offset: int, itemsize: int) -> tuple[int, int]:
    if any(size == 0 for size in shape):
        return offset * itemsize, offset * itemsize
    extent = 1 + sum((size - 1) * abs(step) for size, step in zip(shape, stride))
    return offset * itemsize, (offset + extent) * itemsize




def def_constexprs(kernel: Kernel) -> set[str]:
    """Parameters the kernel's def annotates `tl.constexpr` (block sizes): the only ones not passed positionally."""
    tree = kernel_trees(kernel.source).ast
    if tree is None:
        return {p for p, kind in kernel.signature.items() if kind == "constexpr"}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == kernel.name:
            return {a.arg for a in node.args.args if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)}
    return {p for p, kind in kernel.signature.items() if kind == "constexpr"}


def runtime_params(kernel: Kernel) -> list[str]:
    """Parameters launch() passes positionally, as Inductor does: all but the def's constexpr block sizes (a size
    Inductor made a compile-time constant, like `xnumel = 1`, is still an ordinary argument of the def)."""
    constexprs = def_constexprs(kernel)
    return [p for p in kernel.signature if p not in constexprs]


def unspecialized_params(kernel: Kernel) -> list[str]:
    """Launch parameters Inductor compiled with no specialization (no divisible-by-16 assumption): dynamic sizes
    such as ks0, and pointers it could not prove aligned. Triton's jit would specialize them on their values at
    run time and can then emit other code (another vector width, another order of a reduction's additions): the
    module opts out for the same ones, so that it compiles what Inductor compiled."""
    if not kernel.configs or not isinstance(kernel.configs[0], dict):
        return []
    specialized: set[int] = set()
    for key in kernel.configs[0]:
        specialized.update(int(i) for i in re.findall(r"\d+", str(key)))
    order = list(kernel.signature)
    return [p for p in runtime_params(kernel) if order.index(p) not in specialized]


def specialize_like_inductor(kernel_code: str, kernel_name: str, params: list[str]) -> str:
    """`@triton.jit` -> `@triton.jit(do_not_specialize=[...])` on the kernel's def (see unspecialized_params)."""
    if not params:
        return kernel_code
    plain = f"@triton.jit\ndef {kernel_name}("
    if plain not in kernel_code:
        return kernel_code
    comment = "# Not specialized on their values, as Inductor compiled it (the same code for every value):\n"
    return kernel_code.replace(plain, f"{comment}@triton.jit(do_not_specialize={params!r})\ndef {kernel_name}(", 1)


def plan_arguments(ctx: ModuleContext, rename: dict[str, str]) -> ArgumentPlan:
    if ctx.recorded is not None:
        return _recorded_arguments(ctx, rename)
    return _static_arguments(ctx, rename)


def _recorded_arguments(ctx: ModuleContext, rename: dict[str, str]) -> ArgumentPlan:
    recorded = ctx.recorded
    assert recorded is not None
    arguments = []
    for param in runtime_params(ctx.kernel):
        new = rename.get(param, param)
        arg = recorded.arg(param)
        if arg is None:
            raise RenderError(f"the recorded launch of {ctx.kernel.name} has no argument {param}")
        if arg.view is not None:
            v = arg.view
            arguments.append(Argument(new, param, v.storage, v.shape, v.stride, v.offset, "torch." + v.dtype))
        elif arg.value is None:
            raise RenderError(f"the recorded launch passed {param} an object harvest cannot write down")
        else:
            kind = ctx.kernel.signature.get(param, "")
            value = float(arg.value) if kind.startswith("fp") else arg.value
            arguments.append(Argument(new, param, value=value))
    return ArgumentPlan(tuple(arguments), tuple((s.lo, s.hi) for s in recorded.storages), recorded=True)


def _static_arguments(ctx: ModuleContext, rename: dict[str, str]) -> ArgumentPlan:
    """Layouts read from the wrapper's text (artifacts without a run): one storage per distinct buffer."""
    kernel, graph = ctx.kernel, ctx.graph
    hints = dict(graph.scalar_values)
    bound = {arg.param: arg for arg in ctx.launch.args}
    storages: list[tuple[int, int]] = []
    storage_of: dict[str, int] = {}
    arguments = []
    for param in runtime_params(kernel):
        kind = kernel.signature[param]
        new = rename.get(param, param)
        arg: LaunchArg | None = bound.get(param)
        if arg is None:
            raise RenderError(f"launch of {kernel.name} binds no value to parameter {param}")
        if kind.startswith("*"):
            name = triton_pointer_dtype(kind)
            dtype = f"torch.{name}" if name else None
            if dtype is None:
                raise RenderError(f"pointer type {kind} of {param} has no torch dtype")
            layout = tensor_layout(arg, graph, hints)
            if layout is None:
                raise RenderError(f"no concrete shape/stride for {param} = {arg.expr} in the wrapper's text (no run was recorded)")
            lo, hi = _extent_bytes(layout.shape, layout.stride, layout.offset, ITEMSIZE.get(dtype.removeprefix('torch.'), 4))
            base = arg.buffer or arg.expr
            if base not in storage_of:
                storage_of[base] = len(storages)
                storages.append((lo, hi))
            index = storage_of[base]
            storages[index] = (min(storages[index][0], lo), max(storages[index][1], hi))
            arguments.append(Argument(new, param, index, layout.shape, layout.stride, layout.offset, dtype))
        else:
            value = arg.value if arg.value is not None else evaluate(arg.expr, hints)
            note = ""
            if value is None and arg.expr.endswith(".item()"):
                value = 0.5 if kind.startswith("fp") else 1
                note = f"the value of {arg.expr} is known only at run time; {value} stands in"
            if value is None:
                raise RenderError(f"no concrete value for {param} = {arg.expr} in the wrapper's text (no run was recorded)")
            if kind.startswith("fp"):
                value = float(value)
            arguments.append(Argument(new, param, value=value, note=note))
    return ArgumentPlan(tuple(arguments), tuple(storages), recorded=False)


def tensor_layout(arg: LaunchArg, graph: Graph, hints: dict) -> Layout | None:
    view = reinterpret_layout(arg.expr, hints)
    if view is not None:
        return view[1]
    name = arg.buffer or arg.expr
    buffer = graph.buffers.get(name)
    if buffer is None:
        return None
    return _meta_layout(buffer.meta, hints, buffer.offset)


def build_config(ctx: ModuleContext, rename: dict[str, str], values: dict[str, int]) -> tuple[dict, str]:
    """Constexpr block sizes, num_warps and num_stages: the captured autotune winner, else a documented default."""
    kernel = ctx.kernel
    constexprs = [p for p in kernel.signature if p in def_constexprs(kernel)]
    recorded = ctx.recorded.config if ctx.recorded is not None else None
    if recorded is not None:
        config = {rename.get(k, k): v for k, v in recorded["kwargs"].items() if k in constexprs}
        config.update(num_warps=recorded["num_warps"], num_stages=recorded["num_stages"])
        origin = f"recorded in the run; chosen by {recorded['chosen_by']}"
    elif ctx.winner is not None:
        config = {rename.get(k, k): v for k, v in ctx.winner.kwargs.items() if k in constexprs}
        config.update(num_warps=ctx.winner.num_warps, num_stages=ctx.winner.num_stages)
        origin = f"chosen by {ctx.winner.chosen_by}"
    else:
        xnumel = values.get("xnumel", 1)
        config = {}
        for p in constexprs:
            if p == "XBLOCK":
                config[rename.get(p, p)] = 1 if kernel.kind != "pointwise" else min(1024, next_power_of_2(xnumel))
            elif p == "YBLOCK":
                config[rename.get(p, p)] = min(32, next_power_of_2(values.get("ynumel", 1)))
            elif re.fullmatch(r"R\d_BLOCK|RBLOCK", p):
                config[rename.get(p, p)] = min(1024, next_power_of_2(values.get(p.replace("_BLOCK", "_numel").lower(), values.get("rnumel", 1))))
        config.update(num_warps=4 if kernel.kind == "pointwise" else 8, num_stages=1)
        origin = "no autotune record in the capture: harvest's default"
    for name, value in kernel.constants.items():  # compile-time constants Inductor passes by name
        if name in constexprs and isinstance(value, (int, float, bool)):
            config.setdefault(rename.get(name, name), value)
    missing = [p for p in constexprs if rename.get(p, p) not in config and p not in kernel.constants]
    if missing:
        where = "" if recorded is not None or ctx.winner is not None else " (no run was recorded: no config to take it from; --run-artifact records one)"
        raise RenderError(f"no value for constexpr parameter(s) {', '.join(missing)}{where}")
    return config, origin


def _body_constant(kernel: Kernel, name: str) -> int | None:
    """`xnumel = 2048` written inside the kernel body (a size Inductor baked in)."""
    match = re.search(rf"^\s+{name} = (\d+)\s*$", kernel.source, flags=re.M)
    return int(match.group(1)) if match else None


def build_grid(kernel: Kernel, rename: dict[str, str], values: dict[str, int | float | bool], config: dict,
               recorded_grid: tuple[int, ...] | None) -> tuple[str, str]:
    """The launch grid as an expression of launch()'s parameters and the config, and a note when it is not.

    Follows Inductor's Grid1D/Grid2D: cdiv(numel, BLOCK) per axis, one program per row when the kernel has no BLOCK
    for the axis. A size that is not a parameter of launch() is written as its value. When the recorded grid of the
    run disagrees with this (a grid type harvest does not model), the recorded grid is used as it is.
    """
    grid_type = str(kernel.inductor_meta.get("grid_type", ""))
    params = set(runtime_params(kernel))

    def axis(numel: str, block: str) -> tuple[str, int | None]:
        value = values.get(numel)
        if value is None:
            value = _body_constant(kernel, numel)
        if numel in params:
            text = rename.get(numel, numel)
        elif value is not None:
            text = str(value)
        else:
            return "", None
        block_value = config.get(rename.get(block, block))
        if block not in kernel.signature:  # no_x_dim kernels: one program per row
            return text, value
        number = None if value is None or block_value is None else -(-int(value) // int(block_value))
        return f'triton.cdiv({text}, config["{rename.get(block, block)}"])', number

    dims = [axis("xnumel", "XBLOCK")]
    if "ynumel" in kernel.signature and (grid_type == "Grid2D" or "YBLOCK" in kernel.signature):
        dims.append(axis("ynumel", "YBLOCK"))
    if "znumel" in kernel.signature:
        dims.append(axis("znumel", "ZBLOCK"))
    computed = [n for _, n in dims]
    modelled = grid_type in SUPPORTED_GRIDS and all(text for text, _ in dims)
    if recorded_grid is not None:
        want = list(recorded_grid) + [1] * (3 - len(recorded_grid))
        got = computed + [1] * (3 - len(computed))
        if not modelled or got != want:
            return repr(tuple(want)), f"grid {tuple(want)} as recorded in the run (harvest does not model {grid_type or 'this'} grids; change it with the config)"
    if not modelled:
        raise RenderError(f"cannot compute the launch grid ({grid_type or 'unknown'} grid type) and no grid was recorded")
    return "(" + ", ".join(text for text, _ in dims) + ",)", ""


class _RenameReference(cst.CSTTransformer):
    """Rename the reference's parameters and result keys to the module's parameter names."""

    def __init__(self, rename: dict[str, str]):
        self.rename = rename

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        return updated_node.with_changes(value=self.rename.get(updated_node.value, updated_node.value))

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString) -> cst.SimpleString:
        inner = updated_node.evaluated_value
        if isinstance(inner, str) and inner in self.rename:
            return updated_node.with_changes(value=repr(self.rename[inner]).replace("'", '"'))
        return updated_node


def split_imports(code: str) -> tuple[list[str], str]:
    """Module-level imports of the kernel code (to merge at the top) and the rest."""
    module = cst.parse_module(code)
    imports, body = [], []
    for statement in module.body:
        if m.matches(statement, m.SimpleStatementLine(body=[m.Import() | m.ImportFrom()])):
            imports.append(module.code_for_node(statement).strip())
        else:
            body.append(statement)
    return imports, module.with_changes(body=body, header=[]).code.strip()


BASE_IMPORTS = {"import argparse", "import os", "import sys", "import torch", "import triton", "import triton.language as tl"}


def storage_lines(plan: ArgumentPlan, ctx: ModuleContext) -> list[str]:
    """One `Storage(lo, hi, fill, high)` line per storage: values drawn in the dtype of its first view that is read."""
    high = index_bounds(ctx.kernel.source)
    lines = []
    for index, (lo, hi) in enumerate(plan.storages):
        views = [a for a in plan.arguments if a.storage == index]
        read = [a for a in views if a.inductor_param not in ctx.write_only]
        fill = read[0].dtype if read else "None"
        bound = high if read and fill.startswith("torch.int") and high is not None else None
        lines.append(f"Storage({lo}, {hi}, {fill}, {bound}),  # {', '.join(a.param for a in views)}")
    return lines


def render_kernel_module(ctx: ModuleContext) -> str:
    """The module's source, compiled once to prove it is valid Python."""
    rename = dict(ctx.code.params)
    plan = plan_arguments(ctx, rename)
    arguments = plan.arguments
    values = {a.inductor_param: a.value for a in arguments if not a.is_tensor and a.value is not None}
    config, config_origin = build_config(ctx, rename, values)
    grid, grid_note = build_grid(ctx.kernel, rename, values, config, ctx.recorded.grid if ctx.recorded else None)

    imports, kernel_code = split_imports(ctx.code.code)
    unspecialized = [rename.get(p, p) for p in unspecialized_params(ctx.kernel)]
    kernel_code = specialize_like_inductor(kernel_code, ctx.code.kernel_name, unspecialized)
    extra_imports = sorted(set(imports) - BASE_IMPORTS)
    # the interpreter shim: for libdevice calls, and for Inductor's helpers on triton <= 3.3 (max2 -> tl.int1 zeros)
    needs_shim = re.search(r"\b(libdevice|triton_helpers)\.", kernel_code) is not None
    if needs_shim and not any("libdevice" in line for line in extra_imports):
        extra_imports.append("from triton.language.extra import libdevice")

    reference_tree = cst.parse_module(ctx.reference.source).visit(_RenameReference(rename))
    reference_params = [rename.get(p, p) for p in ctx.reference.params]
    unchecked = {rename.get(p, p): reason for p, reason in ctx.reference.unchecked}
    names = [f"{new} <- {old}" + (f"  [{node}]" if node else "") for new, old, node in ctx.code.mapping if new != old]
    notes = list(ctx.notes) + list(ctx.code.warnings)
    notes += [f"{a.param}: {a.note}" for a in arguments if a.note]
    if grid_note:
        notes.append(grid_note)
    outputs = [rename.get(p, p) for p in ctx.outputs]
    if plan.recorded:
        origin = "as recorded in the real run"
        recorded = ctx.recorded
        assert recorded is not None
        if recorded.launches > 1:
            origin += f" (its first of {recorded.launches} launches in this graph"
            origin += f", {recorded.distinct} distinct)" if recorded.distinct > 1 else ", all alike)"
        if not ctx.record_path:
            notes.append(f"no data recorded for this launch: {recorded.data_note or 'layouts only'}; --check uses made-up inputs")
    else:
        origin = "as read from the wrapper's text (no run was recorded: an artifact target)"
    kernel_sha = hashlib.sha256(kernel_code.strip().encode("utf-8")).hexdigest()

    source = load_template("kernel.py.j2").render(
        title=f"{ctx.code.kernel_name}: {ctx.kernel.kind} kernel" + (f" fusing {', '.join(ctx.aten_ops)}" if ctx.aten_ops else ""),
        target=ctx.target,
        graph_name=ctx.graph_name,
        inductor_name=ctx.kernel.name,
        kind=ctx.kernel.kind,
        aten_ops=", ".join(ctx.aten_ops),
        source_lines=list(ctx.source_lines),
        torch_version=ctx.torch_version,
        triton_version=ctx.triton_version,
        device=ctx.device,
        command=ctx.command,
        module_path=ctx.module_path,
        names=names,
        notes=notes,
        extra_imports=extra_imports,
        shim=SHIM_SOURCE.strip() if needs_shim else "",
        timing=timing_source(),
        kernel_code=kernel_code,
        config_origin=config_origin,
        config=pprint.pformat(config, sort_dicts=False, width=100),
        launch_params=", ".join(a.param for a in arguments),
        kernel_name=ctx.code.kernel_name,
        grid=grid,
        kernel_args=", ".join(a.param for a in arguments),
        input_lines=[a.line() for a in arguments],
        storage_lines=storage_lines(plan, ctx),
        outputs=repr(outputs),
        record_path=repr(ctx.record_path) if ctx.record_path else "None",
        record_device=repr(ctx.record_device) if ctx.record_path else "None",
        kernel_sha=kernel_sha,
        exact_possible=repr(not re.search(r"\batomic_\w+\(", kernel_code)),
        arguments_origin=origin,
        reference_code=reference_tree.code.strip(),
        reference_params=repr(reference_params),
        unchecked=pprint.pformat(unchecked, sort_dicts=True, width=100),
        split_outputs=bool(ctx.reference.split_outputs),
    )
    compile(source, ctx.module_path, "exec")
    return source
