"""A mean whose division another kernel does: Inductor lowers `mean` to a sum and a division by the count, and
when the division fuses into the kernel that reads the mean, the buffer the capture records as the mean's holds its
total. The kernel that makes it stores a plain sum; the kernel that reads it divides the loaded value by the count.
Both are bound to the total (the mean times its count), so the reference computes what the buffer really holds.
"""

from __future__ import annotations

import ast

from harvest.model import FxExpr, FxNode, FxRef
from harvest.reference.access import Access, top_op
from harvest.reference.bound import FragmentBinding
from harvest.reference.fragment import Fragment, Op
from harvest.reference.split import reduction_terms
from harvest.reference.welford import total_node
from harvest.syntax import dotted

# Calls that only move or convert a value: a load seen through them is the same value.
_MOVES = {"tl.broadcast_to", "tl.reshape", "tl.view"}


def _is_load_of(value: ast.expr | None, param: str) -> bool:
    if not (isinstance(value, ast.Call) and dotted(value.func) == "tl.load" and value.args):
        return False
    return any(isinstance(n, ast.Name) and n.id == param for n in ast.walk(value.args[0]))


def _moved_from(value: ast.expr | None, names: set[str]) -> bool:
    """Whether `value` is one of `names` moved or converted (`tl.broadcast_to(x, ...)`, `x.to(...)`)."""
    if isinstance(value, ast.Call) and value.args and dotted(value.func) in _MOVES:
        value = value.args[0]
    elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "to":
        value = value.func.value
    else:
        return False
    return isinstance(value, ast.Name) and value.id in names


def _constant(value: ast.expr | None, assigns: dict[str, ast.expr | None]) -> float | None:
    """The number `value` is: a literal, or a name assigned `tl.full(shape, number, dtype)`."""
    if isinstance(value, ast.Name):
        value = assigns.get(value.id)
        if isinstance(value, ast.Call) and dotted(value.func) == "tl.full" and len(value.args) >= 2:
            value = value.args[1]
    if isinstance(value, ast.Constant) and isinstance(value.value, (int, float)) and not isinstance(value.value, bool):
        return float(value.value)
    return None


def divisors_of_load(param: str, access: Access) -> set[float]:
    """The constants the kernel divides what it loads from `param` by (the load moved or converted first)."""
    loaded = {name for name, value in access.assigns.items() if _is_load_of(value, param)}
    grew = True
    while grew:
        more = {name for name, value in access.assigns.items() if name not in loaded and _moved_from(value, loaded)}
        loaded |= more
        grew = bool(more)
    found = set()
    for value in access.assigns.values():
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Div) and isinstance(value.left, ast.Name) \
                and value.left.id in loaded and (number := _constant(value.right, access.assigns)) is not None:
            found.add(number)
    return found


def bind_mean_totals(binding: FragmentBinding, access: Access, fragment: Fragment) -> None:
    """An input bound to a mean that the kernel divides by the mean's count after loading it holds the mean's total:
    bound as `<mean>_total`, the mean then computed from it (total / count) where the fragment uses it."""
    for name, param in list(binding.inputs.items()):
        op = fragment.ops.get(name)
        if op is None or op.family != "mean":
            continue
        terms = reduction_terms(fragment, name)
        if not terms or float(terms) not in divisors_of_load(param, access):
            continue
        total = f"{name}_total"
        binding.inputs[total] = binding.inputs.pop(name)
        binding.input_meta[total] = binding.input_meta.pop(name, None) or op.meta
        if name in binding.input_buffers:
            binding.input_buffers[total] = binding.input_buffers.pop(name)
        fragment.placeholders[total] = FxNode(total, "placeholder", total, meta=binding.input_meta[total])
        fragment.ops[name] = Op(name, "torch.ops.aten.div.Tensor", (FxRef(total), FxExpr((str(terms),))), {}, op.meta)


def stored_total(node: str, param: str, access: Access, fragment: Fragment) -> str:
    """What a kernel that stores `node` into `param` stores: the mean's total (a node for it) when the node is a
    mean and the kernel stores a plain sum, leaving the division to the kernel that reads it; else the node."""
    op = fragment.ops.get(node)
    if op is None or op.family != "mean" or top_op(access.last_store.get(param), access.assigns) != "sum":
        return node
    terms = reduction_terms(fragment, node)
    return total_node(fragment, node, terms) if terms else node
