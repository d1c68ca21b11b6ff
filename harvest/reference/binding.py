"""Binding fragment names to kernel parameters when the kernel's graph was not recorded (an artifact's `# Graph
fragment:` comment): inputs by name, meta or order; outputs by the stored value's meta and top op; split reductions'
partials (harvest.reference.split). Whatever cannot be bound without guessing is left out, with the reason."""

from __future__ import annotations

import ast

from harvest.model import FxRef, Graph, Kernel, Launch
from harvest.ops import UPDATES_FIRST_ARG
from harvest.reference.access import OP_FAMILIES, Access, top_op
from harvest.reference.bound import FragmentBinding
from harvest.reference.fragment import (
    Fragment,
    arg_buffer,
    buffer_meta_of,
    op_family,
    same_numel,
    same_shape,
)
from harvest.reference.fx_args import fx_refs, fx_symbols
from harvest.reference.split import SPLIT_REDUCTIONS, bind_partial_outputs, mix_order_rows, partial_of
from harvest.reference.structure import agreement, closest, read_by
from harvest.reference.unread import layout_symbols


def bind_inputs(kernel: Kernel, launch: Launch, graph: Graph, access: Access, fragment: Fragment,
                 binding: FragmentBinding) -> None:
    by_param = {arg.param: arg for arg in launch.args}
    reads: list[str] = []
    for param in kernel.params:
        kind = kernel.signature.get(param, "")
        if access.first.get(param) == "load" or (param.startswith("in_ptr") and kind and not kind.startswith("*")
                                                 and kind != "constexpr"):
            reads.append(param)
    used = {ref for op in fragment.ops.values() for v in (*op.args, *op.kwargs.values()) for ref in fx_refs(v)}
    # Names the kernel can read: placeholders, and nodes the ops use without defining (`%div` in a backward
    # graph is the forward's output, passed under that name).
    readable = set(fragment.placeholders) | (used - set(fragment.ops))
    unbound: list[str] = []
    for param in reads:
        arg = by_param.get(param)
        name = arg_buffer(arg) if arg else None
        if name is not None and name in readable and name not in binding.inputs:
            binding.inputs[name] = param
        else:
            unbound.append(param)
        if not kernel.signature.get(param, "*").startswith("*"):
            binding.scalar_inputs.add(param)
    # Placeholders the kernel computes itself (also defined in the fragment) are a last resort: an in-place
    # consumer may read a node the fragment re-lists (`%add_4` placeholder and definition), but a fused
    # reduction lists its own intermediates as placeholders too.
    # Only placeholders some op uses can feed the reference; the rest (reduction buffers like %buf0) are noise.
    external = [n for n in fragment.placeholders if n not in binding.inputs and n in used and n not in fragment.ops]
    internal = [n for n in fragment.placeholders if n not in binding.inputs and n in used and n in fragment.ops]
    # A stage-2 kernel reads a split-reduction partial (`%buf9`) that no op uses: bind it too, so the reduction
    # node can be computed from it.
    partials = [n for n in fragment.placeholders if n not in binding.inputs and n not in used and n not in fragment.ops
                and partial_of(fragment, fragment.placeholders[n].meta)]
    metas = {param: buffer_meta_of(graph, arg_buffer(by_param[param]))
             for param in unbound if param in by_param}

    def matches(param: str, names: list[str], same) -> list[str]:
        meta = metas.get(param)
        return [n for n in names if meta is not None and fragment.placeholders[n].meta is not None
                and same(fragment.placeholders[n].meta, meta)]

    remaining = list(unbound)
    for pool in (external, internal, partials):
        for same in (same_shape, same_numel):
            for param in list(remaining):
                free = [n for n in pool if n not in binding.inputs]
                found = matches(param, free, same)
                others = [p for p in remaining if p != param and set(matches(p, free, same)) & set(found)]
                if len(found) == 1 and not others:
                    binding.inputs[found[0]] = param
                    remaining.remove(param)
        # Look-alike inputs: the one whose uses in the fragment look like the kernel's uses of the parameter.
        for param in list(remaining):
            free = matches(param, [n for n in pool if n not in binding.inputs], same_numel)
            if len(free) < 2:
                continue
            scores = {n: read_by(param, access.assigns, access.unpacked, n, fragment) for n in free}
            best = max(scores.values())
            winners = [n for n, score in scores.items() if score == best]
            if best[0] >= 2 and len(winners) == 1:
                binding.inputs[winners[0]] = param
                remaining.remove(param)
                binding.warnings.append(f"bound {param} to {winners[0]} by how the kernel uses it "
                                        f"({', '.join(free)} look alike)")
        # Several parameters with the same meta: Inductor numbers in_ptrK in the order the fragment reads them.
        free = [n for n in pool if n not in binding.inputs]
        if remaining and len(free) == len(remaining) and all(
            matches(p, [n], same_shape) for p, n in zip(remaining, free)
        ):
            for param, name in zip(remaining, free):
                binding.inputs[name] = param
                binding.warnings.append(f"bound {param} to {name} by read order (same meta as another input)")
            remaining = []
    for name in binding.inputs:
        placeholder = fragment.placeholders.get(name)
        binding.input_meta[name] = placeholder.meta if placeholder else None
    for param in remaining:
        binding.warnings.append(f"kernel reads {param} ({by_param[param].expr if param in by_param else '?'}), "
                                f"which matches no fragment placeholder")


