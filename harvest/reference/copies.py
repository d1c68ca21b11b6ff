"""Buffers Inductor fills only to give a library call's argument the layout the call wants (a convolution's backward
its gradient channels-last, a matmul its operand transposed, attention its mask or a key repeated for grouped
queries): they hold no FX node of their own, but the value of that argument, which the reference binds them to.
"""

from __future__ import annotations

import ast

from harvest.model import FxRef, Graph
from harvest.ops import SAME_VALUES, SLICE_OPS
from harvest.reference.access import OP_FAMILIES, Access, top_op
from harvest.reference.bound import FragmentBinding
from harvest.reference.fragment import Fragment, buffer_meta_of, op_family, same_shape
from harvest.reference.fx_args import fx_refs
from harvest.syntax import dotted

# Ops that only move or pick values (a view, a slice, a split and its items: getitem's family is ""): a buffer made
# of them and one library call holds an argument of that call.
REARRANGING = SAME_VALUES | SLICE_OPS | {"split", "split_with_sizes", "unbind", "chunk", "narrow", ""}


def _stored_load(param: str, access: Access) -> ast.Call | None:
    """The `tl.load(...)` whose values are all the kernel stores into `param`, unchanged but for a cast (a copy,
    perhaps to the dtype the library call computes in), or None."""
    stores = access.stores.get(param, [])
    if len({ast.dump(value) for _, value in stores}) != 1:
        return None
    value = stores[-1][1]
    while True:
        if isinstance(value, ast.Name) and access.assigns.get(value.id) is not None:
            value = access.assigns[value.id]
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "to":
            value = value.func.value
        else:
            break
    return value if isinstance(value, ast.Call) and dotted(value.func) == "tl.load" and value.args else None


def stores_a_load(param: str, access: Access) -> bool:
    return _stored_load(param, access) is not None


def _loaded_input(param: str, access: Access, binding: FragmentBinding) -> str | None:
    """The input (its bound name) whose loaded values are all the kernel stores into `param`, unchanged."""
    value = _stored_load(param, access)
    if value is None:
        return None
    pointer = value.args[0]
    while isinstance(pointer, ast.BinOp):
        pointer = pointer.left
    loaded = [name for name, bound in binding.inputs.items() if isinstance(pointer, ast.Name) and bound == pointer.id]
    return loaded[0] if len(loaded) == 1 else None


def bind_copied_extern_outputs(binding: FragmentBinding, access: Access, buffers: dict[str, dict], fragment: Fragment
                                ) -> None:
    """A kernel that only copies a library call's output into the layout the graph wants (a convolution's
    channels-last result made contiguous): the buffer it loads has no FX node, its one origin the node the kernel
    stores, so it holds that node's value, which the kernel copies."""
    for param, node in list(binding.outputs.items()):
        source = _loaded_input(param, access, binding)
        origins = (buffers.get(source) or {}).get("origins") if source is not None else None
        item = fragment.ops.get(node)
        made_by = item.args[0].name if item is not None and item.target == "operator.getitem" and item.args \
            and isinstance(item.args[0], FxRef) else node  # (a tuple's item: what its library call returned first)
        if not origins or origins not in ([node], [made_by]) or node in binding.inputs:
            continue
        binding.inputs[node] = binding.inputs.pop(source)
        binding.input_meta[node] = binding.input_meta.pop(source, None)
        binding.input_buffers[node] = binding.input_buffers.pop(source, source)


