"""Foreach kernels (several pointwise sub-kernels in one launch, as a compiled optimizer step writes them): one
thread block per Triton program; the program's branch picks its sub-kernel, and the block's threads stride over
that program's BLOCK elements."""

from __future__ import annotations

import ast

from harvest.twin.body import Axes, arange_block, finish, host_expr, split_prologue, start_emitter
from harvest.twin.expressions import Expressions, Statements
from harvest.twin.facts import ModuleFacts, NoTwin, TwinSource

THREADS = 256  # a block's threads; each takes BLOCK / THREADS of its program's elements


def foreach_branches(facts: ModuleFacts) -> tuple[str, list[ast.stmt], ast.If] | None:
    """(the program's name, the statements before the branches, the `if pid < num_xblocks_0: ... elif ...` chain)
    of a foreach kernel, or None."""
    if not facts.body or not isinstance(facts.body[0], ast.Assign) or ast.unparse(facts.body[0].value) != "tl.program_id(0)":
        return None
    ifs = [s for s in facts.body if isinstance(s, ast.If)]
    if len(ifs) != 1 or facts.body[-1] is not ifs[0]:
        return None
    program = facts.body[0].targets[0].id
    test = ifs[0].test
    if not (isinstance(test, ast.Compare) and ast.unparse(test.left) == program):
        return None
    return program, list(facts.body[1:-1]), ifs[0]


def translate_foreach(facts: ModuleFacts, program: str, before: list[ast.stmt], chain: ast.If) -> TwinSource:
    out, signature, launcher_args = start_emitter(facts)
    exprs = Expressions(out, Axes())
    statements = Statements(out, exprs)
    out.declare(program, "i32", "static_cast<int32_t>(blockIdx.x)")
    for stmt in before:
        statements.statement(stmt)
    branch: ast.stmt | None = chain
    opening = "if"
    sub_kernels = 0
    while isinstance(branch, ast.If):
        out.open(f"{opening} ({out.cast(exprs(branch.test), 'i1')}) {{")
        _emit_sub_kernel(out, statements, branch.body)
        out.indent -= 1
        out.scopes.pop()
        sub_kernels += 1
        opening = "} else if"
        rest = branch.orelse
        if len(rest) == 1 and isinstance(rest[0], ast.If):
            branch = rest[0]
        elif all(isinstance(s, ast.Pass) for s in rest):
            branch = None
        else:
            raise NoTwin("a foreach kernel whose last branch does more than `pass`")
    out.emit("}")
    _, _, known = split_prologue(facts, Axes())
    grid = facts.grid[0] if facts.grid else None
    if grid is None:
        raise NoTwin("a foreach kernel without a launch grid")
    launch_lines = [f"const int64_t hv_programs = {host_expr(grid, known, facts.params)};", "if (hv_programs <= 0) return;",
                    'TORCH_CHECK(hv_programs <= 2147483647, "more programs than one grid of 2^31 - 1 blocks covers: ", hv_programs);']
    notes = [f"a foreach kernel: {sub_kernels} sub-kernels in one launch, one thread block per Triton program",
             "the program's branch picks its sub-kernel; the block's threads stride over the program's elements"]
    return finish(facts, out, signature, launcher_args, launch_lines, "static_cast<unsigned int>(hv_programs)",
                  str(THREADS), "pointwise", notes)


def _emit_sub_kernel(out, statements: Statements, body: list[ast.stmt]) -> None:
    """One branch: its program-level statements as they come, then from `rows = row_start + tl.arange(0, BLOCK)`
    on, the element-level ones inside a loop of the block's threads over the BLOCK elements."""
    for position, stmt in enumerate(body):
        element = _element_index(stmt)
        if element is None:
            statements.statement(stmt)
            continue
        name, start, block = element
        size = out.facts.constexprs.get(block) if not block.isdigit() else int(block)
        if not isinstance(size, int):
            raise NoTwin(f"a foreach sub-kernel whose block {block} is not a number")
        out.open(f"for (int32_t hv_e = static_cast<int32_t>(threadIdx.x); hv_e < {size}; hv_e += blockDim.x) {{")
        out.declare(name, "i32", f"{out.lookup(start).cname} + hv_e")
        for rest in body[position + 1:]:
            if _element_index(rest) is not None or isinstance(rest, (ast.If, ast.For)):
                raise NoTwin("a foreach sub-kernel with a second element index or a branch inside it")
            statements.statement(rest)
        out.close()
        return
    raise NoTwin("a foreach sub-kernel without `rows = row_start + tl.arange(0, BLOCK)`")


def _element_index(stmt: ast.stmt) -> tuple[str, str, str] | None:
    """`rows = row_start + tl.arange(0, BLOCK)[:]` -> ("rows", "row_start", "BLOCK")."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return None
    value = stmt.value
    if not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and isinstance(value.left, ast.Name)):
        return None
    block = arange_block(value.right)
    return (stmt.targets[0].id, value.left.id, block) if block is not None else None
