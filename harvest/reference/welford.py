"""A Welford reduction (var_mean: batch norm's and group norm's statistics) in the reference. Pure.

A kernel computes one with `triton_helpers.welford`/`welford_reduce`, which give each row's mean, m2 (the sum of
squared deviations) and weight (how many values). Split in two kernels, the first stores those three for every chunk
of a row and the second combines them; the reference states what each holds in terms of the var_mean node: the
mean, var * (n - correction) and n, and for a second stage computes the mean and variance from the three buffers
of partials the way the kernel does."""

from __future__ import annotations

import ast
from dataclasses import replace

from harvest.model import FxExpr, FxList, FxRef, Graph, Kernel, Launch, TensorMeta
from harvest.reference.access import Access
from harvest.reference.bound import FragmentBinding, SplitReduction
from harvest.reference.fragment import Fragment, Op, arg_buffer, buffer_meta_of, numel_of
from harvest.reference.fx_args import fx_refs
from harvest.reference.split import split_dims
from harvest.syntax import kernel_trees


def welford_parts(kernel: Kernel) -> dict[str, int]:
    """Names the kernel unpacks from a Welford helper (`mean, m2, weight = triton_helpers.welford(...)`): which of
    the three each is (0 mean, 1 m2, 2 weight)."""
    found: dict[str, int] = {}
    tree = kernel_trees(kernel.source).ast  # (parsed once per extraction: harvest.syntax)
    if tree is None:
        return found
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple)
                and len(node.targets[0].elts) == 3 and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Attribute) and node.value.func.attr.startswith("welford")):
            for index, element in enumerate(node.targets[0].elts):
                if isinstance(element, ast.Name):
                    found[element.id] = index
    return found


def welford_part(expr, assigns: dict, welford: dict[str, int]) -> int | None:
    """Which Welford output a stored value is, through the copies, subscripts and broadcasts in between."""
    seen: set[str] = set()
    while expr is not None:
        if isinstance(expr, ast.Name):
            if expr.id in welford:
                return welford[expr.id]
            if expr.id in seen:
                return None
            seen.add(expr.id)
            expr = assigns.get(expr.id)
        elif isinstance(expr, ast.Subscript):
            expr = expr.value
        elif isinstance(expr, ast.Call) and expr.args and isinstance(expr.func, ast.Attribute) and expr.func.attr in (
                "broadcast_to", "reshape", "view", "to"):
            expr = expr.args[0]
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "to":
            expr = expr.func.value
        elif isinstance(expr, ast.Attribute):
            expr = expr.value
        else:
            return None
    return None


