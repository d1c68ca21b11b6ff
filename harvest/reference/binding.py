"""Binding fragment names to kernel parameters: inputs by name, meta or order; outputs by the stored value's meta and
top op; split reductions' partials. Whatever cannot be bound without guessing is left out, with the reason."""

from __future__ import annotations

import ast
import itertools
import re
from dataclasses import dataclass, field

from harvest.model import FxExpr, FxList, FxRef, Graph, Kernel, Launch, TensorMeta
from harvest.ops import UPDATES_FIRST_ARG
from harvest.reference.access import OP_FAMILIES, Access, top_op
from harvest.reference.fragment import (
    Op,
    arg_buffer,
    buffer_meta_of,
    op_family,
    Fragment,
    norm_dtype,
    numel_of,
    same_numel,
    same_shape,
)
from harvest.reference.fx_args import fx_refs, fx_symbols
from harvest.reference.structure import agreement, closest, read_by
from harvest.text_output import plural

# ---------------------------------------------------------------------------------------------------------------
# Binding and generation.


@dataclass
class FragmentBinding:
    inputs: dict[str, str] = field(default_factory=dict)  # fragment name -> kernel param
    input_meta: dict[str, TensorMeta | None] = field(default_factory=dict)  # fragment name -> its placeholder meta
    input_buffers: dict[str, str] = field(default_factory=dict)  # fragment name -> the buffer holding its value (recorded)
    scalar_inputs: set[str] = field(default_factory=set)  # params passed by value (`arg3_1.item()`)
    outputs: dict[str, str] = field(default_factory=dict)  # param -> fragment name
    unchecked: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    partial_outputs: dict[str, SplitReduction] = field(default_factory=dict)  # param -> how it holds outputs[param] in parts
    from_partials: dict[str, tuple[str, SplitReduction]] = field(default_factory=dict)  # node -> (partial input, split)
    scratch: set[str] = field(default_factory=set)  # Inductor's workspaces: written, but no value of the graph
    exact: bool = False  # bound from the recorded graph, not by heuristics: an output may equal an input (a copy)


# ---------------------------------------------------------------------------------------------------------------
# Split reductions. Inductor splits a long reduction in two kernels: stage 1 reduces chunks and stores a partial
# buffer (`buf9` f32[1, 512, 16]: the node's shape plus a split dimension, and no FX node of its own); stage 2
# reduces that buffer over the split dimension into the node (`sum_3` f32[1, 512]).

# Triton top op of the stored value -> the aten family of the reduction node and the torch reduction that
# combines partials exactly like the whole (sum of sums, max of maxes). Welford/mean/var partials are not here.
SPLIT_REDUCTIONS = {"sum": "sum", "max2": "amax", "min2": "amin", "any": "any"}
SPLIT_TARGETS = {"sum": "torch.ops.aten.sum.dim_IntList", "amax": "torch.ops.aten.amax.default",
                  "amin": "torch.ops.aten.amin.default", "any": "torch.ops.aten.any.dims"}

# Aten reductions: a buffer of one's shape that a kernel reads is its accumulator, not a split partial.
_REDUCTION_FAMILIES = {"sum", "mean", "amax", "amin", "max", "min", "var", "var_mean", "std", "std_mean", "prod",
                       "any", "all", "argmax", "argmin", "logsumexp", "native_layer_norm"}

SPLIT_WORDS = {"sum": ("partial sums", "sums"), "amax": ("partial maxima", "takes the max of"),
                "amin": ("partial minima", "takes the min of"), "any": ("partial any-results", "takes any of")}


