"""Apply the plan with a transformer, fold pure aliases, and check the result is the same kernel with new names."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m

from harvest.kernel_facts import FunctionFacts
from harvest.model import FxNode
from harvest.ops import SAME_VALUES
from harvest.rename.context import RESERVED, DroppedParam, RenameContext, RenameResult
from harvest.rename.gather import (
    AXIS_NAME,
    COORD,
    LEFTOVER,
    LEGACY,
    TMP,
    FactGatherer,
    Facts,
    is_inductor_name,
    memory_facts,
)
from harvest.rename.names import readable_kernel_name
from harvest.rename.plan import ATEN_OF, plan_names, unique_names
from harvest.rename.scope import KernelScope, kernel_scope
from harvest.rename.standalone import kernel_def
from harvest.syntax import QuickTransformer, dotted

# ---------------------------------------------------------------------------------------------------------------------
# Transform


class _Apply(QuickTransformer):
    """Rename the Name nodes scope analysis tied to the kernel's locals; drop the statements the plan deletes and
    the kernel's parameters that it no longer takes."""

    def __init__(self, nodes: dict[int, str], drop: set[int], kernel: str, new_kernel: str,
                 comments: dict[int, str] | None = None, drop_params: frozenset[str] = frozenset()) -> None:
        self.nodes = nodes  # id(original Name node) -> new name
        self.drop = drop  # id(original statement line) to delete
        self.comments = comments or {}  # id(original statement line) -> a comment to put at its end
        self.kernel = kernel
        self.new_kernel = new_kernel
        self.drop_params = drop_params  # Inductor names of the kernel's parameters to leave out of its def

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        new = self.nodes.get(id(original_node))
        return updated_node.with_changes(value=new) if new else updated_node

    def leave_Param(self, original_node: cst.Param, updated_node: cst.Param) -> cst.Param:
        new = self.nodes.get(id(original_node))
        return updated_node.with_changes(name=cst.Name(new)) if new else updated_node

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        if id(original_node) in self.drop:
            return cst.RemoveFromParent()
        comment = self.comments.get(id(original_node))
        if comment is not None:
            trailing = updated_node.trailing_whitespace
            return updated_node.with_changes(trailing_whitespace=trailing.with_changes(
                whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(comment)))
        return updated_node

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        if original_node.name.value != self.kernel:
            return updated_node
        updated_node = updated_node.with_changes(name=cst.Name(self.new_kernel))
        if not self.drop_params:
            return updated_node
        old, new = original_node.params.params, updated_node.params.params  # the same parameters, in order
        kept = [p for o, p in zip(old, new) if o.name.value not in self.drop_params]
        if kept and kept[-1] is not new[-1]:  # the last one went: the new last one takes its (absent) comma
            kept[-1] = kept[-1].with_changes(comma=new[-1].comma)
        return updated_node.with_changes(params=updated_node.params.with_changes(params=kept))


def _statement_of(node: cst.CSTNode, parents: dict[cst.CSTNode, cst.CSTNode]) -> cst.CSTNode:
    while not isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        node = parents[node]
    return node


def _position(stmt: cst.CSTNode, parents: dict[cst.CSTNode, cst.CSTNode]) -> tuple[cst.CSTNode, int]:
    """(the block holding a statement, its index there)."""
    block = parents[stmt]
    return block, list(cst.ensure_type(block, cst.IndentedBlock).body).index(stmt)  # type: ignore[arg-type]


def _enclosing(node: cst.CSTNode, parents: dict[cst.CSTNode, cst.CSTNode], block: cst.CSTNode) -> int | None:
    """Index of the statement of `block` that contains `node`, or None when `node` is outside `block`."""
    while node in parents:
        parent = parents[node]
        if parent is block:
            return list(cst.ensure_type(block, cst.IndentedBlock).body).index(node)  # type: ignore[arg-type]
        node = parent
    return None


