"""What a kernel's source does, gathered in one walk over its shared `ast` (harvest.syntax.kernel_trees) and kept
once per source: its defs and their parameters, per pointer its loads and stores (address, mask, value, order), its
reduction and libdevice calls, and what its names are assigned. Fusion counts these facts; the reference reads
which pointers are loaded and stored, and what is stored last; render and sweep read the parameters."""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass

from harvest.syntax import dotted, is_constexpr_annotation, is_jit_def, kernel_ast, pointer_of

# Calls that reduce (or scan) along an axis. `triton_helpers.maximum` / `minimum` are elementwise and not listed.
REDUCTION_CALLS = frozenset(
    {
        "tl.sum",
        "tl.max",
        "tl.min",
        "tl.argmax",
        "tl.argmin",
        "tl.reduce",
        "tl.xor_sum",
        "tl.cumsum",
        "tl.cumprod",
        "tl.associative_scan",
        "triton_helpers.max2",
        "triton_helpers.min2",
        "triton_helpers.prod",
        "triton_helpers.any",
        "triton_helpers.welford",
        "triton_helpers.max_with_index",
        "triton_helpers.min_with_index",
        "triton_helpers.online_softmax_reduce",
    }
)

@dataclass(frozen=True)
class Parameter:
    name: str
    constexpr: bool  # annotated `tl.constexpr` (a block size): launch() does not pass it positionally


@dataclass(frozen=True)
class Call:
    """A call of a dotted name (`tl.sum`, `libdevice.exp`, `triton_helpers.max2`)."""

    name: str
    order: int  # position among the source's calls, arguments first: `tl.store(p, tl.load(q))` loads q first


@dataclass(frozen=True)
class MemoryAccess:
    """One `tl.load`, `tl.store` or `tl.atomic_*` call that has an address. The nodes are the shared tree's: read
    them, never change them."""

    call: str  # "tl.load", "tl.store", "tl.atomic_add"
    order: int  # as Call.order
    address: ast.expr  # the first argument: `in_ptr0 + (x0 + 16*r0_1)`
    pointer: str | None  # the address's leftmost name: "in_ptr0" (None when the address does not start at a name)
    names: frozenset[str]  # every name in the address, attributes' and keywords' too (block pointers and the like)
    mask: ast.expr | None  # the `mask` argument, positional or keyword
    value: ast.expr | None  # what a store or an atomic writes (the second positional argument)

    @property
    def kind(self) -> str:
        """"load", "store" or "atomic"."""
        return "load" if self.call == "tl.load" else "store" if self.call == "tl.store" else "atomic"

    @property
    def address_text(self) -> str:
        return ast.unparse(self.address)

    @property
    def mask_text(self) -> str | None:
        return ast.unparse(self.mask) if self.mask is not None else None


@dataclass(frozen=True)
class Assignment:
    target: str
    value: ast.expr | None  # None: one of the names a tuple unpacks ...
    unpacked: ast.expr | None = None  # ... from this value (`a, b, c = triton_helpers.welford(...)`) ...
    position: int = 0  # ... at this position


@dataclass(frozen=True)
class FunctionFacts:
    """One outermost def, facts from its body (defs nested in it included); or, named "", what lies outside every
    def's body (decorators, defaults, module statements)."""

    name: str
    parameters: tuple[Parameter, ...]  # the positional parameters, in order
    jit: bool  # decorated `triton.jit` or `triton.jit(...)` (syntax.is_jit_def)
    calls: tuple[Call, ...]  # every call of a dotted name, in order
    accesses: tuple[MemoryAccess, ...]  # in order
    assignments: tuple[Assignment, ...]  # `name = value` and `name: T = value`, in order

    @property
    def params(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters)

    @property
    def constexprs(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters if p.constexpr)

    @property
    def reduction_calls(self) -> tuple[Call, ...]:
        return tuple(c for c in self.calls if c.name in REDUCTION_CALLS)

    @property
    def libdevice_calls(self) -> tuple[Call, ...]:
        return tuple(c for c in self.calls if c.name.startswith("libdevice."))

    def pointer_aliases(self) -> dict[str, str]:
        """Names that stand for a pointer parameter: a template names its parameters again (`A = arg_A`) and builds
        pointers from them (`x_base = X + ...`, `x_ptrs = x_base + ...`). A name whose every assignment is the
        parameter, or such a name plus or minus an offset (itself plus a step counts too: `A = A + step`)."""
        params = set(self.params)
        values: dict[str, list[ast.expr | None]] = {}
        for assignment in self.assignments:
            if assignment.target not in params:
                values.setdefault(assignment.target, []).append(assignment.value)

        def base(value: ast.expr | None, seen: frozenset[str]) -> str | None:
            while isinstance(value, ast.Subscript) or (isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Add, ast.Sub))):
                value = value.value if isinstance(value, ast.Subscript) else value.left
            if not isinstance(value, ast.Name):
                return None
            if value.id in params:
                return value.id
            if value.id in seen:
                return ""  # the name itself again: says nothing new
            if value.id not in values:
                return None
            found = {base(v, seen | {value.id}) for v in values[value.id]} - {""}
            return found.pop() if len(found) == 1 else None

        aliases = {}
        for name, assigned in values.items():
            found = {base(v, frozenset({name})) for v in assigned} - {""}
            if len(found) == 1 and None not in found:
                aliases[name] = found.pop()
        return aliases

    def loads_of(self, param: str) -> tuple[MemoryAccess, ...]:
        return tuple(a for a in self.accesses if a.kind == "load" and a.pointer == param)

    def stores_of(self, param: str) -> tuple[MemoryAccess, ...]:
        return tuple(a for a in self.accesses if a.kind == "store" and a.pointer == param)


