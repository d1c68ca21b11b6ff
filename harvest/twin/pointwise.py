"""Pointwise kernels: one element (or one 16-byte chunk) per thread, 16-byte vector accesses where the kernel reads
and writes at the element's own index."""

from __future__ import annotations

import ast

from harvest.syntax import dotted, pointer_of
from harvest.twin.body import (
    Axes,
    defines,
    finish,
    host_expr,
    index_dtype,
    int_value,
    is_pointer,
    mask_of,
    names_in,
    names_used,
    offset_at,
    size_stand_ins,
    split_prologue,
    start_emitter,
    steps_within_groups,
)
from harvest.twin.cpp import Value, Var
from harvest.twin.expressions import Expressions, Statements
from harvest.twin.facts import CTYPES, ModuleFacts, NoTwin, TwinSource


def aliases(body: list[ast.stmt], name: str) -> set[str]:
    """`name` and every variable assigned as a plain copy of it (`x0 = xindex`)."""
    names = {name}
    for stmt in body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Name) and stmt.value.id in names:
            names.add(stmt.targets[0].id)
    return names


def _full_true(value: ast.expr) -> bool:
    while isinstance(value, ast.Subscript):
        value = value.value
    return (isinstance(value, ast.Call) and dotted(value.func) == "tl.full" and len(value.args) > 1
            and isinstance(value.args[1], ast.Constant) and value.args[1].value is True)


def axis_masks(body: list[ast.stmt], index_names: set[str]) -> set[str]:
    masks = set()
    for stmt in body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
            value = stmt.value
            if _full_true(value) or (isinstance(value, ast.Compare) and isinstance(value.left, ast.Name)
                                     and value.left.id in index_names and isinstance(value.ops[0], ast.Lt)):
                masks.add(stmt.targets[0].id)
    return masks


def _contiguous_accesses(body: list[ast.stmt], index_names: set[str], masks: set[str], facts: ModuleFacts) -> list[tuple[str, ast.Call, str]]:
    """Loads and stores at the element's own index with no mask but the axis mask: ("load"/"store", call, pointer)."""
    found = []
    for stmt in body:
        call = stmt.value if isinstance(stmt, (ast.Assign, ast.Expr)) else None
        if not isinstance(call, ast.Call) or dotted(call.func) not in ("tl.load", "tl.store"):
            continue
        kind = "load" if dotted(call.func) == "tl.load" else "store"
        if kind == "load" and not (isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)):
            continue
        address = call.args[0]
        mask = mask_of(call)
        if not (isinstance(address, ast.BinOp) and isinstance(address.op, ast.Add) and isinstance(address.left, ast.Name)
                and isinstance(address.right, ast.Name) and address.right.id in index_names):
            continue
        if mask is not None and not (isinstance(mask, ast.Name) and mask.id in masks):
            continue
        pointer = address.left.id
        if pointer in facts.params and is_pointer(facts, pointer):
            found.append((kind, call, pointer))
    return found


