"""The one reader of kernel module files (docs/module-format.md): a module's text becomes a `ModuleFile`.

    module = read_module_file(text, "g0_inference/square_square_kernel.py")
    module.kernel            # the @triton.jit def between `# >>> kernel` and `# <<< kernel` (an ast node)
    module.arguments["a_ptr"]  # TensorArg(shape=(100000000,), stride=(1,), dtype="float32", ...)

The text is read with `ast` and `tokenize` only: nothing in it is imported, evaluated or run. The reader is strict:
whatever is outside the format raises ModuleFileError, one line naming the file, the line and what is wrong. twin,
ptx, sweep and bench read modules here, and so does every later command that reads one.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from harvest.dtypes import TRITON_POINTEE, torch_dtype_name
from harvest.errors import ParseError
from harvest.syntax import dotted, is_constexpr_annotation, is_jit_decorator, is_jit_def

BEGIN_MARK = re.compile(r"# >>> kernel(?!\w)")
END_MARK = re.compile(r"# <<< kernel(?!\w)")
TENSOR_FIELDS = ("shape", "stride", "dtype", "offset", "base", "zeros", "high")
TENSOR_REQUIRED = 3  # shape, stride and dtype; the rest have defaults
SHA256 = re.compile(r"[0-9a-f]{64}")

Scalar = int | float | bool


class ModuleFileError(ParseError):
    """A kernel module that is not in the module format: the file, the line (when there is one) and what is wrong."""

    def __init__(self, label: str, line: int | None, problem: str) -> None:
        self.label, self.line, self.problem = label, line, problem
        super().__init__(f"{label}:{line}: {problem}" if line else f"{label}: {problem}")

    @property
    def detail(self) -> str:
        """The message without the file: `line 12: ...`, for a caller that names the file itself."""
        return f"line {self.line}: {self.problem}" if self.line else self.problem


@dataclass(frozen=True)
class TensorArg:
    """One `Tensor(shape, stride, dtype, offset=0, base=None, zeros=False, high=None)` of ARGUMENTS.

    dtype is torch's name ("float32"); offset is the storage offset in elements; base names the earlier argument
    whose storage this one shares; zeros: the kernel only writes it; high: made-up values are whole numbers below it."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str
    offset: int = 0
    base: str | None = None
    zeros: bool = False
    high: int | None = None


@dataclass(frozen=True)
class KernelDefs:
    """The defs of a kernel region: helper @triton.jit defs, then the kernel (the last def), with its parameters."""

    helpers: tuple[ast.FunctionDef, ...]
    kernel: ast.FunctionDef
    params: tuple[str, ...]  # the kernel's parameters in order
    constexprs: tuple[str, ...]  # those annotated tl.constexpr, in order
    do_not_specialize: tuple[str, ...]  # as `@triton.jit(do_not_specialize=[...])` names them (indices resolved)


@dataclass(frozen=True)
class ModuleFile:
    """A kernel module, read. The ast nodes are the reader's own, at the file's line numbers: read them, never change
    them."""

    label: str  # the file as messages name it
    name: str  # the kernel's name
    region: str  # the text between the `# >>> kernel` and `# <<< kernel` lines
    region_first_line: int  # the file's line number (1-based) of the region's first line
    kernel: ast.FunctionDef
    helpers: tuple[ast.FunctionDef, ...]  # @triton.jit defs before the kernel in the region
    params: tuple[str, ...]
    constexprs: tuple[str, ...]
    do_not_specialize: tuple[str, ...]
    config: Mapping[str, Scalar | None]  # CONFIG, in order: constexpr values, then launch options (num_warps, ...)
    arguments: Mapping[str, TensorArg | Scalar]  # ARGUMENTS, in order
    outputs: tuple[str, ...]  # OUTPUTS
    record: str | None  # RECORD: the launch record's path relative to the module, or None
    kernel_sha256: str  # KERNEL_SHA256: of the kernel region's text as extracted
    grid: tuple[ast.expr, ...]  # launch()'s `grid = (...)`, one expression per program axis

    @property
    def runtime_params(self) -> tuple[str, ...]:
        """The kernel's parameters that are not tl.constexpr: what ARGUMENTS holds and launch passes positionally."""
        return tuple(p for p in self.params if p not in self.constexprs)

    @property
    def constexpr_config(self) -> dict[str, Scalar | None]:
        """CONFIG's values of the kernel's parameters (block sizes)."""
        return {k: v for k, v in self.config.items() if k in self.params}

    @property
    def launch_options(self) -> dict[str, Scalar | None]:
        """CONFIG's other keys: what Triton's launch takes as keywords (num_warps, num_stages, ...)."""
        return {k: v for k, v in self.config.items() if k not in self.params}

    @property
    def tensors(self) -> dict[str, TensorArg]:
        return {k: v for k, v in self.arguments.items() if isinstance(v, TensorArg)}

    @property
    def grid_text(self) -> str:
        """The grid as launch() writes it: `(triton.cdiv(n_elements, config['BLOCK_SIZE']),)`."""
        return ast.unparse(ast.Tuple(list(self.grid), ast.Load()))

    @property
    def padded_region(self) -> str:
        """The region at its own line numbers (blank lines before it), so compiled code points into the file."""
        return "\n" * (self.region_first_line - 1) + self.region