def bind_outputs(kernel: Kernel, launch: Launch, graph: Graph, access: Access, fragment: Fragment,
                  binding: FragmentBinding) -> None:
    by_param = {arg.param: arg for arg in launch.args}
    returns = set(fragment.returns)
    opaque = [r for r in fragment.returns if r not in fragment.ops]
    ambiguous: dict[str, tuple[str, ...]] = {}  # param -> returned nodes it could be, in return order
    split: dict[str, dict[str, tuple[int, ...]]] = {}  # param -> reduction nodes it may hold partials of
    for param in kernel.params:
        if param not in access.last_store:
            continue
        arg = by_param.get(param)
        buffer = arg_buffer(arg) if arg else None
        meta = buffer_meta_of(graph, buffer)
        if meta is None:
            binding.unchecked[param] = f"no shape/stride/dtype is known for {param} ({arg.expr if arg else 'unbound'})"
            continue
        candidates = [n for n, op in fragment.ops.items() if op.meta is not None and same_shape(op.meta, meta)]
        if not candidates:
            candidates = [n for n, op in fragment.ops.items() if op.meta is not None and same_numel(op.meta, meta)]
        top = top_op(access.last_store[param], access.assigns)
        by_op = [n for n in candidates if op_family(fragment, n) in OP_FAMILIES.get(top or "", set())]
        returned = [n for n in (by_op or candidates) if n in returns]
        compatible_opaque = [
            r for r in opaque
            if r not in fragment.placeholders or fragment.placeholders[r].meta is None
            or same_numel(fragment.placeholders[r].meta, meta) or same_shape(fragment.placeholders[r].meta, meta)
        ]
        chosen: str | None = None
        if len(returned) == 1 and (by_op or not compatible_opaque):
            chosen = returned[0]
        elif by_op and not returned and len(by_op) == 1 and opaque:
            # The return names a view or buffer of it (`%expand_2` for `%div`); the stored op and meta single it out.
            chosen = by_op[0]
        pool = returned or by_op or candidates
        # What the rest of the computation says: among the nodes the fragment returns, else among all of this
        # shape, the one whose operations agree deepest with the stored value's. It decides between look-alikes
        # (or a buffer the fragment names without a node), and overrules a choice by meta and outermost op alone
        # when that choice's operations do not even agree at the top (a conv's bias add is `convolution`, not the
        # next add of the same shape).
        value = access.last_store[param]
        # (a tuple's item the fragment only implies, `getitem` of prepare_softmax_online, has no meta of its own)
        unshaped = [n for n in fragment.returns if n in fragment.ops and fragment.ops[n].meta is None]
        structural = closest(value, access.assigns, access.unpacked,
                             [n for n in candidates if n in returns] + unshaped, fragment) \
            or closest(value, access.assigns, access.unpacked, candidates, fragment)
        if structural is not None and structural != chosen and (
                chosen is None or agreement(value, access.assigns, access.unpacked, chosen, fragment) == 0):
            binding.warnings.append(f"bound {param} to {structural} by how both are computed "
                                    f"({', '.join(dict.fromkeys(pool + compatible_opaque))} look alike)")
            chosen = structural
        if chosen is not None:
            binding.outputs[param] = chosen
            continue
        if buffer in opaque:
            why = f"{param} stores buffer {buffer}, which the fragment names without an FX node"
            if not candidates:
                why += " (a split-reduction partial or an internal buffer)"
        elif not candidates:
            why = f"no fragment node has the shape/dtype of {buffer} {list(meta.shape)} {meta.dtype}"
            rows = mix_order_rows(kernel, access, fragment, param, meta)
            if rows is not None:
                binding.outputs[param], binding.partial_outputs[param] = rows
                continue
        elif len(pool) > 1 or compatible_opaque:
            names = ", ".join(dict.fromkeys(pool + compatible_opaque))
            why = f"cannot tell which of {names} {param} stores"
        else:
            why = f"{param} stores a value the fragment's return does not name"
        binding.unchecked[param] = why
        if len(returned) > 1 and not compatible_opaque:
            ambiguous[param] = tuple(returned)
        if not candidates and top in SPLIT_REDUCTIONS:
            split[param] = partial_of(fragment, meta, SPLIT_REDUCTIONS[top])
    _bind_by_store_order(binding, ambiguous, fragment)
    bind_partial_outputs(binding, split, fragment)
    _bind_scatter_outputs(kernel, launch, graph, access, fragment, binding)
    seen: dict[str, list[str]] = {}
    for param, name in binding.outputs.items():
        seen.setdefault(name, []).append(param)
    for name, params in seen.items():
        # (two parameters that store one Triton value are one node: Inductor writes a value to two buffers, a copy
        # in another layout)
        if len(params) > 1 and len({ast.dump(access.last_store[p]) for p in params if p in access.last_store}) > 1:
            for param in params:
                del binding.outputs[param]
                binding.unchecked[param] = f"{' and '.join(params)} both match {name}"


