"""The wrapper module as a whole: parse_output_code, the module-level reading (kernels, call(), get_args, AOT id) and
syntax errors that name the line."""

from __future__ import annotations

import ast
import dataclasses
import functools
import io
import tokenize

import libcst as cst
import libcst.matchers as m

from harvest.errors import ParseError
from harvest.model import (
    Graph,
    GraphRole,
    TensorMeta,
)
from harvest.parse.calls import CallReader
from harvest.parse.kernel import read_comment, read_kernel
from harvest.parse.patterns import AOT_ID_RE, KERNEL_DEF, KNOWN_COMPILERS, UNKNOWN_COMPILER_RE
from harvest.parse.values import device_of, dtype_of, keyword_args, plain, positional_args, size_tuple
from harvest.syntax import QuickVisitor


def parse_output_code(source: str, name: str = "g0_unknown", role: GraphRole = "unknown") -> Graph:
    """Parse an Inductor output_code.py into a `Graph`; raise `ParseError` (one line) when it is not one.

    A source is read once per process (`harvest extract` reads each graph while the target still runs, then again
    after it: the second read is this cache); the Graph is frozen, so sharing it is safe."""
    return dataclasses.replace(_parse_source(source), name=name, role=role)


@functools.lru_cache(maxsize=64)
def _parse_source(source: str) -> Graph:
    name, role = "g0_unknown", "unknown"
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
        kernel_name: read_kernel(kernel_name, triton_call, read_comment(comments))
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
    reader = CallReader(gathered.functions, kernels_by_name, examples, scalars, placeholders)
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
        symbol_inputs=dict(reader.symbol_sources),
    )


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


class _ModuleGatherer(QuickVisitor):
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
            kwargs = keyword_args(call)
            positional = positional_args(call)
            tensors[target] = TensorMeta(
                shape=size_tuple(positional[0]) if positional else (),
                stride=size_tuple(positional[1]) if len(positional) > 1 else (),
                dtype=dtype_of(kwargs.get("dtype")),
                device=device_of(kwargs.get("device")),
            )
        elif isinstance(plain(value), (int, float)) and not isinstance(plain(value), bool):
            scalars[target] = plain(value)
    return tensors, scalars


# -- kernels ---------------------------------------------------------------------------------------------------------
