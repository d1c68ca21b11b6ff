"""The structure of a kernel body that both shapes share: which variables index the program axes and the
reduction, the leading constants, the parameters, and the finished .cu and launcher text."""

from __future__ import annotations

import ast
import copy
import math
from dataclasses import dataclass, field, replace

from harvest.resources import load_template
from harvest.shapes import evaluate_node
from harvest.syntax import dotted
from harvest.twin.cpp import Emitter, Var
from harvest.twin.facts import FLOATS, ModuleFacts, NoTwin, TwinSource
from harvest.twin.helpers import helpers_named, identifiers


@dataclass
class Axes:
    """The roles of the kernel's index variables, found from how they are defined."""

    program: dict[int, str] = field(default_factory=dict)  # program axis -> its index variable
    offsets: dict[str, int] = field(default_factory=dict)  # `tl.program_id(k) * BLOCK` variables -> k
    blocks: dict[int, str] = field(default_factory=dict)  # program axis -> its BLOCK constexpr
    reduction_base: str | None = None  # `tl.arange(0, R_BLOCK)` (looped) or the reduction index (persistent)
    reduction_block: str | None = None


def find_axes(facts: ModuleFacts) -> Axes:
    axes = Axes()
    for stmt in facts.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            continue
        name, value = stmt.targets[0].id, stmt.value
        axis = program_offset(value)
        if axis is None and overflow_offset(value):  # Inductor's y axis continued in z: a program is y + z * ny
            if len(facts.grid) < 3 or facts.grid[2] is not None:
                raise NoTwin("a 2D tile grid whose y axis overflows into z (grid z > 1): not translated")
            axis = 1  # the launch's z is 1: the offset is program_id(1) * BLOCK
        if axis is not None:
            axes.offsets[name] = axis
            if isinstance(value.right, ast.Name):
                axes.blocks[axis] = value.right.id
            continue
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            left, right = value.left, value.right
            if isinstance(left, ast.Name) and left.id in axes.offsets and arange_block(right):
                axes.program[axes.offsets[left.id]] = name
                continue
        block = arange_block(value)
        if block is not None:
            if axes.reduction_base is not None:
                raise NoTwin("more than one reduction axis")
            axes.reduction_base, axes.reduction_block = name, block
    for stmt in facts.body:
        if _inside_offset(stmt, axes):
            continue  # a block offset's statement: the twin computes the offset its own way
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and dotted(node.func) in ("tl.num_programs", "tl.make_block_ptr", "tl.advance",
                                                                       "tl.reshape", "tl.view", "tl.trans", "tl.permute",
                                                                       "tl.dot", "tl.cumsum", "tl.reduce",
                                                                       "tl.sort", "tl.histogram", "tl.gather", "tl.split", "tl.join"):
                raise NoTwin(f"uses {dotted(node.func)}")
            if isinstance(node, ast.Call) and dotted(node.func) == "tl.program_id":
                raise NoTwin(f"uses tl.program_id outside the block-offset pattern: `{ast.unparse(stmt).splitlines()[0][:80]}`"
                              + (" (a mix-order reduction: rows split over programs, partials to a workspace)" if "num_programs" in ast.unparse(stmt) or "RSPLIT" in ast.unparse(stmt) else ""))
    return axes


def program_numels(facts: ModuleFacts, axes: Axes) -> ModuleFacts:
    """A launch with the run's literal grid (N programs) covers N * BLOCK indices along that axis; the kernel's own
    masks keep the overshoot out, as they do in Triton. (An axis of one program: BLOCK indices.)"""
    grid = list(facts.grid)
    for axis in axes.program:
        if axis < len(grid) and grid[axis] is None and axes.blocks.get(axis) in facts.constexprs:
            grid[axis] = ast.Constant(facts.constexprs[axes.blocks[axis]])
    for axis, element in enumerate(grid):
        if axis in facts.counted_axes and isinstance(element, ast.Constant) and isinstance(element.value, int):
            block = axes.blocks.get(axis)
            if block not in facts.constexprs:
                raise NoTwin(f"the launch grid's axis {axis} is a literal {element.value} and the kernel's block size is unknown")
            grid[axis] = ast.Constant(element.value * facts.constexprs[block])
    return replace(facts, grid=tuple(grid))


def overflow_offset(value: ast.expr) -> bool:
    """`(tl.program_id(1) + tl.program_id(2) * tl.num_programs(1)) * BLOCK`: Inductor's y axis continued in z (its
    grid's y is at most 65535 programs)."""
    if not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult) and isinstance(value.right, ast.Name)):
        return False
    return ast.unparse(value.left).replace(" ", "") == "tl.program_id(1)+tl.program_id(2)*tl.num_programs(1)"