def grouped_accesses(body: list[ast.stmt], index: str, masks: set[str], facts: ModuleFacts, taken: list,
                     smallest: int, stand_ins: dict[str, int] | None = None) -> tuple[list[tuple[str, ast.Call, str]], int]:
    """Loads and stores not at the element's own index but contiguous within each aligned group of `elements`
    neighbouring elements (a permuted copy: `col + 64*mid + 512*mid_1` of col = offsets % 64), with no mask but the
    axis mask: ("load"/"store", call, pointer), and `elements`. Within a group the address moves with the index when
    every // and % on the way divides by a multiple of `elements` (then each term is constant or the index's offset
    in the group), and one step of the index moves it by one element. `stand_ins`: values for the names the body
    uses but does not compute, besides the sizes (a reduction's row)."""
    names = aliases(body, index)
    taken_calls = {id(call) for _, call, _ in taken}
    sizes = {**size_stand_ins(facts), **(stand_ins or {})}
    candidates = []
    for stmt in body:
        call = access_call(stmt)
        if not isinstance(call, ast.Call) or dotted(call.func) not in ("tl.load", "tl.store") or id(call) in taken_calls:
            continue
        kind = "load" if dotted(call.func) == "tl.load" else "store"
        if kind == "load" and not (isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)):
            continue
        mask = mask_of(call)
        if mask is not None and not (isinstance(mask, ast.Name) and mask.id in masks):
            continue
        address, pointer = call.args[0], pointer_of(call.args[0])
        if pointer is None or pointer not in facts.pointer_params or not isinstance(address, ast.BinOp):
            continue
        closure = _closure(body, names_in(address.right))
        if not names_in(address.right) & (names | {n for s in closure for n in defines(s)}):
            continue  # the same address for every element: a broadcast, read from cache
        candidates.append((kind, call, pointer, address.right, closure))
    elements = 0
    while candidates:
        elements = min(16, 16 // min([smallest, *(CTYPES[facts.arg_dtypes[c[2]]][1] for c in candidates)]))
        kept = [c for c in candidates if _moves_in_groups(c[3], c[4], names, elements, sizes)]
        if len(kept) == len(candidates):
            break
        candidates = kept
    return [(kind, call, pointer) for kind, call, pointer, _, _ in candidates], elements


def _without_byte_masks(accesses: list[tuple[str, ast.Call, str]], facts: ModuleFacts) -> list[tuple[str, ast.Call, str]]:
    """The accesses less those of 1-byte values (a dropout mask) beside wider ones: 16 bytes of a mask would give a
    thread 16 elements, 64 bytes of each fp32 tensor, whose 16-byte loads then leave a warp's lanes 64 bytes apart.
    Without them a thread takes 16 bytes of the narrowest other type (4 fp32 values, a warp's load 512 neighbouring
    bytes, as Triton's layout gives) and reads its mask values one byte each (a warp's 128 neighbouring bytes).
    Loads only: a kernel that writes a mask (dropout's forward, drawing it) keeps 16 elements a thread, which on the
    H200 ran at Triton's time where 4 took 1.22x (session 20); the two backwards that read one went 1.36x and 1.44x
    -> 1.02x and 1.03x."""
    sizes = {CTYPES[facts.arg_dtypes[pointer]][1] for _, _, pointer in accesses}
    if 1 not in sizes or sizes == {1}:
        return accesses
    if any(kind == "store" and CTYPES[facts.arg_dtypes[pointer]][1] == 1 for kind, _, pointer in accesses):
        return accesses
    return [access for access in accesses if CTYPES[facts.arg_dtypes[access[2]]][1] > 1]


def access_call(stmt: ast.stmt) -> ast.expr | None:
    """The value of an assignment or expression statement, `tl.load(...)` of `tl.load(...).to(tl.int1)`."""
    call = stmt.value if isinstance(stmt, (ast.Assign, ast.Expr)) else None
    while isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "to" \
            and isinstance(call.func.value, ast.Call):
        call = call.func.value
    return call


def _moves_in_groups(offset: ast.expr, closure: list[ast.stmt], index: set[str], elements: int, sizes: dict[str, int]) -> bool:
    if not steps_within_groups(offset, closure, index, elements):
        return False
    flat = [s for s in closure if isinstance(s, ast.Assign)]

    def at(i: int) -> int | None:
        env = {**sizes, **{name: i for name in index}}
        for stmt in flat:
            value = int_value(stmt.value, env)
            if value is None:
                return None
            env[stmt.targets[0].id] = value
        return int_value(offset, env)

    start = 37 * elements
    first, second, last = at(start), at(start + 1), at(start + elements - 1)
    return None not in (first, second, last) and second - first == 1 and last - first == elements - 1


def declare_grouped(out, facts: ModuleFacts, grouped: list[tuple[str, ast.Call, str]], elements: int) -> dict:
    """Before the fast path's loop, for each grouped access: its vector, its flag (the group's address aligned),
    and for a store where the vector goes. -> {id(statement's call): (kind, call, pointer, flag, array, where)}."""
    found = {}
    for kind, call, pointer in grouped:
        ctype = CTYPES[facts.arg_dtypes[pointer]][0]
        flag, array = out.fresh(f"hv_fast_{pointer}"), out.fresh(f"{pointer}_group")
        out.taken |= {flag, array}
        out.emit(f"bool {flag} = false;")
        out.emit(f"{ctype} {array}[{elements}];")
        at = ""
        if kind == "store":
            at = out.fresh(f"{pointer}_at")
            out.taken.add(at)
            out.emit(f"{ctype}* {at} = nullptr;")
        found[id(call)] = (kind, call, pointer, flag, array, at)
    return found


def emit_grouped(out, axes: Axes, statements: Statements, special: dict, stmt: ast.stmt, kind: str, call: ast.Call,
                 pointer: str, flag: str, array: str, at: str, condition: str = "") -> None:
    """A grouped access in the fast path's loop: at the group's first element its address decides (aligned: one
    vector load now, or one vector store after the loop); each element then uses the vector, or goes alone.
    `condition` (C++): what else the vector load needs, decided at the group's first element too."""
    pointer_code, offset = statements.x.address(call.args[0])
    key = f"hv_vector_{kind}:{ast.unparse(call)}"
    out.open("if (hv_e == 0) {")
    if kind == "load":
        out.emit(f"{flag} = {condition + ' && ' if condition else ''}hv::aligned16({pointer_code} + {offset.code});")
        out.emit(f"if ({flag}) hv::load_vector({pointer_code} + {offset.code}, {array});")
        out.close()
        scalar = Expressions(out, axes).load(call)
        special[key] = Value(f"({flag} ? {array}[hv_e] : {scalar.code})", scalar.dtype)
        statements.statement(stmt)
        del special[key]  # (a reduction emits the statement again in a later pass, with its own vector)
    else:
        out.emit(f"{at} = {pointer_code} + {offset.code};")
        out.emit(f"{flag} = hv::aligned16({at});")
        out.close()
        out.open(f"if ({flag}) {{")
        special[key] = Value(f"{array}[hv_e]", statements.x.out.facts.arg_dtypes[pointer])
        statements.statement(stmt)
        del special[key]
        out.close()
        out.open("else {")
        statements.statement(stmt)
        out.close()


TILE = 32  # a 2-D pointwise twin's tile: TILE x TILE elements per block ...
TILE_ROWS = 8  # ... of TILE x TILE_ROWS threads, TILE / TILE_ROWS elements each per pass


class Tiling:
    """A 2-D pointwise kernel that reads or writes along both of its axes (a transpose: gpt2's q/k/v split read along
    the channels, stored along the sequence): a block takes a TILE x TILE tile. Its warps run along the `fast` axis
    while it computes; the accesses contiguous along the other axis go through shared memory, loaded (or stored)
    by warps running along that axis, so that every global access is coalesced."""

    def __init__(self, fast: int, staged: list[tuple[str, ast.Call, str]]):
        self.fast = fast  # the program axis threadIdx.x runs along while the body is computed
        self.staged = staged  # ("load"/"store", call, pointer): contiguous along the other axis

    @classmethod
    def of(cls, body: list[ast.stmt], axes: Axes, facts: ModuleFacts) -> Tiling | None:
        sizes = size_stand_ins(facts)
        along: dict[int, list[tuple[str, ast.Call, str]]] = {0: [], 1: []}
        for stmt in body:
            call = stmt.value if isinstance(stmt, (ast.Assign, ast.Expr)) else None
            if not isinstance(call, ast.Call) or dotted(call.func) not in ("tl.load", "tl.store"):
                if any(isinstance(n, ast.Call) and dotted(n.func).startswith(("tl.load", "tl.store", "tl.atomic"))
                       for n in ast.walk(stmt)):
                    return None  # an access inside an expression: not one this mapping can stage
                continue
            kind = "load" if dotted(call.func) == "tl.load" else "store"
            if kind == "load" and not (isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)):
                return None
            address = call.args[0]
            pointer = pointer_of(address)
            if pointer is None or pointer not in facts.pointer_params:
                return None
            steps = [offset_at(body, address, {**sizes, axes.program[0]: x, axes.program[1]: y}) for x, y in ((3, 5), (4, 5), (3, 6))]
            if None in steps:
                continue  # an address the kernel computes from loaded values: stays where it is
            base, next_x, next_y = steps
            steps = {0: next_x - base, 1: next_y - base}
            for axis in (0, 1):  # (a value broadcast along the other axis is read from cache: no vote)
                if steps[axis] == 1 and steps[1 - axis] != 0:
                    along[axis].append((kind, call, pointer))
        if not along[0] or not along[1]:
            return None
        fast = 0 if len(along[0]) >= len(along[1]) else 1
        staged = along[1 - fast]
        for _, call, _ in staged:  # staged accesses need their address and mask without the body's loaded values
            needed = _closure(body, names_in(call.args[0]) | names_in(mask_of(call) or ast.Constant(None)))
            if any(isinstance(n, ast.Call) and dotted(n.func) in ("tl.load", "tl.rand", "tl.randn", "tl.randint")
                   for stmt in needed for n in ast.walk(stmt)):
                return None
        return cls(fast, staged)


