"""Plan: each Inductor name -> a readable one (axes, pointers, temporaries by the op they compute), made unique."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m

from harvest.dtypes import SHORT_NAMES
from harvest.rename.context import RESERVED, RenameContext
from harvest.rename.gather import AXIS_NAME, BLOCK_NAME, COORD, KS, LEGACY, PTR, TMP, Facts, is_inductor_name
from harvest.rename.names import IDENT
from harvest.syntax import dotted

# ---------------------------------------------------------------------------------------------------------------------
# Plan: Inductor name -> readable name


@dataclass(frozen=True)
class _AxisWords:
    block: str
    numel: str
    offset: str
    index: str
    mask: str
    base: str
    inner: str
    outer: str
    mid: str


def _axis_words(axis: str, reduction: bool, tiled: bool) -> _AxisWords:
    if axis == "x" and not reduction and not tiled:
        return _AxisWords("BLOCK_SIZE", "n_elements", "block_start", "offsets", "mask", "base", "col", "row", "mid")
    if axis == "x" and reduction:
        return _AxisWords("BLOCK_ROWS", "n_rows", "row_start", "rows", "row_mask", "row_base", "row_inner",
                          "row_outer", "row_mid")
    if axis == "r0_":
        return _AxisWords("BLOCK_COLS", "n_cols", "col_start", "cols", "col_mask", "col_base", "col_inner",
                          "col_outer", "col_mid")
    a = axis.rstrip("_")
    return _AxisWords(f"BLOCK_{a.upper()}", f"{a}_numel", f"{a}_start", f"{a}_offsets", f"{a}_mask", f"{a}_base",
                      f"{a}_inner", f"{a}_outer", f"{a}_mid")


# The op a tmp computes -> its name. Builtins (sum, max, abs, pow, any) are avoided on purpose.
_CALL_NAMES = {
    "tl.sum": "total", "tl.max": "amax", "tl.min": "amin", "triton_helpers.max2": "amax",
    "triton_helpers.min2": "amin", "triton_helpers.any": "any_true", "triton_helpers.prod": "prod",
    "tl.where": "where", "tl.broadcast_to": "broadcast", "triton_helpers.maximum": "maximum",
    "triton_helpers.minimum": "minimum", "tl.maximum": "maximum", "tl.minimum": "minimum", "tl.fma": "fma",
    "tl.sigmoid": "sigmoid", "tl.full": "const", "tl.zeros": "zeros", "tl.reshape": "reshaped",
    "tl.cumsum": "cumsum", "tl.cumprod": "cumprod", "triton_helpers.welford_reduce": "welford",
    "triton_helpers.welford_combine": "welford", "triton_helpers.welford": "welford", "tl.rand": "rand",
    "tl.randn": "randn", "triton_helpers.div_floor_integer": "floor_div",
    "triton_helpers.remainder_integer": "remainder", "tl.abs": "absolute",
}
_FN_RENAMES = {"abs": "absolute", "pow": "power", "round": "rounded", "max": "amax", "min": "amin", "exp": "exp"}
_BINOPS = {cst.Add: "add", cst.Subtract: "sub", cst.Multiply: "mul", cst.Divide: "div", cst.FloorDivide: "floor_div",
           cst.Modulo: "mod", cst.BitAnd: "both", cst.BitOr: "either", cst.BitXor: "xor", cst.LeftShift: "shl",
           cst.RightShift: "shr", cst.Power: "power"}
_CMPOPS = {cst.Equal: "eq", cst.NotEqual: "ne", cst.LessThan: "lt", cst.LessThanEqual: "le", cst.GreaterThan: "gt",
           cst.GreaterThanEqual: "ge"}
_CONSTS = {"0": "zero", "0.0": "zero", "1": "one", "1.0": "one", "-1": "minus_one", "-1.0": "minus_one",
           "0.5": "half", 'float("inf")': "inf", 'float("-inf")': "neg_inf"}
# op word -> aten target in a graph fragment (to trace a tmp to the FX node it computes)
ATEN_OF = {"rsqrt": "rsqrt", "rstd": "rsqrt", "exp": "exp", "erf": "erf", "tanh": "tanh", "sigmoid": "sigmoid",
            "log": "log", "sqrt": "sqrt", "where": "where", "amax": "amax", "amin": "amin", "absolute": "abs",
            "mean": "mean", "total": "sum", "any_true": "any", "power": "pow", "maximum": "maximum",
            "minimum": "minimum", "div": "div", "sub": "sub", "add": "add", "mul": "mul", "square": "pow", "eq": "eq",
            "ne": "ne", "lt": "lt", "gt": "gt", "le": "le", "ge": "ge", "var": "var"}


def _strip(expr: cst.BaseExpression) -> cst.BaseExpression:
    """Drop `[:, None]` / `.to(...)` suffixes Inductor puts on reductions, so the op underneath names the value."""
    while True:
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif m.matches(expr, m.Call(func=m.Attribute(attr=m.Name("to")))) and isinstance(expr, cst.Call) \
                and isinstance(expr.func, cst.Attribute) and isinstance(expr.func.value, (cst.Call, cst.Subscript)):
            expr = expr.func.value
        else:
            return expr


class _Namer:
    """Chooses base names for tmps from the op that computes them (program order, so operands are named first)."""

    def __init__(self, facts: Facts, names: dict[str, str]) -> None:
        self.facts = facts
        self.names = names  # old -> base new name, filled as we go

    def operand(self, expr: cst.BaseExpression) -> str:
        expr = _strip(expr)
        return self.names.get(expr.value, expr.value) if isinstance(expr, cst.Name) else ""

    def name(self, tmp: str, value: cst.BaseExpression) -> str:
        if tmp in self.facts.loads:
            return _ptr_base(self.names.get(self.facts.loads[tmp], "")) or "loaded"
        raw = value
        value = _strip(value)
        if isinstance(value, cst.Name):  # tmp1 = in_ptr1 (a scalar argument) / tmp = other tmp
            return self.names.get(value.value, value.value) + "_val" if value.value in self.facts.params else "copy"
        if m.matches(raw, m.Call(func=m.Attribute(value=m.Name() | m.Attribute(), attr=m.Name("to")))):
            dtype = dotted(cst.ensure_type(raw, cst.Call).args[0].value).split(".")[-1]
            return f"as_{SHORT_NAMES.get(dtype, dtype)}"
        if isinstance(value, cst.Call):
            fn = dotted(value.func)
            if fn == "tl.full" and len(value.args) >= 2:
                text = cst.Module([]).code_for_node(value.args[1].value)
                return _CONSTS.get(text, "const")
            if fn == "tl.where" and len(value.args) == 3:
                cond = cst.Module([]).code_for_node(value.args[0].value)
                if re.fullmatch(r"[\w ]*mask[\w &]*", cond):  # masking before a reduction
                    return "masked"
            if fn in ("libdevice.rsqrt", "tl.math.rsqrt", "tl.rsqrt") and value.args:
                arg = self.operand(value.args[0].value)
                return "rstd" if arg.startswith(("var", "add")) else "rsqrt"
            if fn in _CALL_NAMES:
                return _CALL_NAMES[fn]
            last = fn.split(".")[-1]
            if fn.startswith(("libdevice.", "tl.math.", "tl.", "triton_helpers.")) and last:
                return _FN_RENAMES.get(last, last)
            return "call"
        if isinstance(value, cst.BinaryOperation):
            left, right = self.operand(value.left), self.operand(value.right)
            if isinstance(value.operator, cst.Multiply) and left and left == right:
                return "square"
            if isinstance(value.operator, cst.Divide) and left.startswith("total"):
                source = self._source_of(_strip(value.left))
                return "var" if source.startswith(("square", "masked_sq")) else "mean"
            if isinstance(value.operator, cst.Subtract) and right.startswith("mean"):
                return "centered"
            if isinstance(value.operator, cst.Add) and left.startswith("var"):
                return "var_eps"
            return _BINOPS.get(type(value.operator), "binop")
        if isinstance(value, cst.Comparison) and len(value.comparisons) == 1:
            return _CMPOPS.get(type(value.comparisons[0].operator), "cmp")
        if isinstance(value, cst.UnaryOperation):
            return {cst.Minus: "neg", cst.BitInvert: "invert", cst.Not: "negated"}.get(type(value.operator), "unary")
        return "value"

    def _source_of(self, expr: cst.BaseExpression) -> str:
        """What a reduction summed: follow `masked`/`broadcast` wrappers back to the op that made the values."""
        for _ in range(4):
            if not isinstance(expr, cst.Name):
                return ""
            new = self.names.get(expr.value, "")
            if not new.startswith(("total", "masked", "broadcast")) and not expr.value.startswith("_tmp"):
                return new
            values = self.facts.defs.get(expr.value, [])
            if not values:
                return new
            value = _strip(values[0])
            if isinstance(value, cst.Call) and value.args:
                fn = dotted(value.func)
                arg = value.args[1 if fn == "tl.where" and len(value.args) == 3 else 0].value
                expr = _strip(arg)
            else:
                return new
        return ""


def _ptr_base(param_name: str) -> str:
    return param_name[:-4] if param_name.endswith("_ptr") else param_name


def plan_names(facts: Facts, context: RenameContext) -> tuple[dict[str, str], dict[str, str]]:
    """Inductor name -> new name for every Inductor-style name in the kernel, and name -> FX node / binding."""
    names = [n for n in dict.fromkeys(facts.params + facts.order) if is_inductor_name(n)]
    reduction = any(n.startswith(("r0_", "R0_", "r1_")) for n in names)
    tiled = any(n in ("ynumel", "YBLOCK", "yindex") for n in names)
    base: dict[str, str] = {}
    trace: dict[str, str] = {}
    for name in names:
        if mt := BLOCK_NAME.match(name):
            axis = {"X": "x", "Y": "y", "Z": "z", "R0_": "r0_", "R1_": "r1_"}[mt.group(1)]
            base[name] = _axis_words(axis, reduction, tiled).block
        elif mt := AXIS_NAME.match(name):
            base[name] = getattr(_axis_words(mt.group(1), reduction, tiled), mt.group(2))
        elif mt := KS.match(name):
            base[name] = f"size_{mt.group(1)}"
    hints = {param: (hint, expr) for param, hint, expr in context.param_hints}
    roles = _vector_roles(facts)
    letters = iter("abcdefghjkmnpqstuvw")
    used_bases: set[str] = set()
    named_by_store: dict[str, str] = {}  # pointer param -> the tmp it stores last (named after it once tmps are named)
    written_in_place: dict[str, tuple[str, str]] = {}  # in_out pointer with a launch hint -> (hint, the tmp it stores)
    for param in facts.params:  # pointers: launch hints first, then input letters / what is stored
        if not PTR.match(param):
            continue
        hint, expr = hints.get(param, ("", ""))
        trace[param] = expr
        if param not in facts.pointers:  # a scalar that Inductor still calls in_ptrN
            base[param] = hint or "scalar"
            continue
        stored = [s for s in facts.stores.get(param, []) if s]
        role = ""
        if not hint and param in roles:
            role = roles[param]
        elif not hint and param.startswith("in_ptr"):
            role = next((c for c in letters if c not in used_bases), "inp")
        base[param] = (hint or role or "out") + "_ptr"
        used_bases.add(hint or role)
        if param.startswith("in_out") and not hint:
            base[param] = "inout_ptr"
        if stored and not hint:
            named_by_store[param] = stored[-1]
        elif stored and param.startswith("in_out"):
            written_in_place[param] = (hint, stored[-1])
    namer = _Namer(facts, {k: v for k, v in base.items() if k not in named_by_store})
    for name in facts.order:  # tmps in program order, so a tmp's operands already have names
        mt = TMP.match(name)
        if not mt or mt.group(1):
            continue
        if mt.group(3):  # tmp2_mean from welford: the field name says it
            namer.names[name] = base[name] = mt.group(3)
            continue
        namer.names[name] = base[name] = namer.name(name, facts.defs[name][0])
    for name in names:
        mt = TMP.match(name)
        if mt and mt.group(1):  # _tmpN: the accumulator of what tmpN finally holds
            stem = f"tmp{mt.group(2)}" + (f"_{mt.group(3)}" if mt.group(3) else "")
            base[name] = base.get(stem, "value") + "_acc"
    for name in names:
        if mt := COORD.match(name):
            values = facts.defs.get(name, [])
            base[name] = _coord_name(values[0], _axis_words(mt.group(1), reduction, tiled)) if values else "idx"
        elif name in LEGACY:
            base[name] = name  # dead aliases are deleted; live ones keep their (already readable) name
    single_out = sum(1 for p in facts.params if p in facts.stores) == 1
    for param, (hint, stored) in written_in_place.items():  # it holds `hint` until the kernel writes `stored` over it
        word = base.get(stored, "")
        if word and word not in ("value", "copy", "call") and word != hint:
            base[param] = f"{hint}_{word}_ptr"
    for param, stored in named_by_store.items():
        word = base.get(stored, "")
        generic = not word or word in ("value", "copy", "call") or single_out and not param.startswith("in_out")
        base[param] = ("out" if generic or word in ("add", "mul", "sub", "div") else word) + "_ptr"
        if param.startswith("in_out") and (generic or word in ("add", "mul", "sub", "div")):
            base[param] = "inout_ptr"
    return base, trace


def _vector_roles(facts: Facts) -> dict[str, str]:
    """Inputs loaded with an index along the row only (one value per column) and used as `v * w` / `v + b`."""
    inner = {n for n, values in facts.defs.items() if COORD.match(n) and re.fullmatch(
        r"\(?(r0_index|xindex % \w+)\)?", cst.Module([]).code_for_node(values[0]))}
    roles: dict[str, str] = {}
    for tmp, ptr in facts.loads.items():
        index_names = set(re.findall(r"[A-Za-z_]\w*", facts.load_index[tmp])) - {ptr}
        if not ptr.startswith("in_ptr") or not index_names or not index_names <= inner:
            continue
        for values in facts.defs.values():
            value = values[0]
            if isinstance(value, cst.BinaryOperation) and m.matches(value.right, m.Name(tmp)):
                if isinstance(value.operator, cst.Multiply):
                    roles.setdefault(ptr, "weight")
                elif isinstance(value.operator, cst.Add):
                    roles.setdefault(ptr, "bias")
    return roles


def _coord_name(value: cst.BaseExpression, words: _AxisWords) -> str:
    text = re.sub(r"\s|\(|\)", "", cst.Module([]).code_for_node(value))
    index = r"(?:xindex|yindex|zindex|r0_index|r1_index)"
    if re.fullmatch(index, text):
        return words.index
    if re.fullmatch(rf"{index}%\w+", text):
        return words.inner
    if re.fullmatch(rf"{index}//\w+", text):
        return words.outer
    if re.fullmatch(rf"{index}//\w+%\w+", text):
        return words.mid
    return "idx"


def unique_names(base: dict[str, str], order: Sequence[str], taken: set[str]) -> dict[str, str]:
    """Base names -> final names: never reserved, never taken by a name we keep, `_1`, `_2` for repeats."""
    final: dict[str, str] = {}
    used = set(taken)
    for old in order:
        if old not in base:
            continue
        want = base[old]
        if not IDENT.fullmatch(want):
            want = "value"
        if want == old and old not in used:  # keeps its own name (a live legacy alias)
            final[old] = old
            used.add(old)
            continue
        ptr = want.endswith("_ptr")
        stem = want[:-4] if ptr else want
        candidate, n = want, 0
        while candidate in used or candidate in RESERVED or (candidate != old and is_inductor_name(candidate)):
            n += 1
            candidate = f"{stem}_{n}_ptr" if ptr else f"{stem}_{n}"
        final[old] = candidate
        used.add(candidate)
    return final
