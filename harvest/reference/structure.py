"""Which fragment node a stored value is, told by how both are computed. Pure.

Where shape, dtype and the outermost op leave several nodes (`add_7` and `add_9` are both adds of the same shape),
the rest of the computation tells them apart: the Triton value is followed through the kernel's assignments down to
its loads and constants, the FX node through the fragment down to what the kernel reads, and both are written as
the same small tree of operations. `add_9 = add(mul(mul_9, w), b)` and `tmp43 = tmp41 + tmp42` agree three levels
deep; `add_7 = add(mul_8, mul_1)` already differs at the second. Conversions, views, broadcasts and the masking
`tl.where` of a reduction are no operations: they move or retype a value without changing it. Both sides spell the
same operation the same way (a relu is a `maximum` with 0, a reciprocal a division of 1, a mean a sum divided by a
constant), and the operands of every operation are sorted, so that `a + b` and `b + a` agree.

    agreement(triton_value, assigns, tuples, node, fragment)  ->  how many levels deep the two trees are equal
    closest(triton_value, assigns, tuples, names, fragment)   ->  the one node that agrees deepest, or None
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from harvest.model import FxExpr, FxRef
from harvest.ops import SAME_VALUES, SLICE_OPS
from harvest.reference.fragment import Fragment
from harvest.syntax import dotted

Tree = tuple  # (operation, *operand trees); a leaf is ("load",), ("const",), ("index",), ("rand",) or ("?",)
UNKNOWN: Tree = ("?",)
ACCUMULATOR: Tree = ("acc",)  # a loop-carried value, read in its own update
DEEPEST = 8  # levels compared: deeper than any disagreement among look-alike candidates seen on real kernels
ENOUGH = 2  # a node is told apart only by agreeing below its outermost op

# Calls that move, broadcast or retype a value, in Triton.
_TRANSPARENT = {"tl.broadcast_to", "tl.reshape", "tl.view", "triton_helpers.promote_to_tensor", "tl.expand_dims"}
_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv",
           ast.Mod: "mod", ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor", ast.LShift: "lshift",
           ast.RShift: "rshift", ast.Pow: "pow"}
_COMPARES = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
# Triton calls -> the operation's name on both sides (the rest: the call's last name).
_TRITON_CALLS = {"tl.sum": "sum", "triton_helpers.sum": "sum", "triton_helpers.max2": "amax", "tl.max": "amax",
                 "triton_helpers.min2": "amin", "tl.min": "amin", "triton_helpers.maximum": "maximum",
                 "triton_helpers.minimum": "minimum", "tl.rand": "rand", "tl.randn": "rand", "tl.randint": "rand",
                 "triton_helpers.welford": "welford", "triton_helpers.welford_reduce": "welford",
                 "triton_helpers.welford_combine": "welford", "triton_helpers.online_softmax_reduce": "online_softmax",
                 "triton_helpers.online_softmax_combine": "online_softmax",
                 "triton_helpers.any": "any", "tl.abs": "abs", "tl_math.abs": "abs", "tl.fma": "fma",
                 "libdevice.fma": "fma", "tl.sigmoid": "sigmoid", "tl.sqrt": "sqrt", "libdevice.sqrt": "sqrt"}
# FX families read as another operation (or a leaf) -> how.
_FX_LEAVES = {"full": ("const",), "scalar_tensor": ("const",), "embedding": ("load",), "index": ("load",),
              "inductor_random": ("rand",), "inductor_randint": ("rand",), "inductor_lookup_seed": ("load",),
              "iota": ("index",), "arange": ("index",)}
_FX_NAMES = {"amax": "amax", "max": "amax", "amin": "amin", "min": "amin", "clamp_min": "maximum",
             "clamp_max": "minimum", "bitwise_not": "eq", "logical_not": "eq", "bitwise_and": "and",
             "logical_and": "and", "bitwise_or": "or", "logical_or": "or", "true_divide": "div"}
_TUPLES = {"var_mean": "welford", "native_layer_norm": "welford", "prepare_softmax_online": "online_softmax"}


def triton_tree(expr: ast.expr | None, assigns: Mapping[str, ast.expr | None],
                tuples: Mapping[str, tuple[ast.expr, int]], depth: int, seen: frozenset[str] = frozenset()) -> Tree:
    """The value's operations, `depth` levels deep, following the kernel's assignments (`tmp3 = tmp1 + tmp2`)."""
    if expr is None:
        return UNKNOWN
    if isinstance(expr, ast.Name):
        if expr.id in seen:
            return ACCUMULATOR  # a loop's accumulator read where it is updated: `_tmp5 = _tmp5 + tmp4`
        if expr.id in tuples:  # `tmp10, tmp11, tmp12 = triton_helpers.welford(...)`
            source, position = tuples[expr.id]
            call = triton_tree(source, assigns, tuples, 1, seen | {expr.id})  # an item of it is a leaf
            if call[0] == "online_softmax":
                softmaxed = _online_softmax_input(source, assigns, tuples)
                return softmax_statistic(position, lambda d: triton_tree(softmaxed, assigns, tuples, d, seen), depth)
            return ("welford",) if call[0] == "welford" else UNKNOWN  # mean, m2 and count: coarse, as on the FX side
        if expr.id not in assigns:
            return ("index",)  # a parameter or an index of the loop
        return triton_tree(assigns[expr.id], assigns, tuples, depth, seen | {expr.id})
    if isinstance(expr, ast.Constant):
        return ("const",)
    if isinstance(expr, ast.Subscript):
        return triton_tree(expr.value, assigns, tuples, depth, seen)
    if isinstance(expr, ast.Call):
        return _triton_call(expr, assigns, tuples, depth, seen)
    if depth <= 0:  # leaves (loads, constants) show at any depth; operations only above the cut
        return UNKNOWN
    if isinstance(expr, ast.BinOp) and type(expr.op) in _BINOPS:
        operands = [triton_tree(e, assigns, tuples, depth - 1, seen) for e in (expr.left, expr.right)]
        if isinstance(expr.op, ast.Div) and operands == [("welford",), ("const",)]:
            return ("welford",)  # a variance: the Welford m2 over the count
        if isinstance(expr.op, ast.Div) and operands[1] == ("const",):
            return _op("mul", operands)  # Inductor may write x / 512 as x * 0.001953125
        if isinstance(expr.op, (ast.Add, ast.Mult)) and ACCUMULATOR in operands:  # a looped sum's (product's) step
            other = expr.right if operands[0] == ACCUMULATOR else expr.left
            return triton_tree(other, assigns, tuples, depth, seen)
        return _op(_BINOPS[type(expr.op)], operands)
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1 and type(expr.ops[0]) in _COMPARES:
        operands = (expr.left, expr.comparators[0])
        return _op(_COMPARES[type(expr.ops[0])], [triton_tree(e, assigns, tuples, depth - 1, seen) for e in operands])
    if isinstance(expr, ast.UnaryOp):
        operation = "neg" if isinstance(expr.op, ast.USub) else "eq" if isinstance(expr.op, (ast.Not, ast.Invert)) else None
        if operation is None:
            return triton_tree(expr.operand, assigns, tuples, depth, seen)
        operands = [triton_tree(expr.operand, assigns, tuples, depth - 1, seen)]
        return _op(operation, operands + ([("const",)] if operation == "eq" else []))
    return UNKNOWN


def _triton_call(call: ast.Call, assigns, tuples, depth: int, seen: frozenset[str]) -> Tree:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "to":  # `tmp0.to(tl.float32)`
        return triton_tree(func.value, assigns, tuples, depth, seen)
    name = dotted(func) or ""
    if name in _TRANSPARENT and call.args:
        return triton_tree(call.args[0], assigns, tuples, depth, seen)
    if name in ("tl.load", "tl.make_block_ptr") or name.startswith("tl.atomic_"):
        return ("load",)
    if name == "tl.full" or name == "tl.zeros" or name == "tl.zeros_like":
        return ("const",)
    if name == "tl.where" and len(call.args) == 3 and _is_mask(call.args[0], assigns) \
            and triton_tree(call.args[2], assigns, tuples, 1, seen) in (("const",), ACCUMULATOR):
        return triton_tree(call.args[1], assigns, tuples, depth, seen)  # a reduction's masking where
    operation = _TRITON_CALLS.get(name, name.rsplit(".", 1)[-1])
    if operation == "rand":
        return ("rand",)
    if depth <= 0:
        return UNKNOWN
    operands = call.args[:1] if operation in ("sum", "amax", "amin", "any") else call.args
    trees = [triton_tree(e, assigns, tuples, depth - 1, seen) for e in operands]
    if operation in ("maximum", "minimum") and len(trees) == 2 and ACCUMULATOR in trees:  # a looped max's step
        return triton_tree(operands[1] if trees[0] == ACCUMULATOR else operands[0], assigns, tuples, depth, seen)
    return _op(operation, trees)


def softmax_statistic(position: int, softmaxed, depth: int) -> Tree:
    """An online softmax's statistics written out, the way a persistent kernel computes them: the row's max, and
    the sum of exp(x - max) (`softmaxed(d)`: the tree of x, d levels deep). A looped kernel's
    `online_softmax_reduce` and the graph's `prepare_softmax_online` then read the same."""
    def level(d: int, build) -> Tree:
        return build() if d > 0 else UNKNOWN

    def largest(d: int) -> Tree:
        return level(d, lambda: _op("amax", [softmaxed(d - 1)]))

    if position == 0:
        return largest(depth)
    if position != 1:
        return UNKNOWN
    return level(depth, lambda: _op("sum", [level(depth - 1, lambda: _op("exp", [
        level(depth - 2, lambda: _op("sub", [softmaxed(depth - 3), largest(depth - 3)]))]))]))


