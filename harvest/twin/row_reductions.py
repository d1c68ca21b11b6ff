"""What a row reduction computes, whatever the strategy: the reduction calls of a Triton kernel (`tl.sum(x, 1)`,
`triton_helpers.welford(...)`), the combine each loop accumulator is folded by, and the C++ state, combine functor
and identity of each; and the binding of a reduction's result to the names the kernel gives it."""

from __future__ import annotations

import ast

from harvest.syntax import dotted
from harvest.twin.cpp import Emitter, Value, literal
from harvest.twin.expressions import Statements
from harvest.twin.facts import CTYPES, FLOATS
from harvest.twin.no_twin import NoTwin

# Reductions over the row: name -> (combine functor, identity kind)
REDUCTIONS = {
    "sum": ("hv::Sum", "zero"), "max2": ("hv::MaxNan", "lowest"), "min2": ("hv::MinNan", "highest"),
    "max": ("hv::Max", "lowest"), "min": ("hv::Min", "highest"), "prod": ("hv::Prod", "one"), "any": ("hv::Any", "zero"),
}


# How each accumulator of an Inductor reduction loop is updated, and the reduction that must end it.
LOOP_COMBINES = {"+": ("sum",), "maximum": ("max2", "max"), "minimum": ("min2", "min"), "*": ("prod",),
                 "|": ("any",), "welford_reduce": ("welford",), "online_softmax_combine": ("online_softmax_reduce",),
                 "maximum_with_index": ("max_with_index",), "minimum_with_index": ("min_with_index",)}


ROW_REDUCTIONS = {"tl.sum": "sum", "tl.max": "max", "tl.min": "min", "triton_helpers.max2": "max2", "triton_helpers.min2": "min2",
                  "triton_helpers.prod": "prod", "triton_helpers.any": "any", "triton_helpers.welford": "welford",
                  "triton_helpers.max_with_index": "max_with_index", "triton_helpers.min_with_index": "min_with_index",
                  "triton_helpers.online_softmax_reduce": "online_softmax_reduce"}


ARITY = {"welford": 3, "max_with_index": 2, "min_with_index": 2, "online_softmax_reduce": 2}


def reduction_call(value: ast.expr) -> tuple[str, list[ast.expr], ast.Call] | None:
    """`tl.sum(x, 1)[:, None]` (optionally `.to(dtype)`) and friends -> (kind, reduced arguments, call)."""
    while isinstance(value, ast.Subscript) or (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                                               and value.func.attr == "to" and isinstance(value.func.value, (ast.Subscript, ast.Call))):
        value = value.value if isinstance(value, ast.Subscript) else value.func.value
    if not isinstance(value, ast.Call) or dotted(value.func) not in ROW_REDUCTIONS:
        return None
    kind = ROW_REDUCTIONS[dotted(value.func)]
    count = ARITY.get(kind, 1)
    axis = value.args[count] if len(value.args) > count else next((k.value for k in value.keywords if k.arg in ("axis", "dim")), None)
    if not (isinstance(axis, ast.Constant) and axis.value in (1, -1)):
        raise NoTwin(f"a reduction over axis {ast.unparse(axis) if axis is not None else '?'} (the twin reduces rows: axis 1)")
    return kind, value.args[:count], value


def _identity(kind: str, dtype: str) -> str:
    if kind in ("sum", "any"):
        return literal(0, dtype)
    if kind == "prod":
        return literal(1, dtype)
    big = float("inf") if dtype in FLOATS else (2 ** (8 * CTYPES[dtype][1] - (0 if dtype.startswith("u") else 1)) - 1)
    small = float("-inf") if dtype in FLOATS else (0 if dtype.startswith("u") else -(2 ** (8 * CTYPES[dtype][1] - 1)))
    return literal(small if kind in ("max", "max2", "max_with_index") else big, dtype)


