"""Read one Inductor wrapper module (an output_code.py) into the typed model.

Pure: a string in, a `Graph` out; no disk, no torch. The code is read with libcst. Only the comment block Inductor
writes above each kernel (source nodes, ATen mapping, graph fragment) is read with regular expressions.

Handles torch 2.4 to 2.13 wrappers: `def call(args)` or `Runner.call(self, args)`, graph partitions called from call,
`with torch.cuda._DeviceGuard(...)` nesting, list or dict `size_hints`, int- or name-keyed signatures, `grid=grid(n)`.
Python scalars passed to call() (`arg0_1 = 64` in get_args) are not buffers: they are in `Graph.inputs`, their size
symbols in `Graph.symbols`, and their example values in `Graph.scalar_values`.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import libcst as cst
import libcst.matchers as m
from libcst.helpers import get_full_name_for_node

from harvest.dtypes import FX_DTYPES
from harvest.errors import ParseError
from harvest.model import (
    Buffer,
    ExternCall,
    FxNode,
    Graph,
    GraphRole,
    Kernel,
    KernelComment,
    KernelKind,
    Launch,
    LaunchArg,
    TensorMeta,
)
from harvest.syntax import kernel_trees

__all__ = ["parse_output_code", "parse_tensor_meta"]

# -- statements of the wrapper, as matchers --------------------------------------------------------------------------

KERNEL_DEF = m.Assign(
    targets=[m.AssignTarget(m.Name())],
    value=m.Call(func=m.Attribute(value=m.Name("async_compile"), attr=m.Name("triton"))),
)
ARGS_UNPACK = m.Assign(targets=[m.AssignTarget(m.Tuple() | m.List())], value=m.Name("args"))
ARGS_CLEAR = m.Call(func=m.Attribute(value=m.Name("args"), attr=m.Name("clear")))
ASSERT_SIZE_STRIDE = m.Call(func=m.Name("assert_size_stride"))
# torch 2.14: one call for several inputs, assert_size_stride_grouped((a, b), (shape_a, shape_b), (stride_a, stride_b), 'input')
ASSERT_SIZE_STRIDE_GROUPED = m.Call(func=m.Name("assert_size_stride_grouped"))
HOUSEKEEPING_CALL = m.Call(
    func=m.Name("assert_alignment")
    | m.Attribute(attr=m.Name("set_device"))
    | m.Attribute(attr=m.Name("synchronize"))
    | m.Name("run_intermediate_hooks")
)
STREAM = m.Call(func=m.Name("get_raw_stream"))
ALLOCATION = m.Call(func=m.Name(value=m.MatchRegex(r"empty_strided(_\w+)?")))
REINTERPRET = m.Call(func=m.Name("reinterpret_tensor"), args=[m.Arg(m.Name()), m.ZeroOrMore()])
LAUNCH = m.Call(func=m.Attribute(value=m.Name(), attr=m.Name("run")))
PARTITION_CALL = m.Call(
    func=m.Subscript(value=m.Name("partitions") | m.Attribute(value=m.Name("self"), attr=m.Name("partitions")))
    | m.Name(value=m.MatchRegex(r"partition_\d+"))
)
PARTITION_ARGS = m.Assign(targets=[m.AssignTarget(m.Name(value=m.MatchRegex(r"partition\d+_args")))])
HEURISTIC = m.Call(func=m.Attribute(value=m.Name("triton_heuristics")))
CONSTEXPR = m.Annotation(
    m.Attribute(value=m.Name("tl"), attr=m.Name("constexpr")) | m.Name("constexpr") | m.SimpleString('"tl.constexpr"')
)
KEYWORD_RECORD = m.Name("DeviceProperties") | m.Name("AttrsDescriptor") | m.Name("instance_descriptor")
# How Inductor's wrapper defines kernels, by backend: any other `name = async_compile.<x>(` is a format harvest does not know.
KNOWN_COMPILERS = {"triton", "cpp", "cpp_pybinding", "cuda", "rocm", "halide", "mps"}
UNKNOWN_COMPILER_RE = re.compile(r"^\w+ = async_compile\.(\w+)\(", re.M)
EXTERN_ROOTS = ("extern_kernels", "aten", "prims", "inductor_ops", "_quantized", "torch.ops")

# -- kernel kinds ----------------------------------------------------------------------------------------------------

KIND_BY_HEURISTIC: dict[str, KernelKind] = {
    "pointwise": "pointwise",
    "reduction": "reduction",
    "persistent_reduction": "persistent_reduction",
    "template": "template",
    "foreach": "foreach",
    "user_autotune": "user",
}
KIND_BY_PREFIX: dict[str, KernelKind] = {
    "triton_poi": "pointwise",
    "triton_red": "reduction",
    "triton_per": "persistent_reduction",
    "triton_tem": "template",
    "triton_for": "foreach",
}
REASON_BY_KIND: dict[str, str] = {
    "template": "template kernel (max-autotune template such as mm: needs its autotuning harness)",
    "foreach": "foreach/combo kernel (several sub-kernels in one launch)",
    "user": "user-defined Triton kernel (already standalone in the user's code)",
}
SIZE_HINT_PREFIXES = "zyx"

# -- tensor meta in comments -----------------------------------------------------------------------------------------

META_RE = re.compile(r"^(?P<dtype>\w+)\[(?P<shape>[^\]]*)\]\[(?P<stride>[^\]]*)\](?P<device>.*)$")
SOURCE_NODES_RE = re.compile(r"Source Nodes: \[(?P<nodes>.*?)\], Original ATen: \[(?P<aten>.*?)\]")
FX_NODE_RE = re.compile(
    r"^%(?P<name>[\w.]+) : (?P<type>.*?)(?:\[num_users=(?P<users>\d+)\])? = "
    r"(?P<op>\w+)\[target=(?P<target>[^\]]*)\](?:\(args = \((?P<args>.*)\), kwargs = \{(?P<kwargs>.*)\}\))?$"
)
TENSOR_TYPE_RE = re.compile(r'Tensor "(?P<meta>[^"]*)"')
AOT_ID_RE = re.compile(r"^#\s*AOT ID:\s*(?P<ids>\[.*\])")


def parse_output_code(source: str, name: str = "g0_unknown", role: GraphRole = "unknown") -> Graph:
    """Parse an Inductor output_code.py into a `Graph`; raise `ParseError` (one line) when it is not one."""
    module = _parse_module(source)
    gathered = _ModuleGatherer()
    module.visit(gathered)
    unknown = sorted(set(UNKNOWN_COMPILER_RE.findall(source)) - KNOWN_COMPILERS)
    if unknown:  # a newer Inductor's format: say what was found rather than extract nothing
        found = ", ".join(f"async_compile.{name}(...)" for name in unknown)
        raise ParseError(
            f"unknown output_code format: kernels defined with {found}, which this harvest (Inductor of torch 2.4 to "
            "2.14) does not read; use a torch in that range, or report it with the file"
        )
    call_name = _find_call(gathered.functions)
    if call_name is None:
        raise ParseError(
            "no call() function found: is this an Inductor output_code.py? "
            "Expected `def call(args)` or `class Runner` with `def call(self, args)`; pass the file Inductor wrote"
        )
    kernels_by_name = {
        kernel_name: _read_kernel(kernel_name, triton_call, _read_comment(comments))
        for kernel_name, triton_call, comments in gathered.kernel_defs
    }
    kernels = [kernel for kernel, _ in kernels_by_name.values()]

    # newer torch writes get_args(); older versions built the example inputs inside benchmark_compiled_module()
    examples, scalars = _read_get_args(
        gathered.functions.get("get_args") or gathered.functions.get("benchmark_compiled_module")
    )
    placeholders = {
        node.name: node.meta
        for kernel in kernels
        for node in kernel.comment.fragment
        if node.op == "placeholder" and node.meta is not None
    }
    reader = _CallReader(gathered.functions, kernels_by_name, examples, scalars, placeholders)
    reader.read(call_name, top=True)
    return Graph(
        name=name,
        role=role,
        kernels=tuple(kernels),
        launches=tuple(reader.launches),
        buffers=reader.buffers,
        inputs=tuple(reader.inputs),
        outputs=tuple(reader.outputs),
        externs=tuple(reader.externs),
        symbols=tuple(reader.symbols),
        aot_id=_read_aot_id(source),
        unparsed=tuple(reader.unparsed),
        scalar_values=reader.scalar_values(),
    )


def parse_tensor_meta(text: str) -> TensorMeta:
    """`"f32[8, 256, 1][256, 1, 2048]cuda:0"` -> TensorMeta; symbolic sizes (`s0`, `2*s0`) stay strings."""
    match = META_RE.match(text.strip())
    if match is None:
        raise ValueError(f"not a tensor meta string: {text!r}")
    dtype = match["dtype"]
    return TensorMeta(
        shape=_split_sizes(match["shape"]),
        stride=_split_sizes(match["stride"]),
        dtype=FX_DTYPES.get(dtype, dtype),
        device=match["device"].split(":")[0],
    )


# -- module level ----------------------------------------------------------------------------------------------------


def _parse_module(source: str) -> cst.Module:
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise _syntax_error(source, exc) from exc


def _syntax_error(source: str, exc: cst.ParserSyntaxError) -> ParseError:
    """Say whether the file was cut short inside a kernel string, or where it stops being Python."""
    unclosed = _unclosed_kernel_string(source)
    if unclosed is not None:
        name, line_no = unclosed
        return ParseError(
            f"truncated: async_compile.triton(...) string for {name} is not closed (opened at line {line_no});"
            " the file was cut short, capture it again"
        )
    line, message = exc.raw_line, exc.message.splitlines()[0] if exc.message else "syntax error"
    try:
        compile(source, "output_code.py", "exec", flags=ast.PyCF_ONLY_AST)
    except SyntaxError as py_exc:  # CPython's message names the real problem ("'(' was never closed")
        line, message = py_exc.lineno or line, py_exc.msg
    return ParseError(f"not valid Python at line {line}: {message}; pass the untouched output_code.py Inductor wrote")


def _unclosed_kernel_string(source: str) -> tuple[str, int] | None:
    """(kernel name, line) when the source ends inside the string of a `name = async_compile.triton(...)` line."""
    try:
        for _ in tokenize.generate_tokens(io.StringIO(source).readline):
            pass
    except tokenize.TokenError as exc:  # ("EOF in multi-line string", (line where the string opens, column))
        line_no = exc.args[1][0] if len(exc.args) > 1 else 0
        lines = source.splitlines()
        if not 0 < line_no <= len(lines):
            return None
        try:  # close the string and read that one line as a statement
            statement = cst.parse_statement(lines[line_no - 1] + "''')\n")
        except cst.ParserSyntaxError:
            return None
        if m.matches(statement, m.SimpleStatementLine(body=[KERNEL_DEF])):
            assign = cst.ensure_type(cst.ensure_type(statement, cst.SimpleStatementLine).body[0], cst.Assign)
            return cst.ensure_type(assign.targets[0].target, cst.Name).value, line_no
    except SyntaxError:
        pass  # an indentation error: the generic message says where
    return None


class _ModuleGatherer(cst.CSTVisitor):
    """Collects the kernel definitions (with their comment blocks) and the functions of the wrapper."""

    def __init__(self) -> None:
        self.kernel_defs: list[tuple[str, cst.Call, list[str]]] = []
        self.functions: dict[str, cst.FunctionDef] = {}
        self._classes: list[str] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append(node.name.value)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._classes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.functions[".".join([*self._classes, node.name.value])] = node
        return False

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        if m.matches(node, m.SimpleStatementLine(body=[KERNEL_DEF])):
            assign = cst.ensure_type(node.body[0], cst.Assign)
            target = cst.ensure_type(assign.targets[0].target, cst.Name)
            self.kernel_defs.append((target.value, cst.ensure_type(assign.value, cst.Call), _comment_block(node)))
        return False


def _find_call(functions: dict[str, cst.FunctionDef]) -> str | None:
    if "call" in functions:
        return "call"
    return next((qualname for qualname in functions if qualname.endswith(".call")), None)


def _comment_block(line: cst.SimpleStatementLine) -> list[str]:
    """The comment lines right above a statement (after its last blank line), without the leading '#'."""
    block: list[str] = []
    for empty in line.leading_lines:
        if empty.comment is None:
            block = []
        else:
            block.append(empty.comment.value[1:])
    return block


def _read_aot_id(source: str) -> str:
    for line in source.splitlines()[:5]:
        match = AOT_ID_RE.match(line)
        if match:
            try:
                ids = ast.literal_eval(match["ids"])
            except (ValueError, SyntaxError):
                return ""
            return str(ids[0]) if ids else ""
    return ""


def _read_get_args(fn: cst.FunctionDef | None) -> tuple[dict[str, TensorMeta], dict[str, int | float]]:
    """Example tensors (`rand_strided(...)`) and Python scalars (`arg0_1 = 64`) from get_args()."""
    tensors: dict[str, TensorMeta] = {}
    scalars: dict[str, int | float] = {}
    if fn is None:
        return tensors, scalars
    for assign in m.findall(fn, m.Assign(targets=[m.AssignTarget(m.Name())])):
        assign = cst.ensure_type(assign, cst.Assign)
        target = cst.ensure_type(assign.targets[0].target, cst.Name).value
        value = assign.value
        if m.matches(value, m.Call(func=m.Name("rand_strided"))):
            call = cst.ensure_type(value, cst.Call)
            kwargs = _kwargs(call)
            positional = _positional(call)
            tensors[target] = TensorMeta(
                shape=_sizes(positional[0]) if positional else (),
                stride=_sizes(positional[1]) if len(positional) > 1 else (),
                dtype=_dtype(kwargs.get("dtype")),
                device=_device(kwargs.get("device")),
            )
        elif isinstance(_plain(value), (int, float)) and not isinstance(_plain(value), bool):
            scalars[target] = _plain(value)
    return tensors, scalars


# -- kernels ---------------------------------------------------------------------------------------------------------


def _read_kernel(name: str, triton_call: cst.Call, comment: KernelComment) -> tuple[Kernel, tuple[str, ...]]:
    """One `async_compile.triton(...)` definition -> (Kernel, the parameters a launch binds positionally)."""
    positional = _positional(triton_call)
    device_node = _kwargs(triton_call).get("device_str")
    device_str = str(_plain(device_node)) if device_node is not None else ""
    hint = _kind_from_prefix(name)
    if len(positional) < 2 or not isinstance(positional[1], (cst.SimpleString, cst.ConcatenatedString)):
        reason = "could not read async_compile.triton(...): expected the kernel name and its source string"
        return Kernel(name, "", hint or "other", device_str, comment=comment, standalone_reason=reason), ()
    source = positional[1].evaluated_value
    if not isinstance(source, str):
        source = source.decode() if isinstance(source, bytes) else ""
    base = Kernel(name=name, source=source, kind=hint or "other", device_str=device_str, comment=comment)
    trees = kernel_trees(source)  # the one parse of this kernel: every later stage reads these trees
    tree = trees.cst
    if tree is None:
        exc = trees.cst_error
        message = exc.message if isinstance(exc, cst.ParserSyntaxError) else f"{type(exc).__name__}: {exc}"
        return replace(base, standalone_reason=f"could not read kernel source: {message.splitlines()[0]}"), ()

    functions = [s for s in tree.body if isinstance(s, cst.FunctionDef) and s.decorators]
    fn = next((f for f in functions if f.name.value == name), functions[0] if functions else None)
    if fn is None:
        return replace(base, standalone_reason="could not find the @triton.jit function in the kernel source"), ()
    params = [p.name.value for p in fn.params.params]
    constexpr = {p.name.value for p in fn.params.params if p.annotation and m.matches(p.annotation, CONSTEXPR)}
    decorator = next((d.decorator for d in fn.decorators if m.matches(d.decorator, HEURISTIC)), None)
    if decorator is None:
        runtime = tuple(p for p in params if p not in constexpr)
        reason = "could not read decorator: no @triton_heuristics.<kind>(...) above the kernel"
        return replace(base, standalone_reason=reason), runtime

    heuristic_call = cst.ensure_type(decorator, cst.Call)
    heuristic = cst.ensure_type(heuristic_call.func, cst.Attribute).attr.value
    kwargs = {key: _plain(value) for key, value in _kwargs(heuristic_call).items()}
    triton_meta = kwargs.pop("triton_meta", {})
    inductor_meta = kwargs.pop("inductor_meta", {})
    size_hints = kwargs.pop("size_hints", {})
    kind = KIND_BY_HEURISTIC.get(heuristic) or hint or "other"
    if isinstance(inductor_meta, dict) and "combo_grid_meta" in inductor_meta:
        kind = "foreach"

    metas = {"triton_meta": triton_meta, "inductor_meta": inductor_meta}
    problems = [f"{label} is not a literal" for label, value in metas.items() if not isinstance(value, dict)]
    triton_meta = triton_meta if isinstance(triton_meta, dict) else {}
    signature = triton_meta.get("signature", {})
    if not isinstance(signature, dict):
        problems.append("triton_meta['signature'] is not a dict")
        signature = {}
    signature = _name_signature(signature, params, constexpr)
    constants = triton_meta.get("constants", {})
    constants = _by_param_name(constants, params) if isinstance(constants, dict) else {"source": constants}
    configs = triton_meta.get("configs", [])
    configs = configs if isinstance(configs, list) else [configs]
    runtime = tuple(p for p in params if p not in constexpr and signature.get(p) != "constexpr")

    if problems:
        reason: str | None = "could not read decorator: " + "; ".join(problems)
    elif heuristic not in KIND_BY_HEURISTIC:
        reason = REASON_BY_KIND.get(kind) or f"unsupported heuristic triton_heuristics.{heuristic}"
    else:
        reason = REASON_BY_KIND.get(kind)
    kernel = replace(
        base,
        kind=kind,
        size_hints=_size_hints(size_hints, kind),
        signature=signature,
        constants=constants,
        configs=tuple(c if isinstance(c, dict) else {"source": c} for c in configs),
        inductor_meta=inductor_meta if isinstance(inductor_meta, dict) else {"source": inductor_meta},
        triton_meta=triton_meta,
        heuristic=heuristic,
        heuristic_args=kwargs,
        standalone_reason=reason,
    )
    return kernel, runtime


def _kind_from_prefix(name: str) -> KernelKind | None:
    return KIND_BY_PREFIX.get(name[:10])


def _name_signature(signature: dict[Any, Any], params: list[str], constexpr: set[str]) -> dict[str, str]:
    """Key the signature by parameter name (2.4-2.5 used positions) and list constexpr params it left out."""
    named = _by_param_name(signature, params)
    ordered = {p: str(named[p]) if p in named else "constexpr" for p in params if p in named or p in constexpr}
    ordered.update({str(k): str(v) for k, v in named.items() if k not in ordered})
    return ordered


def _by_param_name(mapping: dict[Any, Any], params: list[str]) -> dict[str, Any]:
    return {params[k] if isinstance(k, int) and 0 <= k < len(params) else str(k): v for k, v in mapping.items()}


def _size_hints(hints: Any, kind: str) -> dict[str, int]:
    """2.6+ wrote a dict; 2.4 a list ordered [.., y, x] plus the reduction size last (which becomes 'r0_')."""
    if isinstance(hints, dict):
        return {str(k): v for k, v in hints.items()}
    if not isinstance(hints, list):
        return {}
    reduction = kind in ("reduction", "persistent_reduction") and len(hints) > 1
    tiled = hints[:-1] if reduction else hints
    named = dict(zip(SIZE_HINT_PREFIXES[-len(tiled):], tiled)) if tiled else {}
    return {**named, "r0_": hints[-1]} if reduction else named


# -- the comment block above a kernel --------------------------------------------------------------------------------


def _read_comment(lines: Sequence[str]) -> KernelComment:
    """Parse `# Topologically Sorted Source Nodes`, `# Source node to ATen node mapping` and `# Graph fragment`."""
    source_nodes: tuple[str, ...] = ()
    aten_ops: tuple[str, ...] = ()
    mapping: list[tuple[str, tuple[str, ...]]] = []
    fragment: list[FxNode] = []
    returns: tuple[str, ...] = ()
    section = ""
    for raw in lines:
        text = raw.strip()
        nodes = SOURCE_NODES_RE.search(text)
        if nodes and not raw.startswith("  "):
            source_nodes, aten_ops = _split_list(nodes["nodes"]), _split_list(nodes["aten"])
        elif text.startswith("Source node to ATen node mapping"):
            section = "mapping"
        elif text.startswith("Graph fragment"):
            section = "fragment"
        elif section == "mapping" and "=>" in text:
            node, ops = text.split("=>", 1)
            mapping.append((node.strip(), _split_list(ops)))
        elif section == "fragment" and text.startswith("return"):
            returns = tuple(n.strip(" %()") for n in text[len("return"):].split(",") if n.strip(" %()"))
        elif section == "fragment" and text.startswith("%"):
            node = _read_fx_node(text)
            if node is not None:
                fragment.append(node)
    return KernelComment(source_nodes, aten_ops, tuple(mapping), tuple(fragment), returns)


def _read_fx_node(text: str) -> FxNode | None:
    match = FX_NODE_RE.match(text)
    if match is None:
        return None
    op = "placeholder" if match["op"] == "PlaceHolder" else match["op"]
    meta = None
    tensor = TENSOR_TYPE_RE.search(match["type"])
    if tensor:
        try:
            meta = parse_tensor_meta(tensor["meta"])
        except ValueError:
            meta = None
    target = match["target"].removeprefix("torch.ops.")
    return FxNode(
        name=match["name"],
        op=op,
        target=target,
        args=match["args"] or "",
        kwargs=match["kwargs"] or "",
        meta=meta,
        num_users=int(match["users"]) if match["users"] else None,
    )


def _split_list(text: str) -> tuple[str, ...]:
    text = text.strip()
    return tuple(part.strip() for part in text.split(",")) if text else ()


def _split_sizes(text: str) -> tuple[int | str, ...]:
    """Split `8, 256, Max(1, s0)` at top-level commas; ints become int."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += (char in "([") - (char in ")]")
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return tuple(int(p) if p.strip().lstrip("-").isdigit() else p.strip() for p in parts if p.strip())