# ---------------------------------------------------------------------------------------------------- reading


def read_module_file(text: str, label: str) -> ModuleFile:
    """A kernel module's text as a ModuleFile; ModuleFileError when it is not in the module format."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise ModuleFileError(label, exc.lineno, f"not valid Python ({exc.msg})") from exc
    first, last = _region_lines(text, label)
    inside, outside = [], []
    for stmt in tree.body:
        decorators = getattr(stmt, "decorator_list", None)  # a decorated def (or class) starts at its first decorator
        start = decorators[0].lineno if decorators else stmt.lineno
        end = stmt.end_lineno or stmt.lineno
        if first <= start and end <= last:
            inside.append(stmt)
        elif end < first or start > last:
            outside.append(stmt)
        else:
            raise ModuleFileError(label, start, "a statement crosses a kernel marker line")
    for stmt in outside:
        if is_jit_def(stmt):
            raise ModuleFileError(label, stmt.lineno, f"@triton.jit def {stmt.name} is outside the kernel region: a module holds one kernel, its helpers beside it between the markers")
    defs = _kernel_defs(inside, label, first)
    names = _top_level_assignments(outside, label)
    config = _config(_required(names, "CONFIG", label), label)
    arguments, argument_lines = _arguments(_required(names, "ARGUMENTS", label), label)
    outputs = _outputs(_required(names, "OUTPUTS", label), arguments, label)
    record = _record(_required(names, "RECORD", label), label)
    sha = _sha256(_required(names, "KERNEL_SHA256", label), label)
    _check_against_kernel(defs, config, arguments, argument_lines, names, label)
    lines = text.splitlines(keepends=True)
    return ModuleFile(
        label=label,
        name=defs.kernel.name,
        region="".join(lines[first - 1 : last]),
        region_first_line=first,
        kernel=defs.kernel,
        helpers=defs.helpers,
        params=defs.params,
        constexprs=defs.constexprs,
        do_not_specialize=defs.do_not_specialize,
        config=MappingProxyType(config),
        arguments=MappingProxyType(arguments),
        outputs=outputs,
        record=record,
        kernel_sha256=sha,
        grid=_grid(outside, label),
    )


def read_kernel_region(region: str, label: str) -> KernelDefs:
    """The defs of a kernel region's text alone (as `harvest ptx`'s compile process gets it); line numbers are the
    region's own."""
    try:
        tree = ast.parse(region)
    except SyntaxError as exc:
        raise ModuleFileError(label, exc.lineno, f"the kernel region is not valid Python ({exc.msg})") from exc
    return _kernel_defs(tree.body, label, 1)