@dataclass(frozen=True)
class SplitReduction:
    reduce: str  # "sum" | "amax" | "amin" | "any"
    dims: tuple[int, ...]  # the partial buffer's split dimensions
    terms: int | None = None  # how many values the whole reduction combines (stage 1; sets the sum's tolerance)
    scale: int | FxExpr | None = None  # a mean or variance from partial sums: the node is the combined partials / scale
    part: int | None = None  # "welford": which of the three this buffer holds (0 mean, 1 m2, 2 weight) ...
    of: tuple[str, ...] = ()  # ... and the parameters holding the mean, m2 and weight partials, which combine together
    rows: int | None = None  # a mix-order reduction's workspace: flat, read as rows of this length before combining,
    blocks: int = 1  # in this many blocks of rows, one per column reduction it holds (their results stacked)


def split_dims(partial: tuple[int | str, ...], whole: tuple[int | str, ...]) -> tuple[int, ...] | None:
    """The dimensions of `partial` that, removed, leave `whole`; None when there is no such set, or several of which
    none is the trailing one. (Inductor's split reduction appends the split to the reduction's ranges: of a
    (32, 32) buffer of partials of a (32,) sum, dim 1 is the split, whatever the layout's strides.)"""
    extra = len(partial) - len(whole)
    if extra < 1:
        return None
    wanted = tuple(map(str, whole))
    found = [dims for dims in itertools.combinations(range(len(partial)), extra)
             if tuple(str(s) for i, s in enumerate(partial) if i not in dims) == wanted]
    trailing = tuple(range(len(whole), len(partial)))
    if len(found) > 1 and trailing in found:
        return trailing
    return found[0] if len(found) == 1 else None


def _split_reduce(family: str) -> str | None:
    """How a split of a reduction of `family` combines its partials: a mean's are partial sums (Inductor lowers
    mean to a sum, then a division by the count)."""
    return "sum" if family == "mean" else family if family in SPLIT_TARGETS else None


def _split_of(fragment: Fragment, name: str, dims: tuple[int, ...], stage: int) -> SplitReduction | None:
    """The split of reduction node `name` whose partials lie along `dims`. A mean's partials hold sums, which are
    as many times the mean as it averages values (stage 1 compares the sum; stage 2 divides by the count): a count
    of symbolic size is an expression of the size symbols. None when that count is not known."""
    family = fragment.ops[name].family
    terms = reduction_terms(fragment, name)  # (None, for a symbolic size: the reference counts at run time)
    if family != "mean":
        return SplitReduction(family, dims, terms if stage == 1 else None)
    count = terms if terms is not None else _symbolic_count(fragment, name)
    return SplitReduction("sum", dims, terms if stage == 1 else None, count) if count is not None else None


def _symbolic_count(fragment: Fragment, name: str) -> FxExpr | None:
    """How many values the reduction `name` combines, as a size expression (`s75`, `(s0) * (2048)`): the product of
    its source's sizes along the reduced dims (all of them for a `.default` overload)."""
    op = fragment.ops[name]
    source = op.args[0] if op.args else None
    meta = fragment.meta_of(source.name) if isinstance(source, FxRef) else None
    if meta is None:
        return None
    shape = meta.shape
    if op.target.endswith(".default") and len(op.args) == 1:
        reduced = list(range(len(shape)))
    elif len(op.args) >= 2 and isinstance(op.args[1], FxList) and all(
            isinstance(d, FxExpr) and re.fullmatch(r"-?\d+", d.text) for d in op.args[1].items):
        reduced = [int(d.text) % len(shape) for d in op.args[1].items] if shape else []
    else:
        return None
    sizes = [str(shape[d]) for d in reduced]
    if not sizes:
        return None
    text = " * ".join(f"({size})" if not re.fullmatch(r"\w+", size) else size for size in sizes)
    tokens = tuple(re.findall(r"[A-Za-z_]\w*|\d+|\S", text))
    symbols = tuple(dict.fromkeys(t for t in tokens if re.fullmatch(r"[A-Za-z_]\w*", t)))
    return FxExpr(tokens, symbols)


def _reductions(fragment: Fragment, family: str | None = None) -> list[str]:
    """Nodes that are sums/amaxes/amins or means (whose split partials are sums; of `family` when given), in
    fragment order."""
    return [n for n, op in fragment.ops.items() if (reduce := _split_reduce(op.family)) is not None
            and (family is None or reduce == family) and op.meta is not None and n not in fragment.broken]