def _online_softmax_input(call: ast.expr, assigns, tuples) -> ast.expr | None:
    """The values a looped online softmax reduced: `online_softmax_reduce(_tmp2_max, ...)` <- the loop's
    `_tmp2_max_next, _ = online_softmax_combine(_tmp2_max, _tmp2_sum, tmp1, ...)` <- tmp1."""
    if not (isinstance(call, ast.Call) and call.args and isinstance(call.args[0], ast.Name)):
        return None
    name, seen = call.args[0].id, set()
    while name not in seen:
        seen.add(name)
        if name in tuples:
            source, _ = tuples[name]
            if isinstance(source, ast.Call) and dotted(source.func) == "triton_helpers.online_softmax_combine" \
                    and len(source.args) > 2:
                return source.args[2]
        value = assigns.get(name)
        if isinstance(value, ast.Call) and dotted(value.func) == "tl.where" and len(value.args) == 3 \
                and isinstance(value.args[1], ast.Name):
            name = value.args[1].id  # the loop's masking where
        elif isinstance(value, ast.Name):
            name = value.id
        else:
            return None
    return None


def _is_mask(expr: ast.expr, assigns: Mapping[str, ast.expr | None]) -> bool:
    """`xmask`, `r0_mask & xmask`: a mask of the kernel's ranges, not a condition of the computation."""
    if isinstance(expr, ast.Name):
        return expr.id.endswith("mask") and expr.id not in assigns or expr.id.endswith("mask") and \
            isinstance(assigns.get(expr.id), (ast.Compare, ast.BinOp, ast.Call))
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitAnd):
        return _is_mask(expr.left, assigns) and _is_mask(expr.right, assigns)
    return False