def combine_welford_partials(name: str, mean: str, var: str | None, terms: int, correction: int, binding: FragmentBinding,
                           fragment: Fragment, partials: list[str]) -> tuple[str, str] | None:
    """A split Welford reduction's second stage reads three buffers of partials (the mean, m2 and weight of each
    chunk, in that order: Inductor makes them in that order, so their buffer numbers are too) and combines them:
    weight = sum(w), mean = sum(w * m) / weight, m2 = sum(m2_k + w * (m_k - mean)**2), var = m2 / (n - correction).
    The reference does the same in torch ops, in place of the var_mean it cannot compute from the kernel's inputs.
    Returns the combined m2 and weight nodes (split dims kept), for a middle stage to compare with; None when it
    combined nothing (or no m2)."""
    if len(partials) != 3 or mean in binding.inputs:
        return None
    before = list(fragment.ops)
    ordered = sorted(partials, key=lambda b: int("".join(c for c in b if c.isdigit()) or 0))
    metas = [binding.input_meta.get(b) for b in ordered]
    whole = fragment.meta_of(mean)
    if any(m is None or tuple(map(str, m.shape)) != tuple(map(str, metas[0].shape)) for m in metas) or whole is None:
        return None
    dims = split_dims(metas[0].shape, whole.shape)
    if dims is None:
        return None
    part_mean, part_m2, part_weight = (FxRef(b) for b in ordered)
    keep = FxList(tuple(FxExpr((str(d),)) for d in dims))

    def op(suffix: str, target: str, *args) -> FxRef:
        node = f"{name}_{suffix}"
        fragment.ops[node] = Op(node, target, tuple(args), {}, None)
        return FxRef(node)

    true = FxExpr(("True",))
    weight = op("weight", "torch.ops.aten.sum.dim_IntList", part_weight, keep, true)
    weighted = op("weighted_means", "torch.ops.aten.mul.Tensor", part_weight, part_mean)
    mean_kept = op("mean", "torch.ops.aten.div.Tensor", op("sum_of_weighted_means", "torch.ops.aten.sum.dim_IntList",
                                                           weighted, keep, true), weight)
    shape = FxList(tuple(FxExpr((str(s),)) for s in whole.shape))
    fragment.ops[mean] = Op(mean, "torch.ops.aten.reshape.default", (mean_kept, shape), {}, whole)
    fragment.broken.pop(mean, None)
    if var is None or fragment.meta_of(var) is None:
        define_before(fragment, before, {mean})
        return None
    deviation = op("deviation", "torch.ops.aten.sub.Tensor", part_mean, mean_kept)
    spread = op("spread", "torch.ops.aten.mul.Tensor", part_weight,
                op("deviation_squared", "torch.ops.aten.mul.Tensor", deviation, deviation))
    m2 = op("m2", "torch.ops.aten.sum.dim_IntList", op("m2_parts", "torch.ops.aten.add.Tensor", part_m2, spread), keep, true)
    # (divided by the graph's count less the correction, as Inductor's kernel does, not by the summed weights:
    # the same on the run's data, where the weights add up to the count)
    var_kept = op("var", "torch.ops.aten.div.Tensor", m2, FxExpr((str(terms - correction),)))
    var_meta = fragment.meta_of(var)
    fragment.ops[var] = Op(var, "torch.ops.aten.reshape.default", (var_kept, FxList(tuple(
        FxExpr((str(s),)) for s in var_meta.shape))), {}, var_meta)
    fragment.broken.pop(var, None)
    define_before(fragment, before, {mean, var})
    return m2.name, weight.name


def middle_stage_parts(name: str, mean: str, combined: tuple[str, str], fragment: Fragment) -> list[str]:
    """What a middle stage's partials must combine to (a 3-level split on a GPU: 1024 chunks a channel combined into
    8, then into 1): the mean, m2 and weight of the partials it reads, not var * (n - correction) and n (on made-up
    inputs the weights need not add up to the graph's count)."""
    whole = fragment.meta_of(mean)
    shape = FxList(tuple(FxExpr((str(s),)) for s in whole.shape))
    found = [mean]
    for part, node in zip(("m2", "weight"), combined):
        kept = f"{name}_combined_{part}"
        fragment.ops[kept] = Op(kept, "torch.ops.aten.reshape.default", (FxRef(node), shape), {}, whole)
        found.append(kept)
    return found


def define_before(fragment: Fragment, before: list[str], replaced: set[str]) -> None:
    """Put the ops added since `before` ahead of the first replaced node: the reference computes in this order."""
    added = [n for n in fragment.ops if n not in before]
    ordered: dict[str, Op] = {}
    for name in before:
        op = fragment.ops[name]
        uses = {r for v in (*op.args, *op.kwargs.values()) for r in fx_refs(v)}
        if (name in replaced or uses & replaced) and added:
            ordered.update((n, fragment.ops[n]) for n in added)
            added = []
        ordered[name] = fragment.ops[name]
    ordered.update((n, fragment.ops[n]) for n in added)
    fragment.ops = ordered


def count_node(fragment: Fragment, mean: str, terms: int) -> str:
    """A node for a Welford reduction's weight: how many values each mean is of (`getitem_1_count`)."""
    count = f"{mean}_count"
    fragment.ops[count] = Op(count, "torch.ops.aten.full_like.default", (FxRef(mean), FxExpr((str(terms),))), {},
                              fragment.meta_of(mean))
    return count