def _closure(body: list[ast.stmt], needed: set[str]) -> list[ast.stmt]:
    """The statements of `body` that compute `needed`, with what they need, in order."""
    wanted, kept = set(needed), []
    for stmt in reversed(body):
        if defines(stmt) & wanted:
            kept.append(stmt)
            wanted |= names_used(stmt)
    return kept[::-1]


def _emit_tiled(out, body, axes, facts, tiling: Tiling, numels, index_dtypes, statements: Statements) -> None:
    """Three passes over the block's tile: staged loads (warps along the other axis) into shared memory, the body
    (warps along the fast axis), staged stores out of shared memory (warps along the other axis)."""
    fast, slow = tiling.fast, 1 - tiling.fast
    per_thread = TILE // TILE_ROWS
    out.emit(f"// a {TILE} x {TILE} tile per block: warps run along {axes.program[fast]} while computing; the accesses "
             f"contiguous along {axes.program[slow]} go through shared memory")
    out.emit(f"const int64_t hv_tiles = ({numels[fast].code} + {TILE - 1}) / {TILE};")
    out.emit(f"const int64_t hv_fast0 = static_cast<int64_t>(blockIdx.x % hv_tiles) * {TILE};")
    out.emit(f"const int64_t hv_slow0 = static_cast<int64_t>(blockIdx.x / hv_tiles) * {TILE};")
    tiles: dict[str, str] = {}
    for _, call, pointer in tiling.staged:
        tile = out.fresh(f"hv_tile_{pointer}")
        out.taken.add(tile)
        out.emit(f"__shared__ {CTYPES[facts.arg_dtypes[pointer]][0]} {tile}[{TILE}][{TILE + 1}];")
        tiles[ast.unparse(call)] = tile

    def open_pass(fast_local: str, slow_local: str) -> None:
        out.emit("#pragma unroll")
        out.open(f"for (int hv_k = 0; hv_k < {per_thread}; ++hv_k) {{")
        out.emit(f"const int64_t hv_fast = hv_fast0 + {fast_local};")
        out.emit(f"const int64_t hv_slow = hv_slow0 + {slow_local};")
        out.open(f"if (hv_fast < {numels[fast].code} && hv_slow < {numels[slow].code}) {{")
        for axis, position in ((fast, "hv_fast"), (slow, "hv_slow")):
            ctype = CTYPES[index_dtypes[axis]][0]
            out.declare(axes.program[axis], index_dtypes[axis], f"static_cast<{ctype}>({position})")

    def close_pass() -> None:
        out.close()
        out.close()

    along_rows = f"static_cast<int>(threadIdx.y) + {TILE_ROWS} * hv_k"
    loads = [(call, tiles[ast.unparse(call)]) for kind, call, _ in tiling.staged if kind == "load"]
    stores = [(call, tiles[ast.unparse(call)]) for kind, call, _ in tiling.staged if kind == "store"]
    if loads:  # tile[fast][slow], written by warps along slow
        open_pass(along_rows, "static_cast<int>(threadIdx.x)")
        exprs = Expressions(out, axes)
        for stmt in _closure(body, set().union(*(names_in(c.args[0]) | names_in(mask_of(c) or ast.Constant(None)) for c, _ in loads))):
            Statements(out, exprs).statement(stmt)
        for call, tile in loads:
            value = exprs.load(call)
            out.emit(f"{tile}[{along_rows}][threadIdx.x] = {value.code};")
        close_pass()
        out.emit("__syncthreads();")
    special = {f"hv_vector_{kind}:{ast.unparse(call)}": Value(f"{tiles[ast.unparse(call)]}[threadIdx.x][{along_rows}]",
                                                            facts.arg_dtypes[pointer]) for kind, call, pointer in tiling.staged}
    open_pass("static_cast<int>(threadIdx.x)", along_rows)
    body_statements = Statements(out, Expressions(out, axes, special))
    for stmt in body:
        body_statements.statement(stmt)
    close_pass()
    if stores:  # tile[fast][slow], read by warps along slow
        out.emit("__syncthreads();")
        open_pass(along_rows, "static_cast<int>(threadIdx.x)")
        for stmt in _closure(body, set().union(*(names_in(c.args[0]) | names_in(mask_of(c) or ast.Constant(None)) for c, _ in stores))):
            statements.statement(stmt)
        for call, tile in stores:
            pointer = pointer_of(call.args[0])
            staged = Expressions(out, axes, {"hv_tile_value": Value(f"{tile}[{along_rows}][threadIdx.x]", facts.arg_dtypes[pointer])})
            store = ast.Call(func=call.func, args=[call.args[0], ast.Name("hv_tile_value"), *call.args[2:]], keywords=call.keywords)
            Statements(out, staged).call(store)
        close_pass()