def fx_tree(name: str, fragment: Fragment, depth: int, seen: frozenset[str] = frozenset()) -> Tree:
    """The node's operations, `depth` levels deep; what the fragment does not compute is read (a leaf)."""
    op = fragment.ops.get(name)
    if op is None or name in seen:
        return ("load",)
    seen = seen | {name}
    family = op.family
    refs = [a for a in op.args if isinstance(a, FxRef)]
    if op.target == "operator.getitem":
        source = fragment.ops.get(refs[0].name) if refs else None
        index = op.args[1].text if len(op.args) > 1 and isinstance(op.args[1], FxExpr) else "?"
        if source is None:
            return ("load",)
        kind = _TUPLES.get(source.family)
        if kind == "online_softmax":  # prepare_softmax_online(x, dim): (max of x, sum of exp(x - max))
            softmaxed = source.args[0].name if source.args and isinstance(source.args[0], FxRef) else ""
            return softmax_statistic(int(index) if index.isdigit() else -1,
                                     lambda d: fx_tree(softmaxed, fragment, d, seen), depth)
        if kind == "welford":  # var_mean's (var, mean), native_layer_norm's (out, mean, rstd): coarse on purpose
            return ("welford",)
        return ("load",)
    if family in SAME_VALUES or family in SLICE_OPS:
        return fx_tree(refs[0].name, fragment, depth, seen) if refs else UNKNOWN
    if family in _FX_LEAVES:
        return _FX_LEAVES[family]
    if depth <= 0:  # leaves show at any depth; operations only above the cut
        return UNKNOWN
    operands = [fx_tree(a.name, fragment, depth - 1, seen) if isinstance(a, FxRef) else ("const",)
                for a in op.args if isinstance(a, (FxRef, FxExpr))]
    if family == "relu":
        return _op("maximum", [("const",), *operands])
    if family == "reciprocal":
        return _op("div", [("const",), *operands])
    if family == "rsub":
        return _op("sub", operands)
    if family == "mean" and refs:  # Inductor divides a sum by the count
        total = _op("sum", [fx_tree(refs[0].name, fragment, depth - 2, seen)]) if depth > 1 else UNKNOWN
        return _op("div", [total, ("const",)])
    if family == "pow" and len(operands) == 2 and operands[1] == ("const",) and _exponent(op.args[1]) == 2:
        return _op("mul", [operands[0], operands[0]])
    if family in ("sum", "amax", "amin", "max", "min", "any") and operands:
        return _op(_FX_NAMES.get(family, family), operands[:1])
    if family in ("bitwise_not", "logical_not"):
        return _op("eq", [*operands, ("const",)])
    if family == "where":
        return _op("where", operands)
    if family == "convolution":  # the library convolves; a kernel adds the bias to what it wrote
        return _op("add", [("load",), ("load",)]) if len(op.args) > 2 and isinstance(op.args[2], FxRef) else ("load",)
    if family == "div" and len(operands) == 2 and operands[1] == ("const",):
        return _op("mul", operands)  # x / 512, which Inductor may write as x * 0.001953125
    return _op(_FX_NAMES.get(family, family), operands)


