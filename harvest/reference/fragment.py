"""A kernel's `# Graph fragment:` read into ops by name, with the families, tuple outputs and tensor metadata the
binding needs. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from harvest.model import FxExpr, FxList, FxNode, FxRef, FxValue, Graph, Kernel, LaunchArg, TensorMeta
from harvest.ops import SAME_VALUES, is_collective, torch_ops_target
from harvest.reference.fx_args import fx_refs
from harvest.shapes import same_sizes
from harvest.text_output import plural

# ---------------------------------------------------------------------------------------------------------------
# The fragment as a small program.


@dataclass(frozen=True)
class Op:
    name: str
    target: str  # normalized: "torch.ops.aten.add.Tensor" or "operator.getitem"
    args: tuple[FxValue, ...]
    kwargs: dict[str, FxValue]
    meta: TensorMeta | None
    inferred: bool = False  # not in the fragment; deduced (getitem = var_mean[0])

    @property
    def family(self) -> str:
        if self.target == "operator.getitem":
            return ""
        parts = self.target.split(".")
        return parts[3] if len(parts) > 3 else parts[-1]


# Ops that return a tuple, with how many outputs.
_TUPLE_ARITY = {"prepare_softmax_online": 2, "var_mean": 2, "max": 2, "min": 2, "sort": 2, "topk": 2, "aminmax": 2, "native_layer_norm": 3}


PREPARE_SOFTMAX_ONLINE = "torch.ops.prims.prepare_softmax_online.default"
# Max-pooling's prims (written out with eager ops by harvest.reference.pooling).
MAX_POOL_WITH_OFFSETS = "torch.ops.prims._low_memory_max_pool_with_offsets.default"
OFFSETS_TO_INDICES = "torch.ops.prims._low_memory_max_pool_offsets_to_indices.default"
POOLING_PRIMS = (MAX_POOL_WITH_OFFSETS, OFFSETS_TO_INDICES)


def target_exists(target: str) -> bool:
    """Whether `torch.ops.<ns>.<op>.<overload>` resolves in this torch."""
    if target in ("operator.getitem", "torch.ops.prims.fma.default", PREPARE_SOFTMAX_ONLINE, *POOLING_PRIMS):
        return True  # Inductor's own prims (registered only once Inductor is imported): the reference writes them out
    parts = target.split(".")
    if len(parts) != 5 or parts[:2] != ["torch", "ops"]:
        return False
    try:
        import torch

        packet = getattr(getattr(torch.ops, parts[2]), parts[3])
        getattr(packet, parts[4])
    except (AttributeError, RuntimeError, ImportError):
        return False
    return True


@dataclass
class Fragment:
    ops: dict[str, Op] = field(default_factory=dict)  # defined nodes in order (call_function + inferred getitems)
    placeholders: dict[str, FxNode] = field(default_factory=dict)
    broken: dict[str, str] = field(default_factory=dict)  # node name -> why it cannot be rendered
    returns: tuple[str, ...] = ()
    warnings: list[str] = field(default_factory=list)
    # node -> the in-place collective that updated its tensor (all_reduce_(y, ...)): a kernel reading y's buffer
    # after it reads the collective's result
    collected: dict[str, str] = field(default_factory=dict)
    # graph inputs an op reads that the fragment neither defines nor lists (`mean(primals_1, [0])` in a kernel that
    # reads only its partial sums) -> their layout in the wrapper: how many values a reduction of one combines
    outside: dict[str, TensorMeta] = field(default_factory=dict)
    items: dict[str, dict[int, str]] = field(default_factory=dict)  # tuple node -> its outputs' names in the graph

    def meta_of(self, name: str) -> TensorMeta | None:
        node = self.ops.get(name) or self.placeholders.get(name)
        return node.meta if node is not None else self.outside.get(name)


# What the reference calls to redraw tl.rand's numbers (harness.py's piece of that name).
TRITON_RAND = "triton_rand"
TRITON_RANDN = "triton_randn"


def collective_reason(node: FxNode) -> str:
    return (f"{node.name} is a collective ({node.target}): it needs every rank, so eager cannot redo it here; "
            "the record checks it")


def redraw_random(node: FxNode, family: str) -> Op | None:
    """Inductor's dropout draws with Triton's Philox: `inductor_lookup_seed(seeds, k)` is the seed at k of the seed
    buffer, `inductor_random(size, seed, 'rand')` is tl.rand(seed, offset) for the offsets 0, 1, ... of the
    elements in row-major order, which the harness's triton_rand draws again, bit for bit; 'randn' is tl.randn's
    normal numbers, which triton_randn draws again (the same Philox words, Box-Muller in float32). None for
    anything else ('randint': not redrawn)."""
    if node.args_error:
        return None
    if family == "inductor_lookup_seed" and len(node.args) == 2 and isinstance(node.args[0], FxRef):
        return Op(node.name, "operator.getitem", node.args, {}, node.meta)
    if (family == "inductor_random" and len(node.args) == 3 and isinstance(node.args[2], FxExpr)
            and node.args[2].text.strip("'\"") in ("rand", "randn") and not node.kwargs):
        drawn = TRITON_RAND if node.args[2].text.strip("'\"") == "rand" else TRITON_RANDN
        return Op(node.name, drawn, node.args[:2], {}, node.meta)
    return None


def add_node(fragment: Fragment, node: FxNode, target: str) -> None:
    """The node as an op of the fragment (its target normalized), or broken with why it cannot be written as an
    eager call: an op this torch does not have, or arguments that could not be read."""
    if not target_exists(target):
        fragment.broken[node.name] = f"{node.name} calls {node.target}, which this torch does not have"
    elif node.args_error:
        fragment.broken[node.name] = f"cannot read the arguments of {node.name}: {node.args_error}"
    else:
        fragment.ops[node.name] = Op(node.name, target, node.args, dict(node.kwargs), node.meta)


def read_fragment(kernel: Kernel, graph: Graph | None = None) -> Fragment:
    """The kernel's `# Graph fragment:` as ops by name; with `graph`, the layouts of the graph inputs its ops read
    without listing them."""
    fragment = Fragment(returns=tuple(kernel.comment.fragment_return))
    for node in kernel.comment.fragment:
        if node.op in ("placeholder", "PlaceHolder"):
            fragment.placeholders.setdefault(node.name, node)
            continue
        if node.op != "call_function":
            fragment.broken[node.name] = f"{node.name} is a {node.op} node"
            continue
        target = torch_ops_target(node.target)
        # A node that cannot be rendered stays in `ops` (its meta still identifies the output that stores it).
        fragment.ops[node.name] = Op(node.name, target, (), {}, node.meta)
        redrawn = redraw_random(node, target.split(".")[3] if target.count(".") >= 4 else "")
        if redrawn is not None:  # dropout's random numbers, drawn again as the kernel draws them
            fragment.ops[node.name] = redrawn
            continue
        if is_collective(target):  # (wait_tensor is not: it only returns the collective's tensor)
            fragment.broken[node.name] = collective_reason(node)
            continue
        add_node(fragment, node, target)
    _infer_getitems(fragment)
    if graph is not None:
        _infer_getitems_from_graph(fragment, graph)
        _infer_folded_views(fragment)
        read = {ref for op in fragment.ops.values() for v in (*op.args, *op.kwargs.values()) for ref in fx_refs(v)}
        elsewhere = None
        for name in sorted(read - set(fragment.ops) - set(fragment.placeholders)):
            buffer = graph.buffers.get(name)
            if buffer is not None and buffer.origin == "input":
                fragment.outside[name] = buffer.meta
                continue
            elsewhere = graph_node_metas(graph) if elsewhere is None else elsewhere
            if name in elsewhere:  # (a node another kernel of the graph computes or reads, with its layout)
                fragment.outside[name] = elsewhere[name]
    return fragment


def graph_node_metas(graph: Graph) -> dict[str, TensorMeta]:
    """Every FX node some kernel comment of the graph gives a layout: its own nodes and what it reads."""
    found: dict[str, TensorMeta] = {}
    for kernel in graph.kernels:
        for node in kernel.comment.fragment:
            if node.meta is not None:
                found.setdefault(node.name, node.meta)
    return found


def _tuple_arity(op: Op, fragment: Fragment) -> int | None:
    """How many outputs a split returns: split(x, size, dim) ceil(x.shape[dim] / size) of them,
    split_with_sizes(x, sizes, dim) one per size."""
    if op.family == "split_with_sizes" and len(op.args) > 1 and isinstance(op.args[1], FxList):
        return len(op.args[1].items)
    if op.family != "split" or len(op.args) < 2 or not isinstance(op.args[0], FxRef):
        return None
    meta = fragment.meta_of(op.args[0].name)
    dim = op.args[2].text if len(op.args) > 2 and isinstance(op.args[2], FxExpr) else "0"
    size = op.args[1].text if isinstance(op.args[1], FxExpr) else ""
    if meta is None or not size.isdigit() or not dim.lstrip("-").isdigit() or not meta.shape:
        return None
    length = meta.shape[int(dim) % len(meta.shape)]
    return -(-length // int(size)) if isinstance(length, int) and int(size) > 0 else None


def _infer_getitems_from_graph(fragment: Fragment, graph: Graph) -> None:
    """Getitems of a tuple node (a split, a var_mean) that the fragment uses but does not define, told from the whole
    graph (graph_items); and, for each tuple node, the names its outputs have in the graph (`fragment.items`), which
    a getitem harvest infers later takes."""
    for op in [o for o in fragment.ops.values() if o.family in ("split", "split_with_sizes") or o.family in _TUPLE_ARITY]:
        items = graph_items(op, fragment, graph)
        if not items:
            continue
        fragment.items[op.name] = items
        broken = [(index, name) for index, name in items.items() if name in fragment.broken and name not in fragment.ops]
        before = list(fragment.ops)
        for index, name in broken:
            fragment.ops[name] = Op(name, "operator.getitem", (FxRef(op.name), FxExpr((str(index),))), {}, None,
                                    inferred=True)
            fragment.broken.pop(name)
            fragment.warnings.append(f"inferred {name} = {op.name}[{index}] from the graph's other kernels")
        if broken:
            _order_after(fragment, before, op.name)


def graph_items(op: Op, fragment: Fragment, graph: Graph) -> dict[int, str]:
    """The names of a tuple node's outputs, from the comments of every kernel of the graph that defines the same node
    (the kernels that take the q, k and v of one split each use one of its getitems: `getitem_2`, `getitem_3`,
    `getitem_4`): when they use, between them, as many getitems they do not define as it has outputs, those are its
    outputs in FX naming order (the order in which FX created them). {} when they do not add up."""
    arity = _tuple_arity(op, fragment) or _TUPLE_ARITY.get(op.family)
    used: set[str] = set()
    for kernel in graph.kernels:
        nodes = {node.name: node for node in kernel.comment.fragment}
        node = nodes.get(op.name)
        if node is None or torch_ops_target(node.target) != op.target or node.args != op.args:
            continue
        for other in kernel.comment.fragment:
            used |= {r for v in (*other.args, *dict(other.kwargs).values()) for r in fx_refs(v)
                     if re.fullmatch(r"getitem(_\d+)?", r) and r not in nodes}
            if other.op in ("placeholder", "PlaceHolder") and re.fullmatch(r"getitem(_\d+)?", other.name):
                used.add(other.name)  # (read by a kernel that also lists the tuple node: an output of it, or not)
    if arity is None or len(used) != arity:
        return {}
    return dict(enumerate(sorted(used, key=_getitem_index)))


def _infer_folded_views(fragment: Fragment) -> None:
    """A view the comment names but does not define (`clone_3 = clone(expand_2)`, with `expand_2` neither defined nor
    read by the kernel): an `expand` of a node to its own shape that Inductor folded away. It is the view of the one
    node the fragment computes and nothing in it uses, when that node has the shape of the reader; else left as it
    is."""
    used = {r for op in fragment.ops.values() for v in (*op.args, *op.kwargs.values()) for r in fx_refs(v)}
    for name, op in list(fragment.ops.items()):
        if op.family != "clone" or not op.args or not isinstance(op.args[0], FxRef) or op.meta is None:
            continue
        folded = op.args[0].name
        if folded in fragment.ops or not re.fullmatch(r"expand(_\d+)?", folded):
            continue
        dangling = [n for n, o in fragment.ops.items() if n not in used and n != name and o.meta is not None
                    and tuple(map(str, o.meta.shape)) == tuple(map(str, op.meta.shape))]
        if len(dangling) != 1:
            continue
        before = list(fragment.ops)
        shape = FxList(tuple(FxExpr((str(s),)) for s in op.meta.shape))
        fragment.ops[folded] = Op(folded, "torch.ops.aten.expand.default", (FxRef(dangling[0]), shape), {}, None,
                                  inferred=True)
        fragment.broken.pop(folded, None)
        fragment.warnings.append(f"inferred {folded} = {dangling[0]} expanded to its own shape (a view the comment "
                                 "does not define)")
        used.add(dangling[0])
        _order_after(fragment, before, dangling[0])


def _order_after(fragment: Fragment, before: list[str], anchor: str) -> None:
    """The ops added since `before` placed right after `anchor`, so the reference defines them in order."""
    added = [n for n in fragment.ops if n not in before]
    ordered: dict[str, Op] = {}
    for name in before:
        ordered[name] = fragment.ops[name]
        if name == anchor:
            ordered.update((n, fragment.ops[n]) for n in added)
    ordered.update((n, fragment.ops[n]) for n in added if n not in ordered)
    fragment.ops = ordered


def _getitem_index(name: str) -> int:
    return 0 if name == "getitem" else int(name.rsplit("_", 1)[1])


def _infer_getitems(fragment: Fragment) -> None:
    """Define `getitem_K` names the fragment uses but does not define, when only one assignment is possible.

    A missing getitem is inferred only when the fragment has exactly one tuple-returning node and the indices of
    that node not yet taken are exactly as many as the missing names; they are then assigned in FX naming order
    (getitem < getitem_1 < ...), the order in which FX created them.
    """
    used = {name for op in fragment.ops.values() for value in (*op.args, *op.kwargs.values()) for name in fx_refs(value)}
    missing = sorted(
        (n for n in used | set(fragment.returns) if re.fullmatch(r"getitem(_\d+)?", n) and n not in fragment.ops),
        key=_getitem_index,
    )
    if not missing:
        return
    tuples = [op for op in fragment.ops.values() if op.family in _TUPLE_ARITY and op.meta is None]
    if len(tuples) != 1:
        for name in missing:
            fragment.broken.setdefault(name, f"fragment does not define {name} (no single tuple node it can come from)")
        return
    source = tuples[0]
    taken = {
        op.args[1].text
        for op in fragment.ops.values()
        if op.target == "operator.getitem" and op.args and op.args[0] == FxRef(source.name) and isinstance(op.args[1], FxExpr)
    }
    free = [i for i in range(_TUPLE_ARITY[source.family]) if str(i) not in taken]
    if len(free) != len(missing):
        for name in missing:
            fragment.broken.setdefault(name, f"fragment does not define {name}, and {source.name} has "
                                             f"{plural(len(free), 'unused output')} for {plural(len(missing), 'missing getitem')}")
        return
    ops = dict(fragment.ops)
    for name, index in zip(missing, free):
        placeholder = fragment.placeholders.get(name)
        ops[name] = Op(name, "operator.getitem", (FxRef(source.name), FxExpr((str(index),))), {},
                        placeholder.meta if placeholder else None, inferred=True)
        fragment.warnings.append(f"inferred {name} = {source.name}[{index}] (the fragment uses it but does not define it)")
    # Keep definition order valid: inferred getitems go right after their tuple node.
    ordered: dict[str, Op] = {}
    for name, op in fragment.ops.items():
        ordered[name] = op
        if name == source.name:
            for m in missing:
                ordered[m] = ops[m]
    fragment.ops = ordered


def op_family(fragment: Fragment, name: str) -> str:
    """The op family that made a node's value, looking through views and conversions."""
    seen: set[str] = set()
    while name in fragment.ops and name not in seen:
        seen.add(name)
        op = fragment.ops[name]
        if op.target == "operator.getitem":
            source = op.args[0]
            if isinstance(source, FxRef) and source.name in fragment.ops and isinstance(op.args[1], FxExpr):
                return f"{fragment.ops[source.name].family}[{op.args[1].text}]"
            return ""
        if op.family in SAME_VALUES and op.args and isinstance(op.args[0], FxRef):
            name = op.args[0].name
            continue
        return op.family
    return ""