# -- call() ----------------------------------------------------------------------------------------------------------


class _CallReader(cst.CSTVisitor):
    """Walks call() in order (entering partitions where call invokes them) and records what each statement does."""

    def __init__(
        self,
        functions: dict[str, cst.FunctionDef],
        kernels: dict[str, tuple[Kernel, tuple[str, ...]]],
        examples: dict[str, TensorMeta],
        example_scalars: dict[str, int | float],
        placeholders: dict[str, TensorMeta],
    ) -> None:
        super().__init__()
        self.functions = functions
        self.kernels = kernels  # name -> (Kernel, the parameters a launch binds positionally)
        self.examples = examples
        self.example_scalars = example_scalars
        self.placeholders = placeholders
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self.launches: list[Launch] = []
        self.externs: list[ExternCall] = []
        self.symbols: list[str] = []
        self.unparsed: list[str] = []
        self.buffers: dict[str, Buffer] = {}
        self.tensors: set[str] = set()  # every name known to hold a tensor, with or without a Buffer
        self.scalar_inputs: set[str] = set()
        self.symbol_sources: dict[str, str] = {}  # s77 -> arg0_1
        self.function = ""
        self.top = False

    def read(self, qualname: str, top: bool = False) -> None:
        outer = (self.function, self.top)
        self.function, self.top = qualname, top
        self.functions[qualname].body.visit(self)
        self.function, self.top = outer

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BaseCompoundStatement) and not isinstance(node, cst.With):
            self.unparsed.append(_code(node).strip())
            return False
        return super().on_visit(node)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        for statement in node.body:
            if not self._read_statement(statement):
                self.unparsed.append(_code(statement).strip().rstrip(";"))
        return False

    # -- one small statement: True when understood --

    def _read_statement(self, statement: cst.BaseSmallStatement) -> bool:
        if isinstance(statement, (cst.Del, cst.Pass)) or m.matches(statement, PARTITION_ARGS):
            return True
        if isinstance(statement, cst.Return):
            if self.top:
                self.outputs = [_tensor_name(e) or _code(e) for e in _elements(statement.value)]
            return True
        if m.matches(statement, ARGS_UNPACK):
            if self.top:
                self._add_inputs(cst.ensure_type(statement, cst.Assign).targets[0].target)
            return True
        if m.matches(statement, m.Expr(m.Call())):
            return self._read_call(cst.ensure_type(cst.ensure_type(statement, cst.Expr).value, cst.Call), None)
        if m.matches(statement, m.Assign(targets=[m.AssignTarget(m.Name())])):
            assign = cst.ensure_type(statement, cst.Assign)
            return self._read_assign(cst.ensure_type(assign.targets[0].target, cst.Name).value, assign.value)
        if m.matches(statement, m.Assign(targets=[m.AssignTarget(m.Tuple() | m.List())], value=PARTITION_CALL)):
            assign = cst.ensure_type(statement, cst.Assign)
            self.tensors.update(_code(e) for e in _elements(assign.targets[0].target))
            return self._read_partition(cst.ensure_type(assign.value, cst.Call))
        return False

    def _read_call(self, call: cst.Call, target: str | None) -> bool:
        if m.matches(call, ARGS_CLEAR | HOUSEKEEPING_CALL | STREAM):
            return True
        if m.matches(call, ASSERT_SIZE_STRIDE | ASSERT_SIZE_STRIDE_GROUPED):
            return True  # read up front by _add_inputs
        if m.matches(call, PARTITION_CALL):
            return self._read_partition(call)
        if m.matches(call, LAUNCH) and target is None:
            kernel = cst.ensure_type(cst.ensure_type(call.func, cst.Attribute).value, cst.Name).value
            if kernel in self.kernels:
                self._add_launch(kernel, call)
                return True
        op = get_full_name_for_node(call.func) or ""
        if any(op == root or op.startswith(root + ".") for root in EXTERN_ROOTS):
            out = _kwargs(call).get("out")
            out_name = target or (_tensor_name(out) or _code(out) if out is not None else None)
            args = tuple(_code(arg) for arg in _positional(call))
            self.externs.append(ExternCall(op, args, out_name, self._next_order(), self.function))
            if target is not None:
                self.tensors.add(target)
            return True
        return False

    def _read_assign(self, target: str, value: cst.BaseExpression) -> bool:
        if m.matches(value, ALLOCATION):
            self._add_allocation(target, cst.ensure_type(value, cst.Call))
            return True
        if m.matches(value, REINTERPRET):
            positional = _positional(cst.ensure_type(value, cst.Call))
            self._add_view(target, cst.ensure_type(positional[0], cst.Name).value, positional[1:])
            return True
        source = value.value if isinstance(value, cst.Name) else None
        if source in self.buffers:
            self._add_alias(target, self.buffers[source])
            return True
        item_of_tensor = m.Subscript(value=m.Name(m.MatchIfTrue(self.tensors.__contains__)))
        if source in self.tensors or m.matches(value, item_of_tensor):
            self.tensors.add(target)  # a tensor without known meta, or an item of a fallback op's tuple result
            return True
        if self._is_symbolic(value):
            self.symbols.append(target)
            if source is not None:
                self.symbol_sources[target] = source
            return True
        if m.matches(value, m.Call()):
            return self._read_call(cst.ensure_type(value, cst.Call), target)
        return False

    def _read_partition(self, call: cst.Call) -> bool:
        if isinstance(call.func, cst.Name):
            wanted = call.func.value
        else:
            wanted = "partition_" + _code(cst.ensure_type(call.func, cst.Subscript).slice[0].slice).strip()
        qualname = next((q for q in self.functions if q == wanted or q.endswith("." + wanted)), None)
        if qualname is None:
            return False
        self.read(qualname)
        return True

    def _is_symbolic(self, value: cst.BaseExpression) -> bool:
        """A size expression: ints and names of scalar inputs or symbols only (`s77 = arg0_1`, `ps0 = 64*s0`)."""
        if m.findall(value, m.Call() | m.Attribute() | m.Subscript()):
            return False
        names = [cst.ensure_type(n, cst.Name).value for n in m.findall(value, m.Name())]
        return bool(names) and all(n in self.scalar_inputs or n in self.symbols for n in names)

    # -- records --

    def _add_inputs(self, target: cst.BaseExpression) -> None:
        """Graph inputs: meta from assert_size_stride (shape, stride) and get_args() or the fragments (dtype)."""
        asserted = {}  # torch 2.13 asserts an input just before its first use; partitions may assert too
        for node in (n for fn in self.functions.values() for n in m.findall(fn, ASSERT_SIZE_STRIDE)):
            positional = _positional(cst.ensure_type(node, cst.Call))
            if len(positional) >= 3 and isinstance(positional[0], cst.Name):
                asserted[positional[0].value] = (_sizes(positional[1]), _sizes(positional[2]))
        for node in (n for fn in self.functions.values() for n in m.findall(fn, ASSERT_SIZE_STRIDE_GROUPED)):
            positional = _positional(cst.ensure_type(node, cst.Call))
            if len(positional) < 3 or not all(isinstance(p, (cst.Tuple, cst.List)) for p in positional[:3]):
                continue
            names, shapes, strides = (list(_elements(p)) for p in positional[:3])
            for name, shape, stride in zip(names, shapes, strides):
                if isinstance(name, cst.Name):
                    asserted[name.value] = (_sizes(shape), _sizes(stride))
        self.inputs = [_code(e) for e in _elements(target)]
        for index, name in enumerate(self.inputs):
            example = self.examples.get(name) or self.placeholders.get(name)
            if name in asserted:
                shape, stride = asserted[name]
                meta: TensorMeta | None = replace(example, shape=shape, stride=stride) if example else None
                meta = meta or TensorMeta(shape, stride, "")
            else:
                meta = None if name in self.example_scalars else example
            if meta is None:
                self.scalar_inputs.add(name)  # a Python scalar (or a tensor nothing describes)
            else:
                self._add_buffer(Buffer(name, meta, "input", input_index=index))

    def _next_order(self) -> int:
        return len(self.launches) + len(self.externs)

    def _add_launch(self, kernel_name: str, call: cst.Call) -> None:
        kernel, params = self.kernels[kernel_name]
        positional = _positional(call)
        # Inductor passes compile-time constants it marked constexpr in triton_meta (`xnumel = 1`) positionally
        # too when the def does not annotate them: bind by the def when the count says so.
        passed = tuple(p for p in kernel.params if p in params or kernel.signature.get(p) == "constexpr"
                       and not _is_block_size(p))
        if len(positional) == len(passed) != len(params):
            params = passed
        args = []
        for index, node in enumerate(positional):
            param = params[index] if index < len(params) else f"<extra {index}>"
            args.append(self._launch_arg(param, kernel.signature.get(param, ""), node))
        grid = _kwargs(call).get("grid")
        order = self._next_order()
        self.launches.append(Launch(kernel_name, tuple(args), order, self.function, _code(grid) if grid else ""))

    def _launch_arg(self, param: str, param_type: str, node: cst.BaseExpression) -> LaunchArg:
        expr = _code(node)
        name = _tensor_name(node)
        if name is not None and (name in self.tensors or param_type.startswith("*")):
            return LaunchArg(param, expr, buffer=name)
        value = _plain(node)
        if isinstance(value, int) and not isinstance(value, bool):
            return LaunchArg(param, expr, value=value)
        return LaunchArg(param, expr)

    def _add_allocation(self, target: str, call: cst.Call) -> None:
        positional = _positional(call)
        kwargs = _kwargs(call)
        suffix = cst.ensure_type(call.func, cst.Name).value.removeprefix("empty_strided").lstrip("_")
        meta = TensorMeta(
            shape=_sizes(positional[0]) if positional else (),
            stride=_sizes(positional[1]) if len(positional) > 1 else (),
            dtype=_dtype(positional[2] if len(positional) > 2 else kwargs.get("dtype")),
            device=suffix or _device(kwargs.get("device")),
        )
        self._add_buffer(Buffer(target, meta, "empty"))

    def _add_view(self, target: str, base: str, rest: Sequence[cst.BaseExpression]) -> None:
        source = self.buffers.get(base)
        offset = _sizes(rest[2]) if len(rest) > 2 else ()
        meta = TensorMeta(
            shape=_sizes(rest[0]) if rest else (),
            stride=_sizes(rest[1]) if len(rest) > 1 else (),
            dtype=source.meta.dtype if source else "",
            device=source.meta.device if source else "",
        )
        self._add_buffer(Buffer(target, meta, "view", base=base, offset=offset[0] if offset else 0))

    def _add_alias(self, target: str, source: Buffer) -> None:
        """`buf11 = buf8  # reuse`: the same tensor under a new name (an input's alias is origin "other")."""
        if source.origin == "input":
            self._add_buffer(replace(source, name=target, origin="other", base=source.name, input_index=None))
        elif source.origin == "view":  # already points at its storage's owner
            self._add_buffer(replace(source, name=target))
        else:  # keep the link to the buffer it reuses, so data flow follows it
            self._add_buffer(replace(source, name=target, origin="view", base=source.name, offset=0))

    def _add_buffer(self, buffer: Buffer) -> None:
        self.buffers[buffer.name] = buffer
        self.tensors.add(buffer.name)

    def scalar_values(self) -> dict[str, int | float]:
        values = {name: value for name, value in self.example_scalars.items() if name in self.scalar_inputs}
        for symbol, source in self.symbol_sources.items():
            if source in values:
                values[symbol] = values[source]
        return values


