"""C++ for the twin: Triton's type promotion, typed literals, and the Emitter that writes statements into scopes."""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field

from harvest.twin.facts import CTYPES, FLOATS, ModuleFacts

CPP_KEYWORDS = {"auto", "bool", "break", "case", "char", "class", "const", "continue", "default", "delete", "do",
                "double", "else", "enum", "extern", "float", "for", "goto", "if", "int", "long", "new", "operator",
                "private", "public", "register", "return", "short", "signed", "sizeof", "static", "struct", "switch",
                "template", "this", "throw", "typedef", "union", "unsigned", "virtual", "void", "volatile", "while",
                "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "hv", "std", "row", "half"}




@dataclass
class Value:
    code: str
    dtype: str  # a CTYPES key, or "int"/"float" for a Python literal
    tuple_fields: tuple[str, ...] = ()


@dataclass
class Var:
    cname: str
    dtype: str
    depth: int  # the C++ scope it was declared in


@dataclass
class Uses:
    """Which headers the .cu needs (its hv:: helpers are the ones its code names: twin/helpers.py)."""

    half: bool = False
    bf16: bool = False
    assert_: bool = False


def promote(a: str, b: str) -> str:
    """Triton's result type of a binary arithmetic operation."""
    if a == b:
        return "i32" if a == "int" else "fp32" if a == "float" else a
    if a in ("int", "float"):
        a, b = b, a
    if b == "int":
        return "i32" if a == "i1" else "fp32" if a == "float" else a  # a bool or a literal takes an int literal to i32
    if b == "float":
        return a if a in FLOATS else "fp32"
    if a in FLOATS or b in FLOATS:
        if "fp64" in (a, b):
            return "fp64"
        if a in FLOATS and b in FLOATS:
            return "fp32"  # fp16 with bf16, or either with fp32
        return a if a in FLOATS else b
    if a == "i1":
        return b
    if b == "i1":
        return a
    size_a, size_b = CTYPES[a][1], CTYPES[b][1]
    if size_a != size_b:
        return a if size_a > size_b else b
    return a if a.startswith("u") else b


def literal(value, dtype: str) -> str:
    """A C++ literal of `value` typed as `dtype`."""
    if dtype == "i1":
        return "true" if value else "false"
    if dtype in FLOATS:
        number = float(value)
        if math.isnan(number):
            text = "NAN"
        elif math.isinf(number):
            text = "INFINITY" if number > 0 else "-INFINITY"
        else:
            text = repr(number)
            if "e" not in text and "." not in text:
                text += ".0"
        if dtype == "fp32":
            return f"{text}f" if text[0].isdigit() or text[0] == "-" and text[1].isdigit() else f"float({text})"
        if dtype == "fp64":
            return text
        return f"hv::cast<{CTYPES[dtype][0]}>({text}f)" if text[0].isdigit() or text[:2].replace("-", "").isdigit() else f"hv::cast<{CTYPES[dtype][0]}>(float({text}))"
    number = int(value)
    suffix = {"i64": "LL", "u64": "ULL", "u32": "u"}.get(dtype, "")
    if dtype == "i32" and number == -(2**31):
        return "(-2147483647 - 1)"
    return f"{number}{suffix}" if dtype in ("i32", "i64", "u32", "u64") else f"{CTYPES[dtype][0]}({number})"


@dataclass
class Emitter:
    facts: ModuleFacts
    uses: Uses = field(default_factory=Uses)
    lines: list[str] = field(default_factory=list)
    scopes: list[dict[str, Var]] = field(default_factory=lambda: [{}])
    taken: set[str] = field(default_factory=set)
    mutable: set[str] = field(default_factory=set)  # names the kernel assigns more than once
    params: dict[str, str] = field(default_factory=dict)  # kernel parameter -> its C++ name
    indent: int = 1

    # -- scopes
    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def open(self, line: str) -> None:
        self.emit(line)
        self.indent += 1
        self.scopes.append({})

    def close(self, line: str = "}") -> None:
        self.indent -= 1
        self.scopes.pop()
        self.emit(line)

    def lookup(self, name: str) -> Var | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def fresh(self, name: str) -> str:
        """A C++ name for `name`: not a keyword, and not declared in this scope or one around it (sibling scopes,
        such as the vector path and the tail loop, reuse the Triton names)."""
        base = name + "_" if name in CPP_KEYWORDS else name
        visible = {var.cname for scope in self.scopes for var in scope.values()} | self.taken
        candidate, n = base, 1
        while candidate in visible:
            candidate, n = f"{base}_{n}", n + 1
        return candidate

    def declare(self, name: str, dtype: str, code: str, const: bool = True) -> Var:
        ctype = self.ctype(dtype)
        var = Var(self.fresh(name), dtype, len(self.scopes))
        self.emit(f"{'const ' if const else ''}{ctype} {var.cname} = {code};")
        self.scopes[-1][name] = var
        return var

    def bind(self, name: str, var: Var) -> None:
        self.scopes[-1][name] = var

    def ctype(self, dtype: str) -> str:
        if dtype == "int":
            dtype = "i32"
        if dtype == "float":
            dtype = "fp32"
        self.uses.half |= dtype == "fp16"
        self.uses.bf16 |= dtype == "bf16"
        return CTYPES[dtype][0]

    def cast(self, value: Value, dtype: str) -> str:
        if value.dtype == dtype:
            return value.code
        if value.dtype in ("int", "float"):
            text = value.code.lstrip("-")
            sign = -1 if value.code.startswith("-") else 1
            if text in ("inf", "nan"):
                return literal(sign * float(text), dtype)
            try:
                return literal(ast.literal_eval(value.code), dtype)
            except (ValueError, SyntaxError):
                pass
        return f"hv::cast<{self.ctype(dtype)}>({value.code})"

