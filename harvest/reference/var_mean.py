"""A var_mean (batch norm's and layer norm's statistics) that Inductor computes in passes: partial sums of x for the
mean and of (x - mean)**2 for the variance, combined by later kernels, or a Welford reduction's mean, m2 and weight
(split or whole). Which part each buffer holds, read from the recorded graph and the kernel's stores and loads, bound
so the reference computes what the buffer really holds (harvest.reference.recorded calls it last)."""

from __future__ import annotations

import ast

from harvest.model import FxExpr, FxRef, Graph, Kernel, TensorMeta
from harvest.ops import torch_ops_target
from harvest.reference.access import Access, sums_within, top_op
from harvest.reference.bound import FragmentBinding, SplitReduction
from harvest.reference.copies import inputs_of, loads_within
from harvest.reference.fragment import Fragment, Op, buffer_meta_of, numel_of
from harvest.reference.fx_args import fx_refs
from harvest.reference.split import split_dims
from harvest.reference.welford import (
    combine_welford_partials,
    count_node,
    middle_stage_parts,
    total_node,
    variance_from_m2,
    welford_part,
    welford_parts,
)
from harvest.syntax import dotted


def bind_var_mean_partials(kernel: Kernel, graph: Graph, access: Access, buffers: dict[str, dict],
                            args: dict[str, dict], fragment: Fragment, binding: FragmentBinding) -> None:
    """A var_mean (batch norm's statistics) split in two passes of partial sums: a kernel stores partial sums of x
    for the mean (their total is mean * n) and another combines them; then partial sums of (x - mean)**2 for the
    variance (total: var * (n - correction)), combined by a third, which may store the total too. Which of the two
    a buffer of partials holds: in the kernel that makes it, the variance's when the kernel reads the mean; in the
    kernel that combines it, the one of the two that the kernel's outputs are computed from."""
    for name, op in list(fragment.ops.items()):
        if op.family != "var_mean" or not op.args or not isinstance(op.args[0], FxRef):
            continue
        found = _var_mean_parts(name, op, fragment)
        if found is None:
            continue
        mean, var, terms, correction = found

        def of_this(buffer: str, name: str = name) -> bool:
            info = buffers.get(buffer) or {}
            return not info.get("node") and name in (info.get("origins") or [])

        def stores_this(param: str, buffer: str, name: str = name) -> bool:
            """A buffer of this var_mean the kernel stores into `param`: where the buffer's origins name two
            var_means (a layer norm the kernel redoes before its own), the one computed from what the value reads."""
            if not of_this(buffer):
                return False
            rivals = [o for o in (buffers.get(buffer) or {}).get("origins") or []
                      if o != name and o in fragment.ops and fragment.ops[o].family == "var_mean"]
            if not rivals:
                return True
            reads = {n for n, bound in binding.inputs.items() if bound in loads_within(param, access)}
            return inputs_of(name, fragment, set(binding.inputs)) == reads

        def scale_of(target: str, terms: int = terms, correction: int = correction, var: str | None = var) -> int:
            return terms - correction if target == var else terms

        partials = [n for n in binding.inputs if n not in fragment.ops and n not in fragment.placeholders and of_this(n)]
        # Stage 1: this kernel stores partial sums (a kernel that reads partials of this var_mean is a stage 2).
        target = None if partials else (var if mean in binding.inputs else mean)
        for param, entry in args.items():
            buffer = entry.get("buffers", [entry["buffer"]])[-1]
            meta = buffer_meta_of(graph, buffer)
            if (target is None or param not in binding.unchecked or param not in access.stored or not stores_this(param, buffer)
                    or meta is None or top_op(access.last_store.get(param), access.assigns) != "sum"):
                continue
            # (a total of squares of x less a mean the kernel summed first is the variance's, even where the
            # kernel reads no mean: a layer norm that one kernel computes whole, its mean then its variance)
            stored = var if var is not None and sums_within(access.last_store.get(param), access.assigns) > 1 else target
            whole = fragment.placeholders[stored].meta
            dims = split_dims(meta.shape, whole.shape)
            if dims is not None:
                binding.outputs[param] = stored
                binding.partial_outputs[param] = SplitReduction("sum", dims, terms, scale_of(stored))
                del binding.unchecked[param]
            elif numel_of(meta.shape) == numel_of(whole.shape):  # not split: the whole sum, divided by the next kernel
                binding.outputs[param] = total_node(fragment, stored, scale_of(stored))
                del binding.unchecked[param]
        # A Welford reduction's m2 and weight, stored whole: var * (n - correction) and n. Stored split (a split
        # Welford's first stage: each chunk's mean, m2 and weight), the three are checked together: check()
        # combines them and compares with the mean, var * (n - correction) and n.
        welford = welford_parts(kernel)
        whole = fragment.placeholders[mean].meta
        split_parts: dict[int, tuple[str, tuple[int, ...]]] = {}
        for param, entry in args.items():
            buffer = entry.get("buffers", [entry["buffer"]])[-1]
            meta = buffer_meta_of(graph, buffer)
            if (param not in binding.unchecked or param not in access.stored or not stores_this(param, buffer) or meta is None
                    or whole is None):
                continue
            part = welford_part(access.last_store.get(param), access.assigns, welford)
            if numel_of(meta.shape) != numel_of(whole.shape):
                if partials and not _fewer_chunks(meta, partials, binding):
                    continue  # (a last stage stores no partials; a middle one stores fewer chunks than it reads)
                dims = split_dims(meta.shape, whole.shape)
                if part is not None and dims is not None:
                    split_parts[part] = (param, dims)
            elif part == 1 and var is not None:
                binding.outputs[param] = total_node(fragment, var, terms - correction)
                del binding.unchecked[param]
            elif part == 2:
                binding.outputs[param] = count_node(fragment, mean, terms)
                del binding.unchecked[param]
        combined = combine_welford_partials(name, mean, var, terms, correction, binding, fragment, partials)
        if sorted(split_parts) == [0, 1, 2] and len({dims for _, dims in split_parts.values()}) == 1:
            of = tuple(split_parts[k][0] for k in range(3))
            expected = (middle_stage_parts(name, mean, combined, fragment) if combined is not None else
                        [mean, total_node(fragment, var, terms - correction) if var is not None else None,
                         count_node(fragment, mean, terms)])
            for part, (param, dims) in split_parts.items():
                if expected[part] is not None:
                    binding.outputs[param] = expected[part]
                    binding.partial_outputs[param] = SplitReduction("welford", dims, terms, None, part, of,
                                                                    middle=combined is not None)
                    del binding.unchecked[param]
        if var is not None and whole is not None:  # the m2 that a kernel after the var_mean's reads, with the mean
            m2s = [n for n in binding.inputs if n not in fragment.ops and n not in fragment.placeholders and of_this(n)
                   and binding.input_meta.get(n) is not None
                   and numel_of(binding.input_meta[n].shape) == numel_of(whole.shape)
                   and not _read_as_a_mean(n, args, access)]
            variance_from_m2(name, var, terms - correction, m2s, fragment, binding)
        # Stage 2: this kernel reads partial sums and combines them.
        if not partials:
            continue
        needed = _getitems_needed(binding, fragment, {mean, var} - {None})
        if len(partials) != 1 or len(needed) != 1:
            continue
        target = needed.pop()
        meta = binding.input_meta.get(partials[0])
        dims = split_dims(meta.shape, fragment.placeholders[target].meta.shape) if meta is not None else None
        if dims is None:
            continue
        binding.from_partials[target] = (partials[0], SplitReduction("sum", dims, None, scale_of(target)))
        # The combined total itself, stored beside (batch norm keeps it for the backward): target * scale.
        for param, entry in args.items():
            buffer = entry.get("buffers", [entry["buffer"]])[-1]
            meta = buffer_meta_of(graph, buffer)
            whole = fragment.placeholders[target].meta
            if (param in binding.unchecked and param in access.stored and stores_this(param, buffer) and meta is not None
                    and numel_of(meta.shape) == numel_of(whole.shape)
                    and top_op(access.last_store.get(param), access.assigns) == "sum"):
                binding.outputs[param] = total_node(fragment, target, scale_of(target))
                del binding.unchecked[param]