# -- small helpers over nodes ----------------------------------------------------------------------------------------

_EMPTY_MODULE = cst.Module(body=[])


def _is_block_size(param: str) -> bool:
    return re.fullmatch(r"[XYZ]BLOCK|R\d*_?BLOCK", param) is not None


def _code(node: cst.CSTNode) -> str:
    return _EMPTY_MODULE.code_for_node(node)


def _positional(call: cst.Call) -> list[cst.BaseExpression]:
    return [arg.value for arg in call.args if arg.keyword is None and not arg.star]


def _kwargs(call: cst.Call) -> dict[str, cst.BaseExpression]:
    return {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}


def _elements(node: cst.BaseExpression | None) -> list[cst.BaseExpression]:
    if node is None:
        return []
    if isinstance(node, (cst.Tuple, cst.List)):
        return [element.value for element in node.elements]
    return [node]


def _tensor_name(node: cst.BaseExpression) -> str | None:
    """`buf0` -> "buf0"; `reinterpret_tensor(buf4, ...)` -> "buf4"; anything else -> None."""
    if isinstance(node, cst.Name):
        return node.value
    if m.matches(node, REINTERPRET):
        return cst.ensure_type(_positional(cst.ensure_type(node, cst.Call))[0], cst.Name).value
    return None


def _sizes(node: cst.BaseExpression) -> tuple[int | str, ...]:
    """`(8, 256, s0)` -> (8, 256, "s0"); a single expression becomes a 1-tuple."""
    values = []
    for element in _elements(node):
        value = _plain(element)
        values.append(value if isinstance(value, int) and not isinstance(value, bool) else _code(element).strip())
    return tuple(values)