def program_offset(value: ast.expr) -> int | None:
    """`tl.program_id(k) * BLOCK` (optionally `.to(tl.int64)`) -> k."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
        call = value.left
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "to":
            call = call.func.value
        if isinstance(call, ast.Call) and dotted(call.func) == "tl.program_id" and call.args and isinstance(call.args[0], ast.Constant):
            return int(call.args[0].value)
    return None


class _ProgramIds(ast.NodeTransformer):
    """`tl.program_id(axis=k)` as `tl.program_id(k)`, and the names in `ids` (`pid = tl.program_id(0)`) as the call."""

    def __init__(self, ids: dict[str, int]):
        self.ids = ids

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if dotted(node.func) == "tl.program_id" and not node.args and len(node.keywords) == 1 and node.keywords[0].arg == "axis":
            return ast.Call(node.func, [node.keywords[0].value], [])
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.ids and isinstance(node.ctx, ast.Load):
            return ast.Call(ast.Attribute(ast.Name("tl", ast.Load()), "program_id", ast.Load()), [ast.Constant(self.ids[node.id])], [])
        return node


def program_offsets_apart(body: list[ast.stmt]) -> list[ast.stmt]:
    """A user-written kernel's program offsets in the shape Inductor writes them, which the translators read:
    `pid = tl.program_id(axis=0)` ... `pid * BLOCK` becomes `tl.program_id(0) * BLOCK`, and `offsets =
    tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)` becomes `offsets_start = tl.program_id(0) * BLOCK` then
    `offsets = offsets_start + tl.arange(0, BLOCK)`. Inductor's kernels are already in that shape: unchanged."""
    assigned = [t.id for s in body for t in (s.targets if isinstance(s, ast.Assign) else []) if isinstance(t, ast.Name)]
    normal = [_ProgramIds({}).visit(copy.deepcopy(s)) for s in body]
    ids = {}
    for stmt in normal:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and isinstance(stmt.value, ast.Call) and dotted(stmt.value.func) == "tl.program_id" \
                and len(stmt.value.args) == 1 and isinstance(stmt.value.args[0], ast.Constant) \
                and assigned.count(stmt.targets[0].id) == 1:
            ids[stmt.targets[0].id] = stmt.value.args[0].value
    if ids:
        normal = [_ProgramIds(ids).visit(s) for s in normal if not (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) and s.targets[0].id in ids)]
    found = []
    for stmt in normal:
        value = stmt.value if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) else None
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and program_offset(value.left) is not None \
                and arange_block(value.right) is not None:
            start = stmt.targets[0].id + "_start"
            while start in assigned:
                start += "_"
            found.append(ast.Assign([ast.Name(start, ast.Store())], value.left))
            found.append(ast.Assign([stmt.targets[0]], ast.BinOp(ast.Name(start, ast.Load()), ast.Add(), value.right)))
            continue
        found.append(stmt)
    return [ast.fix_missing_locations(s) for s in found]


def _inside_offset(stmt: ast.stmt, axes: Axes) -> bool:
    return (isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id in axes.offsets)


def arange_block(value: ast.expr) -> str | None:
    """`tl.arange(0, B)[...]` -> B."""
    while isinstance(value, ast.Subscript):
        value = value.value
    if isinstance(value, ast.Call) and dotted(value.func) == "tl.arange" and len(value.args) == 2:
        block = value.args[1]
        if isinstance(block, ast.Name):
            return block.id
        if isinstance(block, ast.Constant):
            return str(block.value)
    return None


def _assigned_names(body: tuple[ast.stmt, ...]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for stmt in body:
        for node in ast.walk(stmt):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.For) else []
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        counts[name.id] = counts.get(name.id, 0) + 1
    return counts