def _fewer_chunks(meta: TensorMeta, partials: list[str], binding: FragmentBinding) -> bool:
    """Whether a buffer of `meta` holds fewer chunks of a split Welford than the partials the kernel reads: a middle
    stage (a 3-level split on a GPU: 1024 chunks a channel combined into 8, then into 1) stores partials again."""
    stored = numel_of(meta.shape)
    read = [numel_of(binding.input_meta[p].shape) for p in partials if binding.input_meta.get(p) is not None]
    return bool(stored) and bool(read) and all(r and stored < r for r in read)


def _read_as_a_mean(buffer: str, args: dict[str, dict], access: Access) -> bool:
    """Whether the kernel takes `buffer` for a mean's total: loaded, divided, and subtracted from a value of the row
    (x - total / n), as a layer norm does that reads its row sum from the kernel before and computes its variance
    itself; an m2 is never subtracted from the row (it goes to rsqrt)."""
    params = {p for p, entry in args.items() if buffer in entry.get("buffers", [entry.get("buffer")])}
    loaded = {name for name, value in access.assigns.items() if isinstance(value, ast.Call) and dotted(value.func) == "tl.load"
              and value.args and any(isinstance(n, ast.Name) and n.id in params for n in ast.walk(value.args[0]))}
    scaled = set(loaded)
    for name, value in access.assigns.items():  # (in source order: a total's quotient is assigned after its load)
        if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Div, ast.Mult)) and isinstance(value.left, ast.Name) \
                and value.left.id in scaled:
            scaled.add(name)
    return any(isinstance(value, ast.BinOp) and isinstance(value.op, ast.Sub) and isinstance(value.right, ast.Name)
               and value.right.id in scaled - loaded for value in access.assigns.values())