def _foldable(alias: str, target: str, scope: KernelScope) -> set[int] | None:
    """Statements `alias = target` to delete when every read of `alias` sees the value `target` has then, else None.

    Holds when every assignment of alias is such a statement S, every read of alias comes after some S in S's own
    block, and target is assigned in that block only before S (never after it, at any depth).
    """
    parents = scope.parents
    statements: list[cst.CSTNode] = []
    for node in scope.assignments.get(alias, []):
        stmt = _statement_of(node, parents) if isinstance(node, cst.Name) else None
        if not m.matches(stmt, m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget(m.Name(alias))],
                                                                    value=m.Name(target))])):
            return None
        statements.append(stmt)  # type: ignore[arg-type]
    target_nodes = scope.assignments.get(target, [])
    if not statements or any(not isinstance(n, (cst.Name, cst.Param)) for n in target_nodes):
        return None
    regions: list[tuple[cst.CSTNode, int]] = []
    for stmt in statements:
        block, i = _position(stmt, parents)
        for node in target_nodes:
            j = _enclosing(node, parents, block)
            if j is not None and j >= i:
                return None
        regions.append((block, i))
    for access in scope.accesses.get(alias, []) + scope.inner_accesses.get(alias, []):
        if not any((j := _enclosing(access, parents, block)) is not None and j > i for block, i in regions):
            return None
    return {id(s) for s in statements}


_CONSTANT_LINE = m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget(m.Name())], value=m.Integer())])
_ASSIGN_LINE = m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget(m.Name())])])
_PURE_CALLS = frozenset({"tl.full", "tl.zeros", "tl.arange", "tl.program_id", "tl.broadcast_to"})


@dataclass(frozen=True)
class _FixedSize:
    """A size parameter whose value the body overwrites with the size Inductor compiled in, and that stays so."""

    param: str
    line: int  # id of its `xnumel = 1048576` statement line
    value: int
    reason: tuple[str, ...]  # ("persistent", block, value) | ("unmasked",) | ("loop",) | ("launch", expression)


def _size_params(kernel: cst.FunctionDef, facts: Facts, scope: KernelScope, context: RenameContext,
                 drop: set[int]) -> list[_FixedSize]:
    """Size parameters Inductor shadows with a constant (`xnumel = 1048576` under `def k(..., xnumel, ...)`).

    Where the kernel still bounds-checks against the size and the launch passes that same value, the constant line
    is dropped (added to `drop`): the parameter becomes real, and a person who changes the size in ARGUMENTS
    changes what the kernel computes. Where Inductor's specialisation does not allow it, the size stays fixed
    (returned, to leave the def: no value passed for it was ever used) and its line gets a reason: a persistent
    reduction's block is the row length, or the kernel has no bounds mask at all (every block is full at this
    size), the size bounds a loop (on the H200 a run-time trip count compiled a looped layer-norm backward to
    results 1 ulp off Inductor's in 9203 of 1M values), or the launch passes another value.
    A parameter read before the line that overwrites it is used as passed, and is left alone.
    """
    hints = {param: expr.strip() for param, _, expr in context.param_hints}
    fixed: list[_FixedSize] = []
    body = list(kernel.body.body)
    for name in facts.params:
        axis = AXIS_NAME.match(name)
        if axis is None or axis.group(2) != "numel":
            continue
        lines = [_statement_of(a, scope.parents) for a in scope.assignments.get(name, []) if isinstance(a, cst.Name)]
        if len(lines) != 1 or scope.parents.get(lines[0]) is not kernel.body or not m.matches(lines[0], _CONSTANT_LINE):
            continue
        line = cst.ensure_type(lines[0], cst.SimpleStatementLine)
        reads = scope.accesses.get(name, []) + scope.inner_accesses.get(name, [])
        at = body.index(line)
        if any((i := _enclosing(r, scope.parents, kernel.body)) is None or i <= at for r in reads):
            continue
        value = cst.ensure_type(cst.ensure_type(line.body[0], cst.Assign).value, cst.Integer).evaluated_value
        block = f"{axis.group(1).upper()}BLOCK"
        block_values = facts.defs.get(block, [])
        reason: tuple[str, ...]
        if axis.group(1).startswith("r") and len(block_values) == 1 and isinstance(block_values[0], cst.Integer):
            reason = ("persistent", block, block_values[0].value)
        elif not reads:
            reason = ("unmasked",)
        elif any(_in_loop_bound(node, scope.parents) for node in scope.accesses.get(name, [])):
            reason = ("loop",)
        elif hints.get(name) == str(value):
            drop.add(id(line))
            continue
        else:
            reason = ("launch", hints.get(name, ""))
        fixed.append(_FixedSize(name, id(line), int(value), reason))
    return fixed


