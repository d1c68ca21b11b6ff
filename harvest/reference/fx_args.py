"""FX argument values (harvest.model's FxValue, read when the comment was parsed) written back as Python source in
the reference's names. Pure."""

from __future__ import annotations

from collections.abc import Mapping

from harvest.model import FxDevice, FxDict, FxExpr, FxList, FxRef, FxValue, fx_refs


def fx_symbols(value: FxValue) -> list[str]:
    """The size symbols an argument value uses, in order."""
    if isinstance(value, FxExpr):
        return list(value.symbols)
    if isinstance(value, (FxList, FxDict)):
        return fx_symbols(value.items)
    if isinstance(value, tuple):
        return [s for item in value for s in fx_symbols(item)]
    return []


def render_fx(value: FxValue, nodes: Mapping[str, str], final: Mapping[str, str]) -> str:
    """Python source of `value`: FX nodes by their names in `nodes`, size symbols that are kernel parameters by their
    names in the module (`final`)."""
    if isinstance(value, FxRef):
        return nodes[value.name]
    if isinstance(value, FxExpr):
        return FxExpr(tuple(final.get(token, token) for token in value.tokens)).text
    if isinstance(value, FxDevice):
        return "device"
    if isinstance(value, FxList):
        return "[" + ", ".join(render_fx(v, nodes, final) for v in value.items) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(render_fx(v, nodes, final) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    raise ValueError(f"cannot render {value!r}")


__all__ = ["fx_refs", "fx_symbols", "render_fx"]
