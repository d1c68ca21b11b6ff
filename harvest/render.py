"""Render one standalone kernel module: kernel, launcher, make_inputs, eager reference, a checking __main__.

Pure: `render_kernel_module(context) -> str`. The module reads like Triton's tutorial 01 and imports only torch and
triton (plus Inductor's triton_helpers where a kernel needs a helper plain Triton lacks).
"""

from __future__ import annotations

import pprint
import re
from dataclasses import dataclass, field

import libcst as cst
import libcst.matchers as m

from harvest.errors import HarvestError
from harvest.interpret_shim import SHIM_SOURCE
from harvest.model import AutotuneWinner, Graph, Kernel, Launch, LaunchArg, TensorMeta
from harvest.resources import load_template
from harvest.shapes import evaluate

TORCH_DTYPES = {
    "fp32": "torch.float32", "fp16": "torch.float16", "bf16": "torch.bfloat16", "fp64": "torch.float64",
    "i64": "torch.int64", "i32": "torch.int32", "i16": "torch.int16", "i8": "torch.int8", "u8": "torch.uint8",
    "i1": "torch.bool", "u1": "torch.bool", "fp8e4nv": "torch.float8_e4m3fn", "fp8e5": "torch.float8_e5m2",
}
SUPPORTED_GRIDS = ("Grid1D", "Grid2D", "")


class RenderError(HarvestError):
    """A kernel that cannot be rendered as a standalone module (the reason goes into the manifest)."""


@dataclass(frozen=True)
class KernelCode:
    """The kernel function to embed: renamed (or not), decorator-free, with the imports it needs."""

    code: str
    kernel_name: str
    params: tuple[tuple[str, str], ...]  # (Inductor parameter, parameter in this module), in order
    names: tuple[tuple[str, str, str], ...] = ()  # (new, Inductor, FX node) for the header table
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReferenceCode:
    """The eager reference: a function `reference(<params>) -> dict[output param, tensor]` (Inductor names)."""

    source: str
    params: tuple[str, ...]
    unchecked: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ModuleContext:
    target: str
    graph_name: str
    module_path: str  # where the module will live, for the header's run lines
    kernel: Kernel
    launch: Launch
    graph: Graph
    code: KernelCode
    reference: ReferenceCode
    winner: AutotuneWinner | None
    torch_version: str
    triton_version: str
    device: str
    command: str
    source_lines: tuple[str, ...] = ()
    aten_ops: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)


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
    """One launch argument as the generated module builds it."""

    param: str  # name in the module
    inductor_param: str
    line: str  # the make_inputs line that defines it


def build_arguments(ctx: ModuleContext, rename: dict[str, str]) -> list[Argument]:
    """make_inputs lines for every non-constexpr kernel parameter, from the launch's bindings."""
    kernel, graph = ctx.kernel, ctx.graph
    hints = dict(graph.scalar_values)
    bound = {arg.param: arg for arg in ctx.launch.args}
    high = index_bounds(kernel.source)
    seen_buffers: dict[tuple, str] = {}
    arguments = []
    for param, kind in kernel.signature.items():
        if kind == "constexpr":
            continue
        new = rename.get(param, param)
        arg: LaunchArg | None = bound.get(param)
        if arg is None:
            raise RenderError(f"launch of {kernel.name} binds no value to parameter {param}")
        if kind.startswith("*"):
            dtype = TORCH_DTYPES.get(kind[1:])
            if dtype is None:
                raise RenderError(f"pointer type {kind} of {param} has no torch dtype")
            layout = tensor_layout(arg, graph, hints)
            if layout is None:
                raise RenderError(f"no concrete shape/stride for {param} = {arg.expr}")
            key = (arg.buffer or arg.expr, layout)
            if key in seen_buffers:  # the same tensor passed twice: keep the aliasing
                arguments.append(Argument(new, param, f"{new} = {seen_buffers[key]}"))
                continue
            seen_buffers[key] = new
            shape, stride, offset = layout.shape, layout.stride, layout.offset
            if param.startswith("out_ptr"):
                line = f"{new} = _zeros({shape}, {stride}, {dtype}, device, offset={offset})"
            else:
                bounds = f", low=0, high={high}" if high is not None and dtype not in ("torch.bool",) and "int" in dtype else ""
                line = f"{new} = _random({shape}, {stride}, {dtype}, device, generator, offset={offset}{bounds})"
            arguments.append(Argument(new, param, line))
        else:
            value = arg.value if arg.value is not None else evaluate(arg.expr, hints)
            if value is None and arg.expr.endswith(".item()"):
                value = 0.5 if kind.startswith("fp") else 1
                ctx_note = f"{new}: the captured value of {arg.expr} is not recorded; {value} is used"
                arguments.append(Argument(new, param, f"{new} = {value!r}  # {ctx_note}"))
                continue
            if value is None:
                raise RenderError(f"no concrete value for {param} = {arg.expr}")
            if kind.startswith("fp"):
                value = float(value)
            arguments.append(Argument(new, param, f"{new} = {value!r}"))
    return arguments


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
    constexprs = [p for p, kind in kernel.signature.items() if kind == "constexpr"]
    if ctx.winner is not None:
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
    missing = [p for p in constexprs if rename.get(p, p) not in config]
    if missing:
        raise RenderError(f"no value for constexpr parameter(s) {', '.join(missing)}")
    return config, origin