def partial_of(fragment: Fragment, meta: TensorMeta | None, family: str | None = None) -> dict[str, tuple[int, ...]]:
    """Reduction nodes a buffer of `meta` can be the split partial of, with the split dimensions of each."""
    found: dict[str, tuple[int, ...]] = {}
    if meta is None:
        return found
    for name in _reductions(fragment, family):
        node = fragment.ops[name].meta
        dims = split_dims(meta.shape, node.shape)
        if dims is not None and _partial_dtype(meta.dtype, node.dtype):
            found[name] = dims
    return found


def _partial_dtype(partial: str, whole: str) -> bool:
    """Whether a split reduction of dtype `whole` keeps its partials in `partial`: its own dtype, or float32 for a
    bfloat16 or float16 one (Inductor accumulates those in float32, and rounds once, in the second stage)."""
    partial, whole = norm_dtype(partial), norm_dtype(whole)
    return partial == whole or (partial == "float32" and whole in ("bfloat16", "float16"))


def reduction_terms(fragment: Fragment, name: str) -> int | None:
    """How many values the reduction node `name` combines into each of its outputs (None when unknown)."""
    op = fragment.ops[name]
    source = op.args[0] if op.args else None
    if not isinstance(source, FxRef):
        return None
    meta = fragment.meta_of(source.name)
    whole = numel_of(meta.shape) if meta is not None else None
    part = numel_of(op.meta.shape) if op.meta is not None else None
    if not whole or not part or whole % part:
        return None
    return whole // part


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


def mix_order_rows(kernel: Kernel, access: Access, fragment: Fragment, param: str,
                   meta: TensorMeta) -> tuple[str, SplitReduction] | None:
    """A mix-order reduction's workspace (`RSPLIT_SIZE` in inductor_meta): besides its row reduction, the kernel
    sums its RSPLIT_SIZE rows of a column reduction and stores that as one row of a flat float32 buffer, one row
    per program; Inductor's wrapper then sums the rows. Which column reduction: the sum node of a row's length whose
    operations agree with the stored accumulator's. The check sums the rows (unused ones stay zero) and compares."""
    rows = int(kernel.size_hints.get("r0_", 0))
    if not kernel.inductor_meta.get("RSPLIT_SIZE") or rows < 1 or numel_of(meta.shape) is None \
            or numel_of(meta.shape) % rows:
        return None
    sums = [n for n, op in fragment.ops.items() if op.family == "sum" and op.meta is not None
            and numel_of(op.meta.shape) == rows and _partial_dtype(meta.dtype, op.meta.dtype)]
    # Several column reductions share the workspace, one block of rows each: the store of block k is at
    # `(tl.program_id(0) + k * tl.num_programs(0)) * r0_numel`.
    blocks: dict[int, str] = {}
    for address, value in access.stores.get(param, []):
        found = re.search(r"\+ (\d+) \* tl\.num_programs\(0\)", ast.unparse(address))
        chosen = closest(value, access.assigns, access.unpacked, sums, fragment)
        if found is None or chosen is None or int(found.group(1)) in blocks:
            return None
        blocks[int(found.group(1))] = chosen
    if sorted(blocks) != list(range(len(blocks))) or len(set(blocks.values())) != len(blocks) or not blocks:
        return None
    terms = reduction_terms(fragment, blocks[0])
    if len(blocks) == 1:
        return blocks[0], SplitReduction("sum", (0,), terms, rows=rows)
    stacked = f"{param}_blocks"
    fragment.ops[stacked] = Op(stacked, "torch.ops.aten.stack.default",
                               (FxList(tuple(FxRef(blocks[k]) for k in range(len(blocks)))),), {}, None)
    return stacked, SplitReduction("sum", (1,), terms, rows=rows, blocks=len(blocks))


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