def names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def defines(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, ast.Assign):
        return {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def names_used(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, ast.Assign):
        return names_in(stmt.value)
    return names_in(stmt)


def split_prologue(facts: ModuleFacts, axes: Axes) -> tuple[list[ast.stmt], list[ast.stmt], dict[str, int]]:
    """Leading constant assignments (`xnumel = 1024`, `rnumel = r0_numel`) and the rest; known integer constants."""
    known = dict(facts.constexprs)
    allowed = set(facts.params) | set(facts.constexprs)
    prologue = []
    index = 0
    for index, stmt in enumerate(facts.body):  # noqa: B007 - `index` is where the prologue ends
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            break
        name = stmt.targets[0].id
        if name in axes.offsets or any(isinstance(n, ast.Call) for n in ast.walk(stmt.value)) or not names_in(stmt.value) <= allowed:
            break
        prologue.append(stmt)
        allowed.add(name)
        value = evaluate_node(stmt.value, known)
        if isinstance(value, (int, float)) and math.isfinite(value):
            known[name] = int(value)
        else:  # a runtime parameter: not a known constant
            known.pop(name, None)
    else:
        index = len(facts.body)
    return prologue, list(facts.body[index:]) if index < len(facts.body) else [], known


def host_expr(node: ast.expr, known: dict[str, int], params: tuple[str, ...]) -> str:
    """A numel expression of launch() in C++ over the launcher's int64_t scalars."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return f"int64_t({node.value})"
    if isinstance(node, ast.Name):
        if node.id in params:
            return node.id
        if node.id in known:
            return f"int64_t({known[node.id]})"
    if isinstance(node, ast.BinOp):
        symbol = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "/"}.get(type(node.op))
        if symbol:
            return f"({host_expr(node.left, known, params)} {symbol} {host_expr(node.right, known, params)})"
    raise NoTwin(f"launch size {ast.unparse(node)!r} is not an integer expression of the launch arguments")


def start_emitter(facts: ModuleFacts) -> tuple[Emitter, list[str], list[str]]:
    """An emitter with the kernel parameters bound, the parameter list and the launcher's arguments (a parameter the
    body assigns to gets another C++ name)."""
    shadowed = {s.targets[0].id for s in facts.body if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)} & set(facts.params)
    out = Emitter(facts)
    out.mutable = {name for name, count in _assigned_names(facts.body).items() if count > 1}
    signature, launcher_args = [], []
    for name in facts.params:
        dtype = facts.arg_dtypes[name]
        cname = out.fresh(name + "_param" if name in shadowed else name)
        out.taken.add(cname)
        out.params[name] = cname
        ctype = out.ctype(dtype)
        if is_pointer(facts, name):
            const = "" if name in facts.stored else "const "
            signature.append(f"{const}{ctype}* {cname}")
            launcher_args.append(f"reinterpret_cast<{const}{ctype}*>({name}.data_ptr())")
            out.bind(name, Var(cname, dtype, 1))
        else:
            signature.append(f"{ctype} {cname}")
            launcher_args.append(f"static_cast<{ctype}>({name})")
            out.bind(name, Var(cname, dtype, 1))
    return out, signature, launcher_args


def is_pointer(facts: ModuleFacts, name: str) -> bool:
    return name in facts.pointer_params


def _launcher_param(facts: ModuleFacts, name: str) -> str:
    return f"torch::Tensor {name}" if is_pointer(facts, name) else ("double " if facts.arg_dtypes[name] in FLOATS else "int64_t ") + name


def index_dtype(facts: ModuleFacts, offset_name: str) -> str:
    stmt = next(s for s in facts.body if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) and s.targets[0].id == offset_name)
    return "i64" if ".to(tl.int64)" in ast.unparse(stmt.value) else "i32"


def finish(facts: ModuleFacts, out: Emitter, signature: list[str], launcher_args: list[str], launch_lines: list[str],
            blocks: str, threads: str, shape: str, notes: list[str], extra: tuple[list[str], list[str]] = ([], []),
            cooperative: str = "") -> TwinSource:
    """The .cu (with the helpers its body names, and the parameters it reads) and the launcher (with the parameters
    it or the kernel reads); `signature` and `launcher_args` are per parameter of facts.params, `extra` the twin's
    own parameters after them (their signature entries and launcher arguments). cooperative: the launcher's C++
    condition for a cooperative launch (every block resident, grid barriers allowed), "" for a plain one."""
    body = "\n".join(out.lines)
    read = identifiers(body)
    kept = [i for i, name in enumerate(facts.params) if out.params[name] in read]
    unread = [name for name in facts.params if out.params[name] not in read]
    host = identifiers("\n".join([*launch_lines, blocks, threads]))
    launched = tuple(name for i, name in enumerate(facts.params) if i in kept or name in host)
    cuda = load_template("twin.cu.j2").render(
        kernel_name=facts.name, signature=",\n    ".join([*(signature[i] for i in kept), *extra[0]]), body=body, uses=out.uses,
        helpers=helpers_named(body), unused=unread, shape=shape, notes=notes,
    )
    params = [_launcher_param(facts, name) for name in launched]
    declaration = f"void launch({', '.join(params)});"
    launcher = load_template("twin_launcher.cu.j2").render(
        kernel_name=facts.name, params=", ".join(params), launch_lines=launch_lines, blocks=blocks, threads=threads,
        arguments=_packed([*(launcher_args[i] for i in kept), *extra[1]], indent=8, width=120), cooperative=cooperative,
    )
    return TwinSource(facts.name, cuda, launcher, declaration, launched, shape, tuple(notes))


def _packed(items: list[str], indent: int, width: int) -> str:
    """Comma-separated, as many on a line as fit in `width` (clang-format's bin-packing of arguments)."""
    lines: list[str] = []
    for item in items:
        if lines and indent + len(lines[-1]) + len(item) + 2 <= width:
            lines[-1] += f", {item}"
        else:
            lines.append(item)
    return (",\n" + " " * indent).join(lines)


def flatten_loops(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of `body` with each loop's own in their place, its variable set to 0 before them."""
    flat = []
    for stmt in body:
        if isinstance(stmt, ast.For):
            if isinstance(stmt.target, ast.Name):
                flat.append(ast.Assign(targets=[ast.Name(stmt.target.id)], value=ast.Constant(0)))
            flat.extend(flatten_loops(stmt.body))
        else:
            flat.append(stmt)
    return flat


def int_value(node: ast.expr, env: dict[str, int]) -> int | None:
    """An integer expression of known names (Triton's // and % on integers truncate, as here for the values used)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.Subscript):
        return int_value(node.value, env)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = int_value(node.operand, env)
        return None if value is None else -value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to":
        return int_value(node.func.value, env)
    if isinstance(node, ast.BinOp):
        left, right = int_value(node.left, env), int_value(node.right, env)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and right != 0:
            quotient = abs(left) // abs(right) * (1 if (left >= 0) == (right > 0) else -1)
            return quotient if isinstance(node.op, ast.FloorDiv) else left - quotient * right
    return None


def steps_within_groups(offset: ast.expr, body: list[ast.stmt], moving: set[str], width: int) -> bool:
    """Whether, read from its arithmetic, `offset` moves with the index `moving` names (and whatever the statements
    of `body` compute from them) piecewise linearly, in pieces that no aligned group of `width` index values
    straddles: every // and % of a moving value divides by a constant multiple of `width`, no two moving values are
    multiplied, and nothing else (a call, a comparison, a loaded value) touches one. The caller still measures the
    step (one index value, one element) at a sample point."""
    moves = set(moving)
    for stmt in body:
        if isinstance(stmt, ast.Assign) and names_used(stmt) & moves:
            moves |= defines(stmt)
    needed = names_in(offset)
    for stmt in reversed(body):
        if isinstance(stmt, ast.Assign) and defines(stmt) & needed:
            needed |= names_used(stmt)
    values = [offset, *(s.value for s in body if isinstance(s, ast.Assign) and defines(s) & needed & moves)]
    for value in values:
        for node in ast.walk(value):
            if not names_in(node) & moves:
                continue
            if isinstance(node, ast.BinOp):
                left, right = bool(names_in(node.left) & moves), bool(names_in(node.right) & moves)
                if isinstance(node.op, (ast.FloorDiv, ast.Mod)):
                    if right or not (isinstance(node.right, ast.Constant) and type(node.right.value) is int
                                     and node.right.value > 0 and node.right.value % width == 0):
                        return False
                elif isinstance(node.op, ast.Mult):
                    if left and right:
                        return False
                elif not isinstance(node.op, (ast.Add, ast.Sub)):
                    return False
            elif not isinstance(node, (ast.Name, ast.Subscript, ast.Slice, ast.Tuple, ast.Constant, ast.UnaryOp,
                                       ast.expr_context, ast.unaryop, ast.operator)):
                return False
    return True


def size_stand_ins(facts: ModuleFacts) -> dict[str, int]:
    """A value for each size the kernel takes at run time (dynamic shapes: ks0): the strides, not the sizes, decide
    which way an address walks memory."""
    return {p: 1024 for p in facts.params if p not in facts.pointer_params and facts.arg_dtypes.get(p) in ("i32", "i64")}


def offset_at(body: list[ast.stmt], address: ast.expr, env: dict[str, int]) -> int | None:
    """The element offset of `address` (`ptr + (offset)`) with the names of `env` at those values, from the kernel's
    integer statements (loops flattened; a statement assigning a name of `env` keeps env's value)."""
    env = dict(env)
    given = set(env)
    for stmt in flatten_loops(body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            if name in given:
                continue
            value = int_value(stmt.value, env)
            if value is not None:
                env[name] = value
            else:
                env.pop(name, None)
    if isinstance(address, ast.BinOp) and isinstance(address.op, ast.Add):
        return int_value(address.right, env)
    return None


def mask_of(call: ast.Call) -> ast.expr | None:
    """The mask of a tl.load (second argument) or tl.store (third), positional or keyword; None when there is none."""
    position = 2 if dotted(call.func) == "tl.store" else 1
    mask = call.args[position] if len(call.args) > position else next((k.value for k in call.keywords if k.arg == "mask"), None)
    return None if isinstance(mask, ast.Constant) and mask.value is None else mask
