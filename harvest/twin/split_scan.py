"""Split scans, read as the row scans they compute.

Inductor's split scan (triton_heuristics.split_scan) gives each program one tile of a row (program axis 0; the rows
on axis 1): it scans its tile, reduces it, takes the combined value of every tile before it from a workspace by a
decoupled look-back, and stores combine(that, its scan), the first tile its scan alone. What it computes is the
row's inclusive scan. The twin translates it as that: a loop over the row's tiles whose scan carries the tiles
before it (`tl.associative_scan(..., harvest_carry=True)`, a marker only the twin reads), the workspace, the
reduce and the look-back gone.
"""

from __future__ import annotations

import ast
import copy

from harvest.syntax import dotted
from harvest.twin.no_twin import NoTwin

LOOKBACK = "triton_helpers.exclusive_scan_decoupled_lookback"
ROW_LENGTHS = ("n_cols", "r0_numel", "rnumel")  # the row's length, as harvest names it or Inductor does
CARRY = "harvest_carry"  # the marker keyword of a scan that carries the row's tiles before


def is_split_scan(body: list[ast.stmt]) -> bool:
    return any(isinstance(n, ast.Call) and dotted(n.func) == LOOKBACK for s in body for n in ast.walk(s))


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _target(stmt: ast.stmt) -> str | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    return None


def _program(value: ast.expr, axis: int) -> bool:
    """`tl.program_id(axis) * BLOCK`."""
    return (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult) and isinstance(value.left, ast.Call)
            and dotted(value.left.func) == "tl.program_id" and ast.literal_eval(value.left.args[0]) == axis)


def _arange(block: str, row: bool) -> ast.expr:
    """`tl.arange(0, BLOCK)[:, None]` (row) or `[None, :]`."""
    none, whole = ast.Constant(None), ast.Slice()
    return ast.Subscript(ast.Call(ast.Attribute(ast.Name("tl", ast.Load()), "arange", ast.Load()),
                                  [ast.Constant(0), ast.Name(block, ast.Load())], []),
                         ast.Tuple([whole, none] if row else [none, whole], ast.Load()), ast.Load())