def _dtype(node: cst.BaseExpression | None) -> str:
    if node is None:
        return ""
    return (get_full_name_for_node(node) or _code(node)).removeprefix("torch.")


def _device(node: cst.BaseExpression | None) -> str:
    """`'cuda:0'` or `device(type='cuda', index=0)` -> "cuda"."""
    value = _plain(node) if node is not None else ""
    if isinstance(value, dict):
        value = value.get("type", "")
    return str(value).split(":")[0] if value else ""


def _plain(node: cst.BaseExpression) -> Any:
    """A literal as a JSON-able Python value: dicts, lists, str, int, float, bool, None.

    `set()` -> [], `DeviceProperties(...)` / `AttrsDescriptor(...)` -> dict of their kwargs, `X.from_dict(d)` -> d,
    tuple dict keys -> their repr ("(1,)"); anything else -> its source text.
    """
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else _code(node)
    number = m.Integer() | m.Float()
    if m.matches(node, number | m.UnaryOperation(operator=m.Minus(), expression=number)):
        return ast.literal_eval(_code(node))
    if m.matches(node, m.Name("True") | m.Name("False") | m.Name("None")):
        return {"True": True, "False": False, "None": None}[cst.ensure_type(node, cst.Name).value]
    if isinstance(node, cst.Dict):
        return {_key(_plain(e.key)): _plain(e.value) for e in node.elements if isinstance(e, cst.DictElement)}
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        return [_plain(e.value) for e in node.elements]
    if m.matches(node, m.Call(func=m.Name("set"), args=[])):
        return []
    if m.matches(node, m.Call(func=m.Attribute(attr=m.Name("from_dict")), args=[m.Arg(keyword=None)])):
        return _plain(cst.ensure_type(node, cst.Call).args[0].value)
    if m.matches(node, m.Call(func=KEYWORD_RECORD, args=[m.ZeroOrMore(m.Arg(keyword=m.Name()))])):
        return {key: _plain(value) for key, value in _kwargs(cst.ensure_type(node, cst.Call)).items()}
    return _code(node).strip()


def _key(value: Any) -> Any:
    return repr(tuple(value)) if isinstance(value, list) else value
