"""A compiled optimizer's foreach ops, narrowed to the items a kernel needs. Pure.

The graph of an optimizer step applies each foreach op to every parameter at once (`_foreach_sub.List([p0, ...,
p38], [g0, ..., g38])`, then `getitem_k = _foreach_sub[k]`), but Inductor splits the step into kernels of a few
parameters each. A kernel's reference needs only the items of its parameters: computed whole, it would name 39
tensors of which the kernel reads one (the others made up as zeros of their full size), and a parameter whose
buffer an earlier kernel updated in place (a step count after `_foreach_add_(steps, 1)`) is read by the kernel as
the update's value, so the op that makes that value from the old one cannot be computed at all."""

from __future__ import annotations

from dataclasses import replace

from harvest.model import FxExpr, FxList, FxRef
from harvest.reference.bound import FragmentBinding
from harvest.reference.fragment import Fragment, Op
from harvest.reference.fx_args import fx_refs


def narrow_foreach(fragment: Fragment, binding: FragmentBinding) -> None:
    """Each foreach op takes only the positions of its lists whose results the kernel's outputs need, and its
    getitems index the narrowed lists; a foreach op no output needs is dropped with its getitems."""
    ops = fragment.ops
    foreach = {name for name, op in ops.items() if op.family.startswith("_foreach_")}
    if not foreach:
        return
    items = {name: op for name, op in ops.items() if _item_of(op) in foreach}
    needed = set(binding.outputs.values()) | set(binding.from_partials)
    kept: dict[str, list[int] | None] = {}  # foreach node -> the positions it keeps (None: all)
    for name in reversed(list(ops)):
        if name not in needed or name in binding.inputs:
            continue
        op = ops[name]
        if name in foreach:
            positions = sorted({int(item.args[1].text) for item_name, item in items.items()
                                if item_name in needed and _item_of(item) == name})
            length = _list_length(op)
            if length is None or not positions or len(positions) == length:
                kept[name] = None  # (whole: its getitems stay as they are)
            else:
                op = replace(op, args=tuple(_narrowed(a, length, positions) for a in op.args),
                             kwargs={k: _narrowed(v, length, positions) for k, v in op.kwargs.items()})
                ops[name] = op
                kept[name] = positions
        needed.update(ref for value in (*op.args, *op.kwargs.values()) for ref in fx_refs(value))
    for name, item in items.items():
        source = _item_of(item)
        position = int(item.args[1].text)
        if source not in kept or (kept[source] is not None and position not in kept[source]):
            del ops[name]
        elif kept[source] is not None and kept[source].index(position) != position:
            ops[name] = replace(item, args=(item.args[0], FxExpr((str(kept[source].index(position)),))))
    for name in foreach - set(kept):
        del ops[name]


def _item_of(op: Op) -> str | None:
    """The foreach node a getitem takes an item of (`getitem_38 = _foreach_add[38]`), else None."""
    if op.target != "operator.getitem" or len(op.args) != 2 or not isinstance(op.args[0], FxRef) \
            or not isinstance(op.args[1], FxExpr) or not op.args[1].text.isdigit():
        return None
    return op.args[0].name


def _list_length(op: Op) -> int | None:
    """How many tensors a foreach op applies to: the length of its first list argument (the second of
    `_foreach_pow.ScalarAndTensor(0.9, [steps])`)."""
    return next((len(a.items) for a in op.args if isinstance(a, FxList)), None)


def _narrowed(value, length: int, positions: list[int]):
    """A list argument of the op's length keeps `positions`; a scalar (`alpha=1`, a scalar for all) stays."""
    if isinstance(value, FxList) and len(value.items) == length:
        return FxList(tuple(value.items[k] for k in positions))
    return value