def _kernel_defs(statements: list[ast.stmt], label: str, first_line: int) -> KernelDefs:
    """The region's statements as helper @triton.jit defs and the kernel, the last def; ModuleFileError for anything
    else between the markers."""
    for stmt in statements:
        if not is_jit_def(stmt):
            what = f"def {stmt.name}, which is not decorated @triton.jit" if isinstance(stmt, ast.FunctionDef) else f"`{_short(stmt)}`"
            raise ModuleFileError(label, stmt.lineno, f"the kernel region holds {what}; only @triton.jit defs belong between the markers")
    if not statements:
        raise ModuleFileError(label, first_line, "the kernel region holds no @triton.jit def")
    functions = [s for s in statements if is_jit_def(s)]  # all of them, as checked above
    *helpers, kernel = functions
    for fn in functions:
        _check_decorators(fn, label, is_kernel=fn is kernel)
    args = kernel.args
    if args.posonlyargs or args.vararg or args.kwonlyargs or args.kwarg:
        raise ModuleFileError(label, kernel.lineno, f"kernel {kernel.name} takes more than plain parameters (/, *args, keyword-only or **kwargs)")
    if args.defaults:
        raise ModuleFileError(label, args.defaults[0].lineno, f"kernel {kernel.name} gives a parameter a default value; CONFIG and ARGUMENTS give the values")
    params = tuple(a.arg for a in args.args)
    constexprs = tuple(a.arg for a in args.args if is_constexpr_annotation(a.annotation))
    decorator = next(d for d in kernel.decorator_list if is_jit_decorator(d))
    do_not_specialize = _do_not_specialize(decorator, params, kernel.name, label)
    return KernelDefs(tuple(helpers), kernel, params, constexprs, do_not_specialize)


# ------------------------------------------------------------------------------------------------ the pieces


def _region_lines(text: str, label: str) -> tuple[int, int]:
    """The first and last line (1-based) between the marker comments; a marker is a comment at the start of a line."""
    begins, ends = [], []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT and token.start[1] == 0:
                if BEGIN_MARK.match(token.string):
                    begins.append(token.start[0])
                elif END_MARK.match(token.string):
                    ends.append(token.start[0])
    except (tokenize.TokenError, SyntaxError) as exc:  # ast.parse accepted it, so this is not expected
        raise ModuleFileError(label, None, f"cannot be tokenized ({exc})") from exc
    if not begins:
        raise ModuleFileError(label, None, "no '# >>> kernel' line: the kernel region is missing (pass a kernel module written by `harvest extract`)")
    if len(begins) > 1 or len(ends) > 1:
        twice = begins if len(begins) > 1 else ends
        raise ModuleFileError(label, twice[1], f"a second kernel marker (first at line {twice[0]}): a module holds one kernel region")
    if not ends or ends[0] < begins[0]:
        raise ModuleFileError(label, begins[0], "no '# <<< kernel' line after the '# >>> kernel' line")
    return begins[0] + 1, ends[0] - 1


def _check_decorators(fn: ast.FunctionDef, label: str, is_kernel: bool) -> None:
    """One decorator, @triton.jit, its options literals."""
    role = "kernel" if is_kernel else "helper"
    if len(fn.decorator_list) != 1:
        others = ", ".join("@" + ast.unparse(d) for d in fn.decorator_list if not is_jit_decorator(d))
        raise ModuleFileError(label, fn.lineno, f"{role} {fn.name} has decorators besides @triton.jit ({others}); the module's launch() is the only launcher")
    decorator = fn.decorator_list[0]
    if not isinstance(decorator, ast.Call):
        return
    if decorator.args:
        raise ModuleFileError(label, decorator.lineno, f"@{ast.unparse(decorator.func)}(...) of {fn.name} takes positional arguments; only keyword options are read")
    for keyword in decorator.keywords:
        if keyword.arg is None:
            raise ModuleFileError(label, decorator.lineno, f"@triton.jit(**...) of {fn.name}: its options must be written out")
        try:
            ast.literal_eval(keyword.value)
        except (ValueError, SyntaxError) as exc:
            raise ModuleFileError(label, keyword.value.lineno, f"@triton.jit option {keyword.arg} of {fn.name} is not a literal ({ast.unparse(keyword.value)})") from exc