def build_grid(kernel: Kernel, rename: dict[str, str]) -> str:
    grid_type = str(kernel.inductor_meta.get("grid_type", ""))
    if grid_type not in SUPPORTED_GRIDS:
        raise RenderError(f"grid type {grid_type} is not supported by standalone modules yet")

    def axis(numel: str, block: str) -> str:
        if block not in kernel.signature:  # no_x_dim kernels: one program per row
            return rename.get(numel, numel)
        return f'triton.cdiv({rename.get(numel, numel)}, config["{rename.get(block, block)}"])'

    dims = [axis("xnumel", "XBLOCK")]
    if "ynumel" in kernel.signature and (grid_type == "Grid2D" or "YBLOCK" in kernel.signature):
        dims.append(axis("ynumel", "YBLOCK"))
    if "znumel" in kernel.signature:
        raise RenderError("3-D grids (znumel) are not supported by standalone modules yet")
    return "(" + ", ".join(dims) + ",)"


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


def render_kernel_module(ctx: ModuleContext) -> str:
    """The module's source, compiled once to prove it is valid Python."""
    rename = dict(ctx.code.params)
    arguments = build_arguments(ctx, rename)
    values: dict[str, int] = {}
    for argument in arguments:
        match = re.fullmatch(r"\w+ = (-?\d+)", argument.line)
        if match:
            values[argument.inductor_param] = int(match.group(1))
    config, config_origin = build_config(ctx, rename, values)
    grid = build_grid(ctx.kernel, rename)

    imports, kernel_code = split_imports(ctx.code.code)
    extra_imports = sorted(set(imports) - BASE_IMPORTS)
    uses_libdevice = re.search(r"\blibdevice\.", kernel_code) is not None
    if uses_libdevice and not any("libdevice" in line for line in extra_imports):
        extra_imports.append("from triton.language.extra import libdevice")

    reference_tree = cst.parse_module(ctx.reference.source).visit(_RenameReference(rename))
    reference_params = [rename.get(p, p) for p in ctx.reference.params]
    unchecked = {rename.get(p, p): reason for p, reason in ctx.reference.unchecked}
    names = [f"{new} <- {old}" + (f"  [{node}]" if node else "") for new, old, node in ctx.code.names if new != old]
    notes = list(ctx.notes) + list(ctx.code.warnings)
    notes += [line.split("# ", 1)[1] for line in (a.line for a in arguments) if "# " in line]

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
        shim=SHIM_SOURCE.strip() if uses_libdevice else "",
        kernel_code=kernel_code,
        config_origin=config_origin,
        config=pprint.pformat(config, sort_dicts=False, width=100),
        launch_params=", ".join(a.param for a in arguments),
        kernel_name=ctx.code.kernel_name,
        grid=grid,
        kernel_args=", ".join(a.param for a in arguments),
        input_lines=[a.line for a in arguments],
        input_dict=[(a.param, a.param) for a in arguments],
        reference_code=reference_tree.code.strip(),
        reference_params=repr(reference_params),
        unchecked=pprint.pformat(unchecked, sort_dicts=True, width=100),
    )
    compile(source, ctx.module_path, "exec")
    return source
