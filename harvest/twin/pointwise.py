"""Pointwise kernels: one element (or one 16-byte chunk) per thread, 16-byte vector accesses where the kernel reads
and writes at the element's own index."""

from __future__ import annotations

import ast

from harvest.syntax import dotted
from harvest.twin.body import (
    Axes,
    defines,
    finish,
    host_expr,
    index_dtype,
    is_pointer,
    split_prologue,
    start_emitter,
    names_used,
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


def _axis_masks(body: list[ast.stmt], index_names: set[str]) -> set[str]:
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
        kwargs = {k.arg: k.value for k in call.keywords}
        mask = call.args[1 if kind == "load" else 2] if len(call.args) > (1 if kind == "load" else 2) else kwargs.get("mask")
        if not (isinstance(address, ast.BinOp) and isinstance(address.op, ast.Add) and isinstance(address.left, ast.Name)
                and isinstance(address.right, ast.Name) and address.right.id in index_names):
            continue
        if mask is not None and not (isinstance(mask, ast.Name) and mask.id in masks) and not (isinstance(mask, ast.Constant) and mask.value is None):
            continue
        pointer = address.left.id
        if pointer in facts.params and is_pointer(facts, pointer):
            found.append((kind, call, pointer))
    return found


def translate_pointwise(facts: ModuleFacts, axes: Axes) -> TwinSource:
    if not axes.program:
        raise NoTwin("no `tl.program_id(0) * BLOCK + tl.arange(...)` index found")
    if set(axes.program) - {0, 1} or len(axes.program) != len([g for g in facts.grid if g is not None]):
        raise NoTwin("program axes do not match the launch grid")
    prologue, body, known = split_prologue(facts, axes)
    shadowed = {s.targets[0].id for s in facts.body if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)} & set(facts.params)
    out, signature, launcher_args = start_emitter(facts, shadowed)
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

    contiguous = []
    if len(axes.program) == 1:
        (only,) = axes.program.values()
        names = aliases(body, only)
        contiguous = _contiguous_accesses(body, names, _axis_masks(body, names), facts)
    if not contiguous:
        elements = 1
        out.emit("const int64_t hv_linear = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;")
        out.open("if (hv_linear < hv_numel) {")
        bind_indices("hv_linear")
        for stmt in body:
            statements.statement(stmt)
        out.close()
        notes.append("one element per thread")
    else:
        elements = min(16, 16 // min(CTYPES[facts.arg_dtypes[p]][1] for _, _, p in contiguous))
        aligned = " && ".join(sorted({f"hv::aligned16({out.lookup(p).cname})" for _, _, p in contiguous}))
        out.emit(f"const bool hv_aligned = {aligned};")
        # One chunk per thread, no grid-stride loop: on the H200 the loop's 64-bit bookkeeping cost the square twin
        # 7 % of bandwidth once its size was a run-time value (93.4 % of a copy, 101.5 % without; docs/benchmarks.md).
        out.emit(f"const int64_t hv_base = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * {elements};")
        out.open("if (hv_base < hv_numel) {")
        out.open(f"if (hv_aligned && hv_base + {elements} <= hv_numel) {{")
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
        out.emit("#pragma unroll")
        out.open(f"for (int hv_e = 0; hv_e < {elements}; ++hv_e) {{")
        bind_indices("hv_base + hv_e")
        vector_exprs = Expressions(out, axes, special)
        vector_statements = Statements(out, vector_exprs)
        for stmt in body:
            vector_statements.statement(stmt)
        out.close()
        for pointer, array in stores:
            out.emit(f"hv::store_vector({out.lookup(pointer).cname} + hv_base, {array});")
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
        notes.append(f"{elements} elements per thread with 16-byte vector accesses where aligned")
    per_block = 256
    launch_lines = [f"const int64_t hv_numel = {host_total};", "if (hv_numel <= 0) return;"]
    blocks = f"hv::pointwise_blocks(hv_numel, {per_block}, {elements})"  # refuses a grid over 2^31 - 1 blocks
    return finish(facts, out, signature, launcher_args, launch_lines, blocks, str(per_block), "pointwise", notes)