def _var_mean_parts(name: str, op: Op, fragment: Fragment) -> tuple[str, str | None, int, int] | None:
    """(mean node, variance node or None, values per statistic, correction) of a var_mean node."""
    getitems: dict[int, str] = {}
    for node_name, node in [*fragment.placeholders.items(), *fragment.ops.items()]:
        target = node.target if isinstance(node, Op) else torch_ops_target(node.target)
        if (target == "operator.getitem" and len(node.args) == 2 and node.args[0] == FxRef(name)
                and isinstance(node.args[1], FxExpr) and node.args[1].text in ("0", "1")):
            getitems.setdefault(int(node.args[1].text), node_name)
    source = fragment.placeholders.get(op.args[0].name)
    mean = getitems.get(1)
    if source is None or source.meta is None or mean is None or fragment.placeholders.get(mean) is None:
        return None
    part_meta = fragment.placeholders[mean].meta
    whole, part = numel_of(source.meta.shape), numel_of(part_meta.shape) if part_meta else None
    if not whole or not part or whole % part:
        return None
    var = getitems.get(0) if fragment.placeholders.get(getitems.get(0, "")) is not None else None
    correction = next((int(v.text) for k, v in op.kwargs.items() if k == "correction" and isinstance(v, FxExpr)
                       and v.text.lstrip("-").isdigit()), 1)
    return mean, var, whole // part, correction


def _getitems_needed(binding: FragmentBinding, fragment: Fragment, wanted: set[str]) -> set[str]:
    """Which of `wanted` the kernel's outputs are computed from (through its ops, stopping at what it reads)."""
    found: set[str] = set()
    seen: set[str] = set()
    stack = list(binding.outputs.values())
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in wanted:
            found.add(name)
            continue
        if name in binding.inputs or name not in fragment.ops:
            continue
        op = fragment.ops[name]
        stack.extend(r for v in (*op.args, *op.kwargs.values()) for r in fx_refs(v))
    return found
