"""Small readers of libcst values: literal Python values, sizes, dtypes, devices, call arguments."""

from __future__ import annotations

import re
from typing import Any

import libcst as cst
import libcst.matchers as m
from libcst.helpers import get_full_name_for_node

from harvest.dtypes import FX_DTYPES
from harvest.model import TensorMeta
from harvest.parse.patterns import KEYWORD_RECORD, META_RE, REINTERPRET

_EMPTY_MODULE = cst.Module(body=[])


def is_block_size(param: str) -> bool:
    return re.fullmatch(r"[XYZ]BLOCK|R\d*_?BLOCK", param) is not None


def node_code(node: cst.CSTNode) -> str:
    return _EMPTY_MODULE.code_for_node(node)


def positional_args(call: cst.Call) -> list[cst.BaseExpression]:
    return [arg.value for arg in call.args if arg.keyword is None and not arg.star]


def keyword_args(call: cst.Call) -> dict[str, cst.BaseExpression]:
    return {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}


def elements(node: cst.BaseExpression | None) -> list[cst.BaseExpression]:
    if node is None:
        return []
    if isinstance(node, (cst.Tuple, cst.List)):
        return [element.value for element in node.elements]
    return [node]


def tensor_name(node: cst.BaseExpression) -> str | None:
    """`buf0` -> "buf0"; `reinterpret_tensor(buf4, ...)` -> "buf4"; anything else -> None."""
    if isinstance(node, cst.Name):
        return node.value
    if m.matches(node, REINTERPRET):
        return cst.ensure_type(positional_args(cst.ensure_type(node, cst.Call))[0], cst.Name).value
    return None


def size_tuple(node: cst.BaseExpression) -> tuple[int | str, ...]:
    """`(8, 256, s0)` -> (8, 256, "s0"); a single expression becomes a 1-tuple."""
    values = []
    for element in elements(node):
        value = plain(element)
        values.append(value if isinstance(value, int) and not isinstance(value, bool) else node_code(element).strip())
    return tuple(values)


def dtype_of(node: cst.BaseExpression | None) -> str:
    if node is None:
        return ""
    return (get_full_name_for_node(node) or node_code(node)).removeprefix("torch.")


def device_of(node: cst.BaseExpression | None) -> str:
    """`'cuda:0'` or `device(type='cuda', index=0)` -> "cuda"."""
    value = plain(node) if node is not None else ""
    if isinstance(value, dict):
        value = value.get("type", "")
    return str(value).split(":")[0] if value else ""


def plain(node: cst.BaseExpression) -> Any:
    """A literal as a JSON-able Python value: dicts, lists, str, int, float, bool, None.

    `set()` -> [], `DeviceProperties(...)` / `AttrsDescriptor(...)` -> dict of their kwargs, `X.from_dict(d)` -> d,
    tuple dict keys -> their repr ("(1,)"); anything else -> its source text.
    """
    if isinstance(node, cst.SimpleString) and _is_plain_string(node.value):
        return node.value[1:-1]  # 'abc': no prefix, no escape, one quote each side (most of a decorator's strings)
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else node_code(node)
    if isinstance(node, (cst.Integer, cst.Float)):
        return _number(node)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) \
            and isinstance(node.expression, (cst.Integer, cst.Float)):
        return -_number(node.expression)
    if m.matches(node, m.Name("True") | m.Name("False") | m.Name("None")):
        return {"True": True, "False": False, "None": None}[cst.ensure_type(node, cst.Name).value]
    if isinstance(node, cst.Dict):
        return {_key(plain(e.key)): plain(e.value) for e in node.elements if isinstance(e, cst.DictElement)}
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        return [plain(e.value) for e in node.elements]
    if m.matches(node, m.Call(func=m.Name("set"), args=[])):
        return []
    if m.matches(node, m.Call(func=m.Attribute(attr=m.Name("from_dict")), args=[m.Arg(keyword=None)])):
        return plain(cst.ensure_type(node, cst.Call).args[0].value)
    if m.matches(node, m.Call(func=KEYWORD_RECORD, args=[m.ZeroOrMore(m.Arg(keyword=m.Name()))])):
        return {key: plain(value) for key, value in keyword_args(cst.ensure_type(node, cst.Call)).items()}
    return node_code(node).strip()


def _is_plain_string(token: str) -> bool:
    return len(token) >= 2 and token[0] == token[-1] in "'\"" and token[:3] != token[0] * 3 and "\\" not in token


def _number(node: cst.Integer | cst.Float) -> int | float:
    """The value of a number token (`16`, `0x10`, `1_000`, `1e-05`), read without generating its code."""
    return int(node.value, 0) if isinstance(node, cst.Integer) else float(node.value)


def _key(value: Any) -> Any:
    return repr(tuple(value)) if isinstance(value, list) else value


def parse_tensor_meta(text: str) -> TensorMeta:
    """`"f32[8, 256, 1][256, 1, 2048]cuda:0"` -> TensorMeta; symbolic sizes (`s0`, `2*s0`) stay strings."""
    match = META_RE.match(text.strip())
    if match is None:
        raise ValueError(f"not a tensor meta string: {text!r}")
    dtype = match["dtype"]
    return TensorMeta(
        shape=_split_sizes(match["shape"]),
        stride=_split_sizes(match["stride"]),
        dtype=FX_DTYPES.get(dtype, dtype),
        device=match["device"].split(":")[0],
    )


# -- module level ----------------------------------------------------------------------------------------------------


def split_list(text: str) -> tuple[str, ...]:
    text = text.strip()
    return tuple(part.strip() for part in text.split(",")) if text else ()


def _split_sizes(text: str) -> tuple[int | str, ...]:
    """Split `8, 256, Max(1, s0)` at top-level commas; ints become int."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += (char in "([") - (char in ")]")
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return tuple(int(p) if p.strip().lstrip("-").isdigit() else p.strip() for p in parts if p.strip())


# -- call() ----------------------------------------------------------------------------------------------------------
