"""The arguments of an FX fragment line (`aten.add.Tensor(%x, 1.0)`, `{dim: [-1]}`) read into values: node
references, expressions, devices, and lists, tuples and dicts of them (harvest.model's FxValue). Pure; read as text,
never evaluated."""

from __future__ import annotations

import keyword
import re

from harvest.model import FxDevice, FxDict, FxExpr, FxList, FxRef, FxValue

_TOKEN = re.compile(
    r"\s*(?:(?P<ref>%[A-Za-z_]\w*)|(?P<num>\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"
    r"|(?P<str>'[^']*'|\"[^\"]*\")|(?P<ident>[A-Za-z_][\w.]*)|(?P<punct>//|\*\*|[\[\](){}:,+\-*/]))"
)
_DEVICE_TYPES = {"cpu", "cuda", "xpu", "mps", "meta", "hip", "mtia"}
_SPECIAL_FLOATS = {"inf": 'float("inf")', "nan": 'float("nan")'}
_PLAIN_NAMES = {"True", "False", "None"}
_OPERATORS = {"+", "-", "*", "/", "//", "**"}


class FxArgError(ValueError):
    """The argument text of a fragment node is not in a form this module understands."""


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise FxArgError(f"cannot read {text[pos:pos + 20]!r}")
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        pos = match.end()
    return tokens


class _FxArgParser:
    def __init__(self, text: str):
        self.tokens = _tokenize(text)
        self.pos = 0

    def peek(self, offset: int = 0) -> tuple[str, str]:
        index = self.pos + offset
        return self.tokens[index] if index < len(self.tokens) else ("end", "")

    def take(self) -> tuple[str, str]:
        token = self.peek()
        self.pos += 1
        return token

    def expect(self, text: str) -> None:
        kind, value = self.take()
        if value != text:
            raise FxArgError(f"expected {text!r}, found {value!r}")

    def sequence(self, close: str) -> list[FxValue]:
        items: list[FxValue] = []
        while self.peek()[1] != close:
            items.append(self.value())
            if self.peek()[1] == ",":
                self.take()
            elif self.peek()[1] != close:
                raise FxArgError(f"expected ',' or {close!r}, found {self.peek()[1]!r}")
        self.take()
        return items

    def mapping(self, close: str) -> dict[str, FxValue]:
        items: dict[str, FxValue] = {}
        while self.peek()[1] != close:
            kind, key = self.take()
            if kind not in ("ident", "str"):
                raise FxArgError(f"expected a keyword name, found {key!r}")
            self.expect(":")
            items[key.strip("'\"")] = self.value()
            if self.peek()[1] == ",":
                self.take()
        self.take()
        return items

    def value(self) -> FxValue:
        kind, text = self.peek()
        if text == "[":
            self.take()
            return FxList(tuple(self.sequence("]")))
        if text == "(":
            start = self.pos
            self.take()
            items = tuple(self.sequence(")"))
            if self.peek()[1] not in _OPERATORS:
                return items
            self.pos = start  # a parenthesized size expression, `((s53 - 1)//8) + 1`: read as one expression
            return self.scalar_expression()
        if text == "{":
            self.take()
            return FxDict(tuple(self.mapping("}").items()))
        if kind == "ident" and text in _DEVICE_TYPES:
            self.take()
            if self.peek()[1] == ":" and self.peek(1)[0] == "num":
                self.take()
                self.take()
            return FxDevice()
        if kind == "ref" and self.peek(1)[1] in (",", ")", "]", "}", ""):
            self.take()
            return FxRef(text[1:])
        return self.scalar_expression()

    def scalar_expression(self) -> FxExpr:
        parts: list[str] = []
        symbols: list[str] = []
        depth = 0
        while True:
            kind, text = self.peek()
            if kind == "end" or (depth == 0 and text in (",", ")", "]", "}")):
                break
            self.take()
            if text == "(":
                depth += 1
            elif text == ")":
                depth -= 1
            if kind == "ident":
                if text in _SPECIAL_FLOATS:
                    text = _SPECIAL_FLOATS[text]
                elif text.startswith("torch.") or text in _PLAIN_NAMES:
                    pass
                elif "." not in text and not keyword.iskeyword(text):
                    symbols.append(text)
                else:
                    raise FxArgError(f"unknown name {text!r}")
            elif kind == "ref":
                raise FxArgError(f"node {text} inside an expression")
            parts.append(text)
        if not parts:
            raise FxArgError("empty value")
        return FxExpr(tuple(parts), tuple(dict.fromkeys(symbols)))


def parse_fx_args(text: str) -> tuple[FxValue, ...]:
    """`%arg0_1, [2], 1e-05` (the inside of `args = (...)`) -> values. Raises FxArgError."""
    parser = _FxArgParser(text + ")")
    return tuple(parser.sequence(")"))


def parse_fx_kwargs(text: str) -> dict[str, FxValue]:
    """`correction: 0, keepdim: True` (the inside of `kwargs = {...}`) -> values by name. Raises FxArgError."""
    parser = _FxArgParser(text + "}")
    return parser.mapping("}")


def read_fx_arguments(args: str, kwargs: str) -> tuple[tuple[FxValue, ...], tuple[tuple[str, FxValue], ...], str]:
    """The text inside `args = (...)` and `kwargs = {...}` -> (args, kwargs as (name, value) pairs, ""), or ((), (),
    why) when it cannot be read."""
    try:
        return parse_fx_args(args), (tuple(parse_fx_kwargs(kwargs).items()) if kwargs.strip() else ()), ""
    except FxArgError as exc:
        return (), (), str(exc)
