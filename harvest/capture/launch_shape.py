"""Whether a module's launch() is still of the shape harvest writes it in, so that `harvest run --with` may launch
its kernel without calling launch() each time.

harvest writes launch() as two statements: the grid, a tuple computed from the launch's integer arguments and the
CONFIG, and the kernel's launch on the launch's own arguments in order, `**config` last:

    def launch(a_ptr, out_ptr, n_rows, config=CONFIG):
        grid = (triton.cdiv(n_rows, config["BLOCK_ROWS"]),)
        softmax_kernel[grid](a_ptr, out_ptr, n_rows, **config)

A launch() of that shape launches one kernel, once, on a grid that only its integer arguments and the config
decide: for the same integers and config, the same grid. The swap then launches the compiled kernel on that grid
directly (harvest.capture.swap), which saves the host time of launch() itself (`triton.cdiv` alone is a
constexpr_function call, ~2 µs, in Triton >= 3.5). Any other launch() (an edit that launches twice, allocates,
reads a tensor's shape for the grid) is called at every launch, as written.
"""

from __future__ import annotations

import ast

GRID_CALLS = {"min", "max", "int", "abs"}  # plain functions a grid may call, besides triton.cdiv


def grid_inputs(source: str, kernel: str) -> tuple[str, ...] | None:
    """The launch() parameters its grid reads (in the order they are defined), when `source` (the text of a
    `def launch`) is of the shape above and launches `kernel`; None when it is not."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        return None
    function = tree.body[0]
    arguments = function.args
    params = [a.arg for a in arguments.args]
    if (arguments.vararg or arguments.kwarg or arguments.kwonlyargs or arguments.posonlyargs or function.decorator_list
            or not params or params[-1] != "config" or len(arguments.defaults) != 1):
        return None
    body = list(function.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        body = body[1:]  # the docstring
    if len(body) != 2:
        return None
    grid, call = body
    if not (isinstance(grid, ast.Assign) and len(grid.targets) == 1 and isinstance(grid.targets[0], ast.Name)
            and isinstance(grid.value, ast.Tuple)):
        return None
    grid_name = grid.targets[0].id
    if not (isinstance(call, ast.Expr) and isinstance(call.value, ast.Call)):
        return None
    launched = call.value.func
    if not (isinstance(launched, ast.Subscript) and isinstance(launched.value, ast.Name) and launched.value.id == kernel
            and isinstance(launched.slice, ast.Name) and launched.slice.id == grid_name):
        return None
    passed = call.value.args
    if (len(passed) != len(params) - 1 or any(not isinstance(a, ast.Name) or a.id != p for a, p in zip(passed, params))
            or len(call.value.keywords) != 1 or call.value.keywords[0].arg is not None
            or not (isinstance(call.value.keywords[0].value, ast.Name) and call.value.keywords[0].value.id == "config")):
        return None
    read = _names_read(grid.value, set(params))
    return None if read is None else tuple(p for p in params[:-1] if p in read)


def _names_read(expression: ast.expr, params: set[str]) -> set[str] | None:
    """The parameters an expression reads, when it only computes with them, numbers, `config[...]`, triton.cdiv
    and GRID_CALLS (nothing with side effects, nothing another global decides); None otherwise."""
    read: set[str] = set()
    allowed_nodes = (ast.Tuple, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Load, ast.operator, ast.unaryop, ast.Subscript,
                     ast.Name, ast.Call, ast.Attribute)
    for node in ast.walk(expression):
        if not isinstance(node, allowed_nodes):
            return None
        if isinstance(node, ast.Call):
            func = node.func
            is_cdiv = (isinstance(func, ast.Attribute) and func.attr == "cdiv" and isinstance(func.value, ast.Name)
                       and func.value.id == "triton")
            if not (is_cdiv or (isinstance(func, ast.Name) and func.id in GRID_CALLS)) or node.keywords:
                return None
        elif isinstance(node, ast.Attribute):
            if not (node.attr == "cdiv" and isinstance(node.value, ast.Name) and node.value.id == "triton"):
                return None
        elif isinstance(node, ast.Subscript):
            if not (isinstance(node.value, ast.Name) and node.value.id == "config" and isinstance(node.slice, ast.Constant)):
                return None
        elif isinstance(node, ast.Name):
            if node.id in params:
                read.add(node.id)
            elif node.id not in GRID_CALLS and node.id != "triton":
                return None
    return read - {"config"}
