"""Split reductions. Inductor splits a long reduction in two kernels: stage 1 reduces chunks and stores a partial
buffer (`buf9` f32[1, 512, 16]: the node's shape plus a split dimension, and no FX node of its own); stage 2 reduces
that buffer over the split dimension into the node (`sum_3` f32[1, 512]). A mix-order reduction's workspace holds
a column reduction's partial rows the same way."""

from __future__ import annotations

import ast
import itertools
import re

from harvest.model import FxExpr, FxList, FxRef, Kernel, TensorMeta
from harvest.reference.access import Access
from harvest.reference.bound import FragmentBinding, SplitReduction
from harvest.reference.fragment import Fragment, Op, norm_dtype, numel_of, op_family
from harvest.reference.fx_args import fx_refs
from harvest.reference.structure import closest
from harvest.text_output import plural

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
        # (a reduction whose value the kernel reads is finished: not what it combines from partials; the bias
        # gradients a backward adds up, sum_1 + sum_4 + sum_7 read whole and sum_10 from its partials)
        options = {node: dims for node, dims in partial_of(fragment, binding.input_meta.get(name)).items()
                   if node not in binding.inputs}
        if len(options) == 1:
            (node, dims), = options.items()
            pairs.setdefault(node, []).append((name, dims))
    for node, found in pairs.items():
        if len(found) == 1:
            partial, dims = found[0]
            split = _split_of(fragment, node, dims, stage=2)
            if split is not None:
                binding.from_partials[node] = (partial, split)
