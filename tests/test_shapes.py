"""harvest/shapes.py walks size expressions read from files harvest does not trust: the sizes Inductor writes are
computed, and nothing else is run or computed for long."""

from __future__ import annotations

import ast
import time

import pytest

from harvest.shapes import evaluate, evaluate_node


@pytest.mark.parametrize(("expr", "hints", "value"), [
    ("64", {}, 64),
    ("s27*s77", {"s27": 3, "s77": 5}, 15),
    ("((1 + s0) // 2)", {"s0": 7}, 4),
    ("min(s0, 64) + max(1, s1)", {"s0": 100, "s1": 0}, 65),
    ("2**10", {}, 1024),
    ("s0 if s0 > 2 else 1", {"s0": 3}, 3),
    ("s0 % 16 == 0 and s0 >= 16", {"s0": 32}, True),
    ("ks0", {}, None),  # unknown name
    ("1 // 0", {}, None),
    ("x.real", {"x": 1}, None),
    ("__import__('os').getcwd()", {}, None),
    ("(lambda: 1)()", {}, None),
    ("[1, 2][0]", {}, None),
])  # fmt: skip
def test_sizes_are_computed_and_nothing_else(expr, hints, value):
    assert evaluate(expr, hints) == value


@pytest.mark.parametrize("expr", ["9**9**9", "10**400", "s0**s0", "2.0**100000"])
def test_a_power_too_large_to_be_a_size_is_refused_at_once(expr):
    started = time.monotonic()
    assert evaluate(expr, {"s0": 10**6}) is None
    assert time.monotonic() - started < 1


def test_a_twin_prologue_constant_uses_the_same_walk():
    assert evaluate_node(ast.parse("9**9**9", mode="eval").body, {}) is None
    assert evaluate_node(ast.parse("n * 4", mode="eval").body, {"n": 256}) == 1024