def _in_loop_bound(node: cst.CSTNode, parents: dict[cst.CSTNode, cst.CSTNode]) -> bool:
    """Whether `node` is read in the `range(...)` of a for loop (a looped reduction's trip count)."""
    while node in parents:
        parent = parents[node]
        if isinstance(parent, cst.For):
            return parent.iter is node
        node = parent
    return False


def _fixed_size_comment(reason: tuple[str, ...], final: dict[str, str]) -> str:
    if reason[0] == "persistent":
        return f"# fixed: the whole row is one block ({final.get(reason[1], reason[1])} = {reason[2]}), as Inductor compiled it"
    if reason[0] == "loop":
        return "# fixed: a loop bound, as Inductor compiled it (a run-time bound compiles to code whose last bits differ)"
    if reason[0] == "unmasked":
        return "# fixed: at this size every block is full, so Inductor left out the bounds mask"
    if reason[1]:
        return f"# fixed: compiled in by Inductor (Inductor's launch passes {reason[1]})"
    return "# fixed: compiled in by Inductor"


def _pure(node: cst.CSTNode) -> bool:
    """An expression whose evaluation has no effect but its value: names, numbers, arithmetic, comparisons, slicing,
    tl.full / tl.arange / tl.program_id / tl.broadcast_to and `.to(...)` casts of such expressions."""
    if isinstance(node, (cst.Name, cst.Integer, cst.Float, cst.SimpleString, cst.Ellipsis)):
        return True
    if isinstance(node, cst.Attribute):
        return _pure(node.value)
    if isinstance(node, cst.BinaryOperation):
        return _pure(node.left) and _pure(node.right)
    if isinstance(node, cst.UnaryOperation):
        return _pure(node.expression)
    if isinstance(node, cst.BooleanOperation):
        return _pure(node.left) and _pure(node.right)
    if isinstance(node, cst.Comparison):
        return _pure(node.left) and all(_pure(c.comparator) for c in node.comparisons)
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(_pure(e.value) for e in node.elements)
    if isinstance(node, cst.Subscript):
        return _pure(node.value) and all(_pure(e.slice) for e in node.slice)
    if isinstance(node, cst.Index):
        return _pure(node.value)
    if isinstance(node, cst.Slice):
        return all(part is None or _pure(part) for part in (node.lower, node.upper, node.step))
    if isinstance(node, cst.Call):
        func = node.func
        callee = dotted(func)
        is_cast = isinstance(func, cst.Attribute) and func.attr.value == "to" and _pure(func.value)
        return (callee in _PURE_CALLS or is_cast) and all(_pure(arg.value) for arg in node.args)
    return False


def _dead_locals(facts: Facts, scope: KernelScope, drop: set[int], merged: dict[str, str]) -> set[int]:
    """Assignments nothing reads (Inductor's unused masks, say) whose value has no effect: to delete.

    Repeated until nothing changes, since deleting one can leave the names it read unread."""
    dead: set[int] = set()
    changed = True
    while changed:
        changed = False
        for name in facts.order:
            axis = AXIS_NAME.match(name)
            if name in facts.params or name in merged or axis and axis.group(2) in ("offset", "index", "base"):
                continue  # a program's offsets and indices stay: the skeleton every kernel is read (and twinned) by
            lines = [_statement_of(a, scope.parents) for a in scope.assignments.get(name, [])]
            if not lines or all(id(line) in drop | dead for line in lines):
                continue
            aliases = [name] + [alias for alias, target in merged.items() if target == name]  # read through them too
            readers = [r for n in aliases for r in scope.accesses.get(n, []) + scope.inner_accesses.get(n, [])]
            if any(id(_statement_of(r, scope.parents)) not in drop | dead for r in readers):
                continue
            if all(m.matches(line, _ASSIGN_LINE) and _pure(cst.ensure_type(line, cst.SimpleStatementLine).body[0].value)
                   for line in lines):
                dead |= {id(line) for line in lines}
                changed = True
    return dead


