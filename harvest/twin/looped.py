"""A looped reduction (Inductor's `for r0_offset in range(0, r0_numel, R0_BLOCK)`) as the threads' own loops: each
thread folds its share of every accumulator, in copies (LoopedRows), then the row's threads combine their partials.
Block rows and looped column reductions take LoopedRows as it is; rows split over blocks (split_rows.py) change how
a loop takes its chunk of the row and how a row's partials are combined."""

from __future__ import annotations

import ast

from harvest.syntax import dotted, pointer_of
from harvest.twin.body import defines, names_in, names_used
from harvest.twin.cpp import Emitter, Value, Var
from harvest.twin.facts import CTYPES, NoTwin
from harvest.twin.row_kernel import RowEmitters, RowKernel, loop_range
from harvest.twin.row_reductions import (
    LOOP_COMBINES,
    bind_result,
    concrete,
    reduction_call,
    softmax_fast,
)
from harvest.twin.scan import ScanCall, base_names, check_scan_loads, is_last_of_tile, scan_call, tile_carries
from harvest.twin.vector_loads import ChunkStep, VectorLoads, emit_chunk_loads, emit_vector_load


class LoopedRows:
    """Each thread keeps choices.loop_copies copies of the loop's accumulators (an array each), copy v fed the columns
    v blocks of threads further on, so that a thread has that many loads and combine steps in flight, not one chain;
    at the reduction the thread's copies are combined with the reduction's own combine, then the row's threads.
    Where the loop reads its rows contiguously (VectorLoads), copy v is the thread's v-th neighbouring column instead,
    read by one vector load; and where the one pass over the row has one load, whose address moves with the
    column alone (and no Welford update), a thread takes up to choices.max_chunks such vectors a block of threads
    apart and loads them all before it uses any.
    Scans (Inductor's looped scan: each tile scanned alone, the carry between tiles the kernel's own): the block's
    threads are the tile, one column a thread a step, every thread in every step (hv_in: its column is in the row);
    select_one of the tile's last column is the last thread's value."""

    def __init__(self, kernel: RowKernel, emitters: RowEmitters):
        self.kernel, self.out, self.exprs, self.axes = kernel, kernel.out, kernel.exprs, kernel.axes
        self.emitters, self.lanes, self.scans, self.body = emitters, emitters.lanes, kernel.scans, kernel.body
        self.loop_copies = kernel.choices.loop_copies
        self.defined: set[str] = set()
        self.copies: dict[str, tuple[str, str, int]] = {}  # an accumulator -> (its array of copies, dtype, how many)

    def emit(self) -> int:
        """The row's statements: its loops, its reductions and its row-level statements. Returns the columns a thread
        takes a step in the first loop (the launcher's threads are the row over this)."""
        step = None
        for position, stmt in enumerate(self.body):
            if isinstance(stmt, ast.For):
                columns = self.loop(stmt, position)
                step = columns if step is None else step
                continue
            if defines(stmt) == {self.axes.reduction_base}:
                self.out.declare(self.axes.reduction_base, "i32", self.lanes.lane)
                self.defined.add(self.axes.reduction_base)
                continue
            if isinstance(stmt, ast.Assign) and reduction_call(stmt.value) is not None:
                self.reduction(stmt, position)
            else:
                self.emitters.row.statement(stmt)
            self.defined |= defines(stmt)
        return step or self.loop_copies

    def chunk(self, stop: Value, columns: int) -> tuple[str, Value]:
        """(the first column, the end) of the row a loop of this block covers, `columns` a thread a step: all of it."""
        return "0", stop

    def chunk_carry(self, loop: ast.For, cname: str, begin: str, end: str) -> tuple[str, str] | None:
        """A carrying scan's carry and its flag from the columns before this block's `begin`: none, the row is the
        block's."""
        return None

    def combine_row(self, stmt: ast.Assign, position: int, result: str, combiner: str) -> tuple[str, list]:
        """`result`, the reduction `stmt` of the row: the thread's copies combined, then the row's threads (the
        lanes' helper). Returns its C++ type and result fields."""
        ctype, partial, fields = self.thread_partial(stmt)
        self.out.emit(f"const {ctype} {result} = {self.lanes.reduce}({partial}, {combiner});")
        return ctype, fields

    def reduction(self, stmt: ast.Assign, position: int) -> None:
        out = self.out
        kind, _, call = reduction_call(stmt.value)
        combiner = self.emitters.reductions.combiner(kind, softmax_fast(call) if kind == "online_softmax_reduce" else "false")
        result = out.fresh("hv_" + kind.replace("_", ""))
        _, fields = self.combine_row(stmt, position, result, combiner)
        out.bind(f" {result}", Var(result, "", len(out.scopes)))
        bind_result(out, self.emitters.row, stmt, result, fields)

    def thread_partial(self, stmt: ast.Assign, emit: bool = True) -> tuple[str, str, list]:
        """(C++ type, the thread's partial, result fields) of a reduction statement after a loop: its accumulator
        copies combined in order (by a loop when there are more than choices.loop_copies of them, emitted here).
        emit=False: the type and fields alone."""
        out, exprs, reductions, copies = self.out, self.exprs, self.emitters.reductions, self.copies
        kind, arguments, call = reduction_call(stmt.value)
        fast_softmax = softmax_fast(call) if kind == "online_softmax_reduce" else "false"
        combiner = reductions.combiner(kind, fast_softmax)
        accumulators = sorted(set().union(*(names_in(a) for a in arguments)) & set(copies))
        count = max((copies[acc][2] for acc in accumulators), default=1)
        state_of = (kind, arguments, fast_softmax)
        if not emit:
            lines = len(out.lines)
            ctype, _, fields = copy_state(out, exprs, reductions, copies, accumulators, state_of, "0")
            del out.lines[lines:]
            return ctype, "", fields
        partial = None
        if count > self.loop_copies:  # the thread's copies, combined in order by a loop
            ctype, value, fields = copy_state(out, exprs, reductions, copies, accumulators, state_of, "0")
            partial = out.fresh("hv_thread")
            out.taken.add(partial)
            out.emit(f"{ctype} {partial} = {value};")
            out.emit("#pragma unroll")
            out.open(f"for (int hv_c = 1; hv_c < {count}; ++hv_c) {{")
            _, value, _ = copy_state(out, exprs, reductions, copies, accumulators, state_of, "hv_c")
            out.emit(f"{partial} = {combiner}({partial}, {value});")
            out.close()
        for v in range(count if count <= self.loop_copies else 0):  # the thread's copies, combined in order
            ctype, value, fields = copy_state(out, exprs, reductions, copies, accumulators, state_of, str(v))
            partial = value if partial is None else f"{combiner}({partial}, {value})"
        return ctype, partial, fields

    def loop(self, stmt: ast.For, position: int) -> int:
        """One of the kernel's reduction loops as the thread's loop over its columns, with its copies of the loop's
        accumulators. Returns the columns a thread takes a step."""
        out, exprs, lanes, scans, body, axes = self.out, self.exprs, self.lanes, self.scans, self.body, self.axes
        facts = self.kernel.facts
        check_loop(stmt, body[position + 1 :], self.defined, tile_carries(stmt, body, axes) if scans is not None else set())
        if scans is not None:
            check_scan_loads(stmt)
        vector = VectorLoads.of(stmt, body, axes, self.kernel.row_name, facts, self.kernel.choices) \
            if lanes.reduce == "hv::block_reduce" and scans is None else None
        width = vector.width if vector else self.loop_copies if scans is None else 1
        _, stop = loop_range(stmt, axes)
        stop_code = exprs(stop)
        welford = any(isinstance(n, ast.Call) and dotted(n.func).endswith("welford_reduce") for n in ast.walk(stmt))
        chunks = vector.chunks(stop_code.code, sum(isinstance(s, ast.For) for s in body), welford) if vector else 1
        carried = sorted({n for s in stmt.body for n in defines(s)} & self.defined)
        self.copies.update(declare_copies(out, carried, width))
        variable = stmt.target.id
        cname = out.fresh(variable)
        begin, stop_code = self.chunk(stop_code, chunks * width)
        carry_at = len(out.lines), out.indent  # (a carrying scan's carry goes here)
        chunk_carry = self.chunk_carry(stmt, cname, begin, stop_code.code)
        out.open(f"for (int32_t {cname} = {begin}; {cname} < {stop_code.code}; {cname} += {chunks * width} * {lanes.count}) {{")
        fast: dict[str, tuple[str, str]] = {}  # a vector-loaded name -> (its fast-path flag, its array)
        full = ""
        if vector and chunks == 1:
            out.emit(f"// this thread's {width} neighbouring columns: vector loads when all are in the row and aligned")
            full = out.fresh("hv_full")
            out.taken.add(full)
            out.emit(f"const bool {full} = {cname} + {width} * {lanes.lane} + {width} <= {stop_code.code};")
        elif vector:
            out.emit(f"// this thread's {width} neighbouring columns in each of {chunks} chunks {width} x {lanes.count} columns apart, "
                     "all loaded first (vector loads where a chunk is in the row and aligned)")
        for name, call in (vector.loads.items() if vector else ()):
            dtype = facts.arg_dtypes[pointer_of(call.args[0])]
            flag, array = out.fresh(f"hv_fast_{name}"), out.fresh(f"{name}_vec")
            out.taken |= {flag, array}
            if chunks == 1:
                out.emit(f"bool {flag} = false;")
                out.emit(f"{CTYPES[dtype][0]} {array}[{width}];")
            else:
                out.emit(f"bool {flag}[{chunks}] = {{}};")
                out.emit(f"{CTYPES[dtype][0]} {array}[{chunks}][{width}];")
            fast[name] = (flag, array)
        out.emit("#pragma unroll")
        out.open(f"for (int32_t hv_v = 0; hv_v < {chunks * width}; ++hv_v) {{  // copy hv_v % {width} of the accumulators"
                 if chunks > 1 else f"for (int32_t hv_v = 0; hv_v < {width}; ++hv_v) {{  // copy hv_v of the accumulators")
        start = out.fresh(f"{variable}_v")
        if vector and chunks > 1:  # chunk hv_v / width starts at cname + chunk * width * threads + width * lane
            out.emit(f"const int32_t {start} = {cname} + (hv_v / {width}) * {width} * {lanes.count} + hv_v % {width} + {width - 1} * {lanes.lane};")
        elif vector:  # the thread's first column is cname + width * lane: the row index is start + lane
            out.emit(f"const int32_t {start} = {cname} + hv_v + {width - 1} * {lanes.lane};")
        else:
            out.emit(f"const int32_t {start} = {cname} + hv_v * {lanes.count};")
        out.bind(variable, Var(start, "i32", len(out.scopes)))
        for acc in carried:
            array, dtype, _ = self.copies[acc]
            out.bind(acc, Var(f"{array}[hv_v % {width}]" if chunks > 1 else f"{array}[hv_v]", dtype, len(out.scopes)))
        if scans is None:
            out.open(f"if ({start} + {lanes.lane} < {stop_code.code}) {{")
        else:
            out.emit(f"const bool hv_in = {start} + {lanes.lane} < {stop_code.code};  // a column of the row: every thread scans the tile")
            out.open("{")
        for inner in stmt.body:
            if isinstance(inner, ast.For):
                raise NoTwin("a loop inside a reduction loop")
            name = inner.targets[0].id if isinstance(inner, ast.Assign) and isinstance(inner.targets[0], ast.Name) else None
            scan = scan_call(inner) if scans is not None else None
            last = is_last_of_tile(inner, base_names(body, axes)) if scans is not None else None
            if scan is not None:
                self.tile_scan(scan, f"{cname} > {begin}", chunk_carry, carry_at)
            elif last is not None:
                value = exprs(last)
                dtype = concrete(value.dtype)
                out.declare(name, dtype, f"hv::block_last({out.cast(value, dtype)})")
            elif name in fast and chunks > 1:
                emit_chunk_loads(out, exprs, self.emitters.lane, name, vector.loads[name], fast[name],
                                 ChunkStep(cname, width, chunks, lanes, stop_code.code, vector.columns))
            elif name in fast:
                emit_vector_load(out, exprs, self.emitters.lane, name, vector.loads[name], fast[name], full)
            else:
                self.emitters.lane.statement(inner)
        out.close()
        out.close()
        out.close()
        return chunks * width

    def tile_scan(self, scan: ScanCall, after_first: str, chunk_carry: tuple[str, str] | None, carry_at: tuple[int, int]) -> None:
        """A scan of the loop's tile (the block's threads, one column each): combined with the tiles before it when
        it carries them (its carry declared at `carry_at`, before the loop), else alone (the kernel carries them).
        after_first: the C++ condition that a tile is not the block's first."""
        out = self.out
        value, dtype, combine = self.scans.operands(out, self.exprs, self.axes, scan)
        if scan.carries and chunk_carry is not None:  # ... and with the chunks of the row before this block's
            carry, have = chunk_carry
            out.declare(scan.name, dtype, f"hv::block_scan({value}, {combine}, {carry}, {have} || {after_first})")
            return
        if scan.carries:  # the row's scan: each tile combined with the tiles before it
            carry = out.fresh(f"hv_carry_{scan.name}")
            out.taken.add(carry)
            out.lines.insert(carry_at[0], "    " * carry_at[1] + f"{out.ctype(dtype)} {carry}{{}};  // {scan.name}: the tiles before")
            out.declare(scan.name, dtype, f"hv::block_scan({value}, {combine}, {carry}, {after_first})")
            return
        unused = out.fresh("hv_no_carry")
        out.taken.add(unused)
        out.emit(f"{out.ctype(dtype)} {unused}{{}};  // the kernel carries the tiles before itself")
        out.declare(scan.name, dtype, f"hv::block_scan({value}, {combine}, {unused}, false)")