@dataclass(frozen=True)
class KernelFacts:
    functions: tuple[FunctionFacts, ...]  # the outermost defs, in source order
    outside: FunctionFacts  # calls outside every def's body

    def function(self, name: str) -> FunctionFacts | None:
        """The def called `name`, else the last def (None when the source has no def)."""
        named = [f for f in self.functions if f.name == name]
        return named[0] if named else self.functions[-1] if self.functions else None

    def named(self, name: str) -> FunctionFacts | None:
        """The def called `name` (None when there is none)."""
        return next((f for f in self.functions if f.name == name), None)

    @property
    def everywhere(self) -> tuple[FunctionFacts, ...]:
        """Every part of the source: each def's body and what lies outside them."""
        return (*self.functions, self.outside)


@functools.lru_cache(maxsize=256)
def kernel_facts(source: str) -> KernelFacts:
    """The facts of a kernel source, gathered once per process; SyntaxError when the source does not parse."""
    return _gather(kernel_ast(source))


def _gather(tree: ast.Module) -> KernelFacts:
    """The one walk over a kernel's tree (the gather-once test counts the calls of this function)."""
    gatherer = _Gatherer()
    gatherer.visit(tree)
    return KernelFacts(tuple(gatherer.functions), gatherer.outside.facts("", (), False))


# ---------------------------------------------------------------------------------------------------------------
# The one walk. Calls are recorded after their arguments (post-order), assignments after their values.


class _Bucket:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.accesses: list[MemoryAccess] = []
        self.assignments: list[Assignment] = []

    def facts(self, name: str, parameters: tuple[Parameter, ...], jit: bool) -> FunctionFacts:
        return FunctionFacts(name, parameters, jit, tuple(self.calls), tuple(self.accesses), tuple(self.assignments))


def _names(node: ast.expr) -> frozenset[str]:
    """Every name an expression spells: variables, attributes, keywords and lambda parameters."""
    names: set[str] = set()
    for child in ast.walk(node):  # only the address of a block pointer: a few nodes
        if isinstance(child, ast.Name):
            names.add(child.id)
        elif isinstance(child, ast.Attribute):
            names.add(child.attr)
        elif isinstance(child, (ast.keyword, ast.arg)) and child.arg:
            names.add(child.arg)
    return frozenset(names)


def _argument(node: ast.Call, position: int | None, keyword: str) -> ast.expr | None:
    if position is not None and len(node.args) > position:
        return node.args[position]
    return next((k.value for k in node.keywords if k.arg == keyword), None)


def _mask_position(call: str) -> int | None:
    if call == "tl.load":
        return 1
    return None if call == "tl.atomic_cas" else 2


class _Gatherer(ast.NodeVisitor):
    def __init__(self) -> None:
        self.outside = _Bucket()
        self.bucket = self.outside
        self.functions: list[FunctionFacts] = []
        self.depth = 0
        self.order = 0

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if self.depth > 0:
            self.depth += 1
            self.generic_visit(node)
            self.depth -= 1
            return
        for part in (*node.decorator_list, node.args, node.returns):  # evaluated outside the body
            if part is not None:
                self.visit(part)
        self.bucket, self.depth = _Bucket(), 1
        for statement in node.body:
            self.visit(statement)
        parameters = tuple(
            Parameter(a.arg, is_constexpr_annotation(a.annotation)) for a in node.args.args
        )
        self.functions.append(self.bucket.facts(node.name, parameters, is_jit_def(node)))
        self.bucket, self.depth = self.outside, 0

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        for target in node.targets:
            if isinstance(target, ast.Name):
                self.bucket.assignments.append(Assignment(target.id, node.value))
            elif isinstance(target, ast.Tuple):
                self.bucket.assignments.extend(Assignment(e.id, None, node.value, i) for i, e in enumerate(target.elts)
                                               if isinstance(e, ast.Name))

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.generic_visit(node)
        if isinstance(node.target, ast.Name):
            self.bucket.assignments.append(Assignment(node.target.id, node.value))

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)  # arguments first
        name = dotted(node.func)
        if not name:
            return
        order, self.order = self.order, self.order + 1
        self.bucket.calls.append(Call(name, order))
        if name in ("tl.load", "tl.store") or name.startswith("tl.atomic_"):
            if not node.args:
                return
            address = node.args[0]
            pointer = pointer_of(address)
            names = frozenset({pointer}) if pointer is not None else _names(address)
            mask = _argument(node, _mask_position(name), "mask")
            value = node.args[1] if name != "tl.load" and len(node.args) >= 2 else None
            self.bucket.accesses.append(MemoryAccess(name, order, address, pointer, names, mask, value))