def _exponent(value) -> float | None:
    try:
        return float(value.text) if isinstance(value, FxExpr) else None
    except ValueError:
        return None


def _op(operation: str, operands: list[Tree]) -> Tree:
    """Operands sorted: `a + b` is `b + a`, and Inductor may swap them."""
    return (operation, *sorted(operands, key=repr))


def agreement(value: ast.expr | None, assigns, tuples, name: str, fragment: Fragment) -> int:
    """How many levels deep the stored value's tree and the node's are equal (0: not even their outermost op)."""
    agreed = 0
    for depth in range(1, DEEPEST + 1):
        mine, theirs = triton_tree(value, assigns, tuples, depth), fx_tree(name, fragment, depth)
        if mine != theirs:
            return agreed
        agreed = depth
        if UNKNOWN not in _leaves(mine):
            return DEEPEST  # the whole computation agrees: no deeper level can tell them apart
    return agreed


def closest(value: ast.expr | None, assigns, tuples, names: list[str], fragment: Fragment) -> str | None:
    """The one node among `names` whose computation agrees with the stored value's deepest, at least ENOUGH levels
    and deeper than any other; None when none does or two agree as deep."""
    scores = {name: agreement(value, assigns, tuples, name, fragment) for name in dict.fromkeys(names)}
    best = max(scores.values(), default=0)
    winners = [name for name, score in scores.items() if score == best]
    if best < ENOUGH:
        return None
    return winners[0] if len(winners) == 1 or one_value(winners, fragment) else None


# Ops that give their input's values unchanged when the shape does not change (a copy, an alias, a no-op view).
_SAME_WHEN_SAME_SHAPE = {"clone", "alias", "expand", "view", "reshape", "_unsafe_view", "contiguous"}