def bind_partial_outputs(binding: FragmentBinding, split: dict[str, dict[str, tuple[int, ...]]], fragment: Fragment) -> None:
    """Stage 1 of a split reduction: `out_ptr0` stores `buf9` f32[1, 512, 16], partial sums of `sum_3` f32[1, 512].

    The buffer is the node's shape plus the split dimension(s); the stored value's reduction (`tl.sum`) must be the
    node's. Several partial outputs of look-alike nodes (`sum_7`, `sum_8`, both f32[512]) pair by store order, as
    Inductor numbers out_ptrN in the order the fused nodes store, which is fragment order.
    """
    groups: dict[tuple[str, ...], list[str]] = {}
    for param, options in split.items():
        if options:
            groups.setdefault(tuple(options), []).append(param)
        else:
            binding.unchecked[param] += ("; it is a reduction's partial, but no sum/amax/amin node of the fragment has "
                                         "its shape less one set of split dimensions")
    for names, params in groups.items():
        if len(names) != len(params):
            for param in params:
                binding.unchecked[param] = (f"{param} stores split-reduction partials, but of which of "
                                            f"{', '.join(names)} cannot be told ({plural(len(params), 'partial output')})")
            continue
        params.sort(key=lambda p: (not p.startswith("out_ptr"), int(re.sub(r"\D", "", p) or 0)))
        for param, name in zip(params, names):
            # (how many values a node of symbolic size reduces: the reference counts them at run time)
            found = _split_of(fragment, name, split[param][name], stage=1)
            if found is None:
                binding.unchecked[param] = (f"{param} stores split-reduction partial sums of the mean {name}, but how "
                                            f"many values {name} averages is not known")
                continue
            binding.outputs[param] = name
            binding.partial_outputs[param] = found
            del binding.unchecked[param]
        if len(params) > 1:
            binding.warnings.append(f"bound {', '.join(params)} to partials of {', '.join(names)} by store order "
                                    f"(look-alike split reductions)")


def bind_partial_inputs(fragment: Fragment, binding: FragmentBinding) -> None:
    """Stage 2 of a split reduction: the kernel reads `buf9` f32[1, 512, 16] (no FX node) and stores `sum_3`
    f32[1, 512]; `sum_3` is then the same reduction of `buf9` over its split dimension. Only when the pairing is
    one to one: a partial that could belong to two nodes, or a node with two partials, is left alone."""
    pairs: dict[str, list[tuple[str, tuple[int, ...]]]] = {}
    # A partial buffer has no FX node: an input that a fragment op reads (mul(div, 2)) is real data, not partials.
    consumed = {ref for op in fragment.ops.values() for v in (*op.args, *op.kwargs.values()) for ref in fx_refs(v)}
    # A buffer with the shape of one of the fragment's reductions is that reduction's unfinished accumulator, which
    # this kernel finishes (x.mean(-1, keepdim=True).sum(): buf0 f32[4, 1] holds the row sums, the kernel divides by
    # the row length, then sums): summing it as partials of the last reduction would leave out the division.
    reduced = {(tuple(map(str, op.meta.shape)), norm_dtype(op.meta.dtype)) for name, op in fragment.ops.items()
               if op_family(fragment, name).split("[")[0] in _REDUCTION_FAMILIES and op.meta is not None}
    for name in binding.inputs:
        if name in fragment.ops or name in binding.scalar_inputs or name in consumed:
            continue
        meta = binding.input_meta.get(name)
        if meta is not None and (tuple(map(str, meta.shape)), norm_dtype(meta.dtype)) in reduced:
            continue
        options = partial_of(fragment, binding.input_meta.get(name))
        if len(options) == 1:
            (node, dims), = options.items()
            pairs.setdefault(node, []).append((name, dims))
    for node, found in pairs.items():
        if len(found) == 1:
            partial, dims = found[0]
            split = _split_of(fragment, node, dims, stage=2)
            if split is not None:
                binding.from_partials[node] = (partial, split)


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