def _do_not_specialize(decorator: ast.expr, params: tuple[str, ...], name: str, label: str) -> tuple[str, ...]:
    if not isinstance(decorator, ast.Call):
        return ()
    node = next((k.value for k in decorator.keywords if k.arg == "do_not_specialize"), None)
    if node is None:
        return ()
    if not isinstance(node, (ast.List, ast.Tuple)):
        raise ModuleFileError(label, node.lineno, f"do_not_specialize of {name} is not a list of parameter names ({ast.unparse(node)})")
    names = []
    for element in node.elts:
        value = element.value if isinstance(element, ast.Constant) else None
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(params):
            names.append(params[value])  # Triton takes a parameter's index too
        elif isinstance(value, str) and value in params:
            names.append(value)
        else:
            raise ModuleFileError(label, element.lineno, f"do_not_specialize names {ast.unparse(element)}, which is not a parameter of {name}")
    return tuple(names)


def _top_level_assignments(statements: list[ast.stmt], label: str) -> dict[str, ast.Assign]:
    """`NAME = value` at the module's top level, by name; a name assigned twice is an error."""
    names: dict[str, ast.Assign] = {}
    for stmt in statements:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            if name in names:
                raise ModuleFileError(label, stmt.lineno, f"{name} is assigned a second time (first at line {names[name].lineno})")
            names[name] = stmt
    return names


def _required(names: dict[str, ast.Assign], name: str, label: str) -> ast.Assign:
    if name not in names:
        raise ModuleFileError(label, None, f"no {name} = ... at the top level (a kernel module written by `harvest extract` has one)")
    return names[name]


def _literal_dict(stmt: ast.Assign, name: str, label: str) -> dict[str, ast.expr]:
    node = stmt.value
    if not isinstance(node, ast.Dict):
        raise ModuleFileError(label, node.lineno, f"{name} is not a literal dict ({_short(node)})")
    entries: dict[str, ast.expr] = {}
    for key, value in zip(node.keys, node.values):
        if key is None:
            raise ModuleFileError(label, value.lineno, f"{name} unpacks **{_short(value)}; write its entries out")
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            raise ModuleFileError(label, key.lineno, f"{name} has a key that is not a string literal ({_short(key)})")
        if key.value in entries:
            raise ModuleFileError(label, key.lineno, f"{name} has {key.value!r} twice")
        entries[key.value] = value
    return entries


def _config(stmt: ast.Assign, label: str) -> dict[str, Scalar | None]:
    config: dict[str, Scalar | None] = {}
    for key, node in _literal_dict(stmt, "CONFIG", label).items():
        if isinstance(node, ast.Constant) and node.value is None:
            config[key] = None
            continue
        value = _scalar(node)
        if value is None:
            raise ModuleFileError(label, node.lineno, f"CONFIG[{key!r}] is not a number or a bool literal ({_short(node)})")
        config[key] = value
    return config


def _scalar(node: ast.expr) -> Scalar | None:
    """An int, float or bool literal, a negated number, or float("inf" / "-inf" / "nan"); None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):  # bool is an int
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        value = node.operand.value
        return -value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float" and len(node.args) == 1
            and not node.keywords and isinstance(node.args[0], ast.Constant) and node.args[0].value in ("inf", "-inf", "nan")):
        return float(node.args[0].value)
    return None


def _arguments(stmt: ast.Assign, label: str) -> tuple[dict[str, TensorArg | Scalar], dict[str, int]]:
    """ARGUMENTS' values, and the line of each."""
    arguments: dict[str, TensorArg | Scalar] = {}
    entries = _literal_dict(stmt, "ARGUMENTS", label)
    for name, node in entries.items():
        value = _scalar(node)
        if value is None and isinstance(node, ast.Call):
            arguments[name] = _tensor(node, name, arguments, label)
            continue
        if value is None:
            raise ModuleFileError(label, node.lineno, f"ARGUMENTS[{name!r}] is neither a Tensor(...) nor a number or bool literal ({_short(node)})")
        arguments[name] = value
    return arguments, {name: node.lineno for name, node in entries.items()}