def one_value(names: list[str], fragment: Fragment) -> bool:
    """Whether the nodes are all one value: each a copy or a same-shape view of another (`clone_4 = clone(expand_4)`,
    `expand_4 = expand(clone_1, its own shape)`). Then which of them an output is told to be makes no difference."""
    root: dict[str, str] = {}

    def find(name: str) -> str:
        while root.get(name, name) != name:
            name = root[name]
        return name

    for name, op in fragment.ops.items():
        source = op.args[0].name if op.args and isinstance(op.args[0], FxRef) else None
        source_meta = fragment.meta_of(source) if source else None
        if op.family in _SAME_WHEN_SAME_SHAPE and source_meta is not None and op.meta is not None \
                and tuple(map(str, source_meta.shape)) == tuple(map(str, op.meta.shape)):
            root[find(name)] = find(source)
        elif op.family in _SAME_WHEN_SAME_SHAPE and op.inferred and source is not None:
            root[find(name)] = find(source)  # a view harvest inferred to the reader's own shape
    return len({find(n) for n in names}) == 1


def _leaves(tree: Tree) -> list[Tree]:
    if len(tree) == 1:
        return [tree]
    return [leaf for operand in tree[1:] for leaf in _leaves(operand)]


def unpacked_names(assignments) -> dict[str, tuple[ast.expr, int]]:
    """name -> (the value it was unpacked from, its position), from a kernel's facts' assignments."""
    return {a.target: (a.unpacked, a.position) for a in assignments if a.value is None and a.unpacked is not None}


USES = 3  # generations of uses compared for an input


def read_by(param: str, assigns: Mapping[str, ast.expr | None], tuples: Mapping[str, tuple[ast.expr, int]],
            name: str, fragment: Fragment) -> tuple[float, ...]:
    """How alike what the kernel computes from its loads of `param` and what the fragment computes from the node
    `name` are: per generation of uses (the operations that use the load and the node, then the operations that use
    those, ...), the best agreement between one of the kernel's and one of the fragment's (views and conversions
    looked through on both sides). A kernel input the shape cannot place (three f32[8192, 512] placeholders) is the
    one whose uses look alike; `a + b` used in the same way twice is told apart one generation up."""
    mine = {target for target, value in assigns.items() if _loads(value, param)}
    theirs = {name}
    scores = []
    for _ in range(USES):
        mine, theirs = set(_users(mine, assigns, tuples)), set(_fx_users(theirs, fragment))
        agreed = {(user, node): agreement(assigns[user], assigns, tuples, node, fragment) for user in mine for node in theirs}
        # Both ways: each use of the one matched to its likeliest use of the other, on average (a node that shares
        # one of its two uses with the parameter's is not as alike as one that has both).
        scores.append(sum(max(agreed[u, n] for n in theirs) for u in mine) / len(mine)
                      + sum(max(agreed[u, n] for u in mine) for n in theirs) / len(theirs) if mine and theirs else 0)
    return tuple(scores)


def _loads(value: ast.expr | None, param: str) -> bool:
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "to":
        value = value.func.value
    if not (isinstance(value, ast.Call) and dotted(value.func) == "tl.load" and value.args):
        return False
    pointer = value.args[0]
    while isinstance(pointer, ast.BinOp):
        pointer = pointer.left
    return isinstance(pointer, ast.Name) and pointer.id == param


def _users(names: set[str], assigns, tuples) -> list[str]:
    """Assignments that compute with `names`; one that only moves or retypes them stands for its own users."""
    found: list[str] = []
    pending, seen = set(names), set(names)
    while pending:
        current, pending = pending, set()
        for target, value in assigns.items():
            if value is None or target in seen or not any(
                    isinstance(n, ast.Name) and n.id in current for n in ast.walk(value)):
                continue
            seen.add(target)
            if triton_tree(value, assigns, tuples, 1) == ("load",):
                pending.add(target)
            else:
                found.append(target)
    return found


def _fx_users(names: set[str], fragment: Fragment) -> list[str]:
    found: list[str] = []
    pending, seen = set(names), set(names)
    while pending:
        current, pending = pending, set()
        for node, op in fragment.ops.items():
            if node in seen or not any(isinstance(a, FxRef) and a.name in current for a in op.args):
                continue
            seen.add(node)
            (pending.add(node) if op.family in SAME_VALUES or op.family in SLICE_OPS else found.append(node))
    return found
