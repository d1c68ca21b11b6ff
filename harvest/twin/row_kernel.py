"""A row reduction read for its strategy (RowKernel): the emitter with the kernel's prologue written, the row's
statements, its index and its length; how a block's threads share the rows (Lanes); and what every strategy does
alike at the start and the end of its loop over the rows."""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field

from harvest.shapes import evaluate_node
from harvest.syntax import dotted
from harvest.twin.body import (
    Axes,
    defines,
    finish,
    host_expr,
    index_dtype,
    names_used,
    split_prologue,
    start_emitter,
)
from harvest.twin.choices import TwinChoices
from harvest.twin.cpp import Emitter, Value
from harvest.twin.expressions import Expressions, Statements
from harvest.twin.facts import CTYPES, ModuleFacts, NoTwin, TwinSource
from harvest.twin.pointwise import aliases
from harvest.twin.row_reductions import RowReductions, reduction_call
from harvest.twin.scan import CombineLambdas, scan_call

# The note of a persistent reduction whose values are not kept between passes.
RECOMPUTED = "each reduction is its own pass over the row (the row's values are recomputed, not kept in registers)"


@dataclass(frozen=True)
class Lanes:
    """How a block's threads share the rows: which thread of a row this one is (lane) and how many a row has (count),
    the helper that combines their partials, the conditions of a row-level and of a lane-level store, and what
    tl.debug_barrier is among a row's threads. Each strategy module has its own (LANES)."""

    lane: str
    count: str
    reduce: str
    row_store_guard: tuple[str, ...]
    lane_store_guard: tuple[str, ...]
    barrier: str = "__syncthreads();"


@dataclass
class RowEmitters:
    """A strategy's statement emitters: row-level (a row's values; its stores by one thread of the row), lane-level
    (each thread's share of the row), and the reductions' C++."""

    lanes: Lanes
    row: Statements
    lane: Statements
    reductions: RowReductions

    @classmethod
    def of(cls, out: Emitter, exprs: Expressions, lanes: Lanes, in_tile: bool = False) -> RowEmitters:
        """in_tile: the lane-level stores wait for hv_in too (a scan's threads past the row take part, store nothing)."""
        return cls(lanes, Statements(out, exprs, row_level_stores=True, store_guard=lanes.row_store_guard, barrier=lanes.barrier),
                   Statements(out, exprs, store_guard=lanes.lane_store_guard + (("hv_in",) if in_tile else ())), RowReductions(out))


@dataclass
class RowKernel:
    """A reduction over rows (program axis 0) with the kernel's prologue emitted: what the dispatcher picks a strategy
    by, and what the strategy translates."""

    facts: ModuleFacts
    axes: Axes
    looped: bool  # Inductor's reduction loop (`for r0_offset in range(0, r0_numel, R0_BLOCK)`), not a persistent row
    choices: TwinChoices
    out: Emitter
    signature: list[str]
    launcher_args: list[str]
    known: dict[str, int]  # the kernel's integer constants
    exprs: Expressions
    body: list[ast.stmt]  # after the prologue, without the row's index and block offset
    row_name: str
    row_dtype: str
    rnumel_node: ast.expr  # the row's length, as the kernel has it
    scans: CombineLambdas | None  # the kernel's scans' combine lambdas; None: no scan
    rows: Value = field(init=False)
    rnumel: Value = field(init=False)

    def __post_init__(self) -> None:
        self.rows = self.exprs(self.facts.grid[0])
        self.rnumel = self.exprs(self.rnumel_node)

    @classmethod
    def read(cls, facts: ModuleFacts, axes: Axes, looped: bool, choices: TwinChoices) -> RowKernel:
        prologue, body, known = split_prologue(facts, axes)
        out, signature, launcher_args = start_emitter(facts)
        exprs = Expressions(out, axes)
        for stmt in prologue:
            Statements(out, exprs).statement(stmt)
        row_name = axes.program[0]
        offset_name = next(n for n, k in axes.offsets.items() if k == 0)
        row_dtype = index_dtype(facts, offset_name)
        body = [s for s in body if not (defines(s) & {offset_name, row_name})]
        if any(offset_name in names_used(s) for s in body):
            raise NoTwin(f"the block offset {offset_name} is used beyond the row index")
        loops = [s for s in body if isinstance(s, ast.For)]
        if looped:
            body = casts_into_reductions(body)
            rnumel_node = loop_range(loops[0], axes)[1]
        else:
            rnumel_node = persistent_numel(body, axes, facts)
        scans = CombineLambdas(facts.combine_helpers) if any(scan_call(n) for s in body for n in ast.walk(s) if isinstance(n, ast.stmt)) else None
        return cls(facts, axes, looped, choices, out, signature, launcher_args, known, exprs, body, row_name, row_dtype,
                   rnumel_node, scans)

    @property
    def row_length(self) -> object:
        """The row's length when it is a constant of the kernel (an int), else what evaluating it gave."""
        return evaluate_node(self.rnumel_node, self.known)

    @property
    def numel_text(self) -> str:
        return ast.unparse(self.rnumel_node)

    def begin(self, lanes: Lanes) -> RowEmitters:
        """The strategy's emitters, and the row count (hv_rows) the row loop runs over."""
        emitters = RowEmitters.of(self.out, self.exprs, lanes, in_tile=self.scans is not None)
        self.out.emit(f"const int64_t hv_rows = {self.rows.code};")
        return emitters

    def declare_row(self, code: str) -> None:
        """The kernel's row index, of the row loop's int64 `code`."""
        self.out.declare(self.row_name, self.row_dtype, f"static_cast<{CTYPES[self.row_dtype][0]}>({code})")

    def end_rows(self) -> None:
        """The row loop closed; the scans' combine lambdas first in the kernel."""
        self.out.close()
        if self.scans is not None:
            self.out.lines[0:0] = self.scans.lines

    def launch_lines(self) -> list[str]:
        return [
            f"const int64_t hv_rows = {host_expr(self.facts.grid[0], self.known, self.facts.params)};",
            f"const int64_t hv_rnumel = {host_expr(self.rnumel_node, self.known, self.facts.params)};",
            "if (hv_rows <= 0) return;",
        ]

    def finish(self, launch_lines: list[str], blocks: str, threads: str, notes: list[str], **launch) -> TwinSource:
        return finish(self.facts, self.out, self.signature, self.launcher_args, launch_lines, blocks, threads, "reduction",
                      notes, **launch)