def total_node(fragment: Fragment, statistic: str, scale: int) -> str:
    """A node for the sum a mean or variance divides (`getitem_1_total = getitem_1 * 32`): what a kernel stores when
    it leaves the division to the next."""
    total = f"{statistic}_total"
    fragment.ops[total] = Op(total, "torch.ops.aten.mul.Tensor", (FxRef(statistic), FxExpr((str(scale),))), {},
                              fragment.meta_of(statistic))
    return total


# ---------------------------------------------------------------------------------------------------------------
# From the `# Graph fragment:` comment (an artifact): which var_mean, and which of its parts the kernel stores or reads.


def bind_welford_split(kernel: Kernel, graph: Graph, launch: Launch, access: Access, fragment: Fragment,
                       binding: FragmentBinding) -> None:
    """The kernel of a split var_mean, bound from the comment, which names the buffers of partials without a node.

    Stage 1 reads x and stores, per chunk of each row, the Welford mean, m2 and weight (three buffers of the
    statistic's shape plus the split): they are the mean, var * (n - correction) and n, split, and the check
    combines them. Stage 2 reads those three and computes the statistics (and what follows from them); a stored m2
    or weight of a whole row is var * (n - correction) or n. One var_mean per kernel: with two, which part belongs
    to which cannot be told from the comment."""
    found = [(name, op) for name, op in fragment.ops.items() if op.family == "var_mean" and op.args
             and isinstance(op.args[0], FxRef)]
    if len(found) != 1:
        return
    name, op = found[0]
    statistics = _statistics(name, op, fragment)
    if statistics is None:
        return
    mean, var, terms, correction = statistics
    whole = fragment.meta_of(mean)
    by_param = {arg.param: arg for arg in launch.args}
    parts = welford_parts(kernel)
    stored: dict[int, tuple[str, tuple[int, ...]]] = {}
    for param in kernel.params:
        part = welford_part(access.last_store.get(param), access.assigns, parts) if param in access.last_store else None
        meta = buffer_meta_of(graph, arg_buffer(by_param[param])) if param in by_param else None
        if part is None or meta is None or whole is None:
            continue
        if numel_of(meta.shape) == numel_of(whole.shape):  # a whole row's statistic
            bound = (mean, total_node(fragment, var, terms - correction), count_node(fragment, mean, terms))[part]
            _bind(binding, param, bound)
            continue
        dims = split_dims(meta.shape, whole.shape)
        if dims is not None:
            stored[part] = (param, dims)
    source = op.args[0].name
    combined = None
    if not _computable(source, fragment, binding, {}):
        # (not stage 1 or a whole var_mean, whose source is there to compute it from: a stage that reads partials)
        partials = [n for n in binding.inputs if n not in fragment.ops and whole is not None
                    and binding.input_meta.get(n) is not None
                    and split_dims(binding.input_meta[n].shape, whole.shape) is not None]
        combined = combine_welford_partials(name, mean, var, terms, correction, binding, fragment, partials)
    if sorted(stored) == [0, 1, 2] and len({dims for _, dims in stored.values()}) == 1:
        of = tuple(stored[k][0] for k in range(3))
        expected = (middle_stage_parts(name, mean, combined, fragment) if combined is not None else
                    (mean, total_node(fragment, var, terms - correction), count_node(fragment, mean, terms)))
        for part, (param, dims) in stored.items():
            _bind(binding, param, expected[part])
            binding.partial_outputs[param] = SplitReduction("welford", dims, terms, None, part, of,
                                                            middle=combined is not None)
    used = {r for o in fragment.ops.values() for v in (*o.args, *o.kwargs.values()) for r in fx_refs(v)}
    m2s = [n for n in binding.inputs if n not in fragment.ops and n not in used and whole is not None
           and binding.input_meta.get(n) is not None and numel_of(binding.input_meta[n].shape) == numel_of(whole.shape)]
    variance_from_m2(name, var, terms - correction, m2s, fragment, binding)