def _tensor(node: ast.Call, name: str, earlier: dict[str, TensorArg | Scalar], label: str) -> TensorArg:
    where = f"ARGUMENTS[{name!r}]"
    if not (isinstance(node.func, ast.Name) and node.func.id == "Tensor"):
        raise ModuleFileError(label, node.lineno, f"{where} calls {_short(node.func)}(...); a tensor argument is Tensor(shape, stride, dtype, ...)")
    if len(node.args) > len(TENSOR_FIELDS) or any(isinstance(a, ast.Starred) for a in node.args):
        raise ModuleFileError(label, node.lineno, f"{where}: Tensor takes {', '.join(TENSOR_FIELDS)}")
    fields: dict[str, ast.expr] = dict(zip(TENSOR_FIELDS, node.args))
    for keyword in node.keywords:
        if keyword.arg not in TENSOR_FIELDS:
            raise ModuleFileError(label, node.lineno, f"{where}: Tensor has no field {keyword.arg or '**'} (its fields: {', '.join(TENSOR_FIELDS)})")
        if keyword.arg in fields:
            raise ModuleFileError(label, node.lineno, f"{where}: Tensor's {keyword.arg} is given twice")
        fields[keyword.arg] = keyword.value
    missing = [f for f in TENSOR_FIELDS[:TENSOR_REQUIRED] if f not in fields]
    if missing:
        raise ModuleFileError(label, node.lineno, f"{where}: Tensor(...) has no {', '.join(missing)}")
    shape = _int_tuple(fields["shape"], f"{where}'s shape", label, minimum=0)
    stride = _int_tuple(fields["stride"], f"{where}'s stride", label, minimum=None)
    if len(shape) != len(stride):
        raise ModuleFileError(label, node.lineno, f"{where} has {len(shape)} sizes but {len(stride)} strides")
    dtype_node = fields["dtype"]
    spelling = dotted(dtype_node)
    dtype = torch_dtype_name(spelling) if spelling.startswith("torch.") else None
    if dtype is None:
        known = ", ".join(f"torch.{d}" for d in TRITON_POINTEE)
        raise ModuleFileError(label, dtype_node.lineno, f"{where} has dtype {_short(dtype_node)}, which no Triton pointer points to (known: {known})")
    offset = _int_field(fields.get("offset"), f"{where}'s offset", label, default=0, minimum=0)
    base = None
    if "base" in fields and not _is_none(fields["base"]):
        base_node = fields["base"]
        if not (isinstance(base_node, ast.Constant) and isinstance(base_node.value, str)):
            raise ModuleFileError(label, base_node.lineno, f"{where}'s base is not the name of an argument ({_short(base_node)})")
        base = base_node.value
        if not isinstance(earlier.get(base), TensorArg):
            raise ModuleFileError(label, base_node.lineno, f"{where}'s base {base!r} is not a Tensor argument before it")
    zeros = False
    if "zeros" in fields:
        zeros_node = fields["zeros"]
        if not (isinstance(zeros_node, ast.Constant) and isinstance(zeros_node.value, bool)):
            raise ModuleFileError(label, zeros_node.lineno, f"{where}'s zeros is not True or False ({_short(zeros_node)})")
        zeros = zeros_node.value
    high = None
    if "high" in fields and not _is_none(fields["high"]):
        high = _int_field(fields["high"], f"{where}'s high", label, default=0, minimum=None)
    return TensorArg(shape, stride, dtype, offset, base, zeros, high)


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _int_tuple(node: ast.expr, what: str, label: str, minimum: int | None) -> tuple[int, ...]:
    if not isinstance(node, (ast.Tuple, ast.List)):
        raise ModuleFileError(label, node.lineno, f"{what} is not a tuple of integers ({_short(node)})")
    return tuple(_int_field(e, what, label, default=0, minimum=minimum) for e in node.elts)


def _int_field(node: ast.expr | None, what: str, label: str, default: int, minimum: int | None) -> int:
    if node is None:
        return default
    value = _scalar(node)
    if not isinstance(value, int) or isinstance(value, bool) or (minimum is not None and value < minimum):
        kind = "an integer" if minimum is None else f"an integer >= {minimum}"
        raise ModuleFileError(label, node.lineno, f"{what} is not {kind} ({_short(node)})")
    return value