def loop_range(loop: ast.For, axes: Axes) -> tuple[ast.expr, ast.expr]:
    """(start, stop) of Inductor's reduction loop `for r0_offset in range(0, r0_numel, R0_BLOCK)`."""
    call = loop.iter
    if not (isinstance(call, ast.Call) and dotted(call.func) in ("range", "tl.range", "tl.static_range") and len(call.args) == 3):
        raise NoTwin(f"loop over {ast.unparse(call)!r}")
    start, stop, step = call.args
    if not (isinstance(start, ast.Constant) and start.value == 0 and isinstance(step, ast.Name) and step.id == axes.reduction_block):
        raise NoTwin(f"loop {ast.unparse(call)!r} is not `range(0, numel, R_BLOCK)`")
    if not isinstance(loop.target, ast.Name) or loop.orelse:
        raise NoTwin("loop target is not a name")
    return start, stop


def persistent_numel(body: list[ast.stmt], axes: Axes, facts: ModuleFacts) -> ast.expr:
    """A persistent reduction's row length: the bound of its reduction index's mask, else its block."""
    names = aliases(body, axes.reduction_base)
    for stmt in body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Compare) and isinstance(stmt.value.left, ast.Name) \
                and stmt.value.left.id in names and isinstance(stmt.value.ops[0], ast.Lt):
            return stmt.value.comparators[0]
    block = axes.reduction_block
    if block in facts.constexprs:
        return ast.Constant(facts.constexprs[block])
    raise NoTwin("cannot tell how long a row is")


def casts_into_reductions(body: list[ast.stmt]) -> list[ast.stmt]:
    """`as_i8 = acc.to(tl.int8)` after a loop, read only by `any(as_i8, 1)`: the cast moved into the reduction's
    argument (`any(acc.to(tl.int8), 1)`), where the twin applies it to each of a thread's accumulator copies, as
    Triton applies it to each slot of its accumulator before reducing the slots."""
    loop_carried = {n for s in body if isinstance(s, ast.For) for inner in s.body for n in defines(inner)}
    body = list(body)
    for position, stmt in enumerate(body):
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            continue
        value, name = stmt.value, stmt.targets[0].id
        inner = value
        while isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "to":
            inner = inner.func.value
        if inner is value or not (isinstance(inner, ast.Name) and inner.id in loop_carried):
            continue
        readers = [i for i, s in enumerate(body) if i != position and name in names_used(s)]
        if len(readers) != 1 or isinstance(body[readers[0]], ast.For):
            continue
        reader = copy.deepcopy(body[readers[0]])  # (the module's own statements stay as they are)
        reduction = reduction_call(reader.value) if isinstance(reader, ast.Assign) else None
        if reduction is None or not any(isinstance(a, ast.Name) and a.id == name for a in reduction[1]):
            continue
        call = reduction[2]
        call.args = [copy.deepcopy(value) if isinstance(a, ast.Name) and a.id == name else a for a in call.args]
        body[readers[0]] = reader
        body[position] = ast.Pass()
    return [s for s in body if not isinstance(s, ast.Pass)]