def check_loop(loop: ast.For, after: list[ast.stmt], outer: set[str], tile_carries: set[str] = frozenset()) -> None:
    """Every accumulator a reduction loop carries must be folded by a combine that its final reduction undoes
    (sum then tl.sum, maximum then max2, welford_reduce then welford, ...): only then may each CUDA thread fold its
    own share of the row first. tile_carries: a looped scan's carries, the same for every thread of the tile (made
    of the tile's last value), which need no combine, if nothing reads them after the loop."""
    assigned = {n for s in loop.body for n in defines(s)}
    for acc in sorted(assigned & outer & set(tile_carries)):
        if any(acc in names_used(s) for s in after):
            raise NoTwin(f"the scan's carry {acc} is used after its loop")
    carried = sorted(assigned & outer - set(tile_carries))
    definitions = {}
    for stmt in loop.body:
        if isinstance(stmt, ast.Assign):
            for name in defines(stmt):
                definitions[name] = stmt.value
    for acc in carried:
        update = definitions[acc]
        if isinstance(update, ast.Call) and dotted(update.func) == "tl.where" and len(update.args) == 3 \
                and isinstance(update.args[2], ast.Name) and update.args[2].id == acc:
            update = update.args[1]
        kind = None
        if isinstance(update, ast.Name) and update.id in definitions:
            source = definitions[update.id]
            if isinstance(source, ast.BinOp) and acc in names_in(source) and type(source.op) in (ast.Add, ast.Mult, ast.BitOr):
                kind = {ast.Add: "+", ast.Mult: "*", ast.BitOr: "|"}[type(source.op)]
            elif isinstance(source, ast.Call) and dotted(source.func).split(".")[-1] in LOOP_COMBINES and acc in names_in(source):
                kind = dotted(source.func).split(".")[-1]
        if kind is None:
            # tuple combines: `acc_next, ... = welford_reduce(...)` then `acc = tl.where(mask, acc_next, acc)`
            for stmt in loop.body:
                if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Tuple) and isinstance(update, ast.Name) \
                        and update.id in defines(stmt) and isinstance(stmt.value, ast.Call):
                    name = dotted(stmt.value.func).split(".")[-1]
                    if name in LOOP_COMBINES and acc in names_in(stmt.value):
                        kind = name
        if kind is None:
            raise NoTwin(f"accumulator {acc} is updated in a way the twin cannot split across threads")
        finals = LOOP_COMBINES[kind]
        for stmt in after:
            if acc in names_used(stmt):
                call = reduction_call(stmt.value) if isinstance(stmt, ast.Assign) else None
                if call is None or call[0] not in finals:
                    raise NoTwin(f"accumulator {acc} is used after its loop other than by its reduction ({', '.join(finals)})")


def declare_copies(out: Emitter, accumulators: list[str], count: int, note: str = "") -> dict[str, tuple[str, str, int]]:
    """An array of `count` copies of each accumulator, each starting at its value: acc -> (array, dtype, count)."""
    copies = {}
    for acc in accumulators:
        var = out.lookup(acc)
        array = out.fresh(f"{acc}_copies")
        out.taken.add(array)
        out.emit(f"{out.ctype(var.dtype)} {array}[{count}] = {{{', '.join([var.cname] * count)}}};{note}")
        copies[acc] = (array, var.dtype, count)
    return copies


def copy_state(out, exprs, reductions, copies, accumulators, state_of, v: str) -> tuple[str, str, list]:
    """The reduction's state of the thread's accumulator copy `v` (an index: `2`, `hv_c`)."""
    kind, arguments, fast = state_of
    out.scopes.append({acc: Var(f"{copies[acc][0]}[{v}]", copies[acc][1], len(out.scopes)) for acc in accumulators})
    found = reductions.state(kind, [exprs(a) for a in arguments], fast)
    out.scopes.pop()
    return found
