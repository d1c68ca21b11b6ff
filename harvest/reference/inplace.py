"""A `copy_` into a view of a tensor, which changes the tensor: the reference is functional (it computes `copy_` as
the value it leaves in its first argument, out of place), so a later read of the tensor would miss the copy. Where
the view is an as_strided, slice or select of a tensor, the tensor after the copy is that view's scatter of the
copied values into it, and the nodes after the copy read the scatter (Inductor re-places an as_strided_scatter as
`copy_(as_strided(full, ...), grad)`: a global average pool's backward fills its zeros so).
"""

from __future__ import annotations

from harvest.model import FxList, FxRef, FxValue
from harvest.reference.fragment import Fragment, Op

# A view's family -> the scatter that writes values through the same view (the view's own arguments after src).
VIEW_SCATTERS = {"as_strided": "torch.ops.aten.as_strided_scatter.default",
                 "slice": "torch.ops.aten.slice_scatter.default",
                 "select": "torch.ops.aten.select_scatter.default"}


def _renamed(value: FxValue, old: str, new: str) -> FxValue:
    if isinstance(value, FxRef):
        return FxRef(new) if value.name == old else value
    if isinstance(value, FxList):
        return FxList(tuple(_renamed(v, old, new) for v in value.items))
    if isinstance(value, tuple):
        return tuple(_renamed(v, old, new) for v in value)
    return value


def scattered_name(copy: str) -> str:
    """The node that holds the tensor a `copy_` node wrote into through a view."""
    return f"{copy}_scatter"


def viewed_base(copy: Op, fragment: Fragment) -> str | None:
    """The tensor a copy_ writes into through an as_strided/slice/select view of it, or None."""
    view = fragment.ops.get(copy.args[0].name) if copy.args and isinstance(copy.args[0], FxRef) else None
    if view is None or view.family not in VIEW_SCATTERS or not view.args or not isinstance(view.args[0], FxRef):
        return None
    return view.args[0].name


def scatter_view_copies(fragment: Fragment, copies: set[str]) -> None:
    """For each in-place copy (`copies`: the nodes that were copy_) into a view of a tensor, a node after it that
    holds the tensor with the copy scattered in, read by every later node in place of the tensor."""
    for name in [n for n in fragment.ops if n in copies]:
        copy = fragment.ops[name]
        base = viewed_base(copy, fragment)
        if base is None or len(copy.args) < 2:
            continue
        view = fragment.ops[copy.args[0].name]
        scatter = scattered_name(name)
        made = Op(scatter, VIEW_SCATTERS[view.family], (FxRef(base), copy.args[1], *view.args[1:]), dict(view.kwargs),
                  fragment.meta_of(base))
        ordered: dict[str, Op] = {}
        after = False
        for other, op in fragment.ops.items():
            if after:
                op = Op(op.name, op.target, _renamed(op.args, base, scatter),
                        {k: _renamed(v, base, scatter) for k, v in op.kwargs.items()}, op.meta, op.inferred)
            ordered[other] = op
            if other == name:
                ordered[scatter] = made
                after = True
        fragment.ops = ordered
