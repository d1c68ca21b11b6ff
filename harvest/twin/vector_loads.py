"""A looped reduction's loads that read its rows contiguously (VectorLoads): a thread takes neighbouring columns a
step and reads them with 16-byte vector loads where all are in the row and the address is aligned, one column at a
time elsewhere; and, for one load in a one-pass kernel, several such vectors a step, all loaded before any is used."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from harvest.syntax import dotted, pointer_of
from harvest.twin.body import (
    Axes,
    defines,
    flatten_loops,
    mask_of,
    names_in,
    names_used,
    offset_at,
    size_stand_ins,
    steps_within_groups,
)
from harvest.twin.choices import TwinChoices
from harvest.twin.cpp import Emitter, Value, Var
from harvest.twin.expressions import Expressions, Statements
from harvest.twin.facts import CTYPES, ModuleFacts
from harvest.twin.pointwise import aliases
from harvest.twin.row_kernel import Lanes, loop_range


class VectorLoads:
    """A looped reduction's loads that read its row contiguously: each thread then takes `width` neighbouring columns
    a step (copy hv_v of the accumulators is column hv_v of them) and reads them with 16-byte vector loads, where
    all `width` columns are in the row and the address is aligned; elsewhere a column at a time, as before.

    Only when every load that moves with the loop does so with unit stride, and its mask is the loop's column bound
    and conditions that do not move with the loop (so the mask at the first column holds for all `width`)."""

    def __init__(self, loads: dict[str, ast.Call], width: int, columns: set[str] | None = None, max_chunks: int = 1):
        self.loads = loads  # the name a load is assigned to -> the tl.load call
        self.width = width
        self.max_chunks = max_chunks
        # the loop's column index and its copies, when they are the only names of the loop in every load's address:
        # a chunk's address is then the address with them moved to the chunk
        self.columns = columns

    def chunks(self, stop: str, passes: int, welford: bool) -> int:
        """How many vectors of `width` columns a thread takes a step, each a block of threads further on (Triton's
        layout: a warp's load is still 512 neighbouring bytes), all loaded before any is used so that that many of
        its loads are in flight: choices.max_chunks, no more than a warp needs for a row `stop` long (when it is a number).
        Only for one load in a kernel that makes one pass over the row, and not for a Welford loop: on the H200,
        chunks of two loads, or of a kernel with three passes, took 61 to 94 registers a thread and were slower
        than one vector a step (fewer blocks resident), and of two batch-norm Welford loops one lost 17 % and the
        other gained 5 % (docs/benchmarks.md, session 19)."""
        if not self.columns or len(self.loads) > 1 or passes > 1 or welford:
            return 1
        chunks = self.max_chunks
        if stop.isdigit():
            while chunks > 1 and (chunks // 2) * self.width * 32 >= int(stop):
                chunks //= 2
        return chunks

    @classmethod
    def of(cls, loop: ast.For, body: list[ast.stmt], axes: Axes, row_name: str, facts: ModuleFacts,
           choices: TwinChoices) -> VectorLoads | None:
        variable = loop.target.id
        moving = {variable}
        for stmt in loop.body:
            if names_used(stmt) & moving:
                moving |= defines(stmt)
        stop = ast.unparse(loop_range(loop, axes)[1])
        columns: set[str] = set()
        for stmt in loop.body:  # `r0_index = r0_offset + r0_base` (and its plain copies)
            if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.BinOp) \
                    and isinstance(stmt.value.op, ast.Add) and {ast.unparse(stmt.value.left), ast.unparse(stmt.value.right)} == {variable, axes.reduction_base}:
                columns |= aliases(loop.body, stmt.targets[0].id)
        bounds = {stmt.targets[0].id for stmt in loop.body if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)
                  and isinstance(stmt.value, ast.Compare) and len(stmt.value.ops) == 1 and isinstance(stmt.value.ops[0], ast.Lt)
                  and isinstance(stmt.value.left, ast.Name) and stmt.value.left.id in columns
                  and ast.unparse(stmt.value.comparators[0]) == stop}

        def mask_holds(mask: ast.expr | None) -> bool:
            if mask is None or (isinstance(mask, ast.Constant) and mask.value is None):
                return True
            if isinstance(mask, ast.Name):
                return mask.id in bounds or mask.id not in moving
            return isinstance(mask, ast.BinOp) and isinstance(mask.op, ast.BitAnd) and mask_holds(mask.left) and mask_holds(mask.right)

        sizes = size_stand_ins(facts)
        loads: dict[str, ast.Call] = {}
        for stmt in loop.body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Call) and (dotted(node.func).startswith("tl.atomic") or dotted(node.func) == "tl.store") \
                        and names_in(node) & moving:
                    return None  # (stores along the row would be strided by the new mapping)
            calls = [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and dotted(n.func) == "tl.load"]
            moving_calls = [c for c in calls if names_in(c.args[0]) & moving] if calls else []
            if not moving_calls:
                continue
            if not (isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) and stmt.value is moving_calls[0]
                    and len(calls) == 1):
                return None
            call = moving_calls[0]
            if not mask_holds(mask_of(call)) or pointer_of(call.args[0]) not in facts.pointer_params:
                return None
            loads[stmt.targets[0].id] = call
        if not loads:
            return None
        smallest = min(CTYPES[facts.arg_dtypes[pointer_of(c.args[0])]][1] for c in loads.values())
        width = max(choices.loop_copies, 16 // smallest)
        flat = flatten_loops(body)
        for call in loads.values():
            if not (isinstance(call.args[0], ast.BinOp) and isinstance(call.args[0].op, ast.Add)):
                return None
            if not steps_within_groups(call.args[0].right, flat, {variable, axes.reduction_base}, width):
                return None
            at = [offset_at(body, call.args[0], {**sizes, row_name: row, axes.reduction_base: lane}) for row, lane in ((5, 3), (5, 4), (5, 7), (6, 3))]
            if None in at or at[1] - at[0] != 1 or at[2] - at[0] != 4:
                return None
        movable = all(names_in(call.args[0]) & moving <= columns for call in loads.values())
        return cls(loads, width, columns if movable else None, choices.max_chunks)


def emit_vector_load(out: Emitter, exprs: Expressions, statements: Statements, name: str, call: ast.Call,
                      fast: tuple[str, str], full: str) -> None:
    """`name = tl.load(...)` in a vectorized loop: at the thread's first column, one vector load of all its columns
    when they are in the row, the mask holds there and the address is aligned; each column then takes its value
    from the vector, or loads it alone when the vector was not loaded."""
    flag, array = fast
    mask = mask_of(call)
    pointer, offset = exprs.address(call.args[0])
    conditions = [full]
    if mask is not None:
        conditions.append(out.cast(exprs(mask), "i1"))
    conditions.append(f"hv::aligned16({pointer} + {offset.code})")
    out.open("if (hv_v == 0) {")
    out.emit(f"{flag} = {' && '.join(conditions)};")
    out.emit(f"if ({flag}) hv::load_vector({pointer} + {offset.code}, {array});")
    out.close()
    scalar = exprs.load(call)
    statements.store_name(name, Value(f"({flag} ? {array}[hv_v] : {scalar.code})", scalar.dtype))


@dataclass(frozen=True)
class ChunkStep:
    """One step of a chunked loop, as the C++ sees it: its column variable, the vector width, the chunks a thread
    takes, the lanes, the row's length, and the loop's column index with its copies (moved to each chunk)."""

    start: str
    width: int
    chunks: int
    lanes: Lanes
    stop: str
    columns: set[str]


def emit_chunk_loads(out: Emitter, exprs: Expressions, statements: Statements, name: str, call: ast.Call,
                      fast: tuple[str, str], step: ChunkStep) -> None:
    """`name = tl.load(...)` in a chunked vectorized loop: at the thread's first column (copy 0), one vector load of
    each chunk (its address: the load's, with the column moved c x width x threads further on) where the chunk is in
    the row, the mask holds and the address is aligned; each copy then takes its value from its chunk's vector, or
    loads it alone when that vector was not loaded."""
    flag, array = fast
    cname, width, chunks, lanes, stop = step.start, step.width, step.chunks, step.lanes, step.stop
    mask = mask_of(call)
    moved = {}
    for column in step.columns:
        var = out.lookup(column)
        if var is not None:
            moved[column] = Var(f"({var.cname} + hv_c * {width} * {lanes.count})", var.dtype, len(out.scopes))
    out.scopes.append(moved)
    pointer, offset = exprs.address(call.args[0])
    out.scopes.pop()
    address = f"{pointer} + {offset.code}"
    conditions = [f"{cname} + hv_c * {width} * {lanes.count} + {width} * {lanes.lane} + {width} <= {stop}"]
    if mask is not None:
        conditions.append(out.cast(exprs(mask), "i1"))
    conditions.append(f"hv::aligned16({address})")
    out.open("if (hv_v == 0) {")
    out.emit("#pragma unroll")
    out.open(f"for (int32_t hv_c = 0; hv_c < {chunks}; ++hv_c) {{")
    out.emit(f"{flag}[hv_c] = {' && '.join(conditions)};")
    out.emit(f"if ({flag}[hv_c]) hv::load_vector({address}, {array}[hv_c]);")
    out.close()
    out.close()
    scalar = exprs.load(call)
    chunk = f"hv_v / {width}"
    statements.store_name(name, Value(f"({flag}[{chunk}] ? {array}[{chunk}][hv_v % {width}] : {scalar.code})", scalar.dtype))