def translate_pointwise(facts: ModuleFacts, axes: Axes) -> TwinSource:
    if not axes.program:
        raise NoTwin("no `tl.program_id(0) * BLOCK + tl.arange(...)` index found")
    if set(axes.program) - {0, 1} or len(axes.program) != len([g for g in facts.grid if g is not None]):
        raise NoTwin("program axes do not match the launch grid")
    prologue, body, known = split_prologue(facts, axes)
    out, signature, launcher_args = start_emitter(facts)
    exprs = Expressions(out, axes)
    statements = Statements(out, exprs)
    for stmt in prologue:
        statements.statement(stmt)
    numels = {k: exprs(facts.grid[k]) for k in axes.program}
    host_numels = {k: host_expr(facts.grid[k], known, facts.params) for k in axes.program}
    body = [s for s in body if not (defines(s) & set(axes.offsets))]
    index_names = {axes.program[k] for k in axes.program}
    index_dtypes = {k: index_dtype(facts, next(n for n, a in axes.offsets.items() if a == k)) for k in axes.program}
    body = [s for s in body if not (defines(s) & index_names)]
    for name in list(axes.offsets):
        if any(name in names_used(s) for s in body):
            raise NoTwin(f"the block offset {name} is used beyond the element index")
    tiling = Tiling.of(body, axes, facts) if len(axes.program) == 2 else None
    if tiling is not None:
        _emit_tiled(out, body, axes, facts, tiling, numels, index_dtypes, statements)
        fast = tiling.fast
        launch_lines = [f"const int64_t hv_fast = {host_numels[fast]};", f"const int64_t hv_slow = {host_numels[1 - fast]};",
                        "if (hv_fast <= 0 || hv_slow <= 0) return;"]
        notes = [f"a {TILE} x {TILE} tile per block of {TILE} x {TILE_ROWS} threads; accesses along "
                 f"{axes.program[1 - fast]} staged through shared memory (every global access coalesced)"]
        return finish(facts, out, signature, launcher_args, launch_lines, "hv::tile_blocks(hv_fast, hv_slow)",
                      f"dim3({TILE}, {TILE_ROWS})", "pointwise", notes)
    total = " * ".join(f"static_cast<int64_t>({numels[k].code})" for k in sorted(axes.program))
    host_total = " * ".join(host_numels[k] for k in sorted(axes.program))
    out.emit(f"const int64_t hv_numel = {total};")
    notes = []

    def bind_indices(linear: str) -> None:
        if len(axes.program) == 1:
            (k, name), = axes.program.items()
            out.declare(name, index_dtypes[k], f"static_cast<{CTYPES[index_dtypes[k]][0]}>({linear})")
        else:
            inner = numels[0].code
            out.declare(axes.program[1], index_dtypes[1], f"static_cast<{CTYPES[index_dtypes[1]][0]}>({linear} / {inner})")
            out.declare(axes.program[0], index_dtypes[0], f"static_cast<{CTYPES[index_dtypes[0]][0]}>({linear} % {inner})")

    contiguous: list[tuple[str, ast.Call, str]] = []
    grouped: list[tuple[str, ast.Call, str]] = []
    bounds: list[ast.expr] = []  # a recorded grid's numel is programs x BLOCK: the kernel's own bounds keep the chunk in
    if len(axes.program) == 1:
        (only,) = axes.program.values()
        names = aliases(body, only)
        masks = axis_masks(body, names)
        if facts.counted_axes:
            bounds = [s.value.comparators[0] for s in body if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)
                      and s.targets[0].id in masks and isinstance(s.value, ast.Compare)]
        contiguous = _contiguous_accesses(body, names, masks, facts)
        smallest = min((CTYPES[facts.arg_dtypes[p]][1] for _, _, p in contiguous), default=16)
        grouped, _ = grouped_accesses(body, only, masks, facts, contiguous, smallest)
        wide = _without_byte_masks(contiguous + grouped, facts)
        contiguous, grouped = [a for a in contiguous if a in wide], [a for a in grouped if a in wide]
    if not contiguous and not grouped:
        elements = 1
        out.emit("const int64_t hv_linear = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;")
        out.open("if (hv_linear < hv_numel) {")
        bind_indices("hv_linear")
        for stmt in body:
            statements.statement(stmt)
        out.close()
        notes.append("one element per thread")
    else:
        elements = min(16, 16 // min(CTYPES[facts.arg_dtypes[p]][1] for _, _, p in contiguous + grouped))
        aligned = " && ".join(sorted({f"hv::aligned16({out.lookup(p).cname})" for _, _, p in contiguous})) or "true"
        out.emit(f"const bool hv_aligned = {aligned};")
        # One chunk per thread, no grid-stride loop: on the H200 the loop's 64-bit bookkeeping cost the square twin
        # 7 % of bandwidth once its size was a run-time value (93.4 % of a copy, 101.5 % without; docs/benchmarks.md).
        out.emit(f"const int64_t hv_base = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * {elements};")
        out.open("if (hv_base < hv_numel) {")
        within = "".join(f" && hv_base + {elements} <= static_cast<int64_t>({exprs(bound).code})" for bound in bounds)
        out.open(f"if (hv_aligned && hv_base + {elements} <= hv_numel{within}) {{")
        out.emit(f"// fast path: {elements} elements per thread, 16-byte vector loads and stores")
        special: dict[str, Value] = {}
        stores = []
        for kind, call, pointer in contiguous:
            dtype = facts.arg_dtypes[pointer]
            ctype = CTYPES[dtype][0]
            array = out.fresh(f"{pointer}_vec")
            out.bind(f" {array}", Var(array, dtype, len(out.scopes)))
            if kind == "load":
                out.emit(f"{ctype} {array}[{elements}];")
                out.emit(f"hv::load_vector({out.lookup(pointer).cname} + hv_base, {array});")
                special[f"hv_vector_load:{ast.unparse(call)}"] = Value(f"{array}[hv_e]", dtype)
            else:
                out.emit(f"{ctype} {array}[{elements}];")
                special[f"hv_vector_store:{ast.unparse(call)}"] = Value(f"{array}[hv_e]", dtype)
                stores.append((pointer, array))
        regrouped = declare_grouped(out, facts, grouped, elements)
        out.emit("#pragma unroll")
        out.open(f"for (int hv_e = 0; hv_e < {elements}; ++hv_e) {{")
        bind_indices("hv_base + hv_e")
        vector_exprs = Expressions(out, axes, special)
        vector_statements = Statements(out, vector_exprs)
        for stmt in body:
            access = regrouped.get(id(access_call(stmt)))
            if access is None:
                vector_statements.statement(stmt)
            else:
                emit_grouped(out, axes, vector_statements, special, stmt, *access)
        out.close()
        for pointer, array in stores:
            out.emit(f"hv::store_vector({out.lookup(pointer).cname} + hv_base, {array});")
        for kind, _, _, flag, array, at in regrouped.values():
            if kind == "store":
                out.emit(f"if ({flag}) hv::store_vector({at}, {array});")
        out.indent -= 1
        out.scopes.pop()
        out.open("} else {")
        out.emit("// the tail, or pointers not 16-byte aligned: one element at a time")
        out.open(f"for (int64_t hv_linear = hv_base; hv_linear < hv_numel && hv_linear < hv_base + {elements}; ++hv_linear) {{")
        bind_indices("hv_linear")
        for stmt in body:
            statements.statement(stmt)
        out.close()
        out.close()
        out.close()
        notes.append(f"{elements} elements per thread with 16-byte vector accesses where aligned"
                     + (" (permuted addresses too, within each group of that many elements)" if grouped else ""))
    per_block = 256
    launch_lines = [f"const int64_t hv_numel = {host_total};", "if (hv_numel <= 0) return;"]
    blocks = f"hv::pointwise_blocks(hv_numel, {per_block}, {elements})"  # refuses a grid over 2^31 - 1 blocks
    return finish(facts, out, signature, launcher_args, launch_lines, blocks, str(per_block), "pointwise", notes)