def as_row_scan(body: list[ast.stmt], grid: tuple[ast.expr, ...], params: tuple[str, ...]) -> tuple[list[ast.stmt], tuple[ast.expr, ...]]:
    """The kernel's statements and grid as a loop over each row's tiles (see the module's docstring), or NoTwin."""
    if len(grid) < 2:
        raise NoTwin("a split scan launched without its rows' program axis")
    by_name = {_target(s): s for s in body if _target(s)}
    column_start = next((name for name, s in by_name.items() if _program(s.value, 0)), None)
    row_start = next((name for name, s in by_name.items() if _program(s.value, 1)), None)
    lookback = next((name for name, s in by_name.items() if isinstance(s.value, ast.Call) and dotted(s.value.func) == LOOKBACK), None)
    if column_start is None or row_start is None or lookback is None:
        raise NoTwin("a split scan outside Inductor's pattern (its tile and row offsets, its look-back)")
    block, row_block = by_name[column_start].value.right, by_name[row_start].value.right
    if not (isinstance(block, ast.Name) and isinstance(row_block, ast.Name)):
        raise NoTwin("a split scan whose tile or row block is not a block constexpr")
    scans = [name for name, s in by_name.items() if isinstance(s.value, ast.Call) and dotted(s.value.func) == "tl.associative_scan"]
    combined = [name for name, s in by_name.items() if isinstance(s.value, ast.Call) and lookback in _names(s.value)
                and dotted(s.value.func) != LOOKBACK]
    if len(scans) != 1 or len(combined) != 1:
        raise NoTwin("a split scan with other than one scan combined with its look-back")
    scan, combine_call = scans[0], combined[0]
    scan_call = by_name[scan].value
    if len(scan_call.args) != 3 or not isinstance(scan_call.args[2], ast.Name):
        raise NoTwin("a split scan of several values at once")
    where = next((name for name, s in by_name.items() if isinstance(s.value, ast.Call) and dotted(s.value.func) == "tl.where"
                  and combine_call in _names(s.value) and scan in _names(s.value)), None)
    if where is None:
        raise NoTwin("a split scan whose first tile is not told apart from the others")
    workspace = {p for p in params if p.startswith("ws_ptr")}
    dropped = {lookback, combine_call}
    for stmt in body:  # the workspace's pointer, the program count, the tile's reduce: the look-back's inputs
        name = _target(stmt)
        value = stmt.value if isinstance(stmt, ast.Assign) else None
        if name and name != where and value is not None and (_names(value) & (workspace | dropped)
                                           or isinstance(value, ast.Call) and dotted(value.func) in ("tl.num_programs", "tl.reduce")):
            dropped.add(name)
    length = next((n for n in ROW_LENGTHS if n in params or n in by_name), None)
    if length is None:
        raise NoTwin("a split scan whose row length has no name")
    before: list[ast.stmt] = []
    loop: list[ast.stmt] = []
    inside = False
    columns = None
    for stmt in body:
        name = _target(stmt)
        if name == column_start:
            inside = True
            continue
        if name in dropped:
            continue
        stmt = copy.deepcopy(stmt)
        if name == row_start:
            stmt.value.left.args[0] = ast.Constant(0)
        elif isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and dotted(stmt.value.func) == "tl.full" \
                and row_start in _names(stmt.value):  # rows = tl.full([1], row_start, tl.int32)
            stmt.value = ast.BinOp(ast.Name(row_start, ast.Load()), ast.Add(), _arange(row_block.id, row=True))
        elif name == scan:
            values, _, combine = scan_call.args
            stmt = ast.Assign([ast.Tuple([ast.Name(scan, ast.Store())], ast.Store())],
                              ast.Call(scan_call.func, [ast.Tuple([values], ast.Load()), ast.Constant(1), combine],
                                       [ast.keyword(CARRY, ast.Constant(True))]))
        elif name == where:
            stmt.value = ast.Name(scan, ast.Load())
        elif isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.BinOp) and column_start in _names(stmt.value.left) \
                and isinstance(stmt.value.right, ast.Subscript):  # cols = col_start + tl.arange(0, BLOCK)[:]
            stmt.value.right = ast.Name(f"{name}_base", ast.Load())
            before.append(ast.Assign([ast.Name(f"{name}_base", ast.Store())], _arange(block.id, row=False)))
            columns = name
        (loop if inside else before).append(stmt)
    if not inside or columns is None:
        raise NoTwin("a split scan without its tile's column index")
    for stmt in loop:  # every load masked by the row's length: the twin's last tile may pass the row's end
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and dotted(node.func) == "tl.load" and (len(node.args) < 2 or
                                                                                isinstance(node.args[1], ast.Constant) and node.args[1].value is None):
                mask = ast.Compare(ast.Name(columns, ast.Load()), [ast.Lt()], [ast.Name(length, ast.Load())])
                node.args[1:2] = [mask]
                if not any(k.arg == "other" for k in node.keywords):
                    node.keywords.append(ast.keyword("other", ast.Constant(0.0)))
    for_loop = ast.For(ast.Name(column_start, ast.Store()),
                       ast.Call(ast.Attribute(ast.Name("tl", ast.Load()), "range", ast.Load()),
                                [ast.Constant(0), ast.Name(length, ast.Load()), ast.Name(block.id, ast.Load())], []),
                       loop, [], None)
    left = _names(ast.Module([*before, for_loop], [])) & (dropped | workspace)
    if left:
        raise NoTwin(f"a split scan that reads {', '.join(sorted(left))} outside Inductor's pattern")
    rows = grid[1]  # the recorded count of programs along the rows, one row each (Inductor's XBLOCK = 1)
    one_row = any(isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.target.id == row_block.id
                  and isinstance(s.value, ast.Constant) and s.value.value == 1 for s in body)
    if not (isinstance(rows, ast.Constant) and isinstance(rows.value, int) and one_row):
        raise NoTwin("a split scan whose rows are not one a program, counted in its recorded grid")
    cdiv = ast.Attribute(ast.Name("triton", ast.Load()), "cdiv", ast.Load())
    return [*before, for_loop], (ast.Call(cdiv, [ast.Constant(rows.value), ast.Name(row_block.id, ast.Load())], []),)