class RowReductions:
    """Block-wide combination of per-thread partials, and the per-thread folding that feeds it."""

    def __init__(self, out: Emitter):
        self.out = out

    def state(self, kind: str, values: list[Value], fast: str = "false") -> tuple[str, str, list[tuple[str, str]]]:
        """(C++ type of the partial, its value from `values`, [(field, dtype)] of the result)."""
        out = self.out
        if kind == "welford":
            return "hv::Welford", f"hv::Welford{{{', '.join(out.cast(v, 'fp32') for v in values)}}}", [(".mean", "fp32"), (".m2", "fp32"), (".weight", "fp32")]
        if kind == "online_softmax_reduce":
            return "hv::SoftmaxState", f"hv::SoftmaxState{{{', '.join(out.cast(v, 'fp32') for v in values)}}}", [(".max", "fp32"), (".sum", "fp32")]
        if kind in ("max_with_index", "min_with_index"):
            value, index = values
            vtype, itype = concrete(value.dtype), concrete(index.dtype)
            ctype = f"hv::ValueIndex<{out.ctype(vtype)}, {out.ctype(itype)}>"
            return ctype, f"{ctype}{{{out.cast(value, vtype)}, {out.cast(index, itype)}}}", [(".value", vtype), (".index", itype)]
        (value,) = values
        dtype = concrete(value.dtype)
        return out.ctype(dtype), out.cast(value, dtype), [("", dtype)]

    def combiner(self, kind: str, fast: str = "false") -> str:
        if kind == "welford":
            return "hv::WelfordCombine()"
        if kind == "online_softmax_reduce":
            return f"hv::SoftmaxCombine<{fast}>()"
        if kind == "max_with_index":
            return "hv::ArgMax()"
        if kind == "min_with_index":
            return "hv::ArgMin()"
        return REDUCTIONS[kind][0] + "()"

    def identity(self, kind: str, ctype: str, fields: list[tuple[str, str]]) -> str:
        if kind == "welford":
            return "hv::Welford{0.0f, 0.0f, 0.0f}"
        if kind == "online_softmax_reduce":
            return "hv::SoftmaxState{-INFINITY, 0.0f}"
        if kind in ("max_with_index", "min_with_index"):
            (_, vtype), (_, itype) = fields
            index = literal(2 ** (8 * CTYPES[itype][1] - 1) - 1, itype)
            return f"{ctype}{{{_identity('max' if kind == 'max_with_index' else 'min', vtype)}, {index}}}"
        return _identity(kind, fields[0][1])


def concrete(dtype: str) -> str:
    return "i32" if dtype == "int" else "fp32" if dtype == "float" else dtype


def softmax_fast(call: ast.Call) -> str:
    flag = call.args[3] if len(call.args) > 3 else next((k.value for k in call.keywords if k.arg == "use_fast_math"), None)
    return "true" if isinstance(flag, ast.Constant) and flag.value else "false"


def _targets(stmt: ast.Assign) -> list[str]:
    target = stmt.targets[0]
    elements = target.elts if isinstance(target, ast.Tuple) else [target]
    if not all(isinstance(e, ast.Name) for e in elements):
        raise NoTwin(f"assignment to {ast.unparse(target)!r}")
    return [e.id for e in elements]


def bind_result(out: Emitter, statements: Statements, stmt: ast.Assign, result: str, fields: list[tuple[str, str]]) -> None:
    names = _targets(stmt)
    if len(names) != len(fields):
        raise NoTwin(f"{len(names)} names for a reduction with {len(fields)} results")
    cast = _final_cast(stmt.value)
    for name, (suffix, dtype) in zip(names, fields):
        value = Value(f"{result}{suffix}", dtype)
        if cast is not None:
            target = statements.x.dtype_of(cast)
            value = Value(out.cast(value, target), target)
        statements.store_name(name, value)


def _final_cast(value: ast.expr) -> ast.expr | None:
    """The dtype of a trailing `.to(dtype)` around a reduction, if any."""
    while isinstance(value, ast.Subscript):
        value = value.value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "to" and value.args:
        return value.args[0]
    return None