def _outputs(stmt: ast.Assign, arguments: dict[str, TensorArg | Scalar], label: str) -> tuple[str, ...]:
    node = stmt.value
    if not isinstance(node, (ast.List, ast.Tuple)):
        raise ModuleFileError(label, node.lineno, f"OUTPUTS is not a list of argument names ({_short(node)})")
    outputs = []
    for element in node.elts:
        if not (isinstance(element, ast.Constant) and isinstance(element.value, str)):
            raise ModuleFileError(label, element.lineno, f"OUTPUTS holds {_short(element)}, not the name of an argument")
        if not isinstance(arguments.get(element.value), TensorArg):
            raise ModuleFileError(label, element.lineno, f"OUTPUTS names {element.value!r}, which is not a Tensor of ARGUMENTS")
        outputs.append(element.value)
    return tuple(outputs)


def _record(stmt: ast.Assign, label: str) -> str | None:
    node = stmt.value
    if not (isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, str))):
        raise ModuleFileError(label, node.lineno, f"RECORD is neither a path string nor None ({_short(node)})")
    return node.value


def _sha256(stmt: ast.Assign, label: str) -> str:
    node = stmt.value
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and SHA256.fullmatch(node.value)):
        raise ModuleFileError(label, node.lineno, f"KERNEL_SHA256 is not 64 hex digits ({_short(node)})")
    return node.value


def _grid(statements: list[ast.stmt], label: str) -> tuple[ast.expr, ...]:
    launches = [s for s in statements if isinstance(s, ast.FunctionDef) and s.name == "launch"]
    if not launches:
        raise ModuleFileError(label, None, "no def launch(...) at the top level")
    if len(launches) > 1:
        raise ModuleFileError(label, launches[1].lineno, f"launch is defined a second time (first at line {launches[0].lineno})")
    grids = [s for s in launches[0].body if isinstance(s, ast.Assign) and len(s.targets) == 1
             and isinstance(s.targets[0], ast.Name) and s.targets[0].id == "grid"]  # fmt: skip
    if len(grids) != 1:
        line = grids[1].lineno if grids else launches[0].lineno
        raise ModuleFileError(label, line, f"launch() must assign grid = (...) once ({'twice' if grids else 'not at all'} here)")
    grid = grids[0].value
    if not isinstance(grid, ast.Tuple) or not grid.elts:
        raise ModuleFileError(label, grid.lineno, f"launch()'s grid is not a tuple of one to three axes ({_short(grid)})")
    if len(grid.elts) > 3:
        raise ModuleFileError(label, grid.lineno, f"launch()'s grid has {len(grid.elts)} axes; a CUDA grid has at most 3")
    return tuple(grid.elts)


def _check_against_kernel(defs: KernelDefs, config: dict, arguments: dict, argument_lines: dict[str, int],
                          names: dict[str, ast.Assign], label: str) -> None:
    """ARGUMENTS and CONFIG give each of the kernel's parameters its value once."""
    name = defs.kernel.name
    for key in arguments:
        if key not in defs.params:
            raise ModuleFileError(label, argument_lines[key], f"ARGUMENTS[{key!r}] is not a parameter of {name} ({', '.join(defs.params)})")
    missing = [p for p in defs.params if p not in defs.constexprs and p not in arguments]
    if missing:
        raise ModuleFileError(label, names["ARGUMENTS"].lineno, f"ARGUMENTS has no entry for {name}'s parameter(s) {', '.join(missing)}")
    twice = [k for k in config if k in arguments]
    if twice:
        raise ModuleFileError(label, names["CONFIG"].lineno, f"{', '.join(twice)} is in both CONFIG and ARGUMENTS: launch would pass it twice")
    unset = [p for p in defs.constexprs if p not in config and p not in arguments]
    if unset:
        raise ModuleFileError(label, names["CONFIG"].lineno, f"no value for constexpr parameter(s) {', '.join(unset)} of {name} in CONFIG")


def _short(node: ast.AST, width: int = 60) -> str:
    """The node's source, shortened for a one-line message."""
    text = ast.unparse(node).split("\n", 1)[0]
    return text if len(text) <= width else text[: width - 3] + "..."