def copied_value(param: str, buffer: str, buffers: dict[str, dict], fragment: Fragment, access: Access,
                  binding: FragmentBinding, graph: Graph, own: set[str]) -> str | None:
    """The node whose values the kernel stores into `param`, a buffer with no FX node of its own that Inductor
    fills to give a library call's argument the strides the call wants (attention's backward wants its output
    gradient contiguous, a convolution's backward its gradient channels-last, a matmul its operand transposed,
    attention its mask, or a key repeated for grouped queries): the buffer's origins are that call and the ops its
    argument is made with. The value is that argument: what the kernel also stores into another output, else an
    input it stores as it loads it or a view of that input, else a node it computes (the stored value's last
    operation is that node's) or a view of that node; of the buffer's shape, where the call takes two."""
    origins = (buffers.get(buffer) or {}).get("origins") or []
    calls = [o for o in origins if o in fragment.ops and fragment.ops[o].family not in REARRANGING]
    stored = {ast.dump(value) for _, value in access.stores.get(param, [])}
    if not calls or len(stored) != 1:
        return None
    copies = {binding.outputs[p] for p, s in access.stores.items() if p != param and p in binding.outputs
              and {ast.dump(v) for _, v in s} == stored}
    source = _loaded_input(param, access, binding)
    top = "load" if stores_a_load(param, access) else top_op(access.last_store.get(param), access.assigns)
    families = OP_FAMILIES.get(top or "", set())
    meta = buffer_meta_of(graph, buffer)
    # the library calls first (origins the kernel does not compute), then every origin that takes an argument
    for group in ([c for c in calls if c not in own], calls):
        arguments = list(dict.fromkeys(r for c in group for v in (*fragment.ops[c].args, *fragment.ops[c].kwargs.values())
                                       for r in fx_refs(v) if r != c))
        found = [a for a in arguments if a in copies] or [a for a in arguments if a == source] or [
            a for a in arguments if a in fragment.ops and (
                _rearranged_from(a, source, fragment) if top == "load"
                else (base := _under_views(a, fragment)) in own and op_family(fragment, base) in families)]
        found = list(dict.fromkeys(found))
        if len(found) > 1 and meta is not None:  # (a matmul of two views of one input: the one of this buffer's shape)
            found = [a for a in found if (m := fragment.meta_of(a)) is not None and same_shape(m, meta)]
        if len(found) > 1:  # (a rotary kernel's query and key: the one made from the inputs the stored value reads)
            reads = {name for name, bound in binding.inputs.items() if bound in loads_within(param, access)}
            found = [a for a in found if inputs_of(a, fragment, set(binding.inputs)) == reads]
        if len(found) == 1:
            return found[0]
    return None


def loads_within(param: str, access: Access) -> set[str]:
    """The parameters whose loads the value the kernel stores into `param` is computed from."""
    found: set[str] = set()
    pending = [value for _, value in access.stores.get(param, [])]
    seen: set[str] = set()
    while pending:
        for node in ast.walk(pending.pop()):
            if isinstance(node, ast.Call) and dotted(node.func) == "tl.load" and node.args:
                found |= {n.id for n in ast.walk(node.args[0]) if isinstance(n, ast.Name)}
            elif isinstance(node, ast.Name) and node.id not in seen and access.assigns.get(node.id) is not None:
                seen.add(node.id)
                pending.append(access.assigns[node.id])
    return found


def inputs_of(name: str, fragment: Fragment, inputs: set[str]) -> set[str]:
    """The bound inputs node `name` is computed from (its arguments' arguments ..., down to the inputs)."""
    found: set[str] = set()
    pending, seen = [name], set()
    while pending:
        node = pending.pop()
        if node in inputs:
            found.add(node)
            continue
        if node in seen or node not in fragment.ops:
            continue
        seen.add(node)
        op = fragment.ops[node]
        pending.extend(r for v in (*op.args, *op.kwargs.values()) for r in fx_refs(v))
    return found


def _under_views(name: str, fragment: Fragment) -> str:
    """The node a view (of a view ...) of it is made from: `name` itself when it is no view."""
    while (op := fragment.ops.get(name)) is not None and op.family in REARRANGING and op.args \
            and isinstance(op.args[0], FxRef):
        name = op.args[0].name
    return name


def _rearranged_from(name: str, source: str | None, fragment: Fragment) -> bool:
    """Whether node `name` is `source` through views, slices and split items only (each op's first argument)."""
    while source is not None and name != source:
        op = fragment.ops.get(name)
        if op is None or op.family not in REARRANGING or not op.args or not isinstance(op.args[0], FxRef):
            return False
        name = op.args[0].name
    return source is not None