def _bind_scatter_outputs(kernel: Kernel, launch: Launch, graph: Graph, access: Access, fragment: Fragment,
                          binding: FragmentBinding) -> None:
    """A parameter the kernel only adds into with `tl.atomic_add` (an embedding's backward, a scatter_add): it holds
    the fragment's scatter node (`index_put_(full_default_8, [ids], values, True)`), which updates the value the
    buffer had before the launch; so the scatter's first argument is the parameter's incoming value. Only with one
    scatter node of the parameter's shape."""
    by_param = {arg.param: arg for arg in launch.args}
    for param in kernel.params:
        if param not in access.atomic or param in access.last_store or param in binding.outputs:
            continue
        meta = buffer_meta_of(graph, arg_buffer(by_param[param])) if param in by_param else None
        scatters = [n for n, op in fragment.ops.items() if op.family in UPDATES_FIRST_ARG and op.meta is not None
                    and meta is not None and same_numel(op.meta, meta) and op.args and isinstance(op.args[0], FxRef)]
        if len(scatters) != 1:
            binding.unchecked[param] = (f"{param} is added into atomically, and "
                                        f"{'no' if not scatters else 'more than one'} scatter node of the fragment "
                                        "has its shape")
            continue
        base = fragment.ops[scatters[0]].args[0].name
        if base in binding.inputs and binding.inputs[base] != param:
            continue
        binding.inputs[base] = param
        binding.input_meta[base] = meta
        binding.outputs[param] = scatters[0]
        binding.unchecked.pop(param, None)


def _bind_by_store_order(binding: FragmentBinding, ambiguous: dict[str, tuple[str, ...]], fragment: Fragment) -> None:
    """`out_ptr0`, `out_ptr1` both match `sum_7`, `sum_8` (same op, same meta): Inductor numbers out_ptrN in the
    order the fused nodes store, which is the order of the fragment's return, so pair them in that order."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for param, names in ambiguous.items():
        if param.startswith("out_ptr"):
            groups.setdefault(names, []).append(param)
    for names, params in groups.items():
        if len(names) != len(params) or any(n in binding.outputs.values() for n in names):
            continue
        params.sort(key=lambda p: int(p[len("out_ptr"):]))
        ordered = [n for n in fragment.returns if n in names]
        for param, name in zip(params, ordered):
            binding.outputs[param] = name
            del binding.unchecked[param]
            binding.warnings.append(f"bound {param} to {name} by store order ({', '.join(ordered)} look alike)")


def needed_expression(name: str, fragment: Fragment, binding: FragmentBinding, symbols: dict[str, str], order: list[str],
            visiting: set[str]) -> str | None:
    """Add `name` and what it needs to `order`; return why it cannot be computed, or None."""
    if name in binding.inputs or name in order:
        return None
    if name in binding.from_partials:
        for symbol in fx_symbols(binding.from_partials[name][1].scale):
            if symbol not in symbols:
                return f"symbolic size {symbol} in the count {name} divides by cannot be bound from the kernel's inputs"
        order.append(name)  # computed from the partial buffer the kernel reads, not from the node's own inputs
        return None
    if name in fragment.broken:
        return fragment.broken[name]
    if name in binding.unread:  # (zeros: the kernel never reads it; harvest.reference.unread)
        missing = [s for s in layout_symbols(binding.unread[name]) if s not in symbols]
        return f"symbolic size {missing[0]} of {name}'s layout cannot be bound from the kernel's inputs" if missing else None
    op = fragment.ops.get(name)
    if op is None:
        if name in fragment.placeholders:
            return f"the kernel reads {name}, but no kernel parameter could be bound to it"
        return f"fragment does not define {name}"
    if name in visiting:
        return f"{name} depends on itself"
    visiting.add(name)
    for value in (*op.args, *op.kwargs.values()):
        for symbol in fx_symbols(value):
            if symbol not in symbols:
                return f"symbolic size {symbol} in {name} cannot be bound from the kernel's inputs"
        for ref in fx_refs(value):
            why = needed_expression(ref, fragment, binding, symbols, order, visiting)
            if why is not None:
                return why
    order.append(name)
    return None