def rename_module(module: cst.Module, context: RenameContext, function: FunctionFacts) -> RenameResult:
    """Rename the kernel def of `module` (the kernel made standalone); `function` is that def's facts from
    harvest.kernel_facts."""
    kernel = kernel_def(module)
    assert kernel is not None  # _standalone checked
    old_kernel = kernel.name.value
    facts = memory_facts([p.name.value for p in kernel.params.params], function)
    scope = kernel_scope(module, kernel, also=FactGatherer(facts))  # names, reads and facts in one walk
    parents = scope.parents
    assignments = lambda name: scope.assignments.get(name, [])  # noqa: E731
    if kernel.params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or kernel.params.kwonly_params:
        raise ValueError("the kernel takes *args or keyword-only parameters")

    # Deletions first: names they remove need no new name.
    drop: set[int] = set()
    merged: dict[str, str] = {}  # alias -> the name it copies
    for name in facts.order:
        values = facts.defs[name]
        if name in LEGACY and not scope.accesses.get(name) and not scope.inner_accesses.get(name) \
                and all(isinstance(v, (cst.Name, cst.Integer)) for v in values):
            drop |= {id(_statement_of(a, parents)) for a in assignments(name)}
        elif COORD.match(name) and all(isinstance(v, cst.Name) for v in values) \
                and len({cst.ensure_type(v, cst.Name).value for v in values}) == 1:
            target = cst.ensure_type(values[0], cst.Name).value
            statements = _foldable(name, target, scope)
            if statements is not None and is_inductor_name(target):
                drop |= statements
                merged[name] = target
    # r0_offset = 0 in persistent reductions is only read by the dead `roffset` alias
    for name in facts.order:
        if AXIS_NAME.match(name) and name not in facts.params \
                and all(isinstance(v, cst.Integer) for v in facts.defs[name]):
            readers = scope.accesses.get(name, []) + scope.inner_accesses.get(name, [])
            if readers and all(id(_statement_of(r, parents)) in drop for r in readers):
                drop |= {id(_statement_of(a, parents)) for a in assignments(name)}
    fixed = _size_params(kernel, facts, scope, context, drop)
    drop |= _dead_locals(facts, scope, drop, merged)
    gone = {n for n in facts.order if n not in facts.params
            and all(id(_statement_of(a, parents)) in drop for a in assignments(n))}
    live = [n for n in facts.order if n not in gone]
    base, trace = plan_names(facts, context)
    order = list(dict.fromkeys(facts.params + live))
    kept = {n for n in set(facts.params) | set(facts.order) if n not in base}
    kept |= scope.module_reads
    kept -= set(base)
    final = unique_names(base, order, kept | {old_kernel})
    for alias, target in merged.items():
        final[alias] = final.get(target, target)
    new_kernel = context.kernel_name or readable_kernel_name(old_kernel)
    if new_kernel in set(final.values()) | kept or new_kernel in RESERVED:
        new_kernel = f"{new_kernel}_fn"

    nodes: dict[int, str] = {}
    for name, new in final.items():
        if new == name:
            continue
        for node in assignments(name) + scope.accesses.get(name, []) + scope.inner_accesses.get(name, []):
            nodes[id(node)] = new
    comments = {size.line: _fixed_size_comment(size.reason, final) for size in fixed}
    dropped = {size.param for size in fixed}
    renamed = module.visit(_Apply(nodes, drop, old_kernel, new_kernel, comments, frozenset(dropped)))
    code = renamed.code

    warnings: list[str] = []
    tree = ast.parse(code)
    compile(tree, f"<{new_kernel}>", "exec")  # raises -> caller falls back to Inductor's names
    new_def = next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == new_kernel), None)
    new_params = [p.arg for p in new_def.args.args] if new_def else []
    if len(new_params) != len(facts.params) - len(dropped):
        raise ValueError("the parameter list changed length")
    taken = iter(new_params)
    params = tuple((p, final.get(p, p) if p in dropped else next(taken)) for p in facts.params)
    if len(set(new_params)) != len(new_params):
        raise ValueError("two parameters got the same name")
    left = sorted(set(LEFTOVER.findall(code)))
    if left:
        warnings.append(f"Inductor names left in {new_kernel}: {', '.join(left)}")
    fx = _trace_fx(base, context.fragment, facts)
    mapping = [(new_kernel, old_kernel, "")]
    for name in order + list(merged):
        if name in final and final[name] != name:
            mapping.append((final[name], name, trace.get(name, "") or fx.get(name, "")))
    dropped_params = tuple(DroppedParam(size.param, final.get(size.param, size.param), size.value,
                                        _fixed_size_comment(size.reason, final).removeprefix("# fixed: "))
                           for size in fixed)
    return RenameResult(code=code, kernel_name=new_kernel, mapping=tuple(mapping), params=params, ok=True,
                        warnings=tuple(warnings), dropped_params=dropped_params)