def _computable(name: str, fragment: Fragment, binding: FragmentBinding, known: dict[str, bool]) -> bool:
    """Whether the reference can compute `name` from what the kernel reads: a bound input (or a node bound to the
    partials it reads), or an op whose inputs are (a var_mean's cast input, `convert_element_type_2 =
    convert(convolution)`, is not when the comment never defines the convolution: the kernel reads partials, stage
    2 or a middle stage). `known`: the answers so far (a node read twice is asked once; one on a cycle is not)."""
    if name in binding.inputs or name in binding.from_partials:
        return True
    if name not in known:
        op = fragment.ops.get(name)
        known[name] = False  # (until its inputs say otherwise)
        known[name] = op is not None and name not in fragment.broken and all(
            _computable(ref, fragment, binding, known) for value in (*op.args, *op.kwargs.values())
            for ref in fx_refs(value))
    return known[name]


def variance_from_m2(name: str, var: str, divisor: int, m2s: list[str], fragment: Fragment,
                     binding: FragmentBinding) -> None:
    """A kernel that reads a var_mean's statistics from the kernel that computed them, the mean and the Welford m2
    (a buffer of the statistic's shape with no node of its own), and divides the m2 by the count itself: its
    variance is that m2 over the count less the correction, not the var_mean of its other input recomputed (which on
    made-up inputs is another number). Only with one such buffer, and a variance the kernel does not read."""
    if len(m2s) != 1 or var in binding.inputs or fragment.meta_of(var) is None:
        return
    before = list(fragment.ops)
    fragment.ops[var] = Op(var, "torch.ops.aten.div.Tensor", (FxRef(m2s[0]), FxExpr((str(divisor),))), {},
                           fragment.meta_of(var))
    fragment.broken.pop(var, None)
    binding.warnings.append(f"{var}: the variance from {m2s[0]}, the Welford m2 of {name} the kernel reads, over {divisor}")
    define_before(fragment, before, {var})


def _bind(binding: FragmentBinding, param: str, node: str) -> None:
    binding.outputs[param] = node
    binding.unchecked.pop(param, None)


def _statistics(name: str, op: Op, fragment: Fragment) -> tuple[str, str, int, int] | None:
    """(mean node, variance node, values per statistic, correction) of a var_mean node; its getitems inferred,
    with their layout, when the comment lists none (a kernel that stores only the Welford parts)."""
    source = fragment.meta_of(op.args[0].name)
    if source is None or len(op.args) < 2 or not isinstance(op.args[1], FxList):
        return None
    try:
        dims = {int(d.text) % len(source.shape) for d in op.args[1].items if isinstance(d, FxExpr)}
    except ValueError:
        return None
    keepdim = any(k == "keepdim" and isinstance(v, FxExpr) and v.text == "True" for k, v in op.kwargs.items())
    shape = tuple(1 if i in dims else s for i, s in enumerate(source.shape) if keepdim or i not in dims)
    whole, part = numel_of(source.shape), numel_of(shape)
    if not whole or not part or whole % part:
        return None
    correction = next((int(v.text) for k, v in op.kwargs.items() if k == "correction" and isinstance(v, FxExpr)
                       and v.text.lstrip("-").isdigit()), 1)
    getitems = {int(o.args[1].text): n for n, o in fragment.ops.items() if o.target == "operator.getitem"
                and len(o.args) == 2 and o.args[0] == FxRef(name) and isinstance(o.args[1], FxExpr)
                and o.args[1].text in ("0", "1")}
    stride = tuple(numel_of(shape[i + 1:]) or 1 for i in range(len(shape)))
    meta = TensorMeta(shape, stride, source.dtype, source.device)
    for index, suffix in ((0, "var"), (1, "mean")):
        if index not in getitems:
            getitems[index] = fragment.items.get(name, {}).get(index) or f"{name}_{suffix}"
            fragment.ops[getitems[index]] = Op(getitems[index], "operator.getitem", (FxRef(name), FxExpr((str(index),))),
                                               {}, meta, inferred=True)
        elif fragment.ops[getitems[index]].meta is None:
            fragment.ops[getitems[index]] = replace(fragment.ops[getitems[index]], meta=meta)
    return getitems[1], getitems[0], whole // part, correction