# ---------------------------------------------------------------------------------------------------------------
# Metas.


def numel_of(shape: tuple[int | str, ...]) -> int | None:
    total = 1
    for size in shape:
        if not isinstance(size, int):
            return None
        total *= size
    return total


def norm_dtype(dtype: str) -> str:
    return {"bool": "bool", "b8": "bool"}.get(dtype, dtype)


def same_shape(a: TensorMeta, b: TensorMeta) -> bool:
    """The same sizes (symbolic ones compared as expressions: FX and the wrapper write them differently) and dtype."""
    return same_sizes(a.shape, b.shape) and norm_dtype(a.dtype) == norm_dtype(b.dtype)


def same_numel(a: TensorMeta, b: TensorMeta) -> bool:
    numel = numel_of(a.shape)
    return numel is not None and numel == numel_of(b.shape) and norm_dtype(a.dtype) == norm_dtype(b.dtype)


def buffer_meta_of(graph: Graph, name: str | None) -> TensorMeta | None:
    buffer = graph.buffers.get(name or "")
    return buffer.meta if buffer else None


def arg_buffer(arg: LaunchArg) -> str | None:
    """The tensor a launch argument names: `buf0`, or `arg3_1` in `arg3_1.item()` (read when the wrapper was parsed)."""
    return arg.buffer or arg.item_of