def _fx_op(target: str) -> str:
    """`torch.ops.aten.expand.default` / `prims.convert_element_type.default` -> the op's name."""
    parts = target.removeprefix("torch.ops.").split(".")
    return parts[1] if len(parts) > 1 else ""


def _trace_fx(base: dict[str, str], fragment: Sequence[FxNode], facts: Facts) -> dict[str, str]:
    """tmp -> FX node, where op and operands both match.

    The op: the op that computes the tmp matches exactly one node of the fragment, and vice versa. The operands: each
    tmp operand that is itself traced must be an argument of that node. Operands the kernel loads have no FX name
    here and do not vote. A tmp that fails either test keeps no FX name, rather than a wrong one.
    """
    by_target: dict[str, list[str]] = {}
    for node in fragment:
        if node.op == "call_function" and node.target.startswith(("aten.", "torch.ops.aten.")):
            op = node.target.removeprefix("torch.ops.").split(".")[1]
            by_target.setdefault(op, []).append(node.name)
    by_word: dict[str, list[str]] = {}
    for old, word in base.items():
        if TMP.match(old) and not old.startswith("_"):
            by_word.setdefault(word, []).append(old)
    candidates: dict[str, str] = {}
    for word, olds in by_word.items():
        aten = ATEN_OF.get(word)
        nodes = by_target.get(aten, []) if aten else []
        if len(olds) == 1 and len(nodes) == 1:
            candidates[olds[0]] = nodes[0]
    nodes = {node.name: node for node in fragment}

    def reads(name: str, depth: int = 0) -> set[str]:
        """The node's arguments, and through views and casts (same values) what those read."""
        found: set[str] = set()
        node = nodes.get(name)
        for ref in node.refs if node is not None else ():
            found.add(ref)
            source = nodes.get(ref)
            if source is not None and depth < 8 and _fx_op(source.target) in SAME_VALUES:
                found |= reads(ref, depth + 1)
        return found

    arguments = {name: reads(name) for name in set(candidates.values())}
    traced: dict[str, str] = {}
    for tmp, node in candidates.items():
        values = facts.defs.get(tmp, [])
        operands = {n.value for v in values[:1] for n in m.findall(v, m.Name()) if TMP.match(n.value)} - {tmp}
        if all(candidates[o] in arguments.get(node, set()) for o in operands if o in candidates):
            traced[tmp] = node
    return traced
